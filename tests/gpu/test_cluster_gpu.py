"""Thread block clusters on the H200 against the interpreter: the blocks of a cluster read and write each
other's shared memory through ``fx.nvvm.map_shared`` between cluster barriers (tests/unit/test_cluster.py
has the programs), in 1-D, 2-D and 3-D clusters, and add atomically to one block's counter; the launch runs clusters from the kernel's compile-time
cluster shape (``.reqnctapercluster``); ``st.async`` exchanges and a multicast ring (bulk copies to every block of
the cluster, released by remote mbarrier arrives); a multicast TMA load (tests/unit/test_tma_multicast.py)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unit"))

from test_cluster import _counter, _ring  # noqa: E402
from test_multicast import _ring as _mcast_ring  # noqa: E402
from test_multicast import _want as _mcast_want  # noqa: E402
from test_st_async import _exchange, _want  # noqa: E402
from test_tma_multicast import mcast_tile  # noqa: E402
from test_tma_multicast import want as _tma_want  # noqa: E402
from test_tma_rows import CASES as _ROWS_CASES  # noqa: E402
from test_tma_rows import SENTINEL, rows_tile  # noqa: E402
from test_tma_rows import _want as _rows_want  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("cluster, grid", [((4, 1, 1), (264, 1, 1)), ((2, 2, 1), (4, 4, 1)), ((1, 1, 2), (2, 1, 4)),
                                           ((8, 1, 1), (16, 1, 1))])  # fmt: skip
def test_cluster_shared_memory_gpu_equals_interpreter(cluster, grid, monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    block = 64
    nb = grid[0] * grid[1] * grid[2]
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    out = torch.zeros(nb * 3 * block, dtype=torch.int32, device="cuda")
    _ring(cluster, grid, block)(out)
    torch.cuda.synchronize()
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    want = np.zeros(nb * 3 * block, np.int32)
    _ring(cluster, grid, block)(want)
    np.testing.assert_array_equal(out.cpu().numpy(), want)


def test_cluster_atomics_gpu(monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    out = torch.zeros(8, dtype=torch.int32, device="cuda")
    _counter(4, 8)(out)
    torch.cuda.synchronize()
    assert out.cpu().tolist() == [128, 1000, 2000, 3000, 4128, 5000, 6000, 7000]


@pytest.mark.parametrize("cluster, rounds", [(2, 3), (4, 5), (8, 4)])
def test_st_async_exchange_gpu_equals_interpreter(cluster, rounds, monkeypatch, tmp_path):
    """Every block of each cluster pushes a partial to every block with st.async each round, two slot sets and
    mbarriers alternating (tests/unit/test_st_async.py): the H200 gets the interpreter's sums."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    out = torch.zeros(2 * cluster * 64, dtype=torch.int32, device="cuda")
    _exchange(cluster, rounds)(out)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), _want(cluster, rounds))


@pytest.mark.parametrize("cluster, stages, pieces", [(2, 2, 5), (2, 4, 11), (4, 4, 9), (4, 8, 20)])
def test_multicast_ring_gpu(cluster, stages, pieces, monkeypatch, tmp_path):
    """A ring of shared stages refilled by multicast bulk copies, each released by every warp of the cluster with
    a remote mbarrier arrive (tests/unit/test_multicast.py): every block of the H200 gets every piece."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    rng = np.random.default_rng(cluster * 100 + pieces)
    w = rng.integers(-8, 8, size=pieces * 64).astype(np.float32)
    out = torch.zeros(2 * cluster * 64, dtype=torch.float32, device="cuda")
    _mcast_ring(cluster, stages, pieces)(torch.from_numpy(w).cuda(), out)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), _mcast_want(w, cluster, pieces))


@pytest.mark.parametrize("cluster, mask", [(2, 0b11), (4, 0b1111), (4, 0b0101), (2, 0b01)])
def test_multicast_tma_load_gpu(cluster, mask, monkeypatch, tmp_path):
    """One TMA read of a tile per cluster, multicast to the masked blocks (tests/unit/test_tma_multicast.py): on the
    H200 every masked block gets the tile, the others none."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    src = np.arange(2 * 8 * 32, dtype=np.float32).reshape(16, 32)
    out = torch.full((cluster * 2 * 8, 32), -1.0, dtype=torch.float32, device="cuda")
    mcast_tile(cluster, mask)(torch.from_numpy(src).cuda(), out)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), _tma_want(src, cluster, mask))


@pytest.mark.parametrize("tile_rows, cols, box_rows, n", _ROWS_CASES)
def test_row_grouped_tma_load_gpu(tile_rows, cols, box_rows, n, monkeypatch, tmp_path):
    """``tma_load(..., rows=n)`` of a row-grouped atom (tests/unit/test_tma_rows.py) on the H200: the groups holding
    the first n rows land (rows past the tensor zero), the others keep the sentinel, the bytes complete the barrier."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    src = np.arange(1, (n + 3) * cols + 1, dtype=np.float32).reshape(n + 3, cols)
    fill = torch.full((tile_rows, cols), SENTINEL, dtype=torch.float32, device="cuda")
    out = torch.zeros((tile_rows, cols), dtype=torch.float32, device="cuda")
    nb = torch.zeros(1, dtype=torch.int32, device="cuda")
    rows_tile(tile_rows, cols, box_rows)(fill, torch.from_numpy(src).cuda(), out, nb, 3, n)
    torch.cuda.synchronize()
    want, nbytes = _rows_want(src, tile_rows, cols, box_rows, 3, n)
    np.testing.assert_array_equal(out.cpu().numpy(), want)
    assert int(nb.item()) == nbytes
