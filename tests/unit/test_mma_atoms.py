"""The MMA atom API: op layouts (CuTe's, derived from the PTX tables), tiled-MMA thread-value layouts against
partitions, fx.gemm with the portable UniversalFMA and with mma.sync fed by ldmatrix tiled copies (all
shapes, transposed, swizzled — property-tested), and the errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.copy import CopyError
from flydsl.expr.mma import MmaError, fit_tv_layout
from flydsl.expr.typing import Constexpr
from flydsl.ir import PointerType, f32
from flydsl.testing import trace_kernel


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.delenv("FLYDSL_DUMP_IR", raising=False)


BF16_OP = fx.nvvm.MmaF16BF16Op(fx.BFloat16, fx.Float32, (16, 8, 16))


# ---------------------------------------------------------------------------------------------------------
# layouts
# ---------------------------------------------------------------------------------------------------------


def test_warp_mma_layouts_are_cutes():
    L = fx.make_layout
    assert BF16_OP.layout_A_tv == L(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))  # SM80_16x16_Row
    assert BF16_OP.layout_B_tv == L(((4, 8), (2, 2)), ((16, 1), (8, 64)))
    assert BF16_OP.layout_C_tv == L(((4, 8), (2, 2)), ((32, 1), (16, 8)))  # SM80_16x8_Row
    fp8 = fx.nvvm.MMA(16, 8, 32, fx.Float8E4M3FN)
    assert fp8.layout_A_tv == L(((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256)))
    assert fp8.layout_B_tv == L(((4, 8), (4, 2)), ((32, 1), (8, 128)))
    i8 = fx.nvvm.MmaI8Op(fx.Uint8, fx.Int8)
    assert i8.layout_A_tv == fp8.layout_A_tv and (i8.a_dtype, i8.b_dtype, i8.c_dtype) == (fx.Uint8, fx.Int8, fx.Int32)
    assert fx.nvvm.MMA(16, 8, 16, fx.Float16, fx.Float16).c_dtype is fx.Float16


def test_fit_tv_layout_rejects_a_table_that_is_no_layout():
    idx = np.arange(8).reshape(4, 2)
    assert fit_tv_layout(idx, 4, 2) == fx.make_layout((4, 2), (2, 1))
    idx[3, 1] = 0
    with pytest.raises(ValueError, match="not a layout"):
        fit_tv_layout(idx, 4, 2)


def test_mma_ops_reject_what_ptx_lacks():
    with pytest.raises(
        ValueError, match="PTX has no mma.sync m16n8k16 with A BFloat16, B BFloat16, accumulator Float16"
    ):
        fx.nvvm.MmaF16BF16Op(fx.BFloat16, fx.Float16)
    with pytest.raises(ValueError, match="takes fx.BFloat16 or fx.Float16"):
        fx.nvvm.MmaF16BF16Op(fx.Float32)
    with pytest.raises(ValueError, match="no mma.sync for"):
        fx.nvvm.MMA(16, 8, 8, fx.Float64)


@pytest.mark.parametrize("operand", ["A", "B", "C"])
def test_tiled_tv_layout_matches_every_threads_partition(operand):
    """``tv_layout_X_tiled(thread, value)`` is the tile coordinate thread ``thread``'s partition holds as ``value``."""
    mma = fx.make_tiled_mma(fx.make_mma_atom(BF16_OP), fx.make_layout((2, 2, 1)), (32, 32, 16))
    i0, i1 = {"A": (0, 2), "B": (1, 2), "C": (0, 1)}[operand]
    tile = (mma.tile_size_mnk[i0], mma.tile_size_mnk[i1])
    tv = mma.tv_layout_tiled(operand)
    with trace_kernel([PointerType(f32)]):
        ident = fx.make_identity_tensor(tile)
        for t in range(mma.num_threads):
            part = getattr(mma.get_slice(t), f"partition_{operand}")(ident)
            n = fx.size(part)
            got = [part[i] for i in range(n)]
            want = [fx.idx2crd(tv(t, v), tile) for v in range(n)]
            assert [tuple(g) for g in got] == [tuple(w) for w in want], (operand, t)


