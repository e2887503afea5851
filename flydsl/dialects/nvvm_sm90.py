"""``nvvm`` (Hopper, sm_90/sm_90a): mbarriers, async proxies, TMA and bulk copies, warpgroup MMA.

Ops declared here (all in the ``nvvm`` dialect; the warp-level ones live beside them):

=============================  ================================================================
synchronization                ``mbarrier_init/arrive/arrive_expect_tx/expect_tx/try_wait/wait``,
                               ``mbarrier_arrive_cluster`` (on another block's mbarrier),
                               ``fence_proxy_async``, ``fence_mbarrier_init``, ``elect_sync``,
                               ``barrier_sync``/``barrier_arrive`` (named barriers), ``setmaxnreg``,
                               cluster special registers, ``cluster_arrive``/``cluster_wait``
cluster shared memory          ``mapa``: a shared pointer into another block of the cluster
                               (``!fly.ptr<T, shared_cluster>``; loads and stores are ``ptr`` ops);
                               ``st_async``: a store there that completes on that block's mbarrier
tensor memory accelerator      ``tma_make_desc`` (host), ``tma_load``, ``tma_load_multicast``, ``tma_store``,
                               ``tma_prefetch_desc``, ``bulk_load``, ``bulk_load_multicast``,
                               ``bulk_store``,
                               ``bulk_commit``, ``bulk_wait``
warpgroup MMA                  ``wgmma_fence``, ``wgmma``, ``wgmma_commit``, ``wgmma_wait``
=============================  ================================================================

An mbarrier is a ``!fly.ptr<i64, shared>``. Its semantics (PTX ISA "mbarrier"): ``init(count)``
starts phase 0 with ``count`` pending arrivals and a transaction count of 0; an arrive decrements the
pending count, ``expect_tx(b)`` adds ``b`` bytes to the transaction count, a TMA/bulk copy completing
``b`` bytes subtracts them; when both reach 0 the phase completes: the phase parity flips and the
pending count is re-armed. ``try_wait(parity)`` is true once the phase of that parity has completed,
i.e. while the barrier's current parity differs from ``parity``.

A TMA descriptor value (``!fly.tma_desc``) is made on the host by ``tma_make_desc`` from a global
pointer, the tensor's extents and strides, and static attributes (element type, box, swizzle, OOB
fill). Its *canonical encoding* (:func:`tma_desc_encode`) is this project's own 128-byte record: the
interpreter reads it directly, and the CUDA runtime turns it into the driver's ``CUtensorMap`` with
``cuTensorMapEncodeTiled`` (flydsl/runtime/tma.py) — one description, two consumers.

``wgmma`` is ``D = A·Bᵀ (+ D)`` for a 64×N×K warpgroup tile (A: 64×K, B: N×K, both read through
64-bit shared-memory matrix descriptors, or A from registers). The accumulator is one flat vector
per thread (``vector<N/2 x f32>``, ``vector<N/2 x i32>`` for s8) in the PTX ISA fragment order.
``wgmma_wait`` takes the accumulators and returns them: a value read after the wait is the completed
one, and the LLVM back end cannot move a read above the wait (the data dependency forbids it).
"""

from __future__ import annotations

import numpy as np

from ..ir import FloatType, IntegerType, Op, OpDef, PointerType, TmaDescType, Trait, VectorType, i1, i32, i64
from ..ir.types import AddressSpace

__all__ = [
    "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_cluster", "mbarrier_arrive_expect_tx", "mbarrier_expect_tx",
    "mbarrier_try_wait", "mbarrier_wait", "fence_proxy_async", "fence_mbarrier_init", "elect_sync", "setmaxnreg",
    "barrier_sync", "barrier_arrive", "cluster_ctarank", "cluster_id", "cluster_ctaid", "cluster_dim", "mapa",
    "st_async", "ST_ASYNC_SHAPES", "cluster_arrive", "cluster_wait", "tma_make_desc",
    "tma_load", "tma_store", "tma_prefetch_desc", "bulk_load", "bulk_load_multicast", "bulk_store", "bulk_commit",
    "bulk_wait",
    "wgmma_fence", "wgmma", "wgmma_commit", "wgmma_wait", "PROXY_SPACES", "TMA_SWIZZLES", "TMA_DTYPES",
    "TmaFields", "tma_desc_encode", "tma_desc_decode", "WGMMA_TYPES", "wgmma_valid_n", "SM90_OPS",
    "TASK_OPS", "CLUSTER_OPS",
]  # fmt: skip

P = Trait.PURE


