"""Hopper (sm_90/sm_90a) operations of ``fx.nvvm``: mbarriers, async-proxy fences, ``elect.sync``,
``setmaxnreg``, named barriers, warpgroup and cluster indices — and, re-exported from :mod:`.tma` and
:mod:`.wgmma`, TMA copies and warpgroup MMA. docs/hopper.md shows a whole GEMM built from them.

=====================================================  ===========================================  ==========
fx.nvvm                                                CuTe DSL counterpart                         PTX (sm)
=====================================================  ===========================================  ==========
``mbarrier_init(bar, count)``                          ``cute.arch.mbarrier_init``                  90
``mbarrier_arrive(bar[, count])``                      ``cute.arch.mbarrier_arrive``                90
``mbarrier_arrive(bar, peer_cta_rank_in_cluster=r)``   ``cute.arch.mbarrier_arrive`` (remote)       90
``mbarrier_arrive_expect_tx(bar, nbytes)``             ``cute.arch.mbarrier_arrive_and_expect_tx``  90
``mbarrier_expect_tx(bar, nbytes)``                    ``cute.arch.mbarrier_expect_tx``             90
``mbarrier_try_wait(bar, phase)``                      ``cute.arch.mbarrier_try_wait``              90
``mbarrier_wait(bar, phase)``                          ``cute.arch.mbarrier_wait``                  90
``fence_proxy_async(space)``                           ``cute.arch.fence_proxy``                    90
``fence_mbarrier_init()``                              ``cute.arch.mbarrier_init_fence``            90
``elect_one()``                                        ``cute.arch.elect_one``                      90
``griddep_wait()`` / ``griddep_launch_dependents()``   ``cute.arch.griddepcontrol_*`` (PDL)         90
``warpgroup_reg_alloc(n)`` / ``warpgroup_reg_dealloc``  ``cute.arch.warpgroup_reg_alloc/dealloc``    90a
``barrier_sync(id, n)`` / ``barrier_arrive(id, n)``     ``cute.arch.barrier`` / ``barrier_arrive``   70
``warp_idx()``, ``warpgroup_idx()``, …                 ``cute.arch.warp_idx`` …                     —
``cluster_ctarank()``, ``cluster_idx``, …              ``cute.arch.block_idx_in_cluster`` …         90
``cluster_arrive([relaxed])``, ``cluster_wait()``       ``cute.arch.cluster_arrive(_relaxed)/wait``  90
``map_shared(ptr, rank)`` (``mapa``)                   ``cute.arch.mapa``-style DSMEM address       90
``st_async(ptr, value, bar)``                          (``st.async`` in CUTLASS' C++)               90
``PipelineState(stages)``                              ``cutlass.pipeline.PipelineState``           —
=====================================================  ===========================================  ==========

An mbarrier is an ``fx.Int64`` in shared memory (a ``Pointer`` to it, e.g. ``bars + i``). A wait on phase
``p`` returns once the phase of parity ``p`` has completed (a fresh barrier is in phase 0, so a wait on
phase 1 passes at once: producers start their "empty" waits there).

Each op these functions build declares the target it needs (``requires``,
:mod:`flydsl.dialects.capabilities`): traced for an older GPU (or for sm_90 without the ``a``, for
``setmaxnreg``/wgmma) the call stops the trace with FLY520 at the user's line.
"""

from __future__ import annotations

from ...dialects import gpu as _g
from ...dialects import nvvm_sm90 as _d
from ...dialects.capabilities import blocks_per_sm as _blocks_per_sm
from ...dialects.capabilities import capability_gap
from ...dialects.capabilities import max_registers as _max_registers
from ...ir import AddressSpace
from .._sem.context import current_target
from .._sem.iterators import MemIter
from .._sem.vector import Vector, as_vector_operand, to_dtype
from ..gpu import thread_idx
from ..numeric import Boolean, Int8, Int32, Int64, as_numeric
from ..pointer import Pointer, as_pointer
from ._common import _bar, _i32