def test_fragments_have_the_partition_shape_and_the_ops_types():
    mma = fx.make_tiled_mma(fx.make_mma_atom(BF16_OP), fx.make_layout((2, 4, 1)), (32, 64, 16))
    with trace_kernel([PointerType(f32)]):
        tile_a = fx.make_layout((128, 64), (64, 1))
        fa = mma.make_fragment_A(tile_a)
        assert fa.dtype is fx.BFloat16 and fa.memspace == "register"
        assert fx.size(fa) == 128 * 64 // (32 * 2)  # A is shared by the 4 warps along N
        fc = mma.make_fragment_C(fx.make_layout((128, 256)), stages=2)
        assert fc.dtype is fx.Float32 and fx.size(fc) == 2 * 128 * 256 // 256
    assert mma.tile_size_mnk.unpack() == (32, 64, 16) and mma.num_threads == 256
    assert mma.thr_layout_vmnk == fx.make_layout((32, 2, 4, 1), (1, 32, 64, 0))


# ---------------------------------------------------------------------------------------------------------
# fx.gemm with UniversalFMA: any thread grid, any types
# ---------------------------------------------------------------------------------------------------------


@flyc.kernel
def fma_kernel(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor):
    tid = fx.thread_idx.x
    gA = fx.flat_divide(A, (32, 8))[None, None, 0, 0]
    gB = fx.flat_divide(B, (32, 8))[None, None, 0, 0]
    gC = fx.flat_divide(C, (32, 32))[None, None, 0, 0]
    mma = fx.make_tiled_mma(fx.make_mma_atom(fx.UniversalFMA(fx.Float32)), fx.make_layout((16, 8, 1)))
    thr = mma.get_slice(tid)
    fa, fb = thr.make_fragment_A(gA), thr.make_fragment_B(gB)
    s = fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32)
    fx.copy(s, thr.partition_A(gA), fa)
    fx.copy(s, thr.partition_B(gB), fb)
    fc = thr.make_fragment_C(gC)
    fc.fill(0.0)
    fx.gemm(mma, fc, fa, fb, fc)
    fx.copy(s, fc, thr.partition_C(gC))


@flyc.jit
def fma_launch(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor):
    fma_kernel(A, B, C).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_gemm_with_universal_fma():
    rng = np.random.default_rng(0)
    A = rng.integers(-8, 8, (32, 8)).astype(np.float32)
    B = rng.integers(-8, 8, (32, 8)).astype(np.float32)
    C = np.full((32, 32), np.nan, np.float32)
    fma_launch(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)


# ---------------------------------------------------------------------------------------------------------
# mma.sync fed by ldmatrix tiled copies (one warp), shared memory swizzled
# ---------------------------------------------------------------------------------------------------------