def _is_bar(t) -> bool:
    return isinstance(t, PointerType) and t.space == AddressSpace.SHARED and t.elem is i64


def _bar_check(v, what: str = "the mbarrier") -> str | None:
    if not _is_bar(v.type):
        return f"{what} must be a !fly.ptr<i64, shared>, got {v.type}"
    return None


def _cluster_bar_check(v) -> str | None:
    t = v.type
    if isinstance(t, PointerType) and t.space == AddressSpace.SHARED_CLUSTER and t.elem is i64:
        return None
    return f"the mbarrier must be a !fly.ptr<i64, shared_cluster> (from mapa), got {t}"


def _i32_check(v, what: str) -> str | None:
    return None if v.type is i32 else f"{what} must be i32, got {v.type}"


def _first_error(*msgs):
    for m in msgs:
        if m:
            return m
    return None


# -- mbarriers ------------------------------------------------------------------------------------


def _bar_i32_verify(what: str):
    def verify(op: Op):
        return _first_error(_bar_check(op.operands[0]), _i32_check(op.operands[1], what))

    return verify


mbarrier_init = OpDef(
    "nvvm.mbarrier_init",
    requires="mbarrier",
    operands=2,
    results=0,
    verify=_bar_i32_verify("the arrival count"),
    doc="(bar, count): start phase 0 expecting `count` arrivals (mbarrier.init.shared.b64)",
)


def _arrive_verify(op: Op):
    if len(op.operands) not in (1, 2):
        return "mbarrier_arrive takes (bar) or (bar, count)"
    return _first_error(
        _bar_check(op.operands[0]), _i32_check(op.operands[1], "the count") if len(op.operands) == 2 else None
    )


mbarrier_arrive = OpDef(
    "nvvm.mbarrier_arrive",
    requires="mbarrier",
    operands=-1,
    results=0,
    verify=_arrive_verify,
    doc="(bar[, count]): each active thread arrives `count` (default 1) times (mbarrier.arrive)",
)
mbarrier_arrive_cluster = OpDef(
    "nvvm.mbarrier_arrive_cluster",
    requires="mbarrier_cluster",
    operands=1,
    results=0,
    verify=lambda op: _cluster_bar_check(op.operands[0]),
    doc="(mbarrier ptr<i64, shared_cluster>): each active thread arrives once on that mbarrier of a block of the "
    "cluster, releasing its earlier accesses at block scope (mbarrier.arrive.release.cta.shared::cluster)",
)
mbarrier_arrive_expect_tx = OpDef(
    "nvvm.mbarrier_arrive_expect_tx",
    requires="mbarrier",
    operands=2,
    results=0,
    verify=_bar_i32_verify("the transaction byte count"),
    doc="(bar, bytes): expect `bytes` more transaction bytes, then arrive (mbarrier.arrive.expect_tx)",
)
mbarrier_expect_tx = OpDef(
    "nvvm.mbarrier_expect_tx",
    requires="mbarrier",
    operands=2,
    results=0,
    verify=_bar_i32_verify("the transaction byte count"),
    doc="(bar, bytes): expect `bytes` more transaction bytes without arriving (mbarrier.expect_tx)",
)
mbarrier_try_wait = OpDef(
    "nvvm.mbarrier_try_wait",
    requires="mbarrier",
    operands=2,
    infer=lambda t, a: [i1],
    verify=_bar_i32_verify("the phase parity"),
    doc="(bar, parity) -> i1: whether the phase of that parity has completed (mbarrier.try_wait.parity)",
)
mbarrier_wait = OpDef(
    "nvvm.mbarrier_wait",
    requires="mbarrier",
    operands=2,
    results=0,
    verify=_bar_i32_verify("the phase parity"),
    doc="(bar, parity): block until the phase of that parity has completed (a try_wait.parity loop)",
)

# -- fences, elect, registers, named barriers ------------------------------------------------------

