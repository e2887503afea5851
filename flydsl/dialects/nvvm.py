"""``nvvm``: NVIDIA warp-level tensor-core and asynchronous-copy operations.

The ops of this module are the warp-collective instructions of sm_80+ (and ``stmatrix``, sm_90),
declared as data like every other op. Their semantics — which lane owns which element of a matrix
fragment — are given here once, as the PTX ISA defines them, and used by the interpreter, the
front end's MMA atoms (their thread-value layouts are derived from these tables) and the tests:

==========================  ===================================================================
``nvvm.mma_sync``           ``mma.sync.aligned.{shape}.row.col``: D = A·B + C for one warp
``nvvm.ldmatrix``           ``ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16``
``nvvm.stmatrix``           ``stmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16`` (sm_90)
``nvvm.cp_async``           ``cp.async.{ca,cg}.shared.global`` 4/8/16 bytes, optional src-size
``nvvm.cp_async_commit_group``, ``nvvm.cp_async_wait_group``, ``nvvm.cp_async_wait_all``
==========================  ===================================================================

Register operands are typed vectors (``vector<8xbf16>`` for the A fragment of a bf16 m16n8k16); the
code generator packs them into the 32-bit registers the instructions take. Matrices are row-major
(A: M×K) and column-major (B: K×N stored as N×K), PTX's ``.row.col``.

Hopper (sm_90a) operations — wgmma, TMA, mbarrier — live in their own module beside this one.
"""

from __future__ import annotations

import numpy as np

from ..ir import IntegerType, Op, OpDef, PointerType, Trait, VectorType, i32
from ..ir.types import AddressSpace

P = Trait.PURE

__all__ = [
    "mma_sync", "ldmatrix", "stmatrix", "cp_async", "cp_async_commit_group", "cp_async_wait_group",
    "cp_async_wait_all", "syncwarp", "MMA_SHAPES", "MMA_KINDS", "mma_kind", "fragment_coords", "ldmatrix_lanes",
    "operand_count", "CP_ASYNC_BYTES",
]  # fmt: skip

# ---------------------------------------------------------------------------------------------------------
# Fragment ownership (PTX ISA, "Matrix Fragments for mma.m16n8k16 / mma.m16n8k32")
# ---------------------------------------------------------------------------------------------------------

# shape -> (M, N, K)
MMA_SHAPES = {"m16n8k16": (16, 8, 16), "m16n8k32": (16, 8, 32)}

_FP8 = ("f8E4M3FN", "f8E5M2")
_PTX_TYPE = {"bf16": "bf16", "f16": "f16", "f32": "f32", "i32": "s32", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}


def _tname(t) -> str:
    return t.name if hasattr(t, "name") else str(t)


def mma_kind(shape: str, a, b, c) -> str | None:
    """The kind of an ``mma.sync`` (``"f16bf16"``, ``"fp8"``, ``"i8"``) for element types ``a``, ``b``
    (of A and B) and ``c`` (of C and D), or None when PTX has no such instruction."""
    a, b, c = _tname(a), _tname(b), _tname(c)
    if shape == "m16n8k16" and a == b and a in ("bf16", "f16") and (c == "f32" or (c == "f16" and a == "f16")):
        return "f16bf16"
    if shape == "m16n8k32" and a in _FP8 and b in _FP8 and c in ("f32", "f16"):
        return "fp8"
    if shape == "m16n8k32" and a == b == "i8" and c == "i32":
        return "i8"
    return None


# the supported (shape, A/B element, C/D element) combinations, for messages and docs
MMA_KINDS = (
    ("m16n8k16", "bf16", "f32"),
    ("m16n8k16", "f16", "f32"),
    ("m16n8k16", "f16", "f16"),
    ("m16n8k32", "f8E4M3FN|f8E5M2", "f32"),
    ("m16n8k32", "f8E4M3FN|f8E5M2", "f16"),
    ("m16n8k32", "i8 (signed or unsigned)", "i32"),
)


def operand_count(shape: str, operand: str, elem_bits: int) -> int:
    """Elements of ``operand`` ("A", "B", "C") one lane holds for an ``mma.sync`` of ``shape``."""
    m, n, k = MMA_SHAPES[shape]
    size = {"A": m * k, "B": n * k, "C": m * n}[operand]
    return size // 32


