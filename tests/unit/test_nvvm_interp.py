"""The interpreter's semantics of the nvvm ops against numpy references written from the PTX ISA's text:
per-lane fragment ownership of every mma.sync shape (a wrong lane mapping fails here), the accumulation's
rounding and wrap-around, ldmatrix/stmatrix lane patterns, and cp.async as a copy that completes at its
wait (with zero fill); plus the faults of warp-collective ops in divergent code."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from flydsl.dialects import arith, gpu, nvvm, ptr
from flydsl.interp import InterpError
from flydsl.ir import FloatType, PointerType, VectorType
from flydsl.ir import types as T
from flydsl.testing import KernelBuilder, const, launch

F8E4, F8E5 = FloatType("f8E4M3FN"), FloatType("f8E5M2")
NP = {T.bf16: ml_dtypes.bfloat16, T.f16: np.float16, T.f32: np.float32, T.i32: np.int32, T.i8: np.int8,
      F8E4: ml_dtypes.float8_e4m3fn, F8E5: ml_dtypes.float8_e5m2}  # fmt: skip


# ---------------------------------------------------------------------------------------------------------
# The PTX ISA's fragment tables, transcribed independently of flydsl.dialects.nvvm
# ---------------------------------------------------------------------------------------------------------


def isa_a(lane, i, bits):
    """Element (row, col) of A held as value i by lane (m16n8k16 16-bit / m16n8k32 8-bit)."""
    g, t = lane >> 2, lane % 4
    if bits == 16:  # a0..a7: rows g for a0,a1,a4,a5, g+8 otherwise; cols 2t + (i & 1), +8 for i >= 4
        row = g if i in (0, 1, 4, 5) else g + 8
        return row, t * 2 + (i & 1) + (8 if i >= 4 else 0)
    row = g if i in (0, 1, 2, 3, 8, 9, 10, 11) else g + 8  # a0..a15
    return row, t * 4 + (i & 3) + (16 if i >= 8 else 0)


def isa_b(lane, i, bits):
    g, t = lane >> 2, lane % 4
    if bits == 16:  # b0..b3: rows (k) 2t + (i & 1), +8 for i >= 2; col g
        return t * 2 + (i & 1) + (8 if i >= 2 else 0), g
    return t * 4 + (i & 3) + (16 if i >= 4 else 0), g  # b0..b7


def isa_c(lane, i):
    g, t = lane >> 2, lane % 4
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


def pack(mat, fn, nvals, *extra):
    """Per-lane fragments (32, nvals) of ``mat`` by the ISA function ``fn``."""
    out = np.zeros((32, nvals), mat.dtype)
    for lane in range(32):
        for i in range(nvals):
            out[lane, i] = mat[fn(lane, i, *extra)]
    return out


def _mma_kernel(ta, tb, tc, shape, na, nb, nc, **attrs):
    with KernelBuilder("mma", [PointerType(ta), PointerType(tb), PointerType(tc), PointerType(tc)]) as kb:
        a, b, c, d = kb.args
        t = kb.global_id()
        av = ptr.load(ptr.add(a, arith.muli(t, const(na))), result_types=[VectorType(na, ta)])
        bv = ptr.load(ptr.add(b, arith.muli(t, const(nb))), result_types=[VectorType(nb, tb)])
        cv = ptr.load(ptr.add(c, arith.muli(t, const(nc))), result_types=[VectorType(nc, tc)])
        ptr.store(nvvm.mma_sync(av, bv, cv, shape=shape, **attrs), ptr.add(d, arith.muli(t, const(nc))))
    return kb.op


def run_mma(ta, tb, tc, shape, A, B, C, warps=1, **attrs):
    """Run one mma per warp on the interpreter: A (w, M, K), B (w, K, N), C (w, M, N); returns D (w, M, N)."""
    bits_a, bits_b = ta.bitwidth, tb.bitwidth
    na, nb, nc = (16 if bits_a == 8 else 8), (8 if bits_b == 8 else 4), 4
    k = _mma_kernel(ta, tb, tc, shape, na, nb, nc, **attrs)
    af = np.concatenate([pack(A[w], isa_a, na, bits_a) for w in range(warps)])
    bf = np.concatenate([pack(B[w], isa_b, nb, bits_b) for w in range(warps)])
    cf = np.concatenate([pack(C[w], lambda lane, i: isa_c(lane, i), nc) for w in range(warps)])
    out = np.zeros_like(cf)
    launch(k, 1, 32 * warps, af, bf, cf, out, check=True)
    D = np.zeros_like(C)
    for w in range(warps):
        for lane in range(32):
            for i in range(nc):
                D[(w, *isa_c(lane, i))] = out[32 * w + lane, i]
    return D


@pytest.mark.parametrize(
    "ta,tc",
    [(T.bf16, T.f32), (T.f16, T.f32), (T.f16, T.f16)],
    ids=["bf16-f32", "f16-f32", "f16-f16"],
)
def test_mma_m16n8k16_fragments_and_result(ta, tc):
    rng = np.random.default_rng(1)
    w = 2
    A = rng.standard_normal((w, 16, 16)).astype(NP[ta])
    B = rng.standard_normal((w, 16, 8)).astype(NP[ta])
    C = rng.standard_normal((w, 16, 8)).astype(NP[tc])
    D = run_mma(ta, ta, tc, "m16n8k16", A, B, C, warps=w)
    want = (np.matmul(A.astype(np.float64), B.astype(np.float64)) + C.astype(np.float64)).astype(NP[tc])
    np.testing.assert_array_equal(D, want)


@pytest.mark.parametrize("ta,tb,tc", [(F8E4, F8E4, T.f32), (F8E4, F8E5, T.f32), (F8E5, F8E5, T.f16)])
def test_mma_m16n8k32_fp8(ta, tb, tc):
    rng = np.random.default_rng(2)
    A = rng.standard_normal((1, 16, 32)).astype(NP[ta])
    B = rng.standard_normal((1, 32, 8)).astype(NP[tb])
    C = rng.standard_normal((1, 16, 8)).astype(NP[tc])
    D = run_mma(ta, tb, tc, "m16n8k32", A, B, C)
    want = (np.matmul(A.astype(np.float64), B.astype(np.float64)) + C.astype(np.float64)).astype(NP[tc])
    np.testing.assert_array_equal(D, want)


@pytest.mark.parametrize("a_signed,b_signed", [(True, True), (False, True), (True, False), (False, False)])
def test_mma_m16n8k32_int8_wraps_around(a_signed, b_signed):
    rng = np.random.default_rng(3)
    A = rng.integers(-128, 128, (1, 16, 32)).astype(np.int8)
    B = rng.integers(-128, 128, (1, 32, 8)).astype(np.int8)
    C = rng.integers(-(2**31), 2**31 - 1, (1, 16, 8)).astype(np.int32)
    C[0, 0, 0] = 2**31 - 1  # the sum overflows: it wraps (no .satfinite)
    A[0, 0, :] = 127 if a_signed else -1
    B[0, :, 0] = 127 if b_signed else -1
    D = run_mma(T.i8, T.i8, T.i32, "m16n8k32", A, B, C, a_signed=a_signed, b_signed=b_signed)
    a = A.view(np.uint8).astype(np.int64) if not a_signed else A.astype(np.int64)
    b = B.view(np.uint8).astype(np.int64) if not b_signed else B.astype(np.int64)
    want = ((a @ b + C.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(D, want)
    assert D[0, 0, 0] < 0  # wrapped


def test_mma_rounds_the_exact_sum_once():
    """D = C + sum(A*B) is rounded to f32 once (the order docs/mma.md states): 2^24 + 1.5 -> 2^24 + 2, where
    adding the products one by one in f32 would give 2^24 (each +0.5 / +1 rounds back to even)."""
    A = np.zeros((1, 16, 16), ml_dtypes.bfloat16)
    B = np.zeros((1, 16, 8), ml_dtypes.bfloat16)
    C = np.zeros((1, 16, 8), np.float32)
    A[0, 0, :3] = [0.5, 0.5, 0.5]
    B[0, :3, 0] = 1
    C[0, 0, 0] = 2.0**24
    D = run_mma(T.bf16, T.bf16, T.f32, "m16n8k16", A, B, C)
    assert D[0, 0, 0] == 2.0**24 + 2
    seq = np.float32(2.0**24)
    for _ in range(3):
        seq = np.float32(seq + np.float32(0.5))
    assert seq == 2.0**24  # the sequential order the hardware does not use


def test_a_wrong_lane_mapping_is_caught():
    """The interpreter's tables equal the transcription above, and a transposed fragment breaks the result."""
    for bits, n in ((16, 8), (8, 16)):
        shape = "m16n8k16" if bits == 16 else "m16n8k32"
        co = nvvm.fragment_coords(shape, "A", bits)
        assert [tuple(co[lane, i]) for lane in range(32) for i in range(n)] == [
            isa_a(lane, i, bits) for lane in range(32) for i in range(n)
        ]
    rng = np.random.default_rng(4)
    A = rng.standard_normal((1, 16, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((1, 16, 8)).astype(ml_dtypes.bfloat16)
    C = np.zeros((1, 16, 8), np.float32)
    D = run_mma(T.bf16, T.bf16, T.f32, "m16n8k16", A, B, C)
    wrong = np.matmul(A.astype(np.float64).transpose(0, 2, 1), B.astype(np.float64))
    assert not np.allclose(D, wrong)


# ---------------------------------------------------------------------------------------------------------
# ldmatrix / stmatrix
# ---------------------------------------------------------------------------------------------------------


def _matrix_kernel(num, trans, elem, store, rows_of_lane):
    """Shared memory holds 32 rows of 16 bytes; lane l addresses row ``rows_of_lane[l]``."""
    per_row = 128 // elem.bitwidth
    n = 32 * num // elem.bitwidth
    g, i32p = PointerType(elem), PointerType(T.i32)
    with KernelBuilder("mat", [g, g, i32p]) as kb:
        src, dst, rows = kb.args
        tid = gpu.thread_id(dimension="x")
        sm = ptr.shared_alloc(result_types=[PointerType(elem, "shared")], count=32 * per_row, align=16)
        mine = ptr.add(sm, arith.muli(tid, const(per_row)))
        row = ptr.add(sm, arith.muli(ptr.load(ptr.add(rows, tid), result_types=[T.i32]), const(per_row)))
        vt = VectorType(n, elem)
        if store:
            nvvm.stmatrix(
                row, ptr.load(ptr.add(src, arith.muli(tid, const(n))), result_types=[vt]), num=num, trans=trans
            )
            gpu.barrier()
            ptr.store(
                ptr.load(mine, result_types=[VectorType(per_row, elem)]), ptr.add(dst, arith.muli(tid, const(per_row)))
            )
        else:
            ptr.store(
                ptr.load(ptr.add(src, arith.muli(tid, const(per_row))), result_types=[VectorType(per_row, elem)]), mine
            )
            gpu.barrier()
            ptr.store(nvvm.ldmatrix(row, num=num, trans=trans), ptr.add(dst, arith.muli(tid, const(n))))
    return kb.op


def isa_ldmatrix(mem_rows, rows_of_lane, num, trans):
    """PTX: lanes 8j..8j+7 address the rows of matrix j; without .trans lane l holds elements 2(l%4), 2(l%4)+1 of
    row l//4 of each matrix (16-bit), with .trans elements (2(l%4)+v, l//4) of each matrix."""
    out = np.zeros((32, 2 * num), mem_rows.dtype)
    for lane in range(32):
        for j in range(num):
            mat = mem_rows[rows_of_lane[8 * j : 8 * j + 8]]  # (8, 8)
            for v in range(2):
                out[lane, 2 * j + v] = (
                    mat[2 * (lane % 4) + v, lane // 4] if trans else mat[lane // 4, 2 * (lane % 4) + v]
                )
    return out


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_lane_pattern(num, trans):
    rng = np.random.default_rng(num + 10 * trans)
    rows_of_lane = rng.permutation(32).astype(np.int32)  # each lane addresses some row: the lanes matter
    mem = rng.standard_normal((32, 8)).astype(np.float16)
    out = np.zeros((32, 2 * num), np.float16)
    launch(_matrix_kernel(num, trans, T.f16, False, rows_of_lane), 1, 32, mem, out, rows_of_lane, check=True)
    np.testing.assert_array_equal(out, isa_ldmatrix(mem, rows_of_lane, num, trans))


def test_ldmatrix_of_bytes_is_a_word_per_lane_per_matrix():
    rows_of_lane = np.arange(32, dtype=np.int32)[::-1].copy()
    mem = np.arange(32 * 16, dtype=np.uint8).reshape(32, 16).view(ml_dtypes.float8_e4m3fn)
    out = np.zeros((32, 16), ml_dtypes.float8_e4m3fn)
    launch(_matrix_kernel(4, False, F8E4, False, rows_of_lane), 1, 32, mem, out, rows_of_lane)
    u = mem.view(np.uint8)
    for lane in range(32):
        for j in range(4):
            row = rows_of_lane[8 * j + lane // 4]
            assert list(out.view(np.uint8)[lane, 4 * j : 4 * j + 4]) == list(
                u[row, 4 * (lane % 4) : 4 * (lane % 4) + 4]
            )


@pytest.mark.parametrize("num,trans", [(1, False), (2, True), (4, False), (4, True)])
def test_stmatrix_inverts_ldmatrix(num, trans):
    rng = np.random.default_rng(7)
    rows_of_lane = rng.permutation(32).astype(np.int32)
    frags = rng.standard_normal((32, 2 * num)).astype(np.float16)
    mem = np.full((32, 8), np.nan, np.float16)
    launch(_matrix_kernel(num, trans, T.f16, True, rows_of_lane), 1, 32, frags, mem, rows_of_lane, check=True)
    # every row the lanes addressed holds what ldmatrix would hand back to the same lanes
    np.testing.assert_array_equal(isa_ldmatrix(mem, rows_of_lane, num, trans), frags)
    unwritten = np.setdiff1d(np.arange(32), rows_of_lane[: 8 * num])
    assert np.isnan(mem[unwritten].astype(np.float32)).all()


def test_ldmatrix_rows_must_be_16_byte_aligned():
    g = PointerType(T.f16)
    with KernelBuilder("bad", [g]) as kb:
        (dst,) = kb.args
        sm = ptr.shared_alloc(result_types=[PointerType(T.f16, "shared")], count=512, align=16)
        v = nvvm.ldmatrix(ptr.add(sm, const(1)), num=1)  # 2 bytes past a 16-byte boundary
        ptr.store(v, ptr.add(dst, arith.muli(gpu.thread_id(dimension="x"), const(2))))
    with pytest.raises(InterpError, match="misaligned vector read: address 0x2 is not a multiple of align=16"):
        launch(kb.op, 1, 32, np.zeros((32, 2), np.float16))


# ---------------------------------------------------------------------------------------------------------
# warp-collective faults
# ---------------------------------------------------------------------------------------------------------


def test_mma_in_lane_divergent_code_is_a_fault():
    with KernelBuilder("div", [PointerType(T.f32)]) as kb:
        (out,) = kb.args
        tid = gpu.thread_id(dimension="x")
        with kb.if_(arith.cmpi(tid, const(16), predicate="slt")):
            a = arith.const(1.0, VectorType(8, T.bf16))
            b = arith.const(1.0, VectorType(4, T.bf16))
            c = arith.const(0.0, VectorType(4, T.f32))
            ptr.store(nvvm.mma_sync(a, b, c, shape="m16n8k16"), ptr.add(out, arith.muli(tid, const(4))))
    with pytest.raises(
        InterpError, match=r"mma.sync is warp-collective \(.sync.aligned\), but only 16 of the 32 lanes"
    ):
        launch(kb.op, 1, 32, np.zeros(128, np.float32))
    with pytest.raises(InterpError, match="the block has 48 threads"):
        launch(kb.op, 1, 48, np.zeros(192, np.float32))


# ---------------------------------------------------------------------------------------------------------
# cp.async
# ---------------------------------------------------------------------------------------------------------


def _cp_kernel(nbytes, zfill, phases):
    """Each lane copies ``nbytes`` from ``src`` (at lane * nbytes) into shared memory with cp.async; ``phases``
    lists ("copy", group) / ("commit",) / ("wait", n) / ("read", k) steps; a read k stores the lane's shared
    bytes into ``out[k]``."""
    u8 = PointerType(T.i8)
    with KernelBuilder("cp", [u8, u8, PointerType(T.i32)]) as kb:
        src, out, size = kb.args
        tid = gpu.thread_id(dimension="x")
        sm = ptr.shared_alloc(result_types=[PointerType(T.i8, "shared")], count=4 * 32 * nbytes, align=16)
        off = arith.muli(tid, const(nbytes))
        for step in phases:
            if step[0] == "copy":
                dst = ptr.add(sm, arith.addi(off, const(step[1] * 32 * nbytes)))
                extra = [ptr.load(ptr.add(size, tid), result_types=[T.i32])] if zfill else []
                nvvm.cp_async(dst, ptr.add(src, arith.addi(off, const(step[1] * 32 * nbytes))), *extra, bytes=nbytes)
            elif step[0] == "commit":
                nvvm.cp_async_commit_group()
            elif step[0] == "wait":
                nvvm.cp_async_wait_group(n=step[1])
            elif step[0] == "wait_all":
                nvvm.cp_async_wait_all()
            else:
                k = step[1]
                v = ptr.load(
                    ptr.add(sm, arith.addi(off, const(k * 32 * nbytes))), result_types=[VectorType(nbytes, T.i8)]
                )
                ptr.store(v, ptr.add(out, arith.addi(off, const(k * 32 * nbytes))))
    return kb.op


@pytest.mark.parametrize("nbytes", [4, 8, 16])
def test_cp_async_zero_fills_past_src_size(nbytes):
    rng = np.random.default_rng(nbytes)
    src = rng.integers(1, 127, 32 * nbytes).astype(np.int8)
    sizes = rng.integers(0, nbytes + 1, 32).astype(np.int32)
    out = np.zeros(32 * nbytes, np.int8)
    k = _cp_kernel(nbytes, True, [("copy", 0), ("commit",), ("wait", 0), ("read", 0)])
    launch(k, 1, 32, src, out, sizes, check=True)
    want = src.reshape(32, nbytes) * (np.arange(nbytes)[None, :] < sizes[:, None])
    np.testing.assert_array_equal(out.reshape(32, nbytes), want)


def test_cp_async_completes_at_its_wait_and_groups_complete_in_order():
    src = np.arange(4 * 32 * 16, dtype=np.int64).astype(np.int8)
    out = np.zeros(4 * 32 * 16, np.int8)
    steps = [
        ("copy", 0), ("commit",),
        ("copy", 1), ("commit",),
        ("read", 2),  # nothing waited: shared memory still holds its initial 0xFF bytes
        ("wait", 1),  # the older group is done, the newer may be in flight
        ("read", 0), ("read", 1),
        ("copy", 3),  # issued, never committed: wait_all covers it
        ("wait_all",),
    ]  # fmt: skip
    k = _cp_kernel(16, False, steps + [("read", 3)])
    launch(k, 1, 32, src, out, np.zeros(32, np.int32))
    per = 32 * 16
    np.testing.assert_array_equal(out[:per], src[:per])  # group 0 after wait_group 1
    assert (out[per : 2 * per] == -1).all()  # group 1 may still be in flight at wait_group 1: not yet written
    assert (out[2 * per : 3 * per] == -1).all()  # read before any wait: poison (0xFF)
    np.testing.assert_array_equal(out[3 * per :], src[3 * per :])  # uncommitted, completed by wait_all


def test_cp_async_issued_under_a_mask_and_misaligned():
    src = np.arange(32 * 16, dtype=np.int64).astype(np.int8)
    out = np.zeros(32 * 16, np.int8)
    u8 = PointerType(T.i8)
    with KernelBuilder("cpm", [u8, u8]) as kb:
        s, o = kb.args
        tid = gpu.thread_id(dimension="x")
        sm = ptr.shared_alloc(result_types=[PointerType(T.i8, "shared")], count=32 * 16, align=16)
        off = arith.muli(tid, const(16))
        with kb.if_(arith.cmpi(tid, const(8), predicate="slt")):
            nvvm.cp_async(ptr.add(sm, off), ptr.add(s, off), bytes=16, cache="cg")
        nvvm.cp_async_commit_group()
        nvvm.cp_async_wait_group(n=0)
        ptr.store(ptr.load(ptr.add(sm, off), result_types=[VectorType(16, T.i8)]), ptr.add(o, off))
    launch(kb.op, 1, 32, src, out)
    np.testing.assert_array_equal(out[: 8 * 16], src[: 8 * 16])
    assert (out[8 * 16 :] == -1).all()
    with KernelBuilder("cpbad", [u8]) as kb:
        (s,) = kb.args
        sm = ptr.shared_alloc(result_types=[PointerType(T.i8, "shared")], count=64, align=16)
        nvvm.cp_async(sm, ptr.add(s, const(4)), bytes=8)
    with pytest.raises(InterpError, match="cp.async of 8 bytes: the source address 0x[0-9a-f]+ is not 8-byte aligned"):
        launch(kb.op, 1, 32, src)