@flyc.kernel
def warp_kernel(
    A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, b_kn: Constexpr[bool], sw: Constexpr[tuple], nums: Constexpr[tuple]
):
    tid = fx.thread_idx.x
    dt = A.dtype
    op = fx.nvvm.MMA(16, 8, 32 if dt.width == 8 else 16, dt)
    M, N, K = op.shape_mnk
    gA = fx.flat_divide(A, (M, K))[None, None, 0, 0]
    Bnk = fx.select(B, [1, 0]) if fx.const_expr(b_kn) else B
    gB = fx.flat_divide(Bnk, (N, K))[None, None, 0, 0]
    gC = fx.flat_divide(C, (M, N))[None, None, 0, 0]
    alloc = fx.SharedAllocator()
    pa = alloc.allocate(fx.Array[dt, M * K, 16]).peek().ptr
    pb = alloc.allocate(fx.Array[dt, N * K, 16]).peek().ptr
    sa_l = fx.make_composed_layout(fx.Swizzle(*sw), 0, fx.make_layout((M, K), (K, 1)))
    sb_l = fx.make_layout((N, K), (1, N)) if fx.const_expr(b_kn) else fx.make_layout((N, K), (K, 1))
    sA, sB = fx.make_view(pa, sa_l), fx.make_view(pb, sb_l)
    for j in fx.range_constexpr(M * K // 32):  # global -> shared, element by element (any layout)
        sA[tid + 32 * j] = gA[tid + 32 * j]
    for j in fx.range_constexpr(N * K // 32):
        sB[tid + 32 * j] = gB[tid + 32 * j]
    fx.barrier()
    mma = fx.make_tiled_mma(fx.make_mma_atom(op), fx.make_layout((1, 1, 1)))
    thr = mma.get_slice(tid)
    fa, fb = thr.make_fragment_A(sA), thr.make_fragment_B(sB)
    la = fx.make_copy_atom(fx.nvvm.LdMatrix8x8x16bOp(False, nums[0]), dt)
    lb = fx.make_copy_atom(fx.nvvm.LdMatrix8x8x16bOp(b_kn, nums[1]), dt)
    ca, cb = fx.make_tiled_copy_A(la, mma).get_slice(tid), fx.make_tiled_copy_B(lb, mma).get_slice(tid)
    fx.copy(la, ca.partition_S(sA), ca.retile(fa))
    fx.copy(lb, cb.partition_S(sB), cb.retile(fb))
    fc = thr.make_fragment_C(gC)
    fc.fill(0.0)
    fx.gemm(mma, fc, fa, fb, fc)
    fx.copy(fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32), fc, thr.partition_C(gC))


@flyc.jit
def warp_launch(
    A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, b_kn: Constexpr[bool], sw: Constexpr[tuple], nums: Constexpr[tuple]
):
    warp_kernel(A, B, C, b_kn, sw, nums).launch(grid=(1, 1, 1), block=(32, 1, 1))


def _warp_gemm(dtype, b_kn, sw, nums, seed=0):
    rng = np.random.default_rng(seed)
    k = 32 if dtype == ml_dtypes.float8_e4m3fn else 16
    A = rng.standard_normal((16, k)).astype(dtype)
    B = rng.standard_normal((k, 8) if b_kn else (8, k)).astype(dtype)
    C = np.full((16, 8), np.nan, np.float32)
    warp_launch(A, B, C, b_kn, sw, nums)
    Bm = B.astype(np.float64) if b_kn else B.astype(np.float64).T
    want = (A.astype(np.float64) @ Bm).astype(np.float32)
    np.testing.assert_array_equal(C, want)


@pytest.mark.parametrize(
    "dtype,b_kn,nums",
    [
        (ml_dtypes.bfloat16, False, (4, 2)),
        (ml_dtypes.bfloat16, True, (4, 2)),
        (np.float16, False, (2, 1)),
        (np.float16, True, (1, 2)),
        (ml_dtypes.float8_e4m3fn, False, (4, 2)),
    ],
    ids=["bf16-x4-x2", "bf16-trans", "f16-x2-x1", "f16-x1-trans-x2", "e4m3-x4-x2"],
)
def test_ldmatrix_tiled_copies_feed_mma(dtype, b_kn, nums):
    sw = (1, 3, 3) if dtype != ml_dtypes.float8_e4m3fn else (1, 4, 3)
    _warp_gemm(dtype, b_kn, sw, nums)


@settings(max_examples=8, deadline=None)
@given(bits=st.integers(0, 1), base=st.integers(3, 3), shift=st.integers(1, 3), trans=st.booleans())
def test_swizzled_shared_tiles_deliver_the_same_fragments(bits, base, shift, trans):
    """Any swizzle that keeps ldmatrix's 16-byte rows whole (base >= 3 for 16-bit elements; A's 16x16 tile has
    two row chunks, so at most one swizzle bit) gives the same MMA result as the plain layout."""
    if shift < bits:
        shift = bits
    _warp_gemm(ml_dtypes.bfloat16, trans, (bits, base, shift), (4, 2), seed=shift)


# ---------------------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------------------


def test_gemm_checks_its_fragments():
    mma = fx.make_tiled_mma(fx.make_mma_atom(BF16_OP))
    with trace_kernel([PointerType(f32)]):
        a = fx.make_rmem_tensor((8, 1, 1), fx.BFloat16)
        b = fx.make_rmem_tensor((4, 1, 1), fx.BFloat16)
        c = fx.make_rmem_tensor((4, 1, 1), fx.Float32)
        with pytest.raises(MmaError, match=r"the first mode of A .* holds 4 values, but one MmaF16BF16Op takes 8"):
            fx.gemm(mma, c, b, b, c)
        with pytest.raises(MmaError, match="extents of D"):
            fx.gemm(mma, fx.make_rmem_tensor((4, 2, 1), fx.Float32), a, b, c)
        with pytest.raises(TypeError, match=r"mma.sync\) has no atom state"):
            fx.gemm(mma, c, a, b, c, accumulate=False)


def test_ldmatrix_cannot_be_predicated_or_transpose_bytes():
    with pytest.raises(ValueError, match="transpose"):
        fx.make_copy_atom(fx.nvvm.LdMatrix8x8x16bOp(True, 4), fx.Float8E4M3FN)
    op = fx.nvvm.LdMatrix8x8x16bOp(False, 4)
    with trace_kernel([PointerType(f32)]):
        with pytest.raises(CopyError, match="cannot be predicated"):
            op.call(None, None, None, True)


# ---------------------------------------------------------------------------------------------------------
# FlyDSL's examples/03-tiledMma.py, with the portable UniversalFMA in place of rocdl.MFMA
# ---------------------------------------------------------------------------------------------------------


@flyc.kernel
def flydsl_tiled_mma_kernel(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor):
    tid = fx.thread_idx.x
    bid = fx.block_idx.x
    bA = fx.slice(fx.zipped_divide(A, (64, 8)), (None, bid))
    bB = fx.slice(fx.zipped_divide(B, (64, 8)), (None, bid))
    bC = fx.slice(fx.zipped_divide(C, (64, 64)), (None, bid))
    mma_atom = fx.make_mma_atom(fx.UniversalFMA(fx.Float32))
    tiled_mma = fx.make_tiled_mma(mma_atom, fx.make_layout((16, 16, 1), (1, 16, 0)))
    thr_mma = tiled_mma.thr_slice(tid)
    copy_atom = fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32)
    thr_copy_A = fx.make_tiled_copy_A(copy_atom, tiled_mma).get_slice(tid)
    thr_copy_B = fx.make_tiled_copy_B(copy_atom, tiled_mma).get_slice(tid)
    thr_copy_C = fx.make_tiled_copy_C(copy_atom, tiled_mma).get_slice(tid)
    frag_A = thr_mma.make_fragment_A(bA)
    frag_B = thr_mma.make_fragment_B(bB)
    frag_C = thr_mma.make_fragment_C(bC)
    fx.copy(copy_atom, thr_copy_A.partition_S(bA), thr_copy_A.retile(frag_A), pred=None)
    fx.copy(copy_atom, thr_copy_B.partition_S(bB), thr_copy_B.retile(frag_B), pred=None)
    frag_C.fill(0)
    fx.gemm(mma_atom, frag_C, frag_A, frag_B, frag_C)
    fx.copy(copy_atom, thr_copy_C.retile(frag_C), thr_copy_C.partition_S(bC), pred=None)


