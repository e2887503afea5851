"""``fx.nvvm.tma_load(atom, dst, bar, coord, rows=n)`` with an atom made with ``box_rows``: only the row groups that
hold the tile's first ``n`` rows are copied (the whole tile when at most one group would be left out), the shared rows
of the other groups keep what they held, and ``atom.load_bytes(n)`` is what the copies complete on the mbarrier. The
H200 fills rows past a tensor's end one by one in the copy engine's queue (docs/hopper.md), so a GEMM whose last
tile holds few rows loads only those. Interpreter semantics, static and run-time ``n``, one and two 128-byte K atoms,
the checks, and PTX that ptxas accepts."""

from __future__ import annotations

import numpy as np
import pytest
from test_cluster import HAVE_PTXAS, _cpu  # noqa: F401 - the CPU runtime for every test (autouse fixture)

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.codegen import run_ptxas
from flydsl.expr import nvvm

SENTINEL = -7.0


def rows_tile(tile_rows: int, cols: int, box_rows: int, static_rows: int | None = None):
    """One block: a TMA load of a sentinel tile (every row), then ``tma_load(..., rows=n)`` of the tile at row ``m0``
    of ``src`` over it, each completing ``load_bytes`` on the mbarrier; the shared tile is stored to ``out`` and
    ``load_bytes(n)`` to ``nb``."""

    @flyc.kernel
    def k(tfill: nvvm.TmaAtom, tin: nvvm.TmaAtom, tout: nvvm.TmaAtom, nb: fx.Tensor, m0: fx.Int32, n: fx.Int32):
        nbytes = tile_rows * cols * 4
        buf = nvvm.align_shared(fx.SharedAllocator(static=False).allocate(nbytes + 16 + 1024).ptr, 1024)
        bar = (buf + nbytes).recast(fx.Int64)
        s = fx.make_tensor(buf.recast(fx.Float32), tin.smem_layout)
        rows = n if fx.const_expr(static_rows is None) else static_rows
        if fx.thread_idx.x == 0:
            nvvm.mbarrier_init(bar, 1)
            nvvm.fence_mbarrier_init()
            nvvm.mbarrier_arrive_expect_tx(bar, tfill.tile_bytes)
            nvvm.tma_load(tfill, s, bar, (0, 0))
            nvvm.mbarrier_wait(bar, 0)
            nvvm.mbarrier_arrive_expect_tx(bar, tin.load_bytes(rows))
            nvvm.tma_load(tin, s, bar, (m0, 0), rows=rows)
            nvvm.mbarrier_wait(bar, 1)
            nb[0] = fx.Int32(tin.load_bytes(rows))
            nvvm.tma_store(tout, s, (0, 0))
            nvvm.bulk_commit_group()
            nvvm.bulk_wait_group(0)

    @flyc.jit
    def launch(fill: fx.Tensor, src: fx.Tensor, out: fx.Tensor, nb: fx.Tensor, m0: fx.Int32, n: fx.Int32):
        lay = nvvm.make_smem_layout_gmma(src.dtype, (tile_rows, cols))
        tfill, tout = nvvm.make_tma_atom(fill, lay), nvvm.make_tma_atom(out, lay, store=True)
        tin = nvvm.make_tma_atom(src, lay, box_rows=box_rows)
        k(tfill, tin, tout, nb, m0, n).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return launch


def _run(tile_rows, cols, box_rows, src_rows, m0, n, static_rows=None):
    src = np.arange(1, src_rows * cols + 1, dtype=np.float32).reshape(src_rows, cols)
    fill = np.full((tile_rows, cols), SENTINEL, np.float32)
    out = np.zeros((tile_rows, cols), np.float32)
    nb = np.zeros(1, np.int32)
    rows_tile(tile_rows, cols, box_rows, static_rows)(fill, src, out, nb, m0, n)
    return src, out, int(nb[0])


