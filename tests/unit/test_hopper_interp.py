"""The Hopper ops on the interpreter: TMA and bulk copies, mbarrier semantics, warp-by-warp execution and
deadlock reports, named barriers, elect, setmaxnreg, cluster ids, and wgmma against numpy."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from flydsl.dialects import arith, gpu, ptr, scf
from flydsl.dialects import nvvm_sm90 as nv
from flydsl.interp import InterpError, Memory, run_kernel
from flydsl.interp.tc_numerics import fp8_error_bound
from flydsl.ir import InsertionPoint, PointerType, VectorType
from flydsl.ir import types as T
from flydsl.layout.gmma import layout_table, split_swizzle
from flydsl.testing import build_kernel

sys.path.insert(0, os.path.dirname(__file__))
import hopper_cases as H  # noqa: E402

BAR = PointerType(T.i64, "shared")
I32G = PointerType(T.i32, "global")


@pytest.fixture(autouse=True)
def _cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH"):
        monkeypatch.delenv(v, raising=False)


def c32(x):
    return arith.const(x, T.i32)


def kernel_of(mod):
    return next(o for o in mod.walk() if o.defn.name == "gpu.func")


def run(mod, *arrays, block=64, grid=1, scalars=()):
    mem = Memory()
    args = [mem.register(a, f"a{i}") for i, a in enumerate(arrays)] + list(scalars)
    run_kernel(kernel_of(mod), grid=grid, block=block, args=args, memory=mem, check=True)


def if_(cond):
    op = scf.build_if(cond, with_else=False)
    return InsertionPoint(op.regions[0].blocks[0])


# -- TMA -------------------------------------------------------------------------------------------------------


def _expected_smem(a, tile, coord, swizzle, major, transpose):
    """The tile's bytes as the layout says TMA writes them (zero outside the matrix)."""
    from hopper_cases import FX

    from flydsl.expr import nvvm

    dt = {np.dtype(v): k for k, v in H.NP.items()}[a.dtype]
    lay = nvvm.make_smem_layout_gmma(FX[dt], tile, major=major, swizzle=swizzle)
    sw, off, outer = split_swizzle(lay)
    tab = layout_table(outer, off)
    m = a.T if transpose else a
    e = a.dtype.itemsize
    img = np.zeros(tile[0] * tile[1] * e, np.uint8)
    for r in range(tile[0]):
        for c in range(tile[1]):
            o = tab[r][c]
            o = sw(o) if sw is not None else o
            gr, gc = coord[0] + r, coord[1] + c
            if 0 <= gr < m.shape[0] and 0 <= gc < m.shape[1]:
                img[o * e : o * e + e] = m[gr : gr + 1, gc].view(np.uint8)
    return img.view(np.int32)


# (dtype, matrix shape, tile, swizzle, major, load box coordinates, transposed view). Loads start anywhere
# along the strided mode (negative included) but at multiples of 16 bytes along the unit-stride one (mode 1,
# or mode 0 for the transposed view): the GPU raises an illegal-instruction error otherwise (see
# test_a_tma_box_off_the_16_byte_grid_faults_like_the_gpu). The tile is stored back at H.store_coords(coord):
# the load's coordinates with negative ones moved to 0, since a TMA store must not start before the tensor
# (the H200 trapped on the stores at (-3, 104) and (66, -8); test_a_tma_store_at_a_negative_coordinate_...).
TMA_CASES = [
    ("bf16", (100, 72), (64, 64), 128, "K", (8, 40), False),
    ("bf16", (64, 128), (64, 32), 64, "K", (-3, 104), False),
    ("f16", (48, 40), (32, 16), 32, "K", (20, 0), False),
    ("bf16", (70, 40), (8, 16), 0, "K", (66, -8), False),
    ("e4m3", (40, 256), (32, 128), 128, "K", (16, 192), False),
    ("bf16", (200, 40), (128, 16), 128, "MN", (96, 8), True),
    ("i8", (96, 96), (64, 32), 32, "K", (0, 80), False),
]


