"""The llvmlite driver: error wrapping, intrinsic screening (LLVM must never kill the process), PTX
versions, optimization levels, process isolation, cubins, and the compile time of a big kernel."""

from __future__ import annotations

import os

import pytest

from flydsl.codegen import CodegenError, Target, compile_module, compile_ptx, emit_llvm, find_ptxas, ptx_to_cubin
from flydsl.codegen.compile import check_intrinsics, choose_opt_levels, count_instructions, run_isolated
from flydsl.dialects import arith, gpu, ptr
from flydsl.ir import PointerType, SymbolRef, new_module
from flydsl.ir import types as T
from flydsl.testing import branchy_kernel, build_kernel, gemm_like_kernel

HEAD = 'target triple = "nvptx64-nvidia-cuda"\n'
GOOD = HEAD + "define ptx_kernel void @k(ptr addrspace(1) %p) {\n  store i32 1, ptr addrspace(1) %p\n  ret void\n}\n"


def test_compile_ptx_of_handwritten_ir():
    ptx = compile_ptx(GOOD, Target(arch="sm_80"))
    assert ".version 7.0" in ptx and ".target sm_80" in ptx and ".entry k" in ptx


def test_parse_error_names_the_llvm_line():
    bad = GOOD.replace("store i32 1", "store i32 bogus")
    with pytest.raises(CodegenError) as ei:
        compile_ptx(bad)
    assert "line 3" in str(ei.value) and "store i32 bogus" in ei.value.llvm_line


def test_verify_error_is_wrapped():
    bad = HEAD + (
        "define ptx_kernel void @k(i1 %c, ptr addrspace(1) %p) {\nentry:\n  br i1 %c, label %a, label %b\n"
        "a:\n  %x = add i32 1, 2\n  br label %b\nb:\n  store i32 %x, ptr addrspace(1) %p\n  ret void\n}\n"
    )
    with pytest.raises(CodegenError, match="LLVM rejected the generated IR \\(verify\\)") as ei:
        compile_ptx(bad)
    assert "dominate" in str(ei.value)


@pytest.mark.parametrize(
    "decl,arch,match",
    [
        ("declare float @llvm.exp.f32(float)", "sm_90a", "no NVPTX lowering"),
        ("declare double @llvm.sin.f64(double)", "sm_90a", "no NVPTX lowering"),
        ("declare i16 @llvm.nvvm.ff.to.e4m3x2.rn(float, float)", "sm_80", "sm_89"),
        ("declare void @llvm.nvvm.wgmma.fence.sync.aligned()", "sm_90", "architecture-specific"),
        ("declare void @llvm.nvvm.wgmma.fence.sync.aligned()", "sm_100a", "exists on sm_90 only"),
        ("declare float @llvm.nvvm.tanh.approx.f32(float)", "sm_70", "sm_75"),
    ],
)
def test_intrinsics_that_would_kill_llvm_are_refused(decl, arch, match):
    with pytest.raises(CodegenError, match=match):
        check_intrinsics(GOOD + decl + "\n", Target(arch=arch))


def test_exp2_f32_is_allowed():
    check_intrinsics(GOOD + "declare float @llvm.exp2.f32(float)\n", Target())


def test_ptx_versions():
    mod = build_kernel([PointerType(T.f32, "global")], lambda p: ptr.store(arith.const(1.0, T.f32), p))
    assert compile_module(mod, Target(arch="sm_80")).ptx_version == 70
    assert compile_module(mod, Target(arch="sm_90a")).ptx_version == 80
    assert ".version 8.5" in compile_module(mod, Target(ptx_version=85)).ptx
    with pytest.raises(CodegenError, match="too old"):
        compile_module(mod, Target(arch="sm_90a", ptx_version=78))
    with pytest.raises(CodegenError, match="driver accepts at most"):
        compile_module(mod, Target(arch="sm_90a", max_ptx_version=78))