def _want(src, tile_rows, cols, box_rows, m0, n):
    """The tile as the GPU leaves it: every row when at most one group is left out, else the groups below n."""
    loaded = tile_rows if n > tile_rows - 2 * box_rows else -(-n // box_rows) * box_rows
    want = np.full((tile_rows, cols), SENTINEL, np.float32)
    for r in range(loaded):
        want[r] = src[m0 + r] if m0 + r < len(src) else 0.0  # rows past the tensor: zero-filled
    return want, loaded * cols * 4


CASES = [(t, c, b, n) for t, c, b in [(32, 32, 8), (48, 64, 8), (32, 32, 16)] for n in (1, 8, 9, 17, 24, 25, 40, 41, 48)
         if n <= t]  # fmt: skip


@pytest.mark.parametrize("tile_rows, cols, box_rows, n", CASES)
def test_a_row_grouped_load_copies_only_the_groups_holding_the_rows(tile_rows, cols, box_rows, n):
    src_rows = n + 3  # the tensor ends inside the tile (the rows past it in a copied group are zero-filled)
    src, out, nb = _run(tile_rows, cols, box_rows, src_rows, 3, n)
    want, nbytes = _want(src, tile_rows, cols, box_rows, 3, n)
    np.testing.assert_array_equal(out, want)
    assert nb == nbytes


@pytest.mark.parametrize("n", [5, 31])
def test_a_static_row_count_needs_no_branch(n):
    src, out, nb = _run(32, 32, 8, 64, 0, 0, static_rows=n)
    want, nbytes = _want(src, 32, 32, 8, 0, n)
    np.testing.assert_array_equal(out, want)
    assert nb == nbytes


@pytest.mark.parametrize("n", [0, -9, -40])
def test_no_rows_load_nothing_and_expect_no_bytes(n):
    """A run-time count of 0 or less copies no group and completes no bytes (the barrier still completes: no hang)."""
    src, out, nb = _run(32, 32, 8, 40, 0, n)
    np.testing.assert_array_equal(out, np.full((32, 32), SENTINEL, np.float32))
    assert nb == 0


@pytest.mark.parametrize("box_rows, error", [(5, "a divisor of the tile's 32 rows"), (0, "a divisor")])
def test_box_rows_must_divide_the_tile(box_rows, error):
    with pytest.raises(Exception, match=error):
        _run(32, 32, box_rows, 40, 0, 9)


def test_box_rows_is_for_loads():
    @flyc.jit
    def launch(out: fx.Tensor):
        nvvm.make_tma_atom(out, nvvm.make_smem_layout_gmma(out.dtype, (32, 32)), store=True, box_rows=8)

    with pytest.raises(Exception, match=r"box_rows is for loads.*\(a store atom\)"):
        launch(np.zeros((32, 32), np.float32))


def test_box_rows_the_layout_cannot_store_name_the_option():
    """Boxes of one row of a 32-byte-swizzled bf16 tile would start 32 bytes apart (TMA boxes start on 128 bytes)."""

    @flyc.jit
    def launch(src: fx.Tensor):
        nvvm.make_tma_atom(src, nvvm.make_smem_layout_gmma(src.dtype, (32, 16), swizzle=32), box_rows=1)

    import ml_dtypes

    with pytest.raises(Exception, match=r"box_rows=1: .*not 128-byte aligned"):
        launch(np.zeros((32, 16), ml_dtypes.bfloat16))


def test_rows_needs_a_row_grouped_atom():
    @flyc.kernel
    def k(tin: nvvm.TmaAtom):
        buf = nvvm.align_shared(fx.SharedAllocator(static=False).allocate(4096 + 1024).ptr, 1024)
        s = fx.make_tensor(buf.recast(fx.Float32), tin.smem_layout)
        nvvm.tma_load(tin, s, (buf + 4096).recast(fx.Int64), (0, 0), rows=3)

    @flyc.jit
    def launch(src: fx.Tensor):
        k(nvvm.make_tma_atom(src, nvvm.make_smem_layout_gmma(src.dtype, (32, 32)))).launch(grid=(1, 1, 1),
                                                                                           block=(32, 1, 1))  # fmt: skip

    with pytest.raises(Exception, match=r"tma_load\(rows=\.\.\.\) needs a TMA atom made with box_rows="):
        launch(np.zeros((32, 32), np.float32))


def test_a_row_grouped_load_lowers_to_ptx_that_ptxas_accepts(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    monkeypatch.setenv("COMPILE_ONLY", "1")
    z = np.zeros((48, 64), np.float32)
    rows_tile(48, 64, 8)(z, z, z, np.zeros(1, np.int32), 0, 9)
    (ptx,) = [p.read_text() for p in tmp_path.glob("*/*.ptx")]
    # two K atoms: the fill (2 boxes), the whole tile (2), and one loop over the groups below n (2 boxes a group: the
    # groups' boxes are group 0's moved by 1 KB each)
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == 2 + 2 + 2
    if HAVE_PTXAS:
        run_ptxas(ptx, "sm_90a")