PROXY_SPACES = ("shared_cta", "global", "all")
fence_proxy_async = OpDef(
    "nvvm.fence_proxy_async",
    requires="tma",
    operands=0,
    results=0,
    attrs=("space",),
    verify=lambda op: (
        None
        if op.attrs["space"] in PROXY_SPACES
        else f"space must be one of {', '.join(PROXY_SPACES)}, got {op.attrs['space']!r}"
    ),
    doc="order generic-proxy accesses before async-proxy ones (TMA, wgmma) (fence.proxy.async)",
)
fence_mbarrier_init = OpDef(
    "nvvm.fence_mbarrier_init",
    requires="mbarrier",
    operands=0,
    results=0,
    doc="make mbarrier initializations visible to the async proxy and the cluster (fence.mbarrier_init)",
)
griddep_wait = OpDef(
    "nvvm.griddep_wait",
    requires="griddepcontrol",
    operands=0,
    results=0,
    doc="wait until the grids this one depends on have completed and their memory is visible "
    "(griddepcontrol.wait; returns at once without a programmatic dependency)",
)
griddep_launch_dependents = OpDef(
    "nvvm.griddep_launch_dependents",
    requires="griddepcontrol",
    operands=0,
    results=0,
    doc="let the dependent grid launch before this one completes (griddepcontrol.launch_dependents)",
)
elect_sync = OpDef(
    "nvvm.elect_sync",
    requires="elect",
    operands=0,
    infer=lambda t, a: [i1],
    doc="true in exactly one active lane of the warp: the lowest (elect.sync)",
)


def _setmaxnreg_verify(op: Op):
    n, act = op.attrs.get("count"), op.attrs.get("action")
    if act not in ("inc", "dec"):
        return f"action must be 'inc' or 'dec', got {act!r}"
    if type(n) is not int or not 24 <= n <= 256 or n % 8:
        return f"setmaxnreg takes a register count in [24, 256] that is a multiple of 8, got {n!r}"
    return None


setmaxnreg = OpDef(
    "nvvm.setmaxnreg",
    requires="setmaxnreg",
    operands=0,
    results=0,
    attrs=("count", "action"),
    verify=_setmaxnreg_verify,
    doc="warpgroup-wide register reallocation (setmaxnreg.{inc,dec}.sync.aligned.u32 count)",
)


def _named_barrier_verify(op: Op):
    return _first_error(_i32_check(op.operands[0], "the barrier id"), _i32_check(op.operands[1], "the thread count"))


barrier_sync = OpDef(
    "nvvm.barrier_sync",
    operands=2,
    results=0,
    verify=_named_barrier_verify,
    doc="(id, count): wait at named barrier `id` until `count` threads (whole warps) arrived (bar.sync)",
)
barrier_arrive = OpDef(
    "nvvm.barrier_arrive",
    operands=2,
    results=0,
    verify=_named_barrier_verify,
    doc="(id, count): arrive at named barrier `id` without waiting (bar.arrive)",
)


def _cluster_sreg(name: str, doc: str, dims: bool = True):
    def verify(op: Op):
        if dims and op.attrs.get("dimension") not in ("x", "y", "z"):
            return f"dimension must be one of x, y, z, got {op.attrs.get('dimension')!r}"
        return None

    return OpDef(name, operands=0, traits=(P,), infer=lambda t, a: [i32], verify=verify, requires="cluster", doc=doc)


cluster_ctarank = _cluster_sreg("nvvm.cluster_ctarank", "linear rank of this block in its cluster", dims=False)
cluster_id = _cluster_sreg("nvvm.cluster_id", "cluster index in the grid (x|y|z)")
cluster_ctaid = _cluster_sreg("nvvm.cluster_ctaid", "block index within its cluster (x|y|z)")
cluster_dim = _cluster_sreg("nvvm.cluster_dim", "blocks per cluster (x|y|z)")


# -- the cluster's shared memory and barrier ---------------------------------------------------------


def _mapa_verify(op: Op):
    p, rank = op.operands
    if not isinstance(p.type, PointerType) or p.type.space != AddressSpace.SHARED:
        return f"mapa maps a shared pointer, got {p.type}"
    if rank.type is not i32:
        return f"the block rank must be an i32, got {rank.type}"
    return None


mapa = OpDef(
    "nvvm.mapa",
    operands=2,
    traits=(P,),
    requires="cluster",
    infer=lambda t, a: [PointerType(t[0].elem, AddressSpace.SHARED_CLUSTER)],
    verify=_mapa_verify,
    doc="(ptr<shared>, rank) -> ptr<shared_cluster>: the same offset in the shared memory of block `rank` of "
    "the cluster (mapa.shared::cluster)",
)


def _st_async_verify(op: Op):
    v, dst, bar = op.operands
    t = v.type
    elem, n = (t.elem, t.shape[0]) if isinstance(t, VectorType) and len(t.shape) == 1 else (t, 1)
    bits = getattr(elem, "width", 0)
    if not isinstance(elem, (FloatType, IntegerType)) or (bits, n) not in ST_ASYNC_SHAPES:
        return f"st_async stores 1, 2 or 4 values of 32 bits or 1 or 2 of 64 bits, got {t}"
    if not isinstance(dst.type, PointerType) or dst.type.space != AddressSpace.SHARED_CLUSTER:
        return f"the destination must be a shared_cluster pointer (from mapa), got {dst.type}"
    return _cluster_bar_check(bar)