@flyc.jit
def flydsl_tiled_mma(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, stream: fx.Stream = fx.Stream(None)):
    flydsl_tiled_mma_kernel(A, B, C).launch(grid=(1, 1, 1), block=(256, 1, 1), stream=stream)


def test_flydsls_tiled_mma_program_runs_with_universal_fma():
    rng = np.random.default_rng(1)
    A = rng.integers(-4, 5, (64, 8)).astype(np.float32)
    B = rng.integers(-4, 5, (64, 8)).astype(np.float32)
    C = np.full((64, 64), np.nan, np.float32)
    flydsl_tiled_mma(A, B, C)
    np.testing.assert_array_equal(C, A @ B.T)


@flyc.kernel
def block_kernel(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, sw_a: Constexpr[tuple], sw_b: Constexpr[tuple]):
    """4 warps (2 x 2), a (32, 32, 64) bf16 tile: A (32, 64) and B (32, 64) with 128-byte rows in shared
    memory under the given swizzles, ldmatrix.x4 for both (16 N per warp through the permutation)."""
    tid = fx.thread_idx.x
    M, N, K = 32, 32, 64
    gA, gB = fx.flat_divide(A, (M, K))[None, None, 0, 0], fx.flat_divide(B, (N, K))[None, None, 0, 0]
    gC = fx.flat_divide(C, (M, N))[None, None, 0, 0]
    alloc = fx.SharedAllocator()
    pa = alloc.allocate(fx.Array[fx.BFloat16, M * K, 128]).peek().ptr
    pb = alloc.allocate(fx.Array[fx.BFloat16, N * K, 128]).peek().ptr
    sA = fx.make_view(pa, fx.make_composed_layout(fx.Swizzle(*sw_a), 0, fx.make_layout((M, K), (K, 1))))
    sB = fx.make_view(pb, fx.make_composed_layout(fx.Swizzle(*sw_b), 0, fx.make_layout((N, K), (K, 1))))
    for j in fx.range_constexpr(M * K // 128):
        sA[tid + 128 * j] = gA[tid + 128 * j]
        sB[tid + 128 * j] = gB[tid + 128 * j]
    fx.barrier()
    op = fx.nvvm.MmaF16BF16Op(fx.BFloat16, fx.Float32, (16, 8, 16))
    mma = fx.make_tiled_mma(fx.make_mma_atom(op), fx.make_layout((2, 2, 1)), (32, 32, 16))
    thr = mma.get_slice(tid)
    fa, fb = thr.make_fragment_A(sA), thr.make_fragment_B(sB)
    ld = fx.make_copy_atom(fx.nvvm.LdMatrix8x8x16bOp(False, 4), fx.BFloat16)
    ca, cb = fx.make_tiled_copy_A(ld, mma).get_slice(tid), fx.make_tiled_copy_B(ld, mma).get_slice(tid)
    fx.copy(ld, ca.partition_S(sA), ca.retile(fa))
    fx.copy(ld, cb.partition_S(sB), cb.retile(fb))
    fc = thr.make_fragment_C(gC)
    fc.fill(0.0)
    fx.gemm(mma, fc, fa, fb, fc)
    fx.copy(fx.make_copy_atom(fx.UniversalCopy64b(), fx.Float32), fc, thr.partition_C(gC))


@flyc.jit
def block_launch(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, sw_a: Constexpr[tuple], sw_b: Constexpr[tuple]):
    block_kernel(A, B, C, sw_a, sw_b).launch(grid=(1, 1, 1), block=(128, 1, 1))


_SWIZZLE = st.tuples(st.integers(0, 3), st.just(3), st.integers(3, 6)).filter(lambda s: s[2] >= s[0])


@settings(max_examples=6, deadline=None)
@given(sw_a=_SWIZZLE, sw_b=_SWIZZLE)
def test_swizzles_of_128_byte_rows_feed_a_tiled_mma(sw_a, sw_b):
    """Swizzles of up to 3 bits over 16-byte chunks (the bank-conflict-free family of a 128-byte row) give the
    exact product through ldmatrix.x4 + mma.sync on 4 warps."""
    rng = np.random.default_rng(sum(sw_a) + 7 * sum(sw_b))
    A = rng.integers(-4, 5, (32, 64)).astype(ml_dtypes.bfloat16)
    B = rng.integers(-4, 5, (32, 64)).astype(ml_dtypes.bfloat16)
    C = np.full((32, 32), np.nan, np.float32)
    block_launch(A, B, C, sw_a, sw_b)
    np.testing.assert_array_equal(C, A.astype(np.float32) @ B.astype(np.float32).T)
