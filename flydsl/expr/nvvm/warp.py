"""Warp-level NVIDIA operations: ``mma.sync`` MMA ops, ``ldmatrix``/``stmatrix`` and ``cp.async`` copy ops,
and the instruction-level functions behind them.

Each op is named as in CuTe DSL (``cutlass.cute.nvgpu.warp`` / ``cpasync`` / ``cute.arch``):

=============================================  ============================================  =================
fx.nvvm                                        CuTe DSL counterpart                          PTX (min. sm)
=============================================  ============================================  =================
``MmaF16BF16Op(ab, acc, (16, 8, 16))``         ``cute.nvgpu.warp.MmaF16BF16Op``              mma.sync (80)
``MmaFP8Op(ab, acc, (16, 8, 32), b_dtype)``    ``cute.nvgpu.warp.MmaFP8Op``                  mma.sync e4m3/e5m2 (89)
``MmaI8Op(a, b, Int32, (16, 8, 32))``          (CuTe C++ ``SM80_16x8x32_S32S8S8S32_TN``)     mma.sync s8/u8 (80)
``MMA(m, n, k, ab, acc)``                      FlyDSL's ``rocdl.MFMA`` spelling              —
``LdMatrix8x8x16bOp(transpose, num_matrices)``  ``cute.nvgpu.warp.LdMatrix8x8x16bOp``         ldmatrix (75)
``StMatrix8x8x16bOp(transpose, num_matrices)``  ``cute.nvgpu.warp.StMatrix8x8x16bOp``         stmatrix (90)
``CopyG2SOp(cache_mode, bits)``                ``cute.nvgpu.cpasync.CopyG2SOp``              cp.async (80)
``cp_async_commit_group()``                    ``cute.arch.cp_async_commit_group``           cp.async (80)
``cp_async_wait_group(n)``                     ``cute.arch.cp_async_wait_group``             cp.async (80)
``mma_sync``, ``ldmatrix``, ``stmatrix``,        the instructions themselves on Vectors and
``cp_async``                                   pointers (no CuTe DSL function)
=============================================  ============================================  =================

The MMA ops' thread-value layouts are derived from the PTX ISA's fragment tables in
:mod:`flydsl.dialects.nvvm` — the same tables the interpreter executes. ``make_copy_atom`` of an
``ldmatrix`` op with a 16-bit (or 8-bit, non-transposed) element type gives an atom for
``make_tiled_copy_A/B`` (``fx.mma``); a ``CopyG2SOp`` atom copies global → shared memory asynchronously
(``fx.copy(atom, src, dst, pred=p)``: a false predicate zero-fills the destination without reading).
"""

from __future__ import annotations

from ... import layout as L
from ...dialects import nvvm as _d
from ...ir import AddressSpace, Value
from ...layout import Layout
from ..copy import CopyError, CopyOp
from ..mma import MmaOp, fit_tv_layout
from ..numeric import (
    BFloat16,
    Boolean,
    Float8E4M3FN,
    Float8E5M2,
    Float16,
    Float32,
    Int8,
    Int32,
    Numeric,
    Uint8,
    as_numeric,
)
from ..pointer import Pointer, as_pointer
from ..vector import Vector

__all__ = [
    "MmaF16BF16Op", "MmaFP8Op", "MmaI8Op", "MMA", "LdMatrix8x8x16bOp", "StMatrix8x8x16bOp", "CopyG2SOp",
    "mma_sync", "ldmatrix", "stmatrix", "cp_async", "cp_async_commit_group", "cp_async_wait_group",
    "cp_async_wait_all", "syncwarp", "LoadCacheMode",
]  # fmt: skip

_WARP = Layout._make(32, 1)
_THR = (4, 8)  # lane = threadID_in_group + 4 * groupID


# ---------------------------------------------------------------------------------------------------------
# mma.sync
# ---------------------------------------------------------------------------------------------------------