__all__ = [
    "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_expect_tx",
    "mbarrier_expect_tx", "mbarrier_try_wait", "mbarrier_wait", "fence_proxy_async", "fence_mbarrier_init",
    "griddep_wait", "griddep_launch_dependents",
    "elect_one", "setmaxnreg", "warpgroup_reg_alloc", "warpgroup_reg_dealloc", "barrier_sync", "barrier_arrive",
    "warp_idx", "warpgroup_idx", "warp_idx_in_warpgroup", "thread_idx_in_warpgroup", "cluster_ctarank",
    "cluster_idx", "block_idx_in_cluster", "cluster_shape", "has_clusters", "cluster_arrive", "cluster_arrive_relaxed",
    "cluster_wait", "cluster_sync", "map_shared", "mapa", "st_async", "PipelineState", "align_shared",
    # re-exported from .tma and .wgmma
    "TmaAtom", "make_tma_atom", "tma_load", "tma_store", "tma_prefetch_descriptor", "bulk_copy_g2s",
    "bulk_copy_s2g", "bulk_prefetch_l2", "bulk_commit_group", "bulk_wait_group",
    "WgmmaOp", "make_smem_layout_gmma", "make_gmma_desc",
    "wgmma", "wgmma_fence", "wgmma_commit_group", "wgmma_wait_group", "wgmma_acc_coords",
]  # fmt: skip


# -- mbarriers ------------------------------------------------------------------------------------------


def mbarrier_init(bar, count) -> None:
    """Initialize the mbarrier at ``bar``: phase 0, expecting ``count`` arrivals per phase. Make it visible
    with :func:`fence_mbarrier_init` and a block barrier before other threads (or TMA) use it."""
    _d.mbarrier_init(_bar(bar).ir_value(), _i32(count, "the arrival count"))


def mbarrier_arrive(bar, count=None, *, peer_cta_rank_in_cluster=None) -> None:
    """Each calling thread arrives ``count`` (default 1) times on ``bar``. On the mbarrier of another block of
    the cluster: ``bar`` a :func:`map_shared` pointer, or this block's ``bar`` with ``peer_cta_rank_in_cluster``
    (CuTe's name) — one arrival per thread, releasing its earlier accesses at block scope (a consumer's "I am done
    with this buffer" to the block that refills it; ``mbarrier.arrive.release.cta.shared::cluster``). That block
    must still be running: it has to wait on the barrier (or at a cluster barrier) after the last such arrive."""
    if peer_cta_rank_in_cluster is not None:
        bar = map_shared(_bar(bar), peer_cta_rank_in_cluster)
    p = bar.ptr if hasattr(type(bar), "peek") else as_pointer(bar)
    if p.address_space == AddressSpace.SHARED_CLUSTER:
        if count is not None:
            raise TypeError("an arrive on another block's mbarrier arrives once per thread (no count)")
        _d.mbarrier_arrive_cluster((p if p.dtype.ir_type is Int64.ir_type else p.recast(Int64)).ir_value())
        return
    ops = [_bar(bar).ir_value()] + ([] if count is None else [_i32(count, "the arrival count")])
    _d.mbarrier_arrive(*ops)


def mbarrier_arrive_expect_tx(bar, nbytes) -> None:
    """Add ``nbytes`` to the phase's expected transaction bytes, then arrive (the producer's call before
    issuing the TMA copies that complete on ``bar``)."""
    _d.mbarrier_arrive_expect_tx(_bar(bar).ir_value(), _i32(nbytes, "the transaction byte count"))


def mbarrier_expect_tx(bar, nbytes) -> None:
    """Add ``nbytes`` to the expected transaction bytes without arriving."""
    _d.mbarrier_expect_tx(_bar(bar).ir_value(), _i32(nbytes, "the transaction byte count"))


def mbarrier_try_wait(bar, phase) -> Boolean:
    """Whether the phase of parity ``phase`` has completed (may suspend the thread briefly)."""
    return Boolean._make(_d.mbarrier_try_wait(_bar(bar).ir_value(), _i32(phase, "the phase")))


def mbarrier_wait(bar, phase) -> None:
    """Wait until the phase of parity ``phase`` has completed."""
    _d.mbarrier_wait(_bar(bar).ir_value(), _i32(phase, "the phase"))


# -- fences, elect, registers, named barriers ----------------------------------------------------------------


def fence_proxy_async(space: str = "shared_cta") -> None:
    """Order this thread's ordinary memory accesses before later async-proxy ones (TMA, wgmma):
    ``"shared_cta"`` (the usual one: shared memory written with stores, then read by a TMA store or
    wgmma), ``"global"`` or ``"all"``."""
    if space not in _d.PROXY_SPACES:
        raise ValueError(f"fence_proxy_async space must be one of {', '.join(_d.PROXY_SPACES)}, got {space!r}")
    _d.fence_proxy_async(space=space)


def fence_mbarrier_init() -> None:
    """Make preceding ``mbarrier_init``s visible to the async proxy and the cluster."""
    _d.fence_mbarrier_init()


