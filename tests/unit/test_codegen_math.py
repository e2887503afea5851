"""Codegen of the math dialect: libdevice and approximation paths, f16/bf16 promotion, f64 rules,
and the accuracy of the approximation formulas, checked on the host by JIT-compiling the very LLVM IR
the emitter produces (with the PTX ``*.approx`` primitives replaced by libm)."""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from flydsl.codegen import CodegenError, Target, compile_module, emit_llvm, find_libdevice, find_ptxas, run_ptxas
from flydsl.dialects import arith, func, gpu, ptr
from flydsl.dialects import math as fm
from flydsl.ir import InsertionPoint, PointerType, VectorType, new_module, verify
from flydsl.ir import types as T
from flydsl.testing import build_kernel

HAVE_PTXAS = find_ptxas() is not None
HAVE_LIBDEVICE = find_libdevice() is not None
NO_LIBDEVICE = "/nonexistent/libdevice.10.bc"

UNARY = [
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "rsqrt", "cbrt", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "sqrt", "absf", "ceil",
    "floor", "trunc", "round", "roundeven",
]  # fmt: skip
BINARY = ["powf", "atan2", "copysign"]


def math_kernel(t, names, **op_attrs):
    elem = t.elem if isinstance(t, VectorType) else t
    P = PointerType(elem, "global")

    def body(src, dst):
        a = ptr.load(src, result_types=[t])
        b = ptr.load(ptr.add(src, arith.const(8, T.i32)), result_types=[t])
        for i, n in enumerate(names):
            op = getattr(fm, n)
            r = op(a, b, **op_attrs) if n in BINARY else op(a, **op_attrs)
            ptr.store(r, ptr.add(dst, arith.const(8 * i, T.i32)))

    return build_kernel([P, P], body)


def compile_check(mod, target, expect=(), forbid=()):
    ck = compile_module(mod, target)
    for e in expect:
        assert e in ck.ptx, f"{e!r} not in PTX"
    for e in forbid:
        assert e not in ck.ptx, f"{e!r} in PTX"
    if HAVE_PTXAS:
        run_ptxas(ck.ptx, target.arch)
    return ck


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_approx_math_f32_all_ops(arch):
    mod = math_kernel(T.f32, UNARY + BINARY)
    compile_check(mod, Target(arch=arch, math="approx"), expect=("ex2.approx.f32", "lg2.approx.f32", "tanh.approx.f32"))


@pytest.mark.skipif(not HAVE_LIBDEVICE, reason="libdevice not installed")
@pytest.mark.parametrize("t", [T.f32, T.f64], ids=str)
def test_libdevice_math_all_ops(t):
    mod = math_kernel(t, UNARY + BINARY)
    text = emit_llvm(mod, Target())
    assert "@__nv_exp" in text
    ck = compile_check(mod, Target(), forbid=("__nv_",))
    assert ck.stats["libdevice"]


@pytest.mark.parametrize("t", [T.f16, T.bf16, VectorType(2, T.f16), VectorType(4, T.f32)], ids=str)
def test_narrow_and_vector_math_is_promoted_lane_by_lane(t):
    mod = math_kernel(t, ["exp", "tanh", "sqrt", "erf", "floor", "powf"])
    text = emit_llvm(mod, Target(math="approx"))
    if t.element_type is not T.f32:
        assert "fpext" in text and "fptrunc" in text
    compile_check(mod, Target(math="approx"))


def test_fastmath_afn_selects_approximations_even_with_libdevice():
    mod = math_kernel(T.f32, ["exp", "sin"], fastmath="afn")
    text = emit_llvm(mod, Target())
    assert "@llvm.nvvm.ex2.approx.f" in text and "@llvm.nvvm.sin.approx.f" in text and "__nv_" not in text


def test_sqrt_is_correctly_rounded_and_rsqrt_approx():
    mod = math_kernel(T.f32, ["sqrt", "rsqrt"])
    compile_check(mod, Target(math="approx"), expect=("sqrt.rn.f32", "rsqrt.approx.f32"))


def test_f64_math_without_libdevice_names_the_op():
    mod = math_kernel(T.f64, ["exp"])
    with pytest.raises(CodegenError) as ei:
        emit_llvm(mod, Target(libdevice=NO_LIBDEVICE))
    assert "math.exp on f64 needs libdevice" in str(ei.value) and "fix:" in str(ei.value)