def _val_shape(operand: str, bits: int) -> tuple:
    """The value modes of a fragment, colexicographic over (element in register, register bits…)."""
    p = 32 // bits
    pe = (p,) if p > 1 else ()
    if operand == "A":
        return (*pe, 2, 2)
    if operand == "B":
        return (*pe, 2)
    return (2, 2)


def _tv(shape: str, operand: str, bits: int) -> Layout:
    m, n, k = _d.MMA_SHAPES[shape]
    coords = _d.fragment_coords(shape, operand, bits)
    rows = {"A": m, "B": n, "C": m}[operand]
    if operand == "B":  # coords are (k, n); the tile is N×K, column-major
        index = coords[..., 1] + rows * coords[..., 0]
    else:
        index = coords[..., 0] + rows * coords[..., 1]
    return fit_tv_layout(index, _THR, _val_shape(operand, bits))


class _WarpMma(MmaOp):
    """An ``mma.sync.aligned`` instruction of one warp (row.col): A, B and C in registers."""

    thr_id = _WARP

    def __init__(self, shape: str, a_dtype, b_dtype, c_dtype):
        if _d.mma_kind(shape, a_dtype.ir_type, b_dtype.ir_type, c_dtype.ir_type) is None:
            combos = "; ".join(f"{s} {ab} -> {cd}" for s, ab, cd in _d.MMA_KINDS)
            raise ValueError(
                f"{type(self).__name__}: PTX has no mma.sync {shape} with A {a_dtype.__name__}, B "
                f"{b_dtype.__name__}, accumulator {c_dtype.__name__} (supported: {combos})"
            )
        self.shape = shape
        self.shape_mnk = _d.MMA_SHAPES[shape]
        self.a_dtype, self.b_dtype, self.c_dtype = a_dtype, b_dtype, c_dtype
        self.layout_A_tv = _tv(shape, "A", a_dtype.width)
        self.layout_B_tv = _tv(shape, "B", b_dtype.width)
        self.layout_C_tv = _tv(shape, "C", c_dtype.width)

    def call(self, d, a, b, c, **state) -> None:
        if state:
            raise TypeError(f"{self.name} (mma.sync) has no atom state, got {sorted(state)}")
        cv = c.load()
        if cv.dtype is not self.c_dtype:
            cv = cv.to(self.c_dtype)
        d.store(mma_sync(a.load(), b.load(), cv, shape=self.shape, a_dtype=self.a_dtype, b_dtype=self.b_dtype))


def _shape_name(shape_mnk) -> str:
    m, n, k = tuple(shape_mnk)
    return f"m{m}n{n}k{k}"


class MmaF16BF16Op(_WarpMma):
    """``mma.sync.aligned.m16n8k16.row.col`` on bf16/f16 operands (sm_80+): f32 accumulators (or f16 for f16
    operands). CuTe DSL: ``cute.nvgpu.warp.MmaF16BF16Op(ab_dtype, acc_dtype, shape_mnk)``."""

    def __init__(self, ab_dtype=BFloat16, acc_dtype=Float32, shape_mnk=(16, 8, 16)):
        if ab_dtype not in (BFloat16, Float16):
            raise ValueError(f"MmaF16BF16Op takes fx.BFloat16 or fx.Float16 operands, got {ab_dtype!r}")
        super().__init__(_shape_name(shape_mnk), ab_dtype, ab_dtype, acc_dtype)


class MmaFP8Op(_WarpMma):
    """``mma.sync.aligned.m16n8k32.row.col`` on e4m3/e5m2 operands (sm_89+, PTX 8.4; f16 accumulators need
    PTX 8.7). CuTe DSL: ``cute.nvgpu.warp.MmaFP8Op``. ``b_dtype`` may differ from ``ab_dtype``."""

    def __init__(self, ab_dtype=Float8E4M3FN, acc_dtype=Float32, shape_mnk=(16, 8, 32), b_dtype=None):
        b = b_dtype or ab_dtype
        for t in (ab_dtype, b):
            if t not in (Float8E4M3FN, Float8E5M2):
                raise ValueError(f"MmaFP8Op takes fx.Float8E4M3FN or fx.Float8E5M2 operands, got {t!r}")
        super().__init__(_shape_name(shape_mnk), ab_dtype, b, acc_dtype)


