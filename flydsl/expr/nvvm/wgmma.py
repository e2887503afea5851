"""Warpgroup MMA (``wgmma.mma_async``, sm_90a): ``fx.nvvm.WgmmaOp`` for the MMA-atom API, the
instruction-level :func:`wgmma`, its fence/commit/wait, and the shared-memory layouts it reads.

=================================================  ===========================================================
fx.nvvm                                            CuTe DSL counterpart
=================================================  ===========================================================
``WgmmaOp(ab, acc, n, a_major, b_major, a_src)``   ``cute.nvgpu.warpgroup.MmaF16BF16Op`` / ``MmaF8Op`` / int8
``make_smem_layout_gmma(dtype, (mn, k), ...)``     ``sm90_utils.make_smem_layout_a/b`` (``tile_to_shape`` of a
                                                   ``GMMA::Layout_*_Atom``)
``make_gmma_desc(smem_tile, major)``               (implicit in CuTe's ``gemm``; ``make_gmma_desc`` in C++)
``wgmma_fence()``                                  ``cute.nvgpu.warpgroup.fence`` (``warpgroup_arrive``)
``wgmma_commit_group()``                           ``cute.nvgpu.warpgroup.commit_group``
``wgmma_wait_group(n, *accs)``                     ``cute.nvgpu.warpgroup.wait_group``
=================================================  ===========================================================

One instruction is ``D (64×N) = A (64×K) · Bᵀ (B: N×K) [+ D]`` for a warpgroup (128 threads, 4
consecutive warps starting at a multiple of 4): K = 16 for bf16/f16, 32 for e4m3/e5m2 and s8; N a
multiple of 8 up to 256 (s8: 8, 16, 24 or a multiple of 16). B — and A unless it comes from registers —
are read from shared memory through 64-bit matrix descriptors that the library **derives from the
operand's layout** (:func:`flydsl.layout.gmma.gmma_desc_fields`): a kernel never writes descriptor bits.
The accumulator is one ``fx.Vector`` of N/2 Float32 (Int32 for s8) per thread in the PTX ISA's fragment
order (``WgmmaOp.layout_C_tv``). wgmma is asynchronous: fence before the first one, commit the batch,
and read the accumulators only from what :func:`wgmma_wait_group` returns::

    fx.nvvm.wgmma_fence()
    for kk in fx.range_constexpr(BK // 16):
        acc = fx.nvvm.wgmma(acc, sA_tile[kk], sB_tile[kk], accumulate=...)   # or fx.gemm(tiled_mma, ...)
    fx.nvvm.wgmma_commit_group()
    acc = fx.nvvm.wgmma_wait_group(0, acc)
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ... import layout as L
from ...dialects import nvvm_sm90 as _d
from ...ir import AddressSpace
from ...layout import ComposedLayout, Layout
from ...layout.gmma import GmmaLayoutError, encode_desc_static, gmma_desc_fields, gmma_smem_layout
from ..layout_api import is_tensor
from ..mma import MmaError, MmaOp
from ..numeric import BFloat16, Boolean, Float8E4M3FN, Float8E5M2, Float16, Float32, Int8, Int32, Int64, as_numeric
from ..vector import Vector

__all__ = [
    "WgmmaOp", "make_smem_layout_gmma", "make_gmma_desc", "wgmma", "wgmma_fence", "wgmma_commit_group",
    "wgmma_wait_group", "wgmma_acc_coords",
]  # fmt: skip

_TYPES = {BFloat16: "bf16", Float16: "f16", Float8E4M3FN: "f8E4M3FN", Float8E5M2: "f8E5M2", Int8: "i8"}
_WARPGROUP = Layout._make(128, 1)


def make_smem_layout_gmma(dtype, shape, major: str = "K", swizzle: int = 128, stages: int | None = None):
    """The shared-memory layout of a wgmma operand tile ``(MN, K)`` (or ``(MN, K, stages)``): the canonical
    ``major``-major atom with a ``swizzle``-byte swizzle (0/32/64/128) repeated over the tile. TMA writes
    it (:func:`~flydsl.expr.nvvm.tma.make_tma_atom`) and wgmma reads it through derived descriptors.
    Allocate its buffer aligned to 1024 bytes (the swizzle's period)."""
    width = getattr(dtype, "width", None)
    if width is None:
        raise TypeError(f"make_smem_layout_gmma needs an fx numeric type, got {dtype!r}")
    return gmma_smem_layout(width, tuple(shape), major, swizzle, stages)


def wgmma_acc_coords(n: int) -> np.ndarray:
    """``(128, n/2, 2)``: the (row, column) of accumulator value ``i`` of warpgroup thread ``t`` in the
    64×n tile (PTX ISA: warp ``w`` owns rows 16w…16w+15; lane ``l`` value ``i`` is row
    ``l/4 + 8·(i/2 % 2)``, column ``8·(i/4) + 2·(l % 4) + i % 2``)."""
    t = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    lane = t % 32
    row = 16 * (t // 32) + lane // 4 + 8 * ((i // 2) % 2)
    col = 8 * (i // 4) + 2 * (lane % 4) + i % 2
    return np.stack(np.broadcast_arrays(row, col), axis=-1)


def _a_frag_coords(bits: int) -> np.ndarray:
    """``(128, values, 2)``: (row, k) of A register-fragment value ``j`` of thread ``t``."""
    t = np.arange(128)[:, None]
    lane = t % 32
    g, q = lane // 4, lane % 4
    if bits == 16:
        j = np.arange(8)[None, :]
        row, k = g + 8 * ((j // 2) % 2), 2 * q + j % 2 + 8 * (j // 4)
    else:
        j = np.arange(16)[None, :]
        row, k = g + 8 * ((j // 4) % 2), 4 * q + j % 4 + 16 * (j // 8)
    return np.stack(np.broadcast_arrays(16 * (t // 32) + row, k), axis=-1)


class WgmmaOp(MmaOp):
    """``wgmma.mma_async.sync.aligned.m64nNk{16,32}`` as an MMA op (a warpgroup: ``thr_id = 128:1``).

    Args:
        ab_dtype: fx.BFloat16, fx.Float16, fx.Float8E4M3FN, fx.Float8E5M2 or fx.Int8 (A; B too unless
            ``b_dtype``: e4m3 and e5m2 mix).
        acc_dtype: fx.Float32 (fx.Int32 for Int8).
        n: the instruction's N (the atom tile is 64×n).
        a_major, b_major: "K" or "MN" (MN-major only for 16-bit types).
        a_src: "smem" (A read through a descriptor) or "rmem" (A from registers, K-major).

    The A and B thread-value layouts of shared-memory operands give every thread the whole tile (thread
    stride 0): ``fx.gemm`` hands :meth:`call` the shared-memory views, from which the descriptors are
    derived. ``call(d, a, b, c, accumulate=True)``: ``accumulate=False`` ignores C (D = A·B).
    """

    thr_id = _WARPGROUP

    def __init__(self, ab_dtype=BFloat16, acc_dtype=Float32, n: int = 256, a_major="K", b_major="K",
                 a_src="smem", b_dtype=None):  # fmt: skip
        b_dtype = b_dtype or ab_dtype
        for t in (ab_dtype, b_dtype):
            if t not in _TYPES:
                raise ValueError(f"WgmmaOp: no wgmma on {t!r} (bf16, f16, e4m3, e5m2, s8)")
        at, bt = _TYPES[ab_dtype], _TYPES[b_dtype]
        k = _d.WGMMA_TYPES[at][0]
        want_acc = Int32 if at == "i8" else Float32
        if acc_dtype is not want_acc:
            raise ValueError(f"WgmmaOp: {ab_dtype.__name__} accumulates in {want_acc.__name__}, got {acc_dtype!r}")
        if (at == "i8") != (bt == "i8") or (at in ("bf16", "f16") and at != bt):
            raise ValueError(f"WgmmaOp cannot mix {ab_dtype.__name__} and {b_dtype.__name__}")
        if not _d.wgmma_valid_n(at, n):
            raise ValueError(f"WgmmaOp: wgmma has no N={n} for {ab_dtype.__name__} (multiples of 8 up to 256)")
        if a_major not in ("K", "MN") or b_major not in ("K", "MN") or a_src not in ("smem", "rmem"):
            raise ValueError("WgmmaOp: majors are 'K' or 'MN', a_src 'smem' or 'rmem'")
        if at not in ("bf16", "f16") and "MN" in (a_major, b_major):
            raise ValueError(f"WgmmaOp: {ab_dtype.__name__} operands must be K-major")
        if a_src == "rmem" and a_major != "K":
            raise ValueError("WgmmaOp: A in registers is K-major")
        self.shape_mnk = (64, n, k)
        self.a_dtype, self.b_dtype, self.c_dtype = ab_dtype, b_dtype, acc_dtype
        self.a_major, self.b_major, self.a_src = a_major, b_major, a_src
        self.layout_B_tv = Layout._make((128, (n, k)), (0, (1, n)))
        if a_src == "smem":
            self.layout_A_tv = Layout._make((128, (64, k)), (0, (1, 64)))
        else:
            self.layout_A_tv = _a_tv(ab_dtype.width)
        self.layout_C_tv = _c_tv(n)

    @property
    def name(self) -> str:
        m, n, k = self.shape_mnk
        return f"WgmmaOp(m64n{n}k{k}, {self.a_dtype.__name__}, {self.a_major}/{self.b_major}, A in {self.a_src})"

    def _key(self) -> tuple:
        return (self.shape_mnk, self.a_dtype, self.b_dtype, self.c_dtype, self.a_major, self.b_major, self.a_src)

    def make_fragment(self, operand: str, part, dtype):
        if operand == "B" or (operand == "A" and self.a_src == "smem"):
            return part  # read through a descriptor: the fragment is the shared-memory view itself
        return super().make_fragment(operand, part, dtype)

    def call(self, d, a, b, c, accumulate=True, **state) -> None:
        if state:
            raise TypeError(f"{self.name} has atom state 'accumulate' only, got {sorted(state)}")
        cv = c.load()
        a_op = a.load() if self.a_src == "rmem" else a
        d.store(wgmma(cv, a_op, b, op=self, accumulate=accumulate))


def _frag_val_shape(bits: int) -> tuple:
    return (2, 2, 2) if bits == 16 else (4, 2, 2)


def _fit(index: np.ndarray, thr_shape, val_shape) -> Layout:
    """``fit_tv_layout`` with the whole-table check vectorized (the accumulator table of m64n256 has 16k
    entries: checking it element by element through the layout algebra took most of a cold compile)."""

    def unit_strides(shape, axis):
        out, step = [], 1
        for s_ in shape:
            i = (step, 0) if axis == 0 else (0, step)
            out.append(int(index[i] - index[0, 0]) if s_ > 1 else 0)
            step *= s_
        return tuple(out)

    ts, vs = unit_strides(thr_shape, 0), unit_strides(val_shape, 1)

    def values(shape, strides):
        rem = np.arange(int(np.prod(shape)), dtype=np.int64)  # colexicographic: earlier modes fastest
        v = np.zeros_like(rem)
        for s_, d in zip(shape, strides):
            v += rem % s_ * d
            rem //= s_
        return v

    got = values(thr_shape, ts)[:, None] + values(val_shape, vs)[None, :] + index[0, 0]
    if got.shape != index.shape or not (got == index).all():
        raise ValueError(f"the fragment table is not a layout of shape ({thr_shape}, {val_shape})")
    return Layout._make((thr_shape, val_shape), (ts, vs))


@cache
def _c_tv(n: int) -> Layout:
    c = wgmma_acc_coords(n)
    return _fit(c[..., 0] + 64 * c[..., 1], (4, 8, 4), (2, 2, n // 8))


@cache
def _a_tv(bits: int) -> Layout:
    c = _a_frag_coords(bits)
    return _fit(c[..., 0] + 64 * c[..., 1], (4, 8, 4), _frag_val_shape(bits))


def _operand_layout(t, rows: int, k: int):
    """``(swizzle-composed static layout over (rows, k), dynamic offset)`` of a shared operand view."""
    lay = t.layout
    sw, off, outer = (lay.inner, lay.offset, lay.outer) if isinstance(lay, ComposedLayout) else (None, 0, lay)
    if type(outer._shape) is not tuple or len(outer._shape) != 2:
        modes = list(outer) if type(outer._shape) is tuple else [outer]
        if len(modes) == 1 and type(modes[0]._shape) is tuple and len(modes[0]._shape) == 2:
            outer = Layout._make(modes[0]._shape, modes[0]._stride)  # one (rows, k) value mode from fx.gemm
        else:
            raise GmmaLayoutError(f"a wgmma operand view is {rows}x{k} (two modes), got {lay}")
    if L.size(outer._shape[0]) != rows or L.size(outer._shape[1]) != k:
        raise GmmaLayoutError(f"a wgmma operand view is {rows}x{k}, got {lay}")
    static = outer if sw is None else ComposedLayout(sw, 0, outer)
    return static, off


def make_gmma_desc(t, major: str = "K", rows: int | None = None, k: int | None = None) -> Int64:
    """The 64-bit wgmma descriptor of the shared tensor ``t`` (a ``rows × k`` view of a tile laid out by
    :func:`make_smem_layout_gmma`): layout-dependent bits derived at trace time, the address at run time.

    Raises:
        GmmaLayoutError: the view is not a canonical wgmma layout (wrong swizzle, strides or shape).
    """
    if not is_tensor(t) or t.memspace != "shared":
        raise TypeError(f"make_gmma_desc needs a shared-memory tensor view, got {t!r}")
    shp = t.layout._shape
    r = rows if rows is not None else L.size(shp[0] if type(shp) is tuple else shp)
    kk = k if k is not None else L.size(shp[1]) if type(shp) is tuple and len(shp) == 2 else None
    if kk is None:
        inner = t.layout.outer if isinstance(t.layout, ComposedLayout) else t.layout
        kk = L.size(inner._shape[0][1])
    static, off = _operand_layout(t, r, kk)
    f = gmma_desc_fields(static, t.dtype.width, major)
    e = t.dtype.width // 8
    addr = t._it.to_int()
    if not (type(off) is int and off == 0):
        addr = addr + as_numeric(off).to(Int64) * e
    if f.start:
        addr = addr + f.start
    return ((addr >> 4) & 0x3FFF) | Int64(encode_desc_static(f))


def wgmma(acc: Vector, a, b, *, op: WgmmaOp | None = None, accumulate=True) -> Vector:
    """One ``wgmma.mma_async``: ``acc (+)= A · Bᵀ`` for the calling warpgroup; returns the new accumulator
    (valid after :func:`wgmma_wait_group`).

    Args:
        acc: the thread's accumulator (a Vector of N/2 Float32, or Int32 for s8).
        a: the 64×K A view in shared memory (or, for ``op.a_src == "rmem"``, the thread's A fragment as a
            Vector of 8 16-bit / 16 8-bit values).
        b: the N×K B view in shared memory.
        op: the WgmmaOp (default: bf16, K-major, N from ``acc``).
        accumulate: False (static or run-time Boolean) ignores ``acc`` (``D = A·B``).
    """
    if not isinstance(acc, Vector):
        raise TypeError(f"wgmma: the accumulator must be a Vector, got {acc!r}")
    n = 2 * acc.numel
    if op is None:
        op = WgmmaOp(a.dtype if is_tensor(a) else BFloat16, acc.dtype, n)
    m, on, k = op.shape_mnk
    if on != n or acc.dtype is not op.c_dtype:
        raise MmaError(f"wgmma: {op.name} takes a Vector of {on // 2} {op.c_dtype.__name__}, got {acc}")
    if op.a_src == "rmem":
        if not isinstance(a, Vector) or a.dtype.width != op.a_dtype.width or a.numel * a.dtype.width != 128:
            raise MmaError(f"wgmma: A in registers is a Vector of 128 bits of {op.a_dtype.__name__}, got {a!r}")
        av = a.bitcast(Int32).ir_value() if a.dtype is not Int32 else a.ir_value()
    else:
        av = make_gmma_desc(_shared(a, "A"), op.a_major, 64, k).ir_value()
    bv = make_gmma_desc(_shared(b, "B"), op.b_major, n, k).ir_value()
    sd = as_numeric(accumulate)
    sd = (sd if sd.dtype is Boolean else sd != 0).ir_value()
    attrs = dict(n=n, k=k, a_type=_TYPES[op.a_dtype], b_type=_TYPES[op.b_dtype])
    if op.a_dtype in (BFloat16, Float16):
        attrs.update(trans_a=int(op.a_major == "MN"), trans_b=int(op.b_major == "MN"))
    r = _d.wgmma(acc.ir_value(), av, bv, sd, **attrs)
    return Vector._make(r, acc.shape, acc.dtype)


def _shared(t, what: str):
    if not is_tensor(t) or t.memspace != "shared" or t._it.address_space != AddressSpace.SHARED:
        raise TypeError(f"wgmma: {what} must be a shared-memory tensor view, got {t!r}")
    return t


def wgmma_fence() -> None:
    """``wgmma.fence``: order this warpgroup's register writes (accumulators, A fragments) before the wgmmas
    that follow. Issue it before the first wgmma of a batch."""
    _d.wgmma_fence()


def wgmma_commit_group() -> None:
    """``wgmma.commit_group``: close the batch of wgmmas issued since the last commit."""
    _d.wgmma_commit()


def wgmma_wait_group(pending: int, *accs):
    """``wgmma.wait_group``: wait until at most ``pending`` batches are in flight; returns the accumulators
    (Vectors, or register tensors updated in place) as valid values: read accumulators only from here.

    Returns:
        None for no accumulators, the one Vector/tensor for one, else a tuple.
    """
    if type(pending) is not int or not 0 <= pending <= 7:
        raise ValueError(f"wgmma_wait_group takes a static count in [0, 7], got {pending!r}")
    vecs = [a.load() if is_tensor(a) else a for a in accs]
    for v in vecs:
        if not isinstance(v, Vector) or v.dtype not in (Float32, Int32):
            raise TypeError(f"wgmma_wait_group: accumulators are Float32/Int32 Vectors or fragments, got {v!r}")
    res = _d.wgmma_wait(*[v.ir_value() for v in vecs], pending=pending)
    res = [] if res is None else ([res] if not isinstance(res, tuple) else list(res))
    out = []
    for a, v, r in zip(accs, vecs, res):
        nv = Vector._make(r, v.shape, v.dtype)
        if is_tensor(a):
            a.store(nv)
            out.append(a)
        else:
            out.append(nv)
    if not out:
        return None
    return out[0] if len(out) == 1 else tuple(out)