@pytest.mark.parametrize("case", TMA_CASES, ids=lambda c: f"{c[0]}-sw{c[3]}-{c[4]}-{c[5]}")
def test_tma_load_places_the_box_as_the_layout_says_and_store_clips(case):
    dt, shape, tile, swz, major, coord, transpose = case
    raw, out, a = H.run_tma_roundtrip("cpu", dt, shape, tile, swz, major, coord, transpose=transpose)
    np.testing.assert_array_equal(raw, _expected_smem(a, tile, coord, swz, major, transpose))
    m = a.T if transpose else a
    # the loaded tile: the matrix inside it, zero before and after it
    box = np.zeros(tile, m.dtype)
    r0, c0 = max(coord[0], 0), max(coord[1], 0)
    r1, c1 = min(coord[0] + tile[0], m.shape[0]), min(coord[1] + tile[1], m.shape[1])
    box[r0 - coord[0] : r1 - coord[0], c0 - coord[1] : c1 - coord[1]] = m[r0:r1, c0:c1]
    # stored at s: the part inside the matrix
    s = H.store_coords(coord)
    want = np.full(m.shape, -1, m.dtype)
    r1, c1 = min(s[0] + tile[0], m.shape[0]), min(s[1] + tile[1], m.shape[1])
    want[s[0] : r1, s[1] : c1] = box[: r1 - s[0], : c1 - s[1]]
    got = out.T if transpose else out
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize(
    "dt, shape, tile, swz, major, coord, transpose, what",
    [
        ("bf16", (64, 128), (64, 32), 64, "K", (-3, 100), False, "TMA load"),  # 200 bytes: the round-1 fault
        ("bf16", (70, 40), (8, 16), 0, "K", (66, 30), False, "TMA load"),
        ("bf16", (200, 40), (128, 16), 128, "MN", (100, 8), True, "TMA load"),  # mode 0 is the unit-stride one
        ("i8", (96, 96), (64, 32), 32, "K", (0, 88), False, "TMA load"),
    ],
)
def test_a_tma_box_off_the_16_byte_grid_faults_like_the_gpu(dt, shape, tile, swz, major, coord, transpose, what):
    """A box whose unit-stride coordinate is not a multiple of 16 bytes is an illegal instruction on the GPU
    (Triton's Gluon TMA tutorial states the rule; the H200 trapped on round 1's (-3, 100) on bf16, whose
    store also started at a negative row); the interpreter reports the same program as a fault at the copy."""
    with pytest.raises(InterpError, match=rf"{what} with box coordinates .*not a multiple of 16 .*illegal-instruction"):
        H.run_tma_roundtrip("cpu", dt, shape, tile, swz, major, coord, transpose=transpose)


def test_a_tma_store_off_the_16_byte_grid_faults():
    import flydsl.compiler as flyc
    import flydsl.expr as fx
    from flydsl.expr import nvvm

    @flyc.kernel
    def k(t: nvvm.TmaAtom, c1: fx.Int32):
        buf = nvvm.align_shared(fx.SharedAllocator(static=False).allocate(2048 + 1024).ptr, 1024)
        s = fx.make_tensor(buf.recast(fx.BFloat16), t.smem_layout)
        if fx.thread_idx.x == 0:
            nvvm.tma_store(t, s, (0, c1))
            nvvm.bulk_commit_group()
            nvvm.bulk_wait_group(0)

    @flyc.jit
    def launch(dst: fx.Tensor, c1: fx.Int32):
        lay = nvvm.make_smem_layout_gmma(dst.dtype, (16, 64), major="K", swizzle=128)
        k(nvvm.make_tma_atom(dst, lay, store=True), c1).launch(grid=1, block=32)

    import ml_dtypes

    out = np.zeros((16, 128), ml_dtypes.bfloat16)
    launch(out, 64)  # 128 bytes: fine
    with pytest.raises(InterpError, match=r"TMA store with box coordinates \(4, 0\).*8 bytes, not a multiple of 16"):
        launch(out, 4)


