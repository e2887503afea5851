"""Thread block clusters: another block's shared memory (``fx.nvvm.map_shared``, PTX ``mapa`` +
``ld/st.shared::cluster``) and the cluster barrier (``cluster_arrive``/``cluster_wait``) — lowering and
ptxas, the interpreter's semantics (whole clusters per batch, reads and writes of the rank's block,
the barrier's faults), and the capability checks."""

from __future__ import annotations

import numpy as np
import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.codegen import CodegenError, Target, compile_module, emit_llvm, find_ptxas, run_ptxas
from flydsl.dialects import arith, gpu, ptr
from flydsl.dialects import nvvm_sm90 as nv
from flydsl.expr import nvvm
from flydsl.interp import InterpError
from flydsl.ir import PointerType, VectorType
from flydsl.ir import types as T
from flydsl.testing import build_kernel

HAVE_PTXAS = find_ptxas() is not None


@pytest.fixture(autouse=True)
def _cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))


def c32(x):
    return arith.const(x, T.i32)


# -- lowering ------------------------------------------------------------------------------------------------


def _dsmem_ops(g):
    sm = ptr.shared_alloc(count=64, align=16, result_types=[PointerType(T.f32, "shared")])
    tid = gpu.thread_id(dimension="x")
    nv.cluster_arrive(relaxed=False, aligned=True)
    nv.cluster_wait(aligned=True)
    peer = nv.mapa(sm, arith.remui(arith.addi(nv.cluster_ctarank(), c32(1)), c32(2)))
    v = ptr.load(ptr.cast(peer, result_types=[PointerType(VectorType((4,), T.f32), "shared_cluster")]),
                 result_types=[VectorType((4,), T.f32)], align=16)  # fmt: skip
    ptr.store(arith.const(2.0, T.f32), ptr.add(peer, tid))
    nv.cluster_arrive(relaxed=True, aligned=False)
    from flydsl.dialects import vector

    ptr.store(arith.fptosi(vector.reduction(v, kind="add"), result_types=[T.i32]), g)
    nv.cluster_wait(aligned=False)


def test_mapa_and_the_cluster_barrier_lower_to_ptx_that_ptxas_accepts():
    mod = build_kernel([PointerType(T.i32, "global")], _dsmem_ops, cluster_dims=[2, 1, 1])
    ptx = compile_module(mod, Target("sm_90a")).ptx
    for s in ("mapa.shared::cluster.u64", "ld.shared::cluster.v4.b32", "st.shared::cluster.b32",
              "barrier.cluster.arrive.aligned;", "barrier.cluster.wait.aligned;", "barrier.cluster.arrive.relaxed;",
              "barrier.cluster.wait;", ".reqnctapercluster 2, 1, 1"):  # fmt: skip
        assert s in ptx, s
    assert ".version 8.0" in ptx or ".version 8." in ptx  # the relaxed arrive needs PTX 8.0
    if HAVE_PTXAS:
        run_ptxas(ptx, "sm_90a")


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: nv.cluster_wait(aligned=False), "a thread block cluster needs sm_90 or newer"),
        (lambda: nv.mapa(ptr.shared_alloc(count=4, result_types=[PointerType(T.f32, "shared")]), c32(0)),
         "a thread block cluster needs sm_90 or newer; this kernel is compiled for sm_80"),
    ],
)  # fmt: skip
def test_cluster_ops_for_sm80_are_capability_errors(build, match):
    mod = build_kernel([PointerType(T.i32, "global")], lambda g: build())
    with pytest.raises(CodegenError, match=match):
        emit_llvm(mod, Target("sm_80"))


def test_mapa_verifies_its_operands():
    from flydsl.ir.verifier import VerifyError

    with pytest.raises(VerifyError, match="mapa maps a shared pointer, got !fly.ptr<f32, global>"):
        build_kernel([PointerType(T.f32, "global")], lambda g: nv.mapa(g, c32(0)))


# -- the interpreter ----------------------------------------------------------------------------------------