def griddep_wait() -> None:
    """``griddepcontrol.wait``: block until the grids this one depends on (the previous kernel of the stream,
    when this one was launched with programmatic dependent launch) have completed and their writes are
    visible. Read nothing another kernel writes before it. Without such a launch it returns at once."""
    _d.griddep_wait()


def griddep_launch_dependents() -> None:
    """``griddepcontrol.launch_dependents``: the next kernel of the stream (launched with programmatic
    dependent launch) may start once every block of this one has called it or exited; it still waits
    (:func:`griddep_wait`) for this grid to complete before it reads what this grid wrote."""
    _d.griddep_launch_dependents()


def elect_one() -> Boolean:
    """True in exactly one active thread of the warp (the lowest): ``if fx.nvvm.elect_one(): ...``."""
    return Boolean._make(_d.elect_sync())


def setmaxnreg(count: int, action: str) -> None:
    """``setmaxnreg.{inc,dec}``: the warpgroup's threads now own ``count`` registers each (24-256, a multiple
    of 8). The kernel gets the register bound this needs automatically (one block per SM)."""
    if type(count) is not int or not 24 <= count <= 256 or count % 8:
        raise ValueError(f"setmaxnreg takes a register count in [24, 256] that is a multiple of 8, got {count!r}")
    if action not in ("inc", "dec"):
        raise ValueError(f"setmaxnreg action must be 'inc' or 'dec', got {action!r}")
    _d.setmaxnreg(count=count, action=action)


def warpgroup_reg_alloc(count: int) -> None:
    """Raise this warpgroup's registers per thread to ``count`` (``setmaxnreg.inc``)."""
    setmaxnreg(count, "inc")


def warpgroup_reg_dealloc(count: int) -> None:
    """Lower this warpgroup's registers per thread to ``count`` (``setmaxnreg.dec``)."""
    setmaxnreg(count, "dec")


def barrier_sync(barrier_id, number_of_threads) -> None:
    """Named barrier ``barrier_id`` (1-15; 0 is the block barrier): wait until ``number_of_threads`` threads
    (whole warps) arrived — e.g. the two consumer warpgroups of a warp-specialized kernel (``bar.sync``)."""
    _g_check_named(barrier_id, number_of_threads)
    _d.barrier_sync(_i32(barrier_id, "the barrier id"), _i32(number_of_threads, "the thread count"))


def barrier_arrive(barrier_id, number_of_threads) -> None:
    """Arrive at named barrier ``barrier_id`` without waiting (``bar.arrive``)."""
    _g_check_named(barrier_id, number_of_threads)
    _d.barrier_arrive(_i32(barrier_id, "the barrier id"), _i32(number_of_threads, "the thread count"))


def _g_check_named(bid, n) -> None:
    checks = (("barrier id", bid, lambda x: 0 <= x < 16), ("thread count", n, lambda x: x > 0 and x % 32 == 0))
    for what, v, ok in checks:
        if isinstance(v, int) and not ok(v):
            raise ValueError(f"named barrier: invalid {what} {v} (ids 0-15; counts are positive multiples of 32)")


def align_shared(ptr, alignment: int = 1024):
    """``ptr`` rounded up at run time to a multiple of ``alignment`` bytes of the shared address space, known to
    the compiler as that aligned (allocate ``alignment - 1`` spare bytes). Swizzled TMA/wgmma buffers need
    their base on the swizzle period (1024 bytes for 128-byte swizzling); the dynamic shared memory base is
    only guaranteed 16-byte aligned."""
    p = as_pointer(ptr)
    if p.address_space != AddressSpace.SHARED:
        raise TypeError(f"align_shared takes a shared-memory pointer, got a {p.memspace} one")
    if type(alignment) is not int or alignment < 16 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two of at least 16, got {alignment!r}")
    b = p.recast(Int8)
    pad = (Int64(alignment) - (b.to_int() & (alignment - 1))) & (alignment - 1)
    return MemIter._new((b + pad).recast(p.dtype).ir_value(), p.dtype, alignment, False)


# -- indices ---------------------------------------------------------------------------------------------


def _uniform(x: Int32) -> Int32:
    """``x`` broadcast from lane 0: tells the compiler the value is warp-uniform (CUTLASS does the same)."""
    r = _g.shuffle(x.ir_value(), Int32(0).ir_value(), Int32(32).ir_value(), mode="idx")
    return Int32._make(r)


def _tid() -> Int32:
    return thread_idx.x