def test_a_static_tma_coordinate_off_the_16_byte_grid_is_an_error_at_the_users_line():
    import ml_dtypes

    import flydsl.compiler as flyc
    import flydsl.expr as fx
    from flydsl.expr import nvvm

    @flyc.kernel
    def k(t: nvvm.TmaAtom):
        buf = nvvm.align_shared(fx.SharedAllocator(static=False).allocate(2048 + 1024 + 16).ptr, 1024)
        s = fx.make_tensor(buf.recast(fx.BFloat16), t.smem_layout)
        bar = (buf + 2048).recast(fx.Int64)
        nvvm.tma_load(t, s, bar, (0, 12))  # 24 bytes along the unit-stride mode

    @flyc.jit
    def launch(src: fx.Tensor):
        lay = nvvm.make_smem_layout_gmma(src.dtype, (16, 64), major="K", swizzle=128)
        k(nvvm.make_tma_atom(src, lay)).launch(grid=1, block=32)

    with pytest.raises(flyc.FlyDSLError) as ei:
        launch(np.zeros((16, 128), ml_dtypes.bfloat16))
    msg = str(ei.value)
    assert "multiple of 8 elements along mode 1" in msg and "got coordinate 12" in msg
    assert "nvvm.tma_load(t, s, bar, (0, 12))" in msg  # located at the user's line


@pytest.mark.parametrize(
    "dt, shape, tile, swz, major, coord, crd",
    [
        ("bf16", (64, 128), (64, 32), 64, "K", (-3, 104), r"\(104, -3\)"),
        ("bf16", (70, 40), (8, 16), 0, "K", (66, -8), r"\(-8, 66\)"),
    ],
)
def test_a_tma_store_at_a_negative_coordinate_faults_like_the_gpu(dt, shape, tile, swz, major, coord, crd):
    """The H200 raised a sticky 'illegal instruction' for these round trips when the tile was stored back at
    the (negative) coordinates it was loaded from; with the store moved to non-negative coordinates the same
    loads run (TMA_CASES). The CUDA C++ Programming Guide: a TMA load's box may start at negative indices, a
    store's may not. The interpreter faults at the store, naming the rule and the user's line."""
    with pytest.raises(InterpError, match=rf"TMA store with box coordinates {crd}.*must not start before") as ei:
        H.run_tma_roundtrip("cpu", dt, shape, tile, swz, major, coord, store_at=coord)
    assert "nvvm.tma_store(tout, s, (s0, s1))" in str(ei.value)
    raw, out, a = H.run_tma_roundtrip("cpu", dt, shape, tile, swz, major, coord)  # the load alone is fine
    assert raw.any() and (out != -1).any()


def test_a_static_negative_tma_store_coordinate_is_an_error_at_the_users_line():
    import ml_dtypes

    import flydsl.compiler as flyc
    import flydsl.expr as fx
    from flydsl.expr import nvvm

    @flyc.kernel
    def k(t: nvvm.TmaAtom):
        buf = nvvm.align_shared(fx.SharedAllocator(static=False).allocate(2048 + 1024).ptr, 1024)
        s = fx.make_tensor(buf.recast(fx.BFloat16), t.smem_layout)
        if fx.thread_idx.x == 0:
            fx.copy(t, s, t.at(-4, 0))  # a row before the tensor
            nvvm.bulk_commit_group()

    @flyc.jit
    def launch(dst: fx.Tensor):
        lay = nvvm.make_smem_layout_gmma(dst.dtype, (16, 64), major="K", swizzle=128)
        k(nvvm.make_tma_atom(dst, lay, store=True)).launch(grid=1, block=32)

    with pytest.raises(flyc.FlyDSLError) as ei:
        launch(np.zeros((16, 128), ml_dtypes.bfloat16))
    msg = str(ei.value)
    assert "must not start before the tensor: coordinate -4 in mode 0 is negative" in msg
    assert "fx.copy(t, s, t.at(-4, 0))" in msg  # located at the user's line


