"""How the norm kernels cover a row (``kernels/norm/norm_common.plan_rows``): the cluster plan's block count,
slices and fallback, and the benchmark sweep's shape and variant selection."""

from __future__ import annotations

import pytest

from benchmarks.cases import norm_sweep
from kernels.norm.norm_common import plan_rows, vector_width


def plan(n, elem_bytes, **kw):
    return plan_rows(n, elem_bytes, vector_width(n, elem_bytes), **{"elems_per_thread": 16, **kw})


@pytest.mark.parametrize(
    "n, eb, kw, cluster, threads, cols",
    [
        (65536, 4, {}, 4, 512, 16384),  # 64K f32: four blocks of the 16K in-register plan
        (32768, 4, {}, 2, 512, 16384),
        (65536, 2, {}, 4, 512, 16384),
        (65536, 4, {"cluster_cols": 8192}, 8, 512, 8192),
        (16384, 4, {"cluster_cols": 8192}, 2, 512, 8192),
        (20000, 2, {}, 2, 512, 12288),  # the second slice ragged
    ],
)
def test_cluster_plans_split_the_row_into_power_of_two_slices(n, eb, kw, cluster, threads, cols):
    p = plan(n, eb, long_rows="cluster", max_row_threads=512, **kw)
    assert (p.cluster, p.threads, p.chunk_cols, p.chunks, p.rows) == (cluster, threads, cols, 1, 1)
    assert p.cluster_dims == (cluster, 1, 1) and p.grid(3) == 3 * cluster
    assert p.ragged == (cluster * cols != n)
    assert (cluster - 1) * cols < n <= cluster * cols


def test_rows_the_cluster_plan_cannot_hold_fall_back_to_onchip():
    p = plan(262144, 4, long_rows="cluster")  # 8 slices of 32K f32 would not fit in registers
    assert p.cluster == 1 and p.onchip and p.cluster_dims is None
    assert plan(8192, 2, long_rows="cluster").cluster == 1  # short rows: the ordinary in-register plan
    assert plan(1000, 4).grid(10) == 10 // plan(1000, 4).rows_per_block + 1


def test_sweep_shape_groups_and_cluster_variants(monkeypatch):
    monkeypatch.setenv("FLYDSL_NORM_SHAPES", "long")
    assert norm_sweep._shapes(False) == norm_sweep.LONG
    monkeypatch.setenv("FLYDSL_NORM_SHAPES", "short,few")
    assert norm_sweep._shapes(False) == norm_sweep.SHORT + norm_sweep.FEW
    monkeypatch.setenv("FLYDSL_NORM_SHAPES", "longest")
    with pytest.raises(ValueError, match="unknown group"):
        norm_sweep._shapes(False)
    assert norm_sweep._shapes(True) == norm_sweep.QUICK
    assert norm_sweep.applicable("cluster", 256, 65536) and not norm_sweep.applicable("cluster", 2048, 16384)
    assert norm_sweep.applicable("cluster8k", 2048, 16384) and not norm_sweep.applicable("cluster8k", 132, 8192)


@pytest.mark.parametrize("arch, clustered", [("sm_90a", True), ("sm_80", False)])
def test_the_cluster_plan_needs_a_target_with_clusters(arch, clustered, monkeypatch, tmp_path):
    import numpy as np

    from kernels.norm.softmax_kernel import build_softmax_module

    monkeypatch.setenv("ARCH", arch)
    monkeypatch.setenv("COMPILE_ONLY", "1")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    launch = build_softmax_module(0, 32768, "f32", long_rows="cluster")
    x = np.zeros((2, 32768), np.float32)
    launch(x, x, 2)
    ptx = launch._last[1].artifact.ptx
    assert (".reqnctapercluster 2, 1, 1" in ptx and "mapa.shared::cluster" in ptx) == clustered