ST_ASYNC_SHAPES = {(32, 1), (32, 2), (32, 4), (64, 1), (64, 2)}  # (bits per value, values)
st_async = OpDef(
    "nvvm.st_async",
    operands=3,
    results=0,
    requires="st_async",
    verify=_st_async_verify,
    doc="(value, ptr<shared_cluster>, mbarrier ptr<i64, shared_cluster>): store the value into a block of the "
    "cluster and complete its byte count on that block's mbarrier (st.async...mbarrier::complete_tx::bytes): "
    "the receiver learns the data landed from its own mbarrier, with no fence",
)


def _cluster_barrier_verify(op: Op):
    for k in op.defn.attrs:
        if not isinstance(op.attrs.get(k), bool):
            return f"{k} must be a bool, got {op.attrs.get(k)!r}"
    return None


cluster_arrive = OpDef(
    "nvvm.cluster_arrive",
    operands=0,
    results=0,
    attrs=("relaxed", "aligned"),
    verify=_cluster_barrier_verify,
    requires=lambda op: ("cluster", "cluster_relaxed") if op.attrs.get("relaxed") else "cluster",
    doc="arrive at the cluster barrier: release (this thread's prior accesses become visible to the cluster's "
    "threads after their wait) or relaxed (no ordering); aligned: the whole warp executes it "
    "(barrier.cluster.arrive[.relaxed][.aligned])",
)
cluster_wait = OpDef(
    "nvvm.cluster_wait",
    operands=0,
    results=0,
    attrs=("aligned",),
    verify=_cluster_barrier_verify,
    requires="cluster",
    doc="wait until every thread of the cluster arrived (acquire); aligned: the whole warp executes it "
    "(barrier.cluster.wait[.aligned])",
)

# -- TMA descriptors: the canonical 128-byte encoding ----------------------------------------------

TMA_SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}  # swizzle bytes -> CU_TENSOR_MAP_SWIZZLE_*
# IR element type -> (CU_TENSOR_MAP_DATA_TYPE_*, bytes). fp8 and int8 move as bytes (UINT8), as CUTLASS does.
TMA_DTYPES = {
    "i8": (0, 1), "f8E4M3FN": (0, 1), "f8E5M2": (0, 1), "i16": (1, 2), "i32": (3, 4), "i64": (5, 8),
    "f16": (6, 2), "f32": (7, 4), "f64": (8, 8), "bf16": (9, 2),
}  # fmt: skip
_TMA_ELEM_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2}
_TMA_MAGIC = 0x544D4146  # "FAMT"