def test_bulk_copies_round_trip_and_complete_on_the_barrier():
    def body(src, dst):
        sm = ptr.shared_alloc(count=64, align=128, result_types=[PointerType(T.i32, "shared")])
        bar = ptr.shared_alloc(count=1, align=8, result_types=[BAR])
        tid = gpu.thread_id(dimension="x")
        with if_(arith.cmpi(tid, c32(0), predicate="eq")):
            nv.mbarrier_init(bar, c32(1))
            nv.mbarrier_arrive_expect_tx(bar, c32(256))
            nv.bulk_load(sm, src, c32(256), bar)
            scf.yield_()
        nv.mbarrier_wait(bar, c32(0))
        with if_(arith.cmpi(tid, c32(0), predicate="eq")):
            nv.bulk_store(dst, sm, c32(256))
            nv.bulk_commit()
            nv.bulk_wait(pending=0)
            scf.yield_()

    src = np.arange(64, dtype=np.int32)
    dst = np.zeros(64, np.int32)
    run(build_kernel([I32G, I32G], body), src, dst, block=32)
    np.testing.assert_array_equal(dst, src)


def test_bulk_copy_of_a_size_not_multiple_of_16_faults():
    def body(src):
        sm = ptr.shared_alloc(count=64, align=128, result_types=[PointerType(T.i32, "shared")])
        bar = ptr.shared_alloc(count=1, align=8, result_types=[BAR])
        nv.mbarrier_init(bar, c32(1))
        nv.bulk_load(sm, src, c32(20), bar)

    with pytest.raises(InterpError, match="positive multiple of 16 bytes, got 20"):
        run(build_kernel([I32G], body), np.zeros(64, np.int32), block=1)


# -- mbarriers ------------------------------------------------------------------------------------------------


def _pingpong(wait_parity_first: int, arrive: bool = True, expect: int = 0, count: int = 32):
    """Warp 1 waits on a barrier that warp 0 arrives on after writing; both write their phases to out."""

    def body(out):
        bar = ptr.shared_alloc(count=1, align=8, result_types=[BAR], name="ready")
        tid = gpu.thread_id(dimension="x")
        with if_(arith.cmpi(tid, c32(0), predicate="eq")):
            nv.mbarrier_init(bar, c32(count))
            scf.yield_()
        gpu.barrier()
        warp = arith.divsi(tid, c32(32))
        ifop = scf.build_if(arith.cmpi(warp, c32(0), predicate="eq"))
        with InsertionPoint(ifop.regions[0].blocks[0]):
            ptr.store(c32(42), ptr.add(out, tid))
            if expect:
                nv.mbarrier_expect_tx(bar, c32(expect))
            if arrive:
                nv.mbarrier_arrive(bar)
            scf.yield_()
        with InsertionPoint(ifop.regions[1].blocks[0]):
            nv.mbarrier_wait(bar, c32(wait_parity_first))
            v = ptr.load(ptr.add(out, arith.subi(tid, c32(32))), result_types=[T.i32])
            ptr.store(arith.addi(v, c32(1)), ptr.add(out, tid))
            scf.yield_()

    return build_kernel([I32G], body)


def test_a_waiting_warp_runs_after_the_warp_it_waits_for():
    out = np.zeros(64, np.int32)
    run(_pingpong(0), out)
    np.testing.assert_array_equal(out, [42] * 32 + [43] * 32)


def test_deadlock_over_arrive_is_reported_with_the_barrier_and_the_line():
    out = np.zeros(64, np.int32)
    mod = _pingpong(0)
    # warp 0 never arrives: the wait on phase 0 cannot complete
    with pytest.raises(InterpError) as ei:
        run(_pingpong(0, arrive=False), out)
    msg = str(ei.value)
    assert "deadlock in block (0, 0, 0)" in msg
    assert "warp 1 (threads 32-63) waits" in msg and "nvvm.mbarrier_wait" in msg
    assert "phase of parity 0 of mbarrier at shared offset 0x0 (element 0 of ready" in msg
    assert "0 of 32 arrival(s)" not in msg and "32 of 32 arrival(s) pending" in msg
    del mod


def test_deadlock_when_expect_tx_is_never_met():
    with pytest.raises(InterpError, match=r"512 transaction byte\(s\) still expected"):  # 32 threads x 16
        run(_pingpong(0, expect=16), np.zeros(64, np.int32))