def _ring(cluster, grid, block=64):
    """Each block writes its rank into its shared memory, syncs the cluster, reads the next rank's values
    and also writes a value into the previous rank's shared memory, syncs, and stores what it holds."""
    n = cluster[0] * cluster[1] * cluster[2]

    @flyc.kernel
    def k(out: fx.Tensor):
        tid = fx.thread_idx.x
        rank = nvvm.cluster_ctarank()
        sm = fx.alloc_shared(fx.Int32, 2 * block)
        (sm + tid).store(rank * 1000 + tid)
        nvvm.cluster_sync(aligned=True)
        nxt = nvvm.map_shared(sm, (rank + 1) % n)
        prv = nvvm.map_shared(sm, (rank + n - 1) % n)
        got = nxt[tid]
        (prv + block + tid).store(rank * 1000 + 7)  # into the previous block's second half
        nvvm.cluster_sync()
        b = fx.block_idx.x + (fx.block_idx.y + fx.block_idx.z * grid[1]) * grid[0]
        out.iterator[b * 3 * block + tid] = got
        out.iterator[b * 3 * block + block + tid] = sm[block + tid]
        out.iterator[b * 3 * block + 2 * block + tid] = rank

    @flyc.jit
    def launch(out: fx.Tensor):
        k(out).launch(grid=grid, block=(block, 1, 1), cluster=cluster)

    return launch