def fragment_coords(shape: str, operand: str, elem_bits: int) -> np.ndarray:
    """``(32, V, 2)`` int array: lane ``l``'s value ``i`` of ``operand`` is element ``[row, col]``.

    A is M×K (row = m, col = k), B is K×N (row = k, col = n), C and D are M×N. With ``g = lane >> 2``
    (the PTX ISA's groupID) and ``t = lane & 3`` (threadID_in_group), and ``p = 32 / elem_bits``
    elements per 32-bit register (2 for 16-bit types, 4 for 8-bit ones), value ``i`` sits in register
    ``r = i // p`` at position ``e = i % p``:

    * A (4 registers): ``row = g + 8·(r & 1)``, ``col = p·t + e + 4p·(r >> 1)``;
    * B (2 registers): ``row = p·t + e + 4p·r``, ``col = g``;
    * C/D (``m16n8``): value ``i``: ``row = g + 8·(i >> 1)``, ``col = 2t + (i & 1)`` (for f32/s32
      one value per register, for f16 two).
    """
    m, n, k = MMA_SHAPES[shape]
    v = operand_count(shape, operand, elem_bits)
    lane = np.arange(32)[:, None]
    i = np.arange(v)[None, :]
    g, t = lane >> 2, lane & 3
    if operand == "C":
        row, col = g + 8 * (i >> 1), 2 * t + (i & 1)
    else:
        p = 32 // elem_bits
        r, e = i // p, i % p
        if operand == "A":
            row, col = g + 8 * (r & 1), p * t + e + 4 * p * (r >> 1)
        else:
            row, col = p * t + e + 4 * p * r, np.broadcast_to(g, (32, v))
    return np.stack(np.broadcast_arrays(row, col), axis=-1).astype(np.int64)