def test_waiting_on_the_completed_parity_passes_at_once():
    out = np.zeros(64, np.int32)
    run(_pingpong(1, arrive=False), out)  # a fresh barrier: the phase of parity 1 counts as completed
    assert (out[32:] == 1).all()


def test_more_arrivals_than_the_phase_expects_is_a_fault():
    with pytest.raises(InterpError, match=r"32 arrival\(s\) on a barrier whose current phase expects only 1 more"):
        run(_pingpong(0, count=1), np.zeros(64, np.int32))


def test_barrier_used_before_init_is_a_fault():
    def body(out):
        bar = ptr.shared_alloc(count=1, align=8, result_types=[BAR])
        nv.mbarrier_arrive(bar)

    with pytest.raises(InterpError, match="used before mbarrier_init"):
        run(build_kernel([I32G], body), np.zeros(1, np.int32), block=32)


def test_try_wait_polling_loop_terminates_and_spinning_forever_deadlocks():
    def body(out, make_progress):
        bar = ptr.shared_alloc(count=1, align=8, result_types=[BAR])
        tid = gpu.thread_id(dimension="x")
        with if_(arith.cmpi(tid, c32(0), predicate="eq")):
            nv.mbarrier_init(bar, c32(1))
            scf.yield_()
        gpu.barrier()
        warp = arith.divsi(tid, c32(32))
        ifop = scf.build_if(arith.cmpi(warp, c32(0), predicate="eq"))
        with InsertionPoint(ifop.regions[0].blocks[0]):
            with if_(arith.cmpi(make_progress, c32(0), predicate="ne")):
                with if_(arith.cmpi(tid, c32(0), predicate="eq")):
                    nv.mbarrier_arrive(bar)
                    scf.yield_()
                scf.yield_()
            scf.yield_()
        with InsertionPoint(ifop.regions[1].blocks[0]):
            w = scf.build_while([c32(0)], [T.i32])
            b0 = w.regions[0].blocks[0]
            with InsertionPoint(b0):
                done = nv.mbarrier_try_wait(bar, c32(0))
                scf.condition(arith.xori(done, arith.const(True, T.i1)), b0.args[0])
            b1 = w.regions[1].blocks[0]
            with InsertionPoint(b1):
                scf.yield_(arith.addi(b1.args[0], c32(1)))
            ptr.store(w.results[0], ptr.add(out, tid))
            scf.yield_()

    mod = build_kernel([I32G, T.i32], body)
    out = np.full(64, -1, np.int32)
    run(mod, out, scalars=[1])
    assert (out[32:] >= 0).all()
    with pytest.raises(InterpError, match="deadlock"):
        run(mod, out, scalars=[0])


# -- named barriers, elect, setmaxnreg, clusters -------------------------------------------------------------


def test_named_barrier_orders_a_producer_warp_before_the_consumers():
    def body(out):
        sm = ptr.shared_alloc(count=32, result_types=[PointerType(T.i32, "shared")])
        tid = gpu.thread_id(dimension="x")
        warp = arith.divsi(tid, c32(32))
        ifop = scf.build_if(arith.cmpi(warp, c32(2), predicate="eq"))
        with InsertionPoint(ifop.regions[0].blocks[0]):
            ptr.store(arith.muli(tid, c32(3)), ptr.add(sm, arith.subi(tid, c32(64))))
            nv.barrier_arrive(c32(3), c32(96))
            scf.yield_()
        with InsertionPoint(ifop.regions[1].blocks[0]):
            nv.barrier_sync(c32(3), c32(96))
            lane = arith.remsi(tid, c32(32))
            ptr.store(ptr.load(ptr.add(sm, lane), result_types=[T.i32]), ptr.add(out, tid))
            scf.yield_()

    out = np.zeros(96, np.int32)
    run(build_kernel([I32G], body), out, block=96)
    np.testing.assert_array_equal(out[:64], np.tile(np.arange(64, 96) * 3, 2))


def test_named_barrier_that_never_fills_deadlocks():
    def body(out):
        nv.barrier_sync(c32(1), c32(128))

    with pytest.raises(InterpError, match=r"at barrier 1: 64 of 128 threads arrived"):
        run(build_kernel([I32G], body), np.zeros(1, np.int32), block=64)