@pytest.mark.parametrize("cluster, grid", [((4, 1, 1), (8, 1, 1)), ((2, 2, 1), (4, 4, 1)), ((1, 1, 2), (2, 1, 4))])
def test_blocks_of_a_cluster_read_and_write_each_others_shared_memory(cluster, grid, monkeypatch):
    block = 64
    nb = grid[0] * grid[1] * grid[2]
    out = np.zeros(nb * 3 * block, np.int32)
    _ring(cluster, grid, block)(out)
    out = out.reshape(nb, 3, block)
    n = cluster[0] * cluster[1] * cluster[2]
    tid = np.arange(block)
    for b in range(nb):
        rank = int(out[b, 2, 0])
        np.testing.assert_array_equal(out[b, 0], (rank + 1) % n * 1000 + tid)
        np.testing.assert_array_equal(out[b, 1], (rank + 1) % n * 1000 + 7)  # written by the next rank
    x, y, z = (np.arange(nb) % grid[0], np.arange(nb) // grid[0] % grid[1], np.arange(nb) // (grid[0] * grid[1]))
    want = x % cluster[0] + cluster[0] * (y % cluster[1] + cluster[1] * (z % cluster[2]))
    np.testing.assert_array_equal(out[:, 2, 0], want)


def _counter(cluster: int, blocks: int, block=32):
    """Every thread of the cluster adds 1 to rank 0's counter (an atomic through a shared-cluster pointer)."""

    @flyc.kernel
    def k(out: fx.Tensor):
        tid = fx.thread_idx.x
        sm = fx.alloc_shared(fx.Int32, 1)
        if tid == 0:
            sm[0] = fx.block_idx.x * 1000
        nvvm.cluster_sync()
        fx.atomic_add(nvvm.map_shared(sm, 0), 1)
        nvvm.cluster_sync()
        if tid == 0:
            out.iterator[fx.block_idx.x] = sm[0]

    @flyc.jit
    def launch(out: fx.Tensor):
        k(out).launch(grid=(blocks, 1, 1), block=(block, 1, 1), cluster=(cluster, 1, 1))

    return launch


def test_atomics_through_a_shared_cluster_pointer():
    out = np.zeros(8, np.int32)
    _counter(4, 8)(out)
    np.testing.assert_array_equal(out, [128, 1000, 2000, 3000, 4128, 5000, 6000, 7000])


def _faulty(kind: str):
    @flyc.kernel
    def k(out: fx.Tensor):
        tid = fx.thread_idx.x
        sm = fx.alloc_shared(fx.Int32, 32)
        if fx.const_expr(kind == "rank"):
            out.iterator[tid] = nvvm.map_shared(sm, nvvm.cluster_ctarank() + 1)[tid]
        elif fx.const_expr(kind == "no_arrive"):
            nvvm.cluster_wait()
        elif fx.const_expr(kind == "twice"):
            nvvm.cluster_arrive()
            nvvm.cluster_arrive()
        elif fx.const_expr(kind == "skip"):
            if nvvm.cluster_ctarank() == 0:
                nvvm.cluster_arrive()
                nvvm.cluster_wait()
        elif fx.const_expr(kind == "aligned"):
            if tid < 16:
                nvvm.cluster_arrive(aligned=True)
        elif fx.const_expr(kind == "bounds"):
            out.iterator[tid] = nvvm.map_shared(sm, 0)[tid + 32]

    @flyc.jit
    def launch(out: fx.Tensor):
        k(out).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    return launch


@pytest.mark.parametrize(
    "kind, match",
    [
        ("rank", r"mapa to block rank 2, but the cluster has 2 block\(s\)"),
        ("no_arrive", "waits at the cluster barrier without having arrived"),
        ("twice", "arrives at the cluster barrier a second time"),
        ("skip", r"thread \(0, 0, 0\) of block \(1, 0, 0\) of its cluster has not arrived \(32 of 64 threads did\)"),
        ("aligned", r"cluster_arrive \(.aligned\) reached by only 16 of the 32 threads of a warp"),
        ("bounds", "out-of-bounds read of i32 in shared memory"),
    ],
)
def test_cluster_faults_name_the_mistake(kind, match):
    with pytest.raises(InterpError, match=match):
        _faulty(kind)(np.zeros(64, np.int32))


def test_a_grid_that_is_not_whole_clusters_is_refused():
    @flyc.kernel
    def k(out: fx.Tensor):
        nvvm.cluster_sync()

    @flyc.jit
    def launch(out: fx.Tensor, g: fx.Int32):
        k(out).launch(grid=(g, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    with pytest.raises(InterpError, match=r"grid \(3, 1, 1\) is not a whole number of clusters \(2, 1, 1\)"):
        launch(np.zeros(4, np.int32), 3)


def test_a_cluster_barrier_in_a_kernel_that_runs_warp_by_warp_waits_for_the_other_blocks():
    """A kernel with mbarrier waits runs warp by warp, a whole cluster per batch: block 1's warp waits at the
    cluster barrier until block 0's warps (which first wait on their own mbarrier) arrive."""

    @flyc.kernel
    def k(out: fx.Tensor):
        tid, rank = fx.thread_idx.x, nvvm.cluster_ctarank()
        bar = fx.alloc_shared(fx.Int64, 1, align=8)
        sm = fx.alloc_shared(fx.Int32, 64)
        if tid == 0:
            nvvm.mbarrier_init(bar, 64)
        fx.barrier()
        sm[tid] = rank * 100 + tid
        nvvm.mbarrier_arrive(bar)
        nvvm.mbarrier_wait(bar, 0)
        nvvm.cluster_sync()
        out.iterator[fx.block_idx.x * 64 + tid] = nvvm.map_shared(sm, 1 - rank)[63 - tid]
        nvvm.cluster_sync()

    @flyc.jit
    def launch(out: fx.Tensor):
        k(out).launch(grid=(4, 1, 1), block=(64, 1, 1), cluster=(2, 1, 1))

    out = np.zeros(256, np.int32)
    launch(out)
    got = out.reshape(4, 64)
    t = np.arange(64)
    for b in range(4):
        np.testing.assert_array_equal(got[b], (1 - b % 2) * 100 + 63 - t)


def test_map_shared_takes_a_shared_pointer():
    @flyc.kernel
    def k(out: fx.Tensor):
        nvvm.map_shared(out.iterator, 0)

    @flyc.jit
    def launch(out: fx.Tensor):
        k(out).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    with pytest.raises(Exception, match="map_shared maps a shared-memory pointer of this block"):
        launch(np.zeros(4, np.int32))
