"""Codegen of the nvvm dialect: every mma.sync kind, ldmatrix/stmatrix, cp.async — the PTX instruction
each becomes, ptxas acceptance for sm_90a and sm_80, and the capability errors that replace LLVM aborts."""

from __future__ import annotations

import pytest
from compiler_util import host_function

from flydsl.codegen import CodegenError, Target, compile_module, emit_llvm, find_ptxas, run_ptxas
from flydsl.codegen.compile import check_intrinsics
from flydsl.dialects import arith, gpu, nvvm, ptr
from flydsl.ir import FloatType, PointerType, VectorType
from flydsl.ir import types as T
from flydsl.testing import build_kernel

HAVE_PTXAS = find_ptxas() is not None
F8E4, F8E5 = FloatType("f8E4M3FN"), FloatType("f8E5M2")


def _check(mod, archs, expect):
    for arch in archs:
        ck = compile_module(mod, Target(arch=arch))
        for e in expect:
            assert e in ck.ptx, f"{e!r} not in the PTX for {arch}:\n{ck.ptx}"
        if HAVE_PTXAS:
            run_ptxas(ck.ptx, arch)


def _mma_module(ta, tb, tc, shape, **attrs):
    na, nb = nvvm.operand_count(shape, "A", ta.bitwidth), nvvm.operand_count(shape, "B", tb.bitwidth)
    ga, gb, gc = (PointerType(t, "global") for t in (ta, tb, tc))

    def body(a, b, c):
        tid = gpu.thread_id(dimension="x")
        av = ptr.load(ptr.add(a, arith.muli(tid, arith.const(na, T.i32))), result_types=[VectorType(na, ta)])
        bv = ptr.load(ptr.add(b, arith.muli(tid, arith.const(nb, T.i32))), result_types=[VectorType(nb, tb)])
        cp = ptr.add(c, arith.muli(tid, arith.const(4, T.i32)))
        cv = ptr.load(cp, result_types=[VectorType(4, tc)])
        ptr.store(nvvm.mma_sync(av, bv, cv, shape=shape, **attrs), cp)

    return build_kernel([ga, gb, gc], body)


