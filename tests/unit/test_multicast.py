"""The cluster's producer/consumer pipeline ops: ``fx.nvvm.bulk_copy_g2s(..., multicast_mask=m)`` (one global read
landing in the shared memory of every masked block of the cluster, completing on each block's own mbarrier;
PTX ``cp.async.bulk...multicast::cluster``) and ``fx.nvvm.mbarrier_arrive(bar, peer_cta_rank_in_cluster=r)`` (an
arrive on another block's mbarrier; ``mbarrier.arrive.release.cta.shared::cluster``) — lowering and ptxas, the
target and operand checks, and the interpreter's semantics in a ring of stages refilled by each block of the
cluster in turn once every block released the stage (CUTLASS's ``PipelineTmaAsync`` pattern; LayerNorm's weights used
it in the lnmc rounds, docs/kernels.md).
tests/gpu/test_cluster_gpu.py runs the same ring on the H200 against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from test_cluster import HAVE_PTXAS, _cpu  # noqa: F401 - the CPU runtime for every test (autouse fixture)

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.codegen import CodegenError, Target, compile_module, emit_llvm, run_ptxas
from flydsl.dialects import arith, ptr
from flydsl.dialects import nvvm as nv_warp
from flydsl.dialects import nvvm_sm90 as nv
from flydsl.expr import nvvm
from flydsl.interp import InterpError
from flydsl.ir import PointerType
from flydsl.ir import types as T
from flydsl.testing import build_kernel


def _ops(g):
    sm = ptr.shared_alloc(count=64, align=16, result_types=[PointerType(T.f32, "shared")])
    bar = ptr.shared_alloc(count=1, align=8, result_types=[PointerType(T.i64, "shared")])
    nv.bulk_load_multicast(sm, g, arith.const(256, T.i32), bar, arith.const(3, T.i32))
    nv.mbarrier_arrive_cluster(nv.mapa(bar, arith.const(1, T.i32)))


def test_multicast_copy_and_remote_arrive_lower_to_ptx_that_ptxas_accepts():
    mod = build_kernel([PointerType(T.f32, "global")], _ops, cluster_dims=[2, 1, 1])
    ptx = compile_module(mod, Target("sm_90a")).ptx
    assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster" in ptx, ptx
    assert "mbarrier.arrive.shared::cluster.b64" in ptx, ptx  # the defaults: .release, .cta (as CUTLASS)
    if HAVE_PTXAS:
        run_ptxas(ptx, "sm_90a")


def test_multicast_ops_need_sm_90():
    mod = build_kernel([PointerType(T.f32, "global")], _ops)  # (no cluster launch: the op's own check fires)
    with pytest.raises(CodegenError, match="multicast bulk copy .* needs sm_90 or newer"):
        emit_llvm(mod, Target("sm_80"))


def test_multicast_ops_check_their_operands():
    def local_bar(g):
        bar = ptr.shared_alloc(count=1, align=8, result_types=[PointerType(T.i64, "shared")])
        nv.mbarrier_arrive_cluster(bar)

    with pytest.raises(Exception, match=r"must be a !fly.ptr<i64, shared_cluster>"):
        build_kernel([PointerType(T.f32, "global")], local_bar, cluster_dims=[2, 1, 1])

    def no_mask(g):
        sm = ptr.shared_alloc(count=64, align=16, result_types=[PointerType(T.f32, "shared")])
        bar = ptr.shared_alloc(count=1, align=8, result_types=[PointerType(T.i64, "shared")])
        nv.bulk_load_multicast(sm, g, arith.const(256, T.i32), bar)

    with pytest.raises(Exception, match="takes 5 operands"):
        build_kernel([PointerType(T.f32, "global")], no_mask, cluster_dims=[2, 1, 1])


def test_a_multicast_for_an_older_gpu_stops_the_trace_at_the_users_line(monkeypatch):
    monkeypatch.setenv("ARCH", "sm_80")

    @flyc.kernel
    def k(w: fx.Tensor):
        sm = fx.alloc_shared(fx.Float32, 64)
        bar = fx.alloc_shared(fx.Int64, 1, align=8)
        nvvm.bulk_copy_g2s(sm, w.iterator, 256, bar, multicast_mask=3)

    @flyc.jit
    def launch(w: fx.Tensor):
        k(w).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    with pytest.raises(Exception, match=r"test_multicast.py:\d+:\d+: error\[FLY520\]: a multicast bulk copy"):
        launch(np.zeros(64, np.float32))


def _ring(cluster: int, stages: int, pieces: int, block: int = 64, mask=None, lag: int = 1, skip_tail=True):
    """Each block of a cluster consumes ``pieces`` pieces of ``w`` (``block`` floats each) through a ring of
    ``stages`` shared stages: piece ``u`` is issued by rank ``u % cluster`` as one multicast to every block (``mask``),
    once every warp of every block released the stage's previous piece; the issuer issues piece ``u + stages - lag``
    when its block takes piece ``u``. Each thread sums ``piece[u][tid] * (u + 1)``. The full mbarriers expect one
    arrival (the block's own ``expect_tx``), the empty ones ``cluster x warps`` remote arrivals; ``skip_tail``: the
    last pieces, whose releases nobody waits for, are not released (the blocks may exit)."""
    warps = block // 32
    full_mask = (1 << cluster) - 1 if mask is None else mask

    @flyc.kernel
    def k(w: fx.Tensor, out: fx.Tensor):
        tid, rank = fx.thread_idx.x, nvvm.cluster_ctarank()
        full = fx.alloc_shared(fx.Int64, stages, align=8)
        empty = fx.alloc_shared(fx.Int64, stages, align=8)
        ring = fx.alloc_shared(fx.Float32, stages * block, align=16)
        scratch = fx.alloc_shared(fx.Float32, block, align=16)
        if tid == 0:
            for s in fx.range_constexpr(stages):
                nvvm.mbarrier_init(full + s, 1)
                nvvm.mbarrier_init(empty + s, cluster * warps)
            nvvm.fence_mbarrier_init()
        nvvm.cluster_arrive_relaxed()
        nvvm.cluster_wait()

        def issue(u):
            s = u % stages
            if tid == 0:
                nvvm.mbarrier_arrive_expect_tx(full + s, block * 4)
                if rank == u % cluster:
                    if u >= stages:
                        nvvm.mbarrier_wait(empty + s, (u // stages - 1) % 2)
                    nvvm.bulk_copy_g2s(ring + s * block, w.iterator + u * block, block * 4, full + s,
                                       multicast_mask=full_mask)  # fmt: skip

        for u in fx.range_constexpr(min(stages - lag, pieces)):
            issue(u)
        acc = fx.Float32(0.0)
        for u in fx.range_constexpr(pieces):
            v = u + stages - lag
            if v < pieces:
                issue(v)
            s = u % stages
            nvvm.mbarrier_wait(full + s, u // stages % 2)
            acc = acc + ring[s * block + tid] * float(u + 1)
            # release only after a store of what the piece computed: ptxas does not make the arrive wait for the
            # shared load's data, and a stage refilled before the load read it would give it the next piece
            scratch[tid] = acc
            if not skip_tail or u + stages - lag < pieces:  # nobody waits for the last pieces' releases
                nvvm.syncwarp()
                if tid % 32 == 0:
                    nvvm.mbarrier_arrive(empty + s, peer_cta_rank_in_cluster=u % cluster)
        out.iterator[fx.block_idx.x * block + tid] = acc

    @flyc.jit
    def launch(w: fx.Tensor, out: fx.Tensor):
        k(w, out).launch(grid=(2 * cluster, 1, 1), block=(block, 1, 1), cluster=(cluster, 1, 1))

    return launch


def _want(w, cluster, pieces, block=64):
    per = (w.reshape(pieces, block) * np.arange(1, pieces + 1, dtype=np.float32)[:, None]).sum(0)
    return np.tile(per, 2 * cluster)


@pytest.mark.parametrize("cluster, stages, pieces", [(2, 2, 5), (2, 4, 11), (4, 4, 9), (4, 8, 20)])
def test_multicast_ring_delivers_every_piece_to_every_block(cluster, stages, pieces):
    rng = np.random.default_rng(cluster * 100 + pieces)
    w = rng.integers(-8, 8, size=pieces * 64).astype(np.float32)
    out = np.zeros(2 * cluster * 64, np.float32)
    _ring(cluster, stages, pieces)(w, out)
    np.testing.assert_array_equal(out, _want(w, cluster, pieces))


def test_a_multicast_to_a_rank_outside_the_cluster_is_a_fault():
    with pytest.raises(InterpError, match=r"block mask 0x4 names no block or a rank outside the cluster of 2"):
        _ring(2, 2, 2, mask=4)(np.zeros(128, np.float32), np.zeros(256, np.float32))


def test_more_remote_arrivals_than_the_phase_expects_is_a_fault():
    # every thread of both blocks arrives on rank 0's barrier, which expects two arrivals per phase
    @flyc.kernel
    def k(out: fx.Tensor):
        bar = fx.alloc_shared(fx.Int64, 1, align=8)
        if fx.thread_idx.x == 0:
            nvvm.mbarrier_init(bar, 2)
            nvvm.fence_mbarrier_init()
        nvvm.cluster_sync()
        nvvm.mbarrier_arrive(bar, peer_cta_rank_in_cluster=0)
        nvvm.cluster_sync()

    @flyc.jit
    def launch(out: fx.Tensor):
        k(out).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    with pytest.raises(InterpError, match=r"mbarrier at shared offset .* of cluster rank 0"):
        launch(np.zeros(4, np.float32))


def test_syncwarp_lowers_to_bar_warp_sync_and_faults_when_part_of_a_warp_reaches_it():
    @flyc.kernel
    def k(out: fx.Tensor):
        if fx.thread_idx.x < 16:
            nvvm.syncwarp()

    @flyc.jit
    def launch(out: fx.Tensor):
        k(out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with pytest.raises(InterpError, match="syncwarp reached by only 16 of the 32 threads of a warp"):
        launch(np.zeros(4, np.float32))

    def ops(g):
        nv_warp.syncwarp()

    ptx = compile_module(build_kernel([PointerType(T.f32, "global")], ops), Target("sm_90a")).ptx
    assert "bar.warp.sync \t-1" in ptx or "bar.warp.sync -1" in ptx, ptx


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda sm, w, bar: nvvm.bulk_copy_g2s(sm, w, 256, bar, multicast_mask=0), "names 1-16 blocks"),
        (lambda sm, w, bar: nvvm.bulk_copy_g2s(sm, w, 256, bar, multicast_mask=1 << 16), "names 1-16 blocks"),
        (lambda sm, w, bar: nvvm.mbarrier_arrive(bar, 2, peer_cta_rank_in_cluster=1), "arrives once per thread"),
    ],
)
def test_the_cluster_forms_check_their_arguments_when_tracing(call, error):
    @flyc.kernel
    def k(w: fx.Tensor):
        sm = fx.alloc_shared(fx.Float32, 64)
        bar = fx.alloc_shared(fx.Int64, 1, align=8)
        call(sm, w.iterator, bar)

    @flyc.jit
    def launch(w: fx.Tensor):
        k(w).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    with pytest.raises(Exception, match=error):
        launch(np.zeros(64, np.float32))