class TmaFields:
    """The decoded fields of a canonical TMA descriptor (dimension 0 is the fastest-varying one).

    Attributes:
        address: global byte address of element (0, …, 0). rank: 1-5.
        dtype_code: ``CU_TENSOR_MAP_DATA_TYPE_*``. elem_bytes: its size.
        dims: extent per dimension (elements). strides: byte stride of dimensions 1..rank-1.
        box: box extent per dimension. elem_strides: traversal stride per dimension (1 = dense).
        swizzle: 0, 32, 64 or 128 (bytes). oob_nan: fill out-of-bounds elements with NaN (else 0).
        l2_promotion: 0-3 (``CU_TENSOR_MAP_L2_PROMOTION_*``).
    """

    __slots__ = ("address", "rank", "dtype_code", "dims", "strides", "box", "elem_strides", "swizzle", "oob_nan",
                 "l2_promotion")  # fmt: skip

    def __init__(self, address, dtype_code, dims, strides, box, elem_strides=None, swizzle=0, oob_nan=False,
                 l2_promotion=0):  # fmt: skip
        self.address = int(address)
        self.rank = len(dims)
        self.dtype_code = int(dtype_code)
        self.dims = tuple(int(d) for d in dims)
        self.strides = tuple(int(s) for s in strides)
        self.box = tuple(int(b) for b in box)
        self.elem_strides = tuple(int(e) for e in (elem_strides or (1,) * self.rank))
        self.swizzle = int(swizzle)
        self.oob_nan = bool(oob_nan)
        self.l2_promotion = int(l2_promotion)

    @property
    def elem_bytes(self) -> int:
        return _TMA_ELEM_BYTES[self.dtype_code]

    @property
    def box_bytes(self) -> int:
        """Bytes one load of the whole box moves (what it adds to an mbarrier's transaction count)."""
        n = self.elem_bytes
        for b, e in zip(self.box, self.elem_strides):
            n *= -(-b // e)
        return n

    def key(self) -> tuple:
        return (self.address, self.dtype_code, self.dims, self.strides, self.box, self.elem_strides, self.swizzle,
                self.oob_nan, self.l2_promotion)  # fmt: skip

    def check(self) -> str | None:
        """The first violated ``cuTensorMapEncodeTiled`` requirement, or None."""
        r = self.rank
        if not 1 <= r <= 5:
            return f"a TMA tensor has 1 to 5 dimensions, got {r}"
        if len(self.strides) != r - 1 or len(self.box) != r or len(self.elem_strides) != r:
            return "the TMA descriptor fields have inconsistent ranks"
        if self.address % 16:
            return f"the global address 0x{self.address:x} is not 16-byte aligned"
        if any(not 1 <= d < 1 << 32 for d in self.dims):
            return f"tensor extents must be in [1, 2^32), got {self.dims}"
        if any(s % 16 or not 0 < s < 1 << 40 for s in self.strides):
            return f"TMA needs byte strides that are positive multiples of 16, got {self.strides}"
        if any(not 1 <= b <= 256 for b in self.box):
            return f"box extents must be in [1, 256], got {self.box}"
        if any(not 1 <= e <= 8 for e in self.elem_strides):
            return f"element strides must be in [1, 8], got {self.elem_strides}"
        inner = self.box[0] * self.elem_bytes
        if inner % 16:
            return f"the box's inner extent is {inner} bytes; TMA needs a multiple of 16"
        if self.swizzle not in TMA_SWIZZLES:
            return f"swizzle must be 0, 32, 64 or 128 bytes, got {self.swizzle}"
        if self.swizzle and inner > self.swizzle:
            return f"with a {self.swizzle}-byte swizzle the box's inner extent ({inner} bytes) must not exceed it"
        return None


def tma_desc_encode(f: TmaFields) -> np.ndarray:
    """The canonical 128-byte encoding of ``f`` as an int64 ``(1, 16)`` array (the IR value)."""
    b = np.zeros(128, np.uint8)
    head = np.array([_TMA_MAGIC], np.uint32).view(np.uint8)
    b[0:4] = head
    b[4] = 1  # version
    b[5] = f.rank
    b[6] = f.dtype_code
    b[7] = TMA_SWIZZLES.get(f.swizzle, 0)
    b[8] = 1 if f.oob_nan else 0
    b[9] = f.l2_promotion
    b[16:24] = np.array([f.address], np.uint64).view(np.uint8)
    b[24:64] = np.array(list(f.dims) + [0] * (5 - f.rank), np.uint64).view(np.uint8)
    b[64:96] = np.array(list(f.strides) + [0] * (4 - len(f.strides)), np.uint64).view(np.uint8)
    b[96:106] = np.array(list(f.box) + [0] * (5 - f.rank), np.uint16).view(np.uint8)
    b[106 : 106 + f.rank] = f.elem_strides
    return b.view(np.int64).reshape(1, 16)


_SWIZZLE_BYTES = {v: k for k, v in TMA_SWIZZLES.items()}


def tma_desc_decode(value) -> TmaFields | None:
    """The fields of a canonical descriptor value (int64 ``(…, 16)``/bytes), or None when it is not one."""
    b = np.ascontiguousarray(np.asarray(value).reshape(-1)[:16]).view(np.uint8)
    if b.shape[0] != 128 or int(b[0:4].view(np.uint32)[0]) != _TMA_MAGIC or b[4] != 1:
        return None
    r = int(b[5])
    if not 1 <= r <= 5:
        return None
    return TmaFields(
        address=int(b[16:24].view(np.uint64)[0]),
        dtype_code=int(b[6]),
        dims=b[24:64].view(np.uint64)[:r].tolist(),
        strides=b[64:96].view(np.uint64)[: r - 1].tolist(),
        box=b[96:106].view(np.uint16)[:r].tolist(),
        elem_strides=b[106 : 106 + r].tolist(),
        swizzle=_SWIZZLE_BYTES.get(int(b[7]), 0),
        oob_nan=bool(b[8]),
        l2_promotion=int(b[9]),
    )


def _make_desc_verify(op: Op):
    ops = op.operands
    rank = len(op.attrs.get("box") or ())
    if not 1 <= rank <= 5:
        return f"box must list 1 to 5 extents, got {op.attrs.get('box')!r}"
    if len(ops) != 1 + rank + (rank - 1):
        return f"tma_make_desc takes (ptr, {rank} extents, {rank - 1} strides) for a rank-{rank} box"
    p = ops[0].type
    if not isinstance(p, PointerType) or p.space != AddressSpace.GLOBAL:
        return f"the tensor must be a global pointer, got {p}"
    if str(p.elem) not in TMA_DTYPES:
        return f"TMA cannot move elements of type {p.elem}"
    for v in ops[1:]:
        if not isinstance(v.type, IntegerType) or v.type.width not in (32, 64):
            return f"extents and strides must be i32 or i64, got {v.type}"
    if op.attrs.get("swizzle", 0) not in TMA_SWIZZLES:
        return f"swizzle must be 0, 32, 64 or 128, got {op.attrs.get('swizzle')!r}"
    return None


tma_make_desc = OpDef(
    "nvvm.tma_make_desc",
    requires="tma",
    operands=-1,
    traits=(P,),
    attrs=("box",),
    infer=lambda t, a: [TmaDescType()],
    verify=_make_desc_verify,
    doc="host: (ptr, extents..., element strides of dims 1..) -> !fly.tma_desc; dim 0 fastest; "
    "attrs box, swizzle (bytes), oob_nan, l2_promotion",
)


# -- TMA and bulk copies ----------------------------------------------------------------------------


def _tma_verify(load: bool, multicast: bool = False):
    """(desc, smem side[, mbarrier[, block mask]], 1 to 5 coordinates): load has the mbarrier, store not; a
    multicast load the cluster's block mask after it."""
    fixed = (3 + multicast) if load else 2
    what = (
        "tma_load_multicast takes (desc, smem dst, mbarrier, block mask i32, 1 to 5 coordinates)"
        if multicast
        else "tma_load takes (desc, smem dst, mbarrier, 1 to 5 coordinates)"
        if load
        else ("tma_store takes (desc, smem src, 1 to 5 coordinates)")
    )

    def verify(op: Op):
        ops = op.operands
        if not fixed + 1 <= len(ops) <= fixed + 5:
            return what
        d, smem = ops[:2]
        if not isinstance(d.type, TmaDescType):
            return f"the descriptor must be a !fly.tma_desc, got {d.type}"
        if not isinstance(smem.type, PointerType) or smem.type.space != AddressSpace.SHARED:
            return f"the shared-memory side must be a shared pointer, got {smem.type}"
        return _first_error(
            _bar_check(ops[2]) if load else None,
            _i32_check(ops[3], "the block mask") if multicast else None,
            *[_i32_check(c, "a coordinate") for c in ops[fixed:]],
        )

    return verify


tma_load = OpDef(
    "nvvm.tma_load",
    requires="tma",
    operands=-1,
    results=0,
    verify=_tma_verify(load=True),
    doc="(desc, smem dst, mbarrier, coords...): copy the box at coords into shared memory, out-of-bounds "
    "elements as 0, completing the box's bytes on the mbarrier (cp.async.bulk.tensor tile mode)",
)


tma_load_multicast = OpDef(
    "nvvm.tma_load_multicast",
    requires="tma_multicast",
    operands=-1,
    results=0,
    verify=_tma_verify(load=True, multicast=True),
    doc="(desc, smem dst, mbarrier, block mask i32, coords...): one read of the box at coords, written at the same "
    "shared offset of every block of the cluster whose rank's bit is set in the mask (bits 0-15), out-of-bounds "
    "elements as 0, each completing the box's bytes on its mbarrier at the same offset "
    "(cp.async.bulk.tensor ... .multicast::cluster)",
)


tma_store = OpDef(
    "nvvm.tma_store",
    requires="tma",
    operands=-1,
    results=0,
    verify=_tma_verify(load=False),
    doc="(desc, smem src, coords...): write the box from shared memory; out-of-bounds elements are dropped "
    "(cp.async.bulk.tensor ... bulk_group)",
)
tma_prefetch_desc = OpDef(
    "nvvm.tma_prefetch_desc",
    requires="tma",
    operands=1,
    results=0,
    verify=lambda op: (
        None if isinstance(op.operands[0].type, TmaDescType) else f"expected a !fly.tma_desc, got {op.operands[0].type}"
    ),
    doc="prefetch the descriptor into the cache (prefetch.tensormap)",
)


def _bulk_verify(dst_space, src_space, with_bar: bool, multicast: bool = False):
    def verify(op: Op):
        n = (4 if with_bar else 3) + multicast
        if len(op.operands) != n:
            return f"{op.defn.name} takes {n} operands"
        dst, src, nb = op.operands[:3]
        for v, sp, what in ((dst, dst_space, "destination"), (src, src_space, "source")):
            if not isinstance(v.type, PointerType) or v.type.space != sp:
                return f"the {what} must be a {AddressSpace.NAMES[sp]} pointer, got {v.type}"
        return _first_error(
            _i32_check(nb, "the byte count"),
            _bar_check(op.operands[3]) if with_bar else None,
            _i32_check(op.operands[4], "the block mask") if multicast else None,
        )

    return verify


bulk_load = OpDef(
    "nvvm.bulk_load",
    requires="tma",
    operands=-1,
    results=0,
    verify=_bulk_verify(AddressSpace.SHARED, AddressSpace.GLOBAL, True),
    doc="(smem dst, global src, bytes, mbarrier): a 1-D bulk copy completing on the mbarrier "
    "(cp.async.bulk; 16-byte aligned, bytes a multiple of 16)",
)
bulk_load_multicast = OpDef(
    "nvvm.bulk_load_multicast",
    requires="tma_multicast",
    operands=-1,
    results=0,
    verify=_bulk_verify(AddressSpace.SHARED, AddressSpace.GLOBAL, True, multicast=True),
    doc="(smem dst, global src, bytes, mbarrier, block mask i32): one read of the bytes, written at the same "
    "shared offset of every block of the cluster whose rank's bit is set in the mask (bits 0-15), each "
    "completing them on its mbarrier at the same offset (cp.async.bulk...multicast::cluster)",
)
bulk_store = OpDef(
    "nvvm.bulk_store",
    requires="tma",
    operands=-1,
    results=0,
    verify=_bulk_verify(AddressSpace.GLOBAL, AddressSpace.SHARED, False),
    doc="(global dst, smem src, bytes): a 1-D bulk copy into global memory (cp.async.bulk ... bulk_group)",
)


def _prefetch_verify(op: Op):
    if len(op.operands) != 2:
        return f"{op.defn.name} takes 2 operands"
    src, nb = op.operands
    if not isinstance(src.type, PointerType) or src.type.space != AddressSpace.GLOBAL:
        return f"the source must be a global pointer, got {src.type}"
    return _i32_check(nb, "the byte count")


bulk_prefetch_l2 = OpDef(
    "nvvm.bulk_prefetch_l2",
    requires="tma",
    operands=2,
    results=0,
    verify=_prefetch_verify,
    doc="(global src, bytes): bring the bytes into L2, no destination, no completion "
    "(cp.async.bulk.prefetch.L2; 16-byte aligned, bytes a multiple of 16)",
)
bulk_commit = OpDef(
    "nvvm.bulk_commit", operands=0, results=0, requires="tma", doc="close a bulk async-group (commit_group)"
)


def _bulk_wait_verify(op: Op):
    n = op.attrs.get("pending")
    if type(n) is not int or not 0 <= n <= 63:
        return f"pending must be an int in [0, 63], got {n!r}"
    return None


bulk_wait = OpDef(
    "nvvm.bulk_wait",
    operands=0,
    results=0,
    requires="tma",
    attrs=("pending",),
    verify=_bulk_wait_verify,
    doc="wait until at most `pending` bulk async-groups are in flight (attr read: only their source reads)",
)

# -- warpgroup MMA ----------------------------------------------------------------------------------

# A/B element type -> (K of one instruction, accumulator element types allowed)
WGMMA_TYPES = {
    "f16": (16, ("f32",)),
    "bf16": (16, ("f32",)),
    "f8E4M3FN": (32, ("f32",)),
    "f8E5M2": (32, ("f32",)),
    "i8": (32, ("i32",)),
}


def wgmma_valid_n(ab: str, n: int) -> bool:
    """The PTX ISA's N for m64nNk*: multiples of 8 up to 256; for s8, 8, 16, 24 and multiples of 16 from 32."""
    if type(n) is not int or not 8 <= n <= 256 or n % 8:
        return False
    if ab == "i8":
        return n <= 24 or n % 16 == 0
    return True


def _wgmma_verify(op: Op):
    a = op.attrs
    ab, bt, n, k = a.get("a_type"), a.get("b_type"), a.get("n"), a.get("k")
    if ab not in WGMMA_TYPES or bt not in WGMMA_TYPES:
        return f"unsupported wgmma input types {ab!r} x {bt!r}"
    if (ab == "i8") != (bt == "i8") or (ab in ("f16", "bf16") and ab != bt):
        return f"wgmma cannot mix {ab} and {bt}"
    if a.get("m", 64) != 64 or k != WGMMA_TYPES[ab][0]:
        return f"wgmma on {ab} is m64nNk{WGMMA_TYPES[ab][0]}, got m{a.get('m')}k{k}"
    if not wgmma_valid_n(ab, n):
        return f"wgmma has no N={n} for {ab}"
    acc, av, bd, sd = op.operands
    want = VectorType((n // 2,), i32 if ab == "i8" else FloatType("f32"))
    if acc.type is not want or op.results[0].type is not want:
        return f"the accumulator must be {want} for m64n{n}, got {acc.type}"
    if av.type is i64:
        pass  # A from shared memory through a descriptor
    elif av.type is VectorType((4,), i32):
        if a.get("trans_a", 0):
            return "A in registers cannot be transposed"
    else:
        return f"A must be an i64 descriptor or a vector<4xi32> register fragment, got {av.type}"
    if bd.type is not i64 or sd.type is not i1:
        return "B must be an i64 descriptor and scale_d an i1"
    if ab not in ("f16", "bf16") and (a.get("trans_a", 0) or a.get("trans_b", 0)):
        return f"wgmma on {ab} reads only K-major operands (no transpose)"
    if ab == "i8" and (a.get("scale_a", 1) != 1 or a.get("scale_b", 1) != 1):
        return "wgmma on s8 has no input negation"
    if a.get("scale_a", 1) not in (1, -1) or a.get("scale_b", 1) not in (1, -1):
        return "scale_a and scale_b are 1 or -1"
    return None


wgmma = OpDef(
    "nvvm.wgmma",
    requires="wgmma",
    operands=4,
    attrs=("n", "k", "a_type", "b_type"),
    infer=lambda t, a: [t[0]],
    verify=_wgmma_verify,
    doc="(acc, A desc|frag, B desc, scale_d) -> acc: D = A·Bᵀ + (scale_d ? acc : 0) for m64nNk (async; "
    "attrs n, k, a_type, b_type, trans_a, trans_b, scale_a, scale_b)",
)
wgmma_fence = OpDef(
    "nvvm.wgmma_fence",
    operands=0,
    results=0,
    requires="wgmma",
    doc="order register writes before the next wgmma (wgmma.fence)",
)
wgmma_commit = OpDef(
    "nvvm.wgmma_commit", operands=0, results=0, requires="wgmma", doc="close a wgmma group (wgmma.commit_group)"
)


def _wgmma_wait_verify(op: Op):
    n = op.attrs.get("pending")
    if type(n) is not int or not 0 <= n <= 7:
        return f"pending must be an int in [0, 7], got {n!r}"
    if [v.type for v in op.operands] != [r.type for r in op.results]:
        return "wgmma_wait returns its operands (the accumulators it completes)"
    return None


wgmma_wait = OpDef(
    "nvvm.wgmma_wait",
    requires="wgmma",
    operands=-1,
    results=-1,
    attrs=("pending",),
    infer=lambda t, a: list(t),
    verify=_wgmma_wait_verify,
    doc="(accs...) -> accs: wait until at most `pending` wgmma groups are in flight (wgmma.wait_group)",
)

SM90_OPS = tuple(o.name for o in (
    mbarrier_init, mbarrier_arrive, mbarrier_arrive_cluster, mbarrier_arrive_expect_tx, mbarrier_expect_tx,
    mbarrier_try_wait, mbarrier_wait, fence_proxy_async, fence_mbarrier_init, griddep_wait, griddep_launch_dependents,
    elect_sync, setmaxnreg, barrier_sync, barrier_arrive,
    cluster_ctarank, cluster_id, cluster_ctaid, cluster_dim, mapa, st_async, cluster_arrive, cluster_wait,
    tma_make_desc, tma_load, tma_load_multicast, tma_store, tma_prefetch_desc,
    bulk_load, bulk_load_multicast, bulk_store, bulk_prefetch_l2, bulk_commit, bulk_wait,
    wgmma_fence, wgmma, wgmma_commit, wgmma_wait,
))  # fmt: skip
# ops whose threads wait on other warps: a kernel that has one runs warp by warp in the interpreter
TASK_OPS = frozenset({mbarrier_try_wait.name, mbarrier_wait.name, barrier_sync.name, barrier_arrive.name})
# ops through which the blocks of a cluster reach each other: the interpreter runs whole clusters together
CLUSTER_OPS = frozenset({
    mapa.name, st_async.name, cluster_arrive.name, cluster_wait.name, bulk_load_multicast.name,
    tma_load_multicast.name, mbarrier_arrive_cluster.name,
})  # fmt: skip