def ldmatrix_lanes(num: int, trans: bool, elem_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Where the lanes of one ``ldmatrix``/``stmatrix`` find their data.

    Each 8×8 matrix ``j`` of 16-bit elements has its rows at the addresses given by lanes ``8j … 8j+7``
    (row ``r`` by lane ``8j + r``; lanes ``≥ 8·num`` give no address). Returns ``(row_lane, pos)``:

    * ``row_lane[j, r]``: the lane whose address is row ``r`` of matrix ``j`` (``(num, 8)``);
    * ``pos[l, q] = (j, r, c)``: value ``q`` of lane ``l`` is element ``(r, c)`` of matrix ``j``, in
      units of ``elem_bits`` (``(32, V, 3)``, ``V = 32·num / elem_bits``). Without ``.trans`` lane ``l``
      holds the 4 bytes at byte ``4·(l % 4)`` of row ``l // 4`` of each matrix; with ``.trans`` (16-bit
      only) it holds elements ``(2·(l % 4) + v, l // 4)``, ``v = 0, 1``.
    """
    row_lane = (8 * np.arange(num)[:, None] + np.arange(8)[None, :]).astype(np.int64)
    per = 32 // elem_bits  # values per matrix per lane
    lane = np.arange(32)[:, None]
    q = np.arange(num * per)[None, :]
    j, e = q // per, q % per
    if trans:
        r, c = 2 * (lane % 4) + e, lane // 4
    else:
        r, c = lane // 4, (lane % 4) * per + e
    return row_lane, np.stack(np.broadcast_arrays(j, r, c), axis=-1).astype(np.int64)


# ---------------------------------------------------------------------------------------------------------
# mma.sync
# ---------------------------------------------------------------------------------------------------------


def _mma_infer(types, attrs):
    return [types[2]]


def _mma_verify(op: Op):
    shape = op.attrs.get("shape")
    if shape not in MMA_SHAPES:
        return f"shape must be one of {', '.join(MMA_SHAPES)}, got {shape!r}"
    a, b, c = (v.type for v in op.operands)
    d = op.results[0].type
    for name, t in (("A", a), ("B", b), ("C", c)):
        if not isinstance(t, VectorType):
            return f"operand {name} must be a vector (the lane's fragment), got {t}"
    if d is not c:
        return f"the result (D) must have C's type {c}, got {d}"
    kind = mma_kind(shape, a.elem, b.elem, c.elem)
    if kind is None:
        combos = "; ".join(f"{s} {ab} -> {cd}" for s, ab, cd in MMA_KINDS)
        return f"no mma.sync {shape} with A {a.elem}, B {b.elem}, C/D {c.elem} (supported: {combos})"
    for name, t in (("A", a), ("B", b), ("C", c)):
        want = operand_count(shape, name, t.elem.bitwidth)
        if t.numel != want:
            return f"operand {name} of mma.sync {shape} holds {want} elements per lane, got {t}"
    for key in ("a_signed", "b_signed"):
        if key in op.attrs and not isinstance(op.attrs[key], bool):
            return f"{key} must be a bool"
    return None


def _mma_requires(op: Op) -> tuple[str, ...]:
    """fp8 operands need sm_89 (and PTX 8.7 with f16 accumulators); every other kind sm_80."""
    a, b, c = (getattr(v.type, "elem", v.type) for v in op.operands)
    if mma_kind(op.attrs.get("shape"), a, b, c) != "fp8":
        return ("mma_sync",)
    return ("mma_fp8", "mma_fp8_f16") if _tname(c) == "f16" else ("mma_fp8",)


mma_sync = OpDef(
    "nvvm.mma_sync",
    operands=3,
    traits=(P,),
    attrs=("shape",),
    infer=_mma_infer,
    verify=_mma_verify,
    requires=_mma_requires,
    doc="(a, b, c) -> d: warp-collective D = A·B + C (mma.sync.aligned .row.col); attrs shape, "
    "a_signed/b_signed for i8 (default signed)",
)

# ---------------------------------------------------------------------------------------------------------
# ldmatrix / stmatrix
# ---------------------------------------------------------------------------------------------------------


def _matrix_common(op: Op, ptr_t, val_t, what: str):
    if not isinstance(ptr_t, PointerType) or ptr_t.space != AddressSpace.SHARED:
        return f"{what} takes a shared-memory pointer, got {ptr_t}"
    num = op.attrs.get("num")
    if num not in (1, 2, 4):
        return f"num must be 1, 2 or 4 (matrices), got {num!r}"
    trans = op.attrs.get("trans", False)
    if not isinstance(trans, bool):
        return "trans must be a bool"
    e = ptr_t.elem
    bits = e.bitwidth if hasattr(e, "bitwidth") else 0
    if bits not in (8, 16, 32):
        return f"{what} moves 8-, 16- or 32-bit elements, got {e}"
    if trans and bits != 16:
        return f"{what}.trans transposes 16-bit elements, got {e}"
    want = VectorType(32 * num // bits, e)
    if val_t is not want:
        return f"{what} x{num} of {e} moves {want} per lane, got {val_t}"
    return None


def _ldmatrix_infer(types, attrs):
    e = types[0].elem
    return [VectorType(32 * attrs["num"] // e.bitwidth, e)]


ldmatrix = OpDef(
    "nvvm.ldmatrix",
    operands=1,
    attrs=("num",),
    infer=_ldmatrix_infer,
    verify=lambda op: _matrix_common(op, op.operands[0].type, op.results[0].type, "ldmatrix"),
    requires="ldmatrix",
    doc="(row pointer of this lane) -> fragment: warp-collective load of num 8x8 b16 matrices; attr trans",
)
stmatrix = OpDef(
    "nvvm.stmatrix",
    operands=2,
    results=0,
    attrs=("num",),
    verify=lambda op: _matrix_common(op, op.operands[0].type, op.operands[1].type, "stmatrix"),
    requires="stmatrix",
    doc="(row pointer of this lane, fragment): warp-collective store of num 8x8 b16 matrices (sm_90); attr trans",
)

# ---------------------------------------------------------------------------------------------------------
# cp.async
# ---------------------------------------------------------------------------------------------------------

CP_ASYNC_BYTES = (4, 8, 16)


def _cp_async_verify(op: Op):
    if len(op.operands) not in (2, 3):
        return "cp_async takes (dst, src[, src_size])"
    dst, src = op.operands[0].type, op.operands[1].type
    if not isinstance(dst, PointerType) or dst.space != AddressSpace.SHARED:
        return f"the destination must be a shared-memory pointer, got {dst}"
    if not isinstance(src, PointerType) or src.space != AddressSpace.GLOBAL:
        return f"the source must be a global-memory pointer, got {src}"
    if len(op.operands) == 3 and not (isinstance(op.operands[2].type, IntegerType) and op.operands[2].type is i32):
        return f"src_size must be i32 (bytes), got {op.operands[2].type}"
    n = op.attrs.get("bytes")
    if n not in CP_ASYNC_BYTES:
        return f"bytes must be 4, 8 or 16, got {n!r}"
    cache = op.attrs.get("cache", "ca")
    if cache not in ("ca", "cg"):
        return f"cache must be 'ca' or 'cg', got {cache!r}"
    if cache == "cg" and n != 16:
        return "cp.async.cg copies 16 bytes only"
    return None


cp_async = OpDef(
    "nvvm.cp_async",
    operands=-1,
    results=0,
    attrs=("bytes",),
    verify=_cp_async_verify,
    requires="cp_async",
    doc="(dst shared, src global[, src_size i32]): start an asynchronous copy of `bytes`; the bytes at or past "
    "src_size are zero-filled; completes at a cp_async_wait_group; attr cache ca|cg",
)
cp_async_commit_group = OpDef(
    "nvvm.cp_async_commit_group",
    operands=0,
    results=0,
    requires="cp_async",
    doc="close this thread's group of started cp_async copies",
)


def _wait_verify(op: Op):
    n = op.attrs.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n < 64:
        return f"n must be an int in [0, 64), got {n!r}"
    return None


cp_async_wait_group = OpDef(
    "nvvm.cp_async_wait_group",
    operands=0,
    results=0,
    attrs=("n",),
    verify=_wait_verify,
    requires="cp_async",
    doc="wait until at most n of this thread's committed cp_async groups are pending",
)
cp_async_wait_all = OpDef(
    "nvvm.cp_async_wait_all",
    operands=0,
    results=0,
    requires="cp_async",
    doc="wait for every cp_async of this thread, committed or not",
)
syncwarp = OpDef(
    "nvvm.syncwarp",
    operands=0,
    results=0,
    requires="warp_sync",
    doc="every lane of the warp waits for the others here, and their memory accesses before it are ordered before "
    "every lane's accesses after it (bar.warp.sync 0xffffffff)",
)