def warp_idx() -> Int32:
    """The warp index in the block (``threadIdx.x / 32``, warp-uniform)."""
    return _uniform(_tid() // 32)


def warpgroup_idx() -> Int32:
    """The warpgroup index in the block (``threadIdx.x / 128``, warp-uniform)."""
    return _uniform(_tid() // 128)


def warp_idx_in_warpgroup() -> Int32:
    """The warp's index within its warpgroup (0-3)."""
    return _uniform(_tid() // 32 % 4)


def thread_idx_in_warpgroup() -> Int32:
    """The thread's index within its warpgroup (0-127)."""
    return _tid() % 128


def cluster_ctarank() -> Int32:
    """This block's linear rank in its cluster (0 without clusters)."""
    return Int32._make(_d.cluster_ctarank())


class _ClusterDim3:
    __slots__ = ("_op", "_name")

    def __init__(self, op, name):
        self._op, self._name = op, name

    def _get(self, d):
        return Int32._make(self._op(dimension=d))

    x = property(lambda self: self._get("x"))
    y = property(lambda self: self._get("y"))
    z = property(lambda self: self._get("z"))

    def __iter__(self):
        return iter((self.x, self.y, self.z))


cluster_idx = _ClusterDim3(_d.cluster_id, "cluster_idx")
block_idx_in_cluster = _ClusterDim3(_d.cluster_ctaid, "block_idx_in_cluster")
cluster_shape = _ClusterDim3(_d.cluster_dim, "cluster_shape")


# -- the cluster's barrier and shared memory ----------------------------------------------------------------


def max_registers(threads: int) -> int:
    """The most registers per thread (a multiple of 8, at most 255) with which a block of ``threads`` threads can
    launch on sm_80 / sm_90 (a warp's registers are allocated in units of 256, each of an SM's four sub-partitions
    holds 16384): 1024 threads 64, 768 80, 512 128 — a launch's ``max_registers`` for "all one block may take"."""
    return _max_registers(threads)


def blocks_per_sm(registers: int, threads: int) -> int:
    """How many blocks of ``threads`` threads at ``registers`` registers per thread one SM of sm_80 / sm_90 holds at
    once (registers, 2048 threads, 32 blocks; shared memory not counted), 0 where one does not fit: 512 threads at
    64 registers 2, at 72 one — CUDA's occupancy rule for blocks of a multiple of 128 threads (others may fit one
    more than this says), e.g. to size a grid that must all run at once."""
    return _blocks_per_sm(registers, threads)


def has_clusters() -> bool:
    """Whether the target being compiled for has thread block clusters (sm_90 and newer): a kernel library
    picks a cluster plan only then (a cluster op traced for an older GPU is FLY520)."""
    t = current_target()
    return t.backend == "nvptx" and capability_gap("cluster", t.arch) is None


def cluster_arrive(relaxed: bool = False, aligned: bool = False) -> None:
    """Arrive at the cluster barrier (every thread of every block of the cluster arrives once per phase,
    then waits with :func:`cluster_wait`). ``relaxed=False``: release — this thread's earlier shared and
    global accesses are visible to the threads that pass the matching wait; ``relaxed=True``: no ordering
    (cheaper; for a barrier that only says "I am done reading your shared memory" after the reads were used).
    ``aligned=True``: every thread of the warp executes it together (``.aligned``: a little faster)."""
    _d.cluster_arrive(relaxed=bool(relaxed), aligned=bool(aligned))


def cluster_arrive_relaxed(aligned: bool = False) -> None:
    """:func:`cluster_arrive` without memory ordering (CuTe's ``cluster_arrive_relaxed``)."""
    cluster_arrive(relaxed=True, aligned=aligned)


def cluster_wait(aligned: bool = False) -> None:
    """Wait until every thread of the cluster arrived at the cluster barrier (acquire: the arrivals' earlier
    accesses are visible afterwards)."""
    _d.cluster_wait(aligned=bool(aligned))


def cluster_sync(aligned: bool = False) -> None:
    """:func:`cluster_arrive` then :func:`cluster_wait`: a barrier over every thread of the cluster."""
    cluster_arrive(aligned=aligned)
    cluster_wait(aligned=aligned)


def map_shared(ptr, rank) -> Pointer:
    """The shared-memory location of ``ptr`` (a shared pointer of this block) in block ``rank`` of the
    cluster (``cluster_ctarank()`` numbering): a ``shared_cluster`` Pointer, read and written like any other
    (``p[i]``, ``p.load(vec_width=n)``, ``p.store(v)``). The other block must still be running: make it wait
    at a cluster barrier after your last access (``mapa.shared::cluster``; CuTe's ``mapa``)."""
    p = as_pointer(ptr)
    if p.address_space != AddressSpace.SHARED:
        raise TypeError(f"map_shared maps a shared-memory pointer of this block, got a {p.memspace} pointer")
    return Pointer._make(_d.mapa(p.ir_value(), _i32(rank, "the block rank")), p.dtype)


mapa = map_shared


def st_async(ptr, value, bar) -> None:
    """Store ``value`` (a scalar or a Vector of 1, 2 or 4 32-bit values, or 1 or 2 64-bit ones; converted to
    ``ptr``'s element type) at ``ptr`` in a block of the cluster, and complete its bytes on the mbarrier ``bar``
    of that block (``ptr`` and ``bar``: :func:`map_shared` pointers, usually of the same rank; ``ptr`` aligned
    to the value's size). The receiver waits on its own mbarrier — armed with :func:`mbarrier_expect_tx` /
    :func:`mbarrier_arrive_expect_tx` for the bytes it expects — and then reads the values from its own shared
    memory: no fence and no cluster barrier (``st.async.shared::cluster.mbarrier::complete_tx::bytes``)."""
    p = as_pointer(ptr)
    b = as_pointer(bar)
    for q, what in ((p, "the destination"), (b, "the mbarrier")):
        if q.address_space != AddressSpace.SHARED_CLUSTER:
            raise TypeError(
                f"st_async: {what} must be a pointer into a block of the cluster (fx.nvvm.map_shared(ptr, rank)), "
                f"got a {q.memspace} pointer"
            )
    v = as_vector_operand(value)
    if v is None:
        raise TypeError(f"st_async: cannot store {value!r}")
    v = v.to(p.dtype) if isinstance(v, Vector) else to_dtype(value, p.dtype)
    if b.dtype.ir_type is not Int64.ir_type:
        b = b.recast(Int64)
    _d.st_async(v.ir_value(), p.ir_value(), b.ir_value())


# -- pipeline state ---------------------------------------------------------------------------------------


class PipelineState:
    """The position in a ring of ``stages`` buffers guarded by mbarriers: ``index`` (the buffer) and
    ``phase`` (the parity the consumer waits for), advanced together (CuTe's ``PipelineState``).

    It is a DSL value (two Int32s), so it can be carried through run-time loops::

        st = fx.nvvm.PipelineState(4)              # index 0, phase 0 (consumers)
        st = fx.nvvm.PipelineState(4, phase=1)     # producers: the "empty" barriers start free
        for k in range(k_tiles):
            fx.nvvm.mbarrier_wait(full + st.index, st.phase)
            ...
            st = st.next()
    """

    __slots__ = ("stages", "index", "phase")

    def __init__(self, stages: int, index=0, phase=0):
        if type(stages) is not int or stages < 1:
            raise ValueError(f"PipelineState needs a positive number of stages, got {stages!r}")
        self.stages = stages
        self.index = index if isinstance(index, Int32) else Int32(index)
        self.phase = phase if isinstance(phase, Int32) else Int32(phase)

    def next(self) -> PipelineState:
        """The following position (the phase flips when the index wraps around)."""
        nxt = self.index + 1
        wrap = nxt == self.stages
        return PipelineState(self.stages, wrap.select(Int32(0), nxt), wrap.select(self.phase ^ 1, self.phase))

    advance = next

    def __fly_values__(self):
        return [as_numeric(self.index).ir_value(), as_numeric(self.phase).ir_value()]

    def __fly_rebuild__(self, values) -> PipelineState:
        return PipelineState(self.stages, Int32._make(values[0]), Int32._make(values[1]))

    def __fly_signature__(self):
        return ("PipelineState", self.stages)

    def __repr__(self) -> str:
        return f"PipelineState({self.stages}, index={self.index}, phase={self.phase})"


# the TMA and wgmma halves, re-exported
from .tma import (  # noqa: E402
    TmaAtom,
    bulk_commit_group,
    bulk_copy_g2s,
    bulk_copy_s2g,
    bulk_prefetch_l2,
    bulk_wait_group,
    make_tma_atom,
    tma_load,
    tma_prefetch_descriptor,
    tma_store,
)
from .wgmma import (  # noqa: E402
    WgmmaOp,
    make_gmma_desc,
    make_smem_layout_gmma,
    wgmma,
    wgmma_acc_coords,
    wgmma_commit_group,
    wgmma_fence,
    wgmma_wait_group,
)