def test_libdevice_mode_requires_libdevice():
    with pytest.raises(CodegenError, match="libdevice"):
        emit_llvm(math_kernel(T.f32, ["erf"]), Target(math="libdevice", libdevice=NO_LIBDEVICE))


def test_exact_float_ops_on_f64_need_no_libdevice():
    mod = math_kernel(T.f64, ["sqrt", "absf", "ceil", "floor", "trunc", "round", "roundeven", "copysign"])
    compile_check(mod, Target(libdevice=NO_LIBDEVICE), expect=("sqrt.rn.f64",))


def test_fma_and_class_ops():
    P = PointerType(T.f32, "global")

    def body(src, dst):
        a = ptr.load(src, result_types=[T.f32])
        r = fm.fma(a, a, a)
        ok = arith.andi(fm.isfinite(r), arith.ori(fm.isnan(a), fm.isinf(a)))
        ptr.store(arith.select(ok, r, a), dst)

    compile_check(build_kernel([P, P], body), Target(), expect=("fma.rn.f32",))


def test_integer_math():
    P = PointerType(T.i32, "global")

    def body(src, dst):
        a = ptr.load(src, result_types=[T.i32])
        for i, op in enumerate([fm.absi, fm.ctpop, fm.ctlz, fm.cttz]):
            ptr.store(op(a), ptr.add(dst, arith.const(i, T.i32)))

    compile_check(build_kernel([P, P], body), Target(), expect=("popc.b32", "clz.b32"))


# -- accuracy of the approximation formulas, JIT-compiled on the host ------------------------------

_HOST_PRIMS = {
    "llvm.nvvm.ex2.approx.f": "call float @llvm.exp2.f32(float %x)",
    "llvm.nvvm.lg2.approx.f": "call float @llvm.log2.f32(float %x)",
    "llvm.nvvm.sin.approx.f": "call float @sinf(float %x)",
    "llvm.nvvm.cos.approx.f": "call float @cosf(float %x)",
    "llvm.nvvm.tanh.approx.f32": "call float @tanhf(float %x)",
}


def _host_module(fn: str):
    """LLVM IR of ``float @f(float, float)`` computing math.<fn> with the approximation path."""
    mod = new_module()
    gm = gpu.build_gpu_module()
    mod.regions[0].blocks[0].append(gm)
    f = func.build_func(gpu.func, "f", [T.f32, T.f32], [T.f32])
    gm.regions[0].blocks[0].append(f)
    a, b = f.regions[0].blocks[0].args
    with InsertionPoint(f.regions[0].blocks[0]):
        op = getattr(fm, fn)
        gpu.return_(op(a, b) if fn in BINARY else op(a))
    verify(mod)
    text = emit_llvm(mod, Target(math="approx", arch="sm_90a"))
    lines = []
    for line in text.splitlines():
        if line.startswith(("target ", "declare float @llvm.nvvm")):
            continue
        lines.append(line.replace("define internal float @f", "define float @f"))
    text = "\n".join(lines)
    extra = ["declare float @llvm.exp2.f32(float)", "declare float @llvm.log2.f32(float)"]
    extra += ["declare float @sinf(float)", "declare float @cosf(float)", "declare float @tanhf(float)"]
    for k, (prim, call) in enumerate(_HOST_PRIMS.items()):
        text = text.replace(f"@{prim}(", f"@host{k}(")
        extra.append(f"define float @host{k}(float %x) {{\n  %r = {call}\n  ret float %r\n}}")
    text = text.replace("@llvm.nvvm.rsqrt.approx.f(", "@host_rsqrt(")
    extra.append(
        "define float @host_rsqrt(float %x) {\n  %s = call float @llvm.sqrt.f32(float %x)\n"
        "  %r = fdiv float 1.0, %s\n  ret float %r\n}"
    )
    extra.append("declare float @llvm.sqrt.f32(float)")
    extra = [e for e in dict.fromkeys(extra) if not (e.startswith("declare") and e.split("(")[0] in text)]
    return text + "\n" + "\n".join(extra)


_JIT = {}


def _host_fn(fn: str):
    import llvmlite.binding as llvm

    if fn in _JIT:
        return _JIT[fn][0]
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    m = llvm.parse_assembly(_host_module(fn))
    m.verify()
    tm = llvm.Target.from_default_triple().create_target_machine()
    ee = llvm.create_mcjit_compiler(m, tm)
    ee.finalize_object()
    cfn = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_float)(ee.get_function_address("f"))
    _JIT[fn] = (cfn, ee, m)
    return cfn