MMA_CASES = [
    (T.bf16, T.bf16, T.f32, "m16n8k16", {}, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    (T.f16, T.f16, T.f32, "m16n8k16", {}, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    (T.f16, T.f16, T.f16, "m16n8k16", {}, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"),
    (T.i8, T.i8, T.i32, "m16n8k32", {}, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"),
    (T.i8, T.i8, T.i32, "m16n8k32", {"a_signed": False}, "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32"),
    (T.i8, T.i8, T.i32, "m16n8k32", {"a_signed": False, "b_signed": False}, "row.col.s32.u8.u8.s32"),
]
FP8_CASES = [
    (F8E4, F8E4, T.f32, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"),
    (F8E4, F8E5, T.f32, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"),
    (F8E5, F8E5, T.f16, "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16"),
]


@pytest.mark.parametrize("ta,tb,tc,shape,attrs,ptx", MMA_CASES, ids=[c[-1].split("row.col.")[1] for c in MMA_CASES])
def test_mma_sync_kinds(ta, tb, tc, shape, attrs, ptx):
    _check(_mma_module(ta, tb, tc, shape, **attrs), ("sm_90a", "sm_80"), [ptx])


@pytest.mark.parametrize("ta,tb,tc,ptx", FP8_CASES, ids=[c[-1].split("row.col.")[1] for c in FP8_CASES])
def test_fp8_mma_sync_needs_sm89_and_ptx84(ta, tb, tc, ptx):
    mod = _mma_module(ta, tb, tc, "m16n8k32")
    _check(mod, ("sm_90a", "sm_89"), [ptx, ".version 8.4" if tc is T.f32 else ".version 8.7"])
    with pytest.raises(CodegenError) as e:
        compile_module(mod, Target(arch="sm_80"))
    assert (
        "an fp8 (e4m3/e5m2) warp-level MMA (mma.sync) needs sm_89 or newer; this kernel is compiled for sm_80"
        in str(e.value)
    )
    assert "fix: compile for sm_89 or newer (e.g. sm_90a), or use bf16 operands" in str(e.value)
    what = r"an fp8 \(e4m3/e5m2\) warp-level MMA \(mma.sync\) \(needs 8.4\)"
    if tc is T.f16:
        what = r"an fp8 mma.sync with f16 accumulators \(needs 8.7\)"
    with pytest.raises(CodegenError, match="PTX ISA 8.3 is too old for " + what):
        compile_module(mod, Target(arch="sm_90a", ptx_version=83))


def test_mma_sync_verifier_rejects_what_ptx_lacks():
    from flydsl.ir import IRError

    with pytest.raises(IRError, match="no mma.sync m16n8k16 with A bf16, B bf16, C/D f16"):
        _mma_module(T.bf16, T.bf16, T.f16, "m16n8k16")
    with pytest.raises(IRError, match="no mma.sync m16n8k16 with A f16, B bf16"):
        _mma_module(T.f16, T.bf16, T.f32, "m16n8k16")


def _matrix_module(num, trans, elem, store):
    sp = PointerType(elem, "shared")
    g = PointerType(elem, "global")
    n = 32 * num // elem.bitwidth

    def body(out):
        base = ptr.shared_alloc(result_types=[sp], count=4096 // (elem.bitwidth // 8), align=16)
        tid = gpu.thread_id(dimension="x")
        row = ptr.add(base, arith.muli(tid, arith.const(128 // elem.bitwidth, T.i32)))
        optr = ptr.add(out, arith.muli(tid, arith.const(n, T.i32)))
        if store:
            nvvm.stmatrix(row, ptr.load(optr, result_types=[VectorType(n, elem)]), num=num, trans=trans)
        else:
            ptr.store(nvvm.ldmatrix(row, num=num, trans=trans), optr)

    return build_kernel([g], body)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix(num, trans):
    t = ".trans" if trans else ""
    _check(_matrix_module(num, trans, T.bf16, False), ("sm_90a", "sm_80"), [f"ldmatrix.sync.aligned.m8n8.x{num}{t}"])


def test_ldmatrix_of_8_bit_elements_moves_bytes():
    _check(_matrix_module(4, False, F8E4, False), ("sm_90a",), ["ldmatrix.sync.aligned.m8n8.x4.shared.b16"])


@pytest.mark.parametrize("num,trans", [(1, False), (2, True), (4, False), (4, True)])
def test_stmatrix_needs_sm90(num, trans):
    mod = _matrix_module(num, trans, T.f16, True)
    t = ".trans" if trans else ""
    _check(mod, ("sm_90a",), [f"stmatrix.sync.aligned.m8n8.x{num}{t}.shared.b16"])
    with pytest.raises(CodegenError, match="stmatrix needs sm_90 or newer; this kernel is compiled for sm_80"):
        compile_module(mod, Target(arch="sm_80"))


def _cp_async_module(nbytes, cache, zfill):
    sp = PointerType(T.i8, "shared")
    g = PointerType(T.i8, "global")

    def body(src, n):
        base = ptr.shared_alloc(result_types=[sp], count=4096, align=16)
        off = arith.muli(gpu.thread_id(dimension="x"), arith.const(nbytes, T.i32))
        extra = [n] if zfill else []
        nvvm.cp_async(ptr.add(base, off), ptr.add(src, off), *extra, bytes=nbytes, cache=cache)
        nvvm.cp_async_commit_group()
        nvvm.cp_async_wait_group(n=1)
        nvvm.cp_async_wait_all()
        ptr.store(ptr.load(ptr.add(base, off), result_types=[T.i8]), ptr.add(src, off))

    return build_kernel([g, T.i32], body)


@pytest.mark.parametrize("nbytes,cache", [(4, "ca"), (8, "ca"), (16, "ca"), (16, "cg")])
@pytest.mark.parametrize("zfill", [False, True])
def test_cp_async(nbytes, cache, zfill):
    tail = ", %r" if zfill else ";"
    _check(
        _cp_async_module(nbytes, cache, zfill),
        ("sm_90a", "sm_80"),
        [
            f"cp.async.{cache}.shared.global [",
            f"], {nbytes}{tail}",
            "cp.async.commit_group",
            "cp.async.wait_group \t1",
            "cp.async.wait_all",
        ],
    )


def test_cp_async_verifier():
    from flydsl.ir import IRError

    with pytest.raises(IRError, match="cp.async.cg copies 16 bytes only"):
        _cp_async_module(8, "cg", False)


def test_cp_async_and_mma_need_sm80():
    cases = (
        (_cp_async_module(16, "cg", True), r"cp\.async \(an asynchronous global -> shared copy\)"),
        (_mma_module(T.bf16, T.bf16, T.f32, "m16n8k16"), r"a warp-level MMA \(mma\.sync\)"),
    )
    for mod, what in cases:
        with pytest.raises(CodegenError, match=rf"{what} needs sm_80 or newer; this kernel is compiled for sm_75"):
            compile_module(mod, Target(arch="sm_75"))


def test_intrinsic_screen_catches_hand_written_fp8_mma():
    text = emit_llvm(_mma_module(F8E4, F8E4, T.f32, "m16n8k32"), Target(arch="sm_90a"))
    with pytest.raises(CodegenError, match="needs sm_89"):
        check_intrinsics(text, Target(arch="sm_80"), 70)
    with pytest.raises(CodegenError, match="needs PTX 8.4"):
        check_intrinsics(text, Target(arch="sm_90a"), 83)


# -- shuffles of narrow lanes that move whole 32-bit words (emit_vector: i32 lanes), run on the host --------


def _shuffle_fn(elem, mask):
    """``i64 f(i64 a, i64 b)``: the lanes ``mask`` of the concatenation of a and b seen as vectors of
    ``elem``, JIT-compiled for the host (the lowering is target-independent LLVM); returns (f, LLVM text)."""
    from flydsl.dialects import vector

    n = 64 // elem.bitwidth

    def body(a, b):
        va, vb = (
            vector.bitcast(vector.broadcast(x, result_types=[VectorType(1, T.i64)]), result_types=[VectorType(n, elem)])
            for x in (a, b)
        )
        r = vector.shuffle(va, vb, mask=list(mask))
        w = vector.bitcast(r, result_types=[VectorType(1, T.i64)])
        return vector.extract(w, position=0)

    return host_function([T.i64, T.i64], T.i64, body, unsigned=True)


@pytest.mark.parametrize(
    "elem,mask,words",
    [
        (T.i8, [4, 5, 6, 7, 8, 9, 10, 11], True),  # words 1 (of a) and 2 (of b)
        (T.i8, [12, 13, 14, 15, 0, 1, 2, 3], True),
        (T.i8, [1, 2, 3, 4, 5, 6, 7, 8], False),  # not word-aligned: per-lane shuffle
        (T.bf16, [2, 3, 4, 5], True),
        (T.bf16, [6, 7, 0, 1], True),
        (T.bf16, [3, 2, 1, 0], False),
    ],
)
def test_word_aligned_shuffles_move_i32_words(elem, mask, words):
    import numpy as np

    fn, text = _shuffle_fn(elem, mask)
    assert ("shufflevector <2 x i32>" in text) == words, text
    rng = np.random.default_rng(0)
    nbytes = elem.bitwidth // 8
    for _ in range(20):
        a, b = (int(x) for x in rng.integers(0, 2**63, 2, dtype=np.uint64))
        lanes = np.frombuffer(np.array([a, b], np.uint64).tobytes(), dtype=f"<u{nbytes}")
        want = int(np.frombuffer(lanes[mask].tobytes(), np.uint64)[0])
        assert fn(a, b) == want


def test_assembler_register_refusals_say_what_to_change():
    """ptxas/nvJitLink's "Insufficient registers" (a kernel's register cap below what its code needs) gets a hint in
    the kernel author's terms; other assembler errors get none."""
    from flydsl.codegen.compile import _assembler_hint

    log = "ptxas fatal   : (C7602) Insufficient registers (128) to compile instruction at line 494"
    assert "more registers per thread than its cap allows" in _assembler_hint(log)
    assert "min_blocks" in _assembler_hint(log) and "maxnreg" in _assembler_hint(log)
    assert _assembler_hint("ptxas fatal   : Unresolved extern function 'f'") == ""