def test_elect_sync_picks_the_lowest_active_lane_of_each_warp():
    def body(out):
        tid = gpu.thread_id(dimension="x")
        with if_(arith.cmpi(arith.remsi(tid, c32(32)), c32(5), predicate="sge")):
            e = nv.elect_sync()
            ptr.store(arith.extui(e, result_types=[T.i32]), ptr.add(out, tid))
            scf.yield_()

    out = np.full(64, -1, np.int32)
    run(build_kernel([I32G], body), out)
    want = np.full(64, -1, np.int32)
    for w in (0, 32):
        want[w + 5 : w + 32] = 0
        want[w + 5] = 1
    np.testing.assert_array_equal(out, want)


def test_setmaxnreg_in_a_divergent_warp_is_a_fault():
    def body(out):
        tid = gpu.thread_id(dimension="x")
        with if_(arith.cmpi(tid, c32(3), predicate="slt")):
            nv.setmaxnreg(count=232, action="inc")
            scf.yield_()

    with pytest.raises(InterpError, match="setmaxnreg reached by only some threads of warp 0"):
        run(build_kernel([I32G], body), np.zeros(1, np.int32), block=32)


def test_cluster_ids_follow_the_kernels_cluster_dims():
    def body(out):
        b = gpu.block_id(dimension="x")
        for i, v in enumerate((nv.cluster_ctarank(), nv.cluster_id(dimension="x"), nv.cluster_dim(dimension="x"))):
            ptr.store(v, ptr.add(out, arith.addi(arith.muli(b, c32(3)), c32(i))))

    out = np.zeros(12, np.int32)
    run(build_kernel([I32G], body, cluster_dims=[2, 1, 1]), out, grid=4, block=1)
    np.testing.assert_array_equal(out.reshape(4, 3), [[0, 0, 2], [1, 0, 2], [0, 1, 2], [1, 1, 2]])


# -- wgmma -------------------------------------------------------------------------------------------------------

WGMMA_CASES = [
    ("bf16", 64, "K", "K", (128, 128), "smem"),
    ("bf16", 256, "K", "K", (128, 128), "smem"),
    ("bf16", 128, "MN", "MN", (128, 64), "smem"),
    ("f16", 16, "K", "MN", (32, 32), "smem"),
    ("f16", 8, "K", "K", (0, 0), "smem"),
    ("bf16", 24, "MN", "K", (0, 64), "smem"),
    ("e4m3", 32, "K", "K", (128, 128), "smem"),
    ("e5m2", 40, "K", "K", (64, 32), "smem"),
    ("i8", 48, "K", "K", (64, 64), "smem"),
    ("i8", 24, "K", "K", (32, 128), "smem"),
    ("bf16", 64, "K", "K", (128, 128), "rmem"),
    ("e4m3", 16, "K", "K", (0, 0), "rmem"),
]


@pytest.mark.parametrize("case", WGMMA_CASES, ids=lambda c: "-".join(map(str, c)))
def test_wgmma_equals_numpy(case):
    ab, n, am, bm, swz, src = case
    c, a, b = H.run_wgmma("cpu", ab, n, a_major=am, b_major=bm, swizzle=swz, a_src=src)
    ref = H.reference_mm(a, b)
    if ab == "i8":
        np.testing.assert_array_equal(c, ref)
    elif ab in ("e4m3", "e5m2"):  # the fp8 tensor core's accumulation (test_tc_numerics.py pins the model)
        np.testing.assert_array_equal(c, H.fp8_mm(a, b, ab))
        assert (np.abs(c - ref) <= fp8_error_bound(a[:, None, :], b[None, :, :], ab)).all()
    else:
        np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-5)