class MmaI8Op(_WarpMma):
    """``mma.sync.aligned.m16n8k32.row.col.s32.{s8,u8}.{s8,u8}.s32`` (sm_80+): 8-bit integers (``fx.Int8`` or
    ``fx.Uint8`` each), Int32 accumulators that wrap around (no ``.satfinite``)."""

    def __init__(self, a_dtype=Int8, b_dtype=None, acc_dtype=Int32, shape_mnk=(16, 8, 32)):
        b = b_dtype or a_dtype
        for t in (a_dtype, b):
            if t not in (Int8, Uint8):
                raise ValueError(f"MmaI8Op takes fx.Int8 or fx.Uint8 operands, got {t!r}")
        super().__init__(_shape_name(shape_mnk), a_dtype, b, acc_dtype)


def MMA(m: int, n: int, k: int, elem_ty_ab, elem_ty_acc=None) -> MmaOp:
    """The ``mma.sync`` op for an (m, n, k) shape and operand type (FlyDSL's ``rocdl.MFMA`` spelling):
    ``fx.nvvm.MMA(16, 8, 16, fx.BFloat16)``, ``MMA(16, 8, 32, fx.Float8E4M3FN)``, ``MMA(16, 8, 32, fx.Int8)``."""
    if elem_ty_ab in (BFloat16, Float16):
        return MmaF16BF16Op(elem_ty_ab, elem_ty_acc or Float32, (m, n, k))
    if elem_ty_ab in (Float8E4M3FN, Float8E5M2):
        return MmaFP8Op(elem_ty_ab, elem_ty_acc or Float32, (m, n, k))
    if elem_ty_ab in (Int8, Uint8):
        return MmaI8Op(elem_ty_ab, elem_ty_ab, elem_ty_acc or Int32, (m, n, k))
    raise ValueError(f"fx.nvvm.MMA: no mma.sync for {elem_ty_ab!r} (bf16, f16, e4m3/e5m2 and 8-bit integers)")


def mma_sync(a: Vector, b: Vector, c: Vector, *, shape: str = "m16n8k16", a_dtype=None, b_dtype=None) -> Vector:
    """One warp-collective ``mma.sync.aligned.{shape}.row.col``: ``D = A·B + C`` (every lane of the warp
    passes its fragments; see :func:`flydsl.dialects.nvvm.fragment_coords` for which element is where).

    Args:
        a, b, c: this lane's fragments (``vector<8xbf16>``, ``vector<4xbf16>``, ``vector<4xf32>`` for bf16
            m16n8k16). ``a_dtype``/``b_dtype``: ``fx.Uint8`` for unsigned 8-bit operands (the Vector's dtype
            is used otherwise).

    Returns:
        D, a Vector of C's type.
    """
    for name, v in (("a", a), ("b", b), ("c", c)):
        if not isinstance(v, Vector):
            raise TypeError(f"mma_sync: {name} must be a fx.Vector (the lane's fragment), got {v!r}")
    ad, bd = a_dtype or a.dtype, b_dtype or b.dtype
    attrs = {}
    if ad.is_integer:
        attrs = {"a_signed": bool(ad.signed), "b_signed": bool(bd.signed)}
    r = _d.mma_sync(a.ir_value(), b.ir_value(), c.ir_value(), shape=shape, **attrs)
    return Vector._make(r, (c.numel,), c.dtype)


# ---------------------------------------------------------------------------------------------------------
# ldmatrix / stmatrix
# ---------------------------------------------------------------------------------------------------------