# fn -> (domain sampler, reference, error metric, bound)
def _rel(r, ref):
    return np.abs(r - ref) / np.maximum(np.abs(ref), 1e-30)


def _abs(r, ref):
    return np.abs(r - ref)


_ACCURACY = {
    "erf": (np.linspace(-5, 5, 4001), np.vectorize(math.erf), _abs, 3e-7),
    "erfc": (np.linspace(-3, 9.5, 4001), np.vectorize(math.erfc), _rel, 2e-5),
    "atan": (np.concatenate([np.linspace(-20, 20, 4001), [1e30, -1e30]]), np.arctan, _rel, 3e-7),
    "expm1": (np.linspace(-5, 5, 4001), np.expm1, _rel, 2e-6),
    "log1p": (np.linspace(-0.9, 5, 4001), np.log1p, _rel, 2e-6),
    "cbrt": (np.linspace(-100, 100, 4000), np.cbrt, _rel, 3e-7),
    "sinh": (np.linspace(-20, 20, 4000), np.sinh, _rel, 2e-6),
    "cosh": (np.linspace(-20, 20, 4000), np.cosh, _rel, 2e-6),
    "asinh": (np.linspace(-1e4, 1e4, 4001), np.arcsinh, _rel, 2e-6),
    "acosh": (np.linspace(1, 1e4, 4001), np.arccosh, _rel, 5e-6),
    "atanh": (np.linspace(-0.99, 0.99, 4001), np.arctanh, _rel, 2e-6),
    "asin": (np.linspace(-1, 1, 4001), np.arcsin, _rel, 1e-6),
    "acos": (np.linspace(-1, 1, 4001), np.arccos, _rel, 1e-6),
    "tan": (np.linspace(-1.5, 1.5, 4001), np.tan, _rel, 1e-6),
}


@pytest.mark.parametrize("fn", sorted(_ACCURACY))
def test_approximation_formula_accuracy_on_host(fn):
    xs, ref_fn, metric, bound = _ACCURACY[fn]
    f = _host_fn(fn)
    x32 = xs.astype(np.float32)
    got = np.array([f(float(x), 0.0) for x in x32], dtype=np.float64)
    ref = ref_fn(x32.astype(np.float64))
    err = metric(got, ref)
    assert np.nanmax(err) <= bound, f"{fn}: max error {np.nanmax(err):.3g} at x={x32[np.nanargmax(err)]}"
    assert np.array_equal(np.isnan(got), np.isnan(ref))


def test_atan2_and_pow_special_cases_on_host():
    at2 = _host_fn("atan2")
    for y, x in [(1, 1), (1, -1), (-1, -1), (0.0, -0.0), (0.0, 0.0), (-0.0, -1), (3, 0), (math.inf, math.inf)]:
        assert at2(y, x) == pytest.approx(math.atan2(y, x), rel=1e-6, abs=1e-7), (y, x)
    assert math.isnan(at2(math.nan, 1.0))
    pw = _host_fn("powf")
    for x, y in [(2, 10), (-2, 3), (-2, 2), (0, 0), (5, 0), (0, 3), (1, math.nan), (2.5, -1.5)]:
        assert pw(x, y) == pytest.approx(math.pow(x, y), rel=2e-6), (x, y)
    assert math.isnan(pw(-2, 0.5))


def test_dialect_semantics_follow_the_gpu_where_it_is_exact():
    """The op semantics the GPU results are compared with: math.round is exact (not floor(x + 0.5)),
    maxnumf/minnumf order -0 < +0 like PTX max/min (measured on the H200)."""
    from flydsl.dialects.arith import ieee_maxnum, ieee_minnum
    from flydsl.dialects.math import _round_half_away

    x = np.array([0.49999997, -0.49999997, 8388609.0, 2.5, -2.5, -0.0], np.float32)
    assert _round_half_away(x).tolist() == [0.0, -0.0, 8388609.0, 3.0, -3.0, -0.0]
    z = np.array([0.0, -0.0], np.float32)
    assert not np.signbit(ieee_maxnum(z, z[::-1])).any() and np.signbit(ieee_minnum(z, z[::-1])).all()
    assert ieee_maxnum(np.float32([np.nan]), np.float32([1.0]))[0] == 1.0