def test_fp8_on_sm89_uses_ptx81():
    def body(p):
        x = ptr.load(p, result_types=[T.f32])
        ptr.store(arith.extf(arith.truncf(x, result_types=[T.f8E4M3FN]), result_types=[T.f32]), p)

    ck = compile_module(build_kernel([PointerType(T.f32, "global")], body), Target(arch="sm_89"))
    assert ck.ptx_version == 81 and ".target sm_89" in ck.ptx  # LLVM selects fp8 -> f16x2 there from PTX 8.1


def test_optimization_level_choice():
    assert choose_opt_levels(500, Target()) == (3, 3, True)
    assert choose_opt_levels(6000, Target()) == (1, 1, True)
    assert choose_opt_levels(30000, Target()) == (1, 1, False)
    assert choose_opt_levels(30000, Target(opt_level=2, codegen_opt=0))[:2] == (2, 0)


def test_isolated_codegen_gives_the_same_ptx():
    mod = gemm_like_kernel(1)
    assert compile_module(mod, Target(), isolate=True).ptx == compile_module(mod, Target()).ptx


def test_isolation_turns_a_fatal_error_into_an_exception():
    def dies():
        os.write(2, b"LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.bogus\n")
        os.abort()

    with pytest.raises(CodegenError, match="Cannot select"):
        run_isolated(dies)


def test_emit_llvm_accepts_a_gpu_module_and_needs_one():
    mod = build_kernel([PointerType(T.f32, "global")], lambda p: ptr.store(arith.const(1.0, T.f32), p))
    gm = mod.regions[0].blocks[0].ops[0]
    assert emit_llvm(gm, Target()) == emit_llvm(mod, Target())
    with pytest.raises(CodegenError, match="no gpu.module"):
        emit_llvm(new_module(), Target())


def test_error_message_shows_the_source_line_and_a_caret():
    from flydsl.ir import location

    line = 99999

    def body(p):
        with location((__file__, line, 5)):
            x = ptr.load(p, result_types=[T.f32])
        ptr.store(arith.truncf(x, result_types=[T.f8E4M3FN]), ptr.cast(p, result_types=[PointerType(T.f8E4M3FN)]))

    with pytest.raises(CodegenError):
        compile_module(build_kernel([PointerType(T.f32, "global")], body), Target(arch="sm_80"))
    head_line = 1 + open(__file__).read().splitlines().index(f"HEAD = {HEAD!r}")
    err = CodegenError("demo failure", loc=(__file__, head_line, 5), fix="do this instead")
    text = str(err)
    assert f"{__file__}:{head_line}:5: error: demo failure" in text
    assert "HEAD = " in text and "    ^" in text and "fix: do this instead" in text


def test_unknown_op_is_reported():
    mod = build_kernel([T.i64], lambda s: gpu.launch_func(*[arith.const(1, T.i32)] * 7, s, kernel=SymbolRef("x")))
    with pytest.raises(CodegenError, match="no LLVM lowering for gpu.launch_func"):
        emit_llvm(mod, Target())


def test_cubin_via_nvjitlink_when_available():
    mod = gemm_like_kernel(1)
    ck = compile_module(mod, Target(cubin=True))
    direct = ptx_to_cubin(ck.ptx, "sm_90a")
    if direct is None:
        assert ck.cubin is None
        pytest.skip("nvJitLink is not installed")
    assert ck.cubin[:4] == b"\x7fELF" and direct[:4] == b"\x7fELF"


def test_big_kernel_gets_the_cheap_optimization_levels():
    """~30k LLVM instructions (the size where O3 + NVPTX codegen 3 takes 20-55 s) compile at the levels that
    keep it to seconds; the time itself is measured by ``python -m benchmarks.cold_start big``."""
    mod = branchy_kernel(800)
    ck = compile_module(mod, Target())
    n = ck.stats["instructions"]
    assert 25000 < n < 35000
    assert (ck.stats["opt_level"], ck.stats["codegen_opt"], ck.stats["load_store_vectorizer"]) == (1, 1, False)
    assert count_instructions(ck.llvm_ir) == n
    if find_ptxas() is None:
        return
    assert ck.ptx.count("shfl.sync.bfly.b32") == 800