def _shared_ptr(p, what: str) -> Pointer:
    p = as_pointer(p)
    if p.address_space != AddressSpace.SHARED:
        raise TypeError(f"{what} needs a shared-memory pointer, got a {p.memspace} one")
    return p


def ldmatrix(ptr, num: int = 4, transpose: bool = False) -> Vector:
    """Warp-collective ``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16``: lane ``8j + r`` passes the
    address of row ``r`` of matrix ``j`` (16 bytes, 16-byte aligned); every lane gets its elements of
    every matrix. Returns a Vector of ``32·num / bits`` elements of the pointer's type."""
    p = _shared_ptr(ptr, "ldmatrix")
    r = _d.ldmatrix(p.ir_value(), num=int(num), trans=bool(transpose))
    return Vector._make(r, (r.type.numel,), p.dtype)


def stmatrix(ptr, value: Vector, num: int = 4, transpose: bool = False) -> None:
    """Warp-collective ``stmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16`` (sm_90): the inverse of
    :func:`ldmatrix`."""
    p = _shared_ptr(ptr, "stmatrix")
    v = value if value.dtype is p.dtype else value.bitcast(p.dtype)
    _d.stmatrix(p.ir_value(), v.ir_value(), num=int(num), trans=bool(transpose))


def _row_layout(num: int) -> Layout:
    """``ldmatrix`` source / ``stmatrix`` destination in bits: lane ``t`` addresses row ``t % (8·num)``."""
    if num == 4:
        return Layout._make((32, 128), (128, 1))
    return Layout._make(((8 * num, 32 // (8 * num)), 128), ((128, 0), 1))


def _frag_layout(num: int, trans: bool) -> Layout:
    """The registers of ``ldmatrix``/``stmatrix`` in bits: matrix ``j`` is 1024 bits (64 × 16), row-major."""
    if not trans:  # lane t holds bits [32t, 32t+32) of every matrix
        return Layout._make((32, (32, num)), (32, (1, 1024))) if num > 1 else Layout._make((32, 32), (32, 1))
    # lane t holds elements (2(t%4)+v, t//4): bits 16·(8·row + col) + b
    if num == 1:
        return Layout._make(((4, 8), (16, 2)), ((256, 16), (1, 128)))
    return Layout._make(((4, 8), ((16, 2), num)), ((256, 16), ((1, 128), 1024)))


class _MatrixOp(CopyOp):
    """Shared by ``ldmatrix`` and ``stmatrix``: ``num`` 8×8 matrices of 16-bit elements per warp."""

    __slots__ = ("transpose", "num_matrices")
    thr_id = _WARP
    _what = ""

    def __init__(self, transpose: bool = False, num_matrices: int = 1):
        if num_matrices not in (1, 2, 4):
            raise ValueError(f"{type(self).__name__}: num_matrices must be 1, 2 or 4, got {num_matrices!r}")
        self.bits, self.kind, self.cache_modifier = 128, "matrix", 0
        self.transpose, self.num_matrices = bool(transpose), num_matrices

    @property
    def name(self) -> str:
        return f"{type(self).__name__}(transpose={self.transpose}, num_matrices={self.num_matrices})"

    def check_elem_bits(self, bits: int) -> None:
        if bits not in (8, 16, 32) or (self.transpose and bits != 16):
            raise ValueError(f"{self.name} moves 16-bit elements (8- and 32-bit ones without transpose), got {bits}")

    def __eq__(self, other):
        return type(other) is type(self) and (self.transpose, self.num_matrices) == (
            other.transpose,
            other.num_matrices,
        )

    def __hash__(self):
        return hash((type(self).__name__, self.transpose, self.num_matrices))

    def __repr__(self) -> str:
        return self.name


def _address(t, what: str) -> Pointer:
    """The address of element 0 of a memory tensor view (its swizzle applied)."""
    if t.memspace in ("register", "coord", "buffer"):
        raise CopyError(f"{what} needs a memory tensor, got a {t.memspace} tensor {t}")
    return t._it._at(L.crd2idx(0, t.layout))


class LdMatrix8x8x16bOp(_MatrixOp):
    """``ldmatrix.sync.aligned.m8n8.x{num_matrices}[.trans].shared.b16`` as a copy op: shared memory (each
    lane one 16-byte row) → registers in the MMA fragment order. CuTe DSL:
    ``cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose, num_matrices)``."""

    def layouts_bits(self) -> tuple:
        dst = _frag_layout(self.num_matrices, self.transpose)
        return _row_layout(self.num_matrices), dst, dst

    def call(self, atom, src, dst, pred) -> None:
        if pred is not None:
            raise CopyError(f"{self.name} is warp-collective and cannot be predicated; copy the whole tile")
        if src.memspace != "shared" or dst.memspace != "register":
            raise CopyError(f"{self.name} copies shared memory into registers, got {src.memspace} -> {dst.memspace}")
        v = ldmatrix(_address(src, "ldmatrix"), self.num_matrices, self.transpose)
        dst.store(v if v.dtype is dst.dtype else v.bitcast(dst.dtype))


class StMatrix8x8x16bOp(_MatrixOp):
    """``stmatrix.sync.aligned.m8n8.x{num_matrices}[.trans].shared.b16`` as a copy op (sm_90): registers in
    the MMA accumulator order → shared memory rows. CuTe DSL: ``cute.nvgpu.warp.StMatrix8x8x16bOp``."""

    def layouts_bits(self) -> tuple:
        src = _frag_layout(self.num_matrices, self.transpose)
        return src, _row_layout(self.num_matrices), src

    def call(self, atom, src, dst, pred) -> None:
        if pred is not None:
            raise CopyError(f"{self.name} is warp-collective and cannot be predicated; copy the whole tile")
        if src.memspace != "register" or dst.memspace != "shared":
            raise CopyError(f"{self.name} copies registers into shared memory, got {src.memspace} -> {dst.memspace}")
        stmatrix(_address(dst, "stmatrix"), src.load(), self.num_matrices, self.transpose)


# ---------------------------------------------------------------------------------------------------------
# cp.async
# ---------------------------------------------------------------------------------------------------------


class LoadCacheMode:
    """``cp.async`` cache modes (CuTe DSL's ``cpasync.LoadCacheMode``): ``ALWAYS`` caches in L1 (``.ca``),
    ``GLOBAL`` in L2 only (``.cg``, 16-byte copies)."""

    ALWAYS = "always"
    GLOBAL = "global"


_CACHE = {"always": "ca", "global": "cg", "ca": "ca", "cg": "cg"}


def cp_async(dst, src, nbytes: int = 16, *, src_size=None, cache_mode: str = "always") -> None:
    """Start an asynchronous copy of ``nbytes`` (4, 8, 16) from global to shared memory (``cp.async``).

    ``src_size`` (bytes, run-time allowed): only the first ``src_size`` bytes are read, the rest of the
    destination is zero-filled (0 reads nothing). The copy completes at a later
    :func:`cp_async_wait_group` covering its group (:func:`cp_async_commit_group` closes a group).
    """
    d, s = _shared_ptr(dst, "cp_async destination"), as_pointer(src)
    if s.address_space != AddressSpace.GLOBAL:
        raise TypeError(f"cp_async reads global memory, got a {s.memspace} source pointer")
    if nbytes not in _d.CP_ASYNC_BYTES:
        raise ValueError(f"cp_async copies 4, 8 or 16 bytes, got {nbytes!r}")
    cache = _CACHE.get(cache_mode)
    if cache is None:
        raise ValueError(f"cp_async: cache_mode must be 'always' or 'global', got {cache_mode!r}")
    if cache == "cg" and nbytes != 16:
        cache = "ca"  # .cg exists for 16-byte copies only; the hint is a hint
    extra = []
    if src_size is not None:
        ss = as_numeric(src_size) if not isinstance(src_size, Numeric) else src_size
        extra = [(ss if type(ss) is Int32 else ss.to(Int32)).ir_value()]
    _d.cp_async(_raw(d), _raw(s), *extra, bytes=int(nbytes), cache=cache)


def _raw(p: Pointer) -> Value:
    return p.ir_value()


def cp_async_commit_group() -> None:
    """Close this thread's current group of ``cp_async`` copies (``cp.async.commit_group``)."""
    _d.cp_async_commit_group()


def cp_async_wait_group(n: int = 0) -> None:
    """Wait until at most ``n`` (a Python int) of this thread's committed groups are still in flight
    (``cp.async.wait_group n``); the others' data is then in shared memory (for this thread; use a
    barrier before other threads read it)."""
    if type(n) is not int or not 0 <= n < 64:
        raise TypeError(f"cp_async_wait_group takes a compile-time int in [0, 64), got {n!r}")
    _d.cp_async_wait_group(n=n)


def syncwarp() -> None:
    """Every lane of the warp waits for the others here; memory accesses before it are ordered before every lane's
    accesses after it (``bar.warp.sync 0xffffffff``; CUDA's ``__syncwarp()``). Reach it with the whole warp."""
    _d.syncwarp()


def cp_async_wait_all() -> None:
    """Wait for every ``cp_async`` of this thread, committed or not (``cp.async.wait_all``)."""
    _d.cp_async_wait_all()


class CopyG2SOp(CopyOp):
    """``cp.async`` as a copy op: global → shared memory, asynchronously, ``bits`` (32/64/128) per thread.
    CuTe DSL: ``cute.nvgpu.cpasync.CopyG2SOp(cache_mode)`` (with ``num_bits_per_copy``).

    ``fx.copy(atom, src, dst, pred=p)``: a false predicate zero-fills the destination and reads nothing
    (``src-size`` 0: CuTe's ZFILL variants), so tiles past a tensor's edge come out as zeros. The copies
    complete at ``fx.nvvm.cp_async_wait_group`` (after ``cp_async_commit_group``).
    """

    __slots__ = ("cache_mode",)

    def __init__(self, cache_mode: str = LoadCacheMode.ALWAYS, bits: int = 128):
        if bits not in (32, 64, 128):
            raise ValueError(f"CopyG2SOp copies 32, 64 or 128 bits per thread, got {bits!r}")
        if cache_mode not in (LoadCacheMode.ALWAYS, LoadCacheMode.GLOBAL):
            raise ValueError(f"CopyG2SOp: cache_mode must be LoadCacheMode.ALWAYS or GLOBAL, got {cache_mode!r}")
        self.bits, self.kind, self.cache_modifier = bits, "cp.async", 0
        self.cache_mode = cache_mode

    @property
    def name(self) -> str:
        return f"CopyG2SOp({self.cache_mode}, {self.bits}b)"

    def call(self, atom, src, dst, pred) -> None:
        if src.memspace != "global" or dst.memspace != "shared":
            raise CopyError(f"{self.name} copies global memory to shared memory, got {src.memspace} -> {dst.memspace}")
        nbytes = self.bits // 8
        size = None
        if pred is not None:
            p = pred if isinstance(pred, Numeric) else Boolean(bool(pred))
            p = p if type(p) is Boolean else p.to(Boolean)
            if p.is_static():
                size = None if p.value else Int32(0)
            else:
                size = p.select(Int32(nbytes), Int32(0))
        cp_async(
            _address(dst, "cp.async"), _address(src, "cp.async"), nbytes, src_size=size, cache_mode=self.cache_mode
        )

    def __eq__(self, other):
        return type(other) is CopyG2SOp and (self.bits, self.cache_mode) == (other.bits, other.cache_mode)

    def __hash__(self):
        return hash(("CopyG2SOp", self.bits, self.cache_mode))

    def __repr__(self) -> str:
        return self.name