def test_wgmma_with_a_descriptor_outside_shared_memory_faults():
    def body(out):
        ptr.shared_alloc(count=256, align=1024, result_types=[PointerType(T.bf16, "shared")])
        acc = arith.const(0.0, VectorType((4,), T.f32))
        d = arith.const(1 << 62 | 1 << 32 | 0x3000, T.i64)  # 128B swizzle, start far beyond 512 bytes
        nv.wgmma(acc, d, d, arith.const(False, T.i1), n=8, k=16, a_type="bf16", b_type="bf16")

    with pytest.raises(InterpError, match="outside the block's 512"):
        run(build_kernel([I32G], body), np.zeros(1, np.int32), block=128)


def test_wgmma_by_part_of_a_warp_faults():
    def body(out):
        ptr.shared_alloc(count=1024, align=1024, result_types=[PointerType(T.bf16, "shared")])
        tid = gpu.thread_id(dimension="x")
        with if_(arith.cmpi(tid, c32(4), predicate="slt")):
            acc = arith.const(0.0, VectorType((4,), T.f32))
            d = arith.const(1 << 62 | 64 << 32, T.i64)
            nv.wgmma(acc, d, d, arith.const(False, T.i1), n=8, k=16, a_type="bf16", b_type="bf16")
            scf.yield_()

    with pytest.raises(InterpError, match="every thread of the warp"):
        run(build_kernel([I32G], body), np.zeros(1, np.int32), block=128)


# -- the user's view: a deadlock in a @flyc.jit program names the user's line -----------------------------------

import flydsl.compiler as flyc  # noqa: E402
import flydsl.expr as fx  # noqa: E402
from flydsl.expr import nvvm  # noqa: E402
from flydsl.expr.typing import Tensor  # noqa: E402


@flyc.kernel
def _over_arrive(out: Tensor):
    bar = fx.alloc_shared(fx.Int64, 1, align=8)
    if fx.thread_idx.x == 0:
        nvvm.mbarrier_init(bar, 1)
        nvvm.fence_mbarrier_init()
    fx.barrier()
    if nvvm.warp_idx() == 0:
        nvvm.mbarrier_arrive(bar, 1)  # every thread of warp 0 arrives: 32 arrivals, 1 expected
    out[fx.thread_idx.x] = 1


@flyc.kernel
def _never_arrived(out: Tensor):
    bars = fx.alloc_shared(fx.Int64, 2, align=8)
    if fx.thread_idx.x == 0:
        nvvm.mbarrier_init(bars + 1, 1)
    fx.barrier()
    nvvm.mbarrier_wait(bars + 1, 0)  # nobody arrives
    out[fx.thread_idx.x] = 1


@flyc.jit
def _launch(out: Tensor, which: fx.Constexpr[int]):
    (_over_arrive if which == 0 else _never_arrived)(out).launch(grid=1, block=64)


def test_a_jit_deadlock_names_the_waiting_line_and_the_barrier():
    with pytest.raises(InterpError) as ei:
        _launch(np.zeros(64, np.int32), 1)
    msg = str(ei.value)
    here = os.path.basename(__file__)
    assert "deadlock in block (0, 0, 0)" in msg
    assert f"warps 0-1 (threads 0-63) wait at {__file__}:" in msg and f"{here}" in msg
    assert "element 1 of shared allocation #0" in msg and "1 of 1 arrival(s) pending" in msg


def test_a_jit_over_arrival_names_the_line():
    with pytest.raises(InterpError, match=r"32 arrival\(s\) on a barrier whose current phase expects only 1 more"):
        _launch(np.zeros(64, np.int32), 0)


@flyc.kernel
def _cluster_ranks(out: Tensor):
    b = fx.block_idx.x
    out[b * 2] = nvvm.cluster_ctarank()
    out[b * 2 + 1] = nvvm.cluster_idx.x


@flyc.jit
def _cluster_launch(out: Tensor, grid: fx.Constexpr[int]):
    _cluster_ranks(out).launch(grid=grid, block=32, cluster=(2, 1, 1))


def test_launch_with_cluster_dims():
    out = np.full(8, -1, np.int32)
    _cluster_launch(out, 4)
    np.testing.assert_array_equal(out.reshape(4, 2), [[0, 0], [1, 0], [0, 1], [1, 1]])
    with pytest.raises(ValueError, match="FLY208"):
        _cluster_launch(out, 3)  # not a whole number of clusters
