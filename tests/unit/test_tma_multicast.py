"""``fx.nvvm.tma_load(atom, dst, bar, coord, multicast_mask=m)``: one TMA read of a tile landing in the shared memory
of every masked block of the cluster, each completing the tile's bytes on its own mbarrier (PTX
``cp.async.bulk.tensor...multicast::cluster``; CUTLASS's multicast TMA of a GEMM operand that several blocks share).
Lowering and ptxas, the target and argument checks, and the interpreter's semantics: the tile at every masked block,
none at the others. tests/gpu/test_cluster_gpu.py runs the same kernel on the H200."""

from __future__ import annotations

import numpy as np
import pytest
from test_cluster import HAVE_PTXAS, _cpu  # noqa: F401 - the CPU runtime for every test (autouse fixture)

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.codegen import run_ptxas
from flydsl.expr import nvvm
from flydsl.interp import InterpError

ROWS, COLS = 8, 32  # a tile of 8 rows of 32 f32 (128 bytes: the 128-byte swizzle)


def mcast_tile(cluster: int, mask: int, clusters: int = 2, via_copy: bool = False):
    """Every block of each cluster of ``cluster`` blocks arms its mbarrier for a tile; after a cluster barrier, rank
    0 loads tile ``cluster id`` (rows ``8 c``...) once with ``multicast_mask=mask``; every masked block stores what
    it received at rows ``8 b`` of ``out`` (block ``b``); the unmasked ones store nothing (their barriers are armed
    only where the mask names them)."""

    @flyc.kernel
    def k(tin: nvvm.TmaAtom, tout: nvvm.TmaAtom):
        tid, rank = fx.thread_idx.x, nvvm.cluster_ctarank()
        nbytes = ROWS * COLS * 4
        buf = nvvm.align_shared(fx.SharedAllocator(static=False).allocate(nbytes + 16 + 1024).ptr, 1024)
        bar = (buf + nbytes).recast(fx.Int64)
        s = fx.make_tensor(buf.recast(fx.Float32), tin.smem_layout)
        named = (mask >> rank) & 1
        if tid == 0:
            nvvm.mbarrier_init(bar, 1)
            nvvm.fence_mbarrier_init()
        nvvm.cluster_sync()  # every peer's barrier initialized before the tile can land
        if tid == 0:
            if named == 1:
                nvvm.mbarrier_arrive_expect_tx(bar, tin.tile_bytes)
        nvvm.cluster_sync()  # every receiver armed
        if tid == 0:
            if rank == 0:
                if fx.const_expr(via_copy):  # CuTe's spelling
                    fx.copy(tin, tin.tile(fx.block_idx.x // cluster, 0), s, mbar=bar, mcast_mask=mask)
                else:
                    nvvm.tma_load(tin, s, bar, (fx.block_idx.x // cluster * ROWS, 0), multicast_mask=mask)
        if named == 1:
            nvvm.mbarrier_wait(bar, 0)
            nvvm.fence_proxy_async()
            fx.barrier()
            if tid == 0:
                nvvm.tma_store(tout, s, (fx.block_idx.x * ROWS, 0))
                nvvm.bulk_commit_group()
                nvvm.bulk_wait_group(0)

    @flyc.jit
    def launch(src: fx.Tensor, out: fx.Tensor):
        lay = nvvm.make_smem_layout_gmma(src.dtype, (ROWS, COLS))
        tin, tout = nvvm.make_tma_atom(src, lay), nvvm.make_tma_atom(out, lay, store=True)
        k(tin, tout).launch(grid=(cluster * clusters, 1, 1), block=(64, 1, 1), cluster=(cluster, 1, 1))

    return launch


def _run(cluster: int, mask: int, clusters: int = 2, via_copy: bool = False):
    src = np.arange(clusters * ROWS * COLS, dtype=np.float32).reshape(clusters * ROWS, COLS)
    out = np.full((cluster * clusters * ROWS, COLS), -1, np.float32)
    mcast_tile(cluster, mask, clusters, via_copy)(src, out)
    return src, out


def want(src, cluster: int, mask: int, clusters: int = 2):
    out = np.full((cluster * clusters * ROWS, COLS), -1, np.float32)
    for b in range(cluster * clusters):
        if mask >> (b % cluster) & 1:
            c = b // cluster
            out[b * ROWS : (b + 1) * ROWS] = src[c * ROWS : (c + 1) * ROWS]
    return out


@pytest.mark.parametrize("cluster, mask", [(2, 0b11), (4, 0b1111), (4, 0b0101), (2, 0b01)])
def test_a_multicast_tma_load_lands_in_every_masked_block(cluster, mask):
    src, out = _run(cluster, mask)
    np.testing.assert_array_equal(out, want(src, cluster, mask))


def test_fx_copy_with_a_tma_atom_takes_cutes_mcast_mask():
    src, out = _run(4, 0b0110, via_copy=True)
    np.testing.assert_array_equal(out, want(src, 4, 0b0110))


def test_a_multicast_tma_load_to_a_rank_outside_the_cluster_is_a_fault():
    with pytest.raises(InterpError, match=r"multicast TMA load: block mask 0x4 names no block or a rank outside"):
        _run(2, 0b100)


def test_a_multicast_tma_load_lowers_to_ptx_that_ptxas_accepts(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    monkeypatch.setenv("COMPILE_ONLY", "1")
    src = np.zeros((2 * ROWS, COLS), np.float32)
    mcast_tile(2, 0b11)(src, np.zeros((4 * ROWS, COLS), np.float32))
    (ptx,) = [p.read_text() for p in tmp_path.glob("*/*.ptx")]
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster" in ptx
    if HAVE_PTXAS:
        run_ptxas(ptx, "sm_90a")


@pytest.mark.parametrize("mask, error", [(0, "names 1-16 blocks"), (1 << 16, "names 1-16 blocks")])
def test_a_multicast_mask_is_checked_when_tracing(mask, error):
    with pytest.raises(Exception, match=error):
        _run(2, mask)


def test_a_multicast_tma_load_for_an_older_gpu_stops_the_trace_at_the_users_line(monkeypatch):
    """(The TMA atom, made first in the launcher, is where an sm_80 compile stops: TMA itself needs sm_90.)"""
    monkeypatch.setenv("ARCH", "sm_80")
    with pytest.raises(Exception, match=r"test_tma_multicast.py:\d+:\d+: error\[FLY520\]: a TMA .* needs sm_90"):
        _run(2, 0b11)
