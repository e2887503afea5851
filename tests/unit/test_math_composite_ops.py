"""MLIR's composite math ops (``math.fpowi``, ``ipowi``, ``clampf``, ``isnormal``, ``sincos``): one op each
in the IR (as FlyDSL's IR text shows them), run by the interpreter and lowered to PTX with the same
semantics — the LLVM lowering is JIT-compiled on the host and compared with the op's ``evaluate``."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import host_function

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl import ir
from flydsl.codegen import Target, compile_module, emit_llvm, find_ptxas, run_ptxas
from flydsl.dialects import arith, ptr
from flydsl.dialects import math as fm
from flydsl.ir import PointerType, VectorType
from flydsl.ir import types as T
from flydsl.testing import build_kernel, trace_kernel

NAN, INF = float("nan"), float("inf")


def test_ops_print_with_their_mlir_names_and_raw_operands_give_raw_results():
    with trace_kernel([T.f32, T.i32, VectorType(4, T.f32)]) as t:
        x, n, v = t.args
        assert type(fx.math.fpowi(x, n)) is ir.Value  # raw in, raw out (FlyDSL's wrappers)
        assert type(fx.math.fpowi(fx.Float32(x), fx.Int32(n))) is fx.Float32
        s, c = fx.math.sincos(fx.Vector(v))
        assert isinstance(s, fx.Vector) and isinstance(c, fx.Vector) and s.shape == (4,)
        assert type(fx.math.ipowi(fx.Int32(n), 3)) is fx.Int32
        assert type(fx.math.clampf(fx.Float32(x), 0.0, 1.0)) is fx.Float32
        assert type(fx.math.isnormal(fx.Float32(x))) is fx.Boolean
        assert type(fx.arith.maxnumf(x, x)) is ir.Value and type(fx.arith.addf(x, x)) is fx.Float32
    for name in ("math.fpowi", "math.ipowi", "math.clampf", "math.isnormal", "math.sincos"):
        assert name in t.text, name
    assert "math.powf" not in t.text and "math.sin " not in t.text


def test_compile_time_operands_fold_through_the_op_semantics():
    assert fx.math.fpowi(fx.Float32(-2.0), 3) == fx.Float32(-8.0)
    assert fx.math.ipowi(fx.Int32(3), 4) == fx.Int32(81) and fx.math.ipowi(fx.Int32(-1), -3) == fx.Int32(-1)
    assert fx.math.ipowi(fx.Int32(2), -1) == fx.Int32(0) and fx.math.ipowi(fx.Int32(1), -7) == fx.Int32(1)
    assert fx.math.ipowi(fx.Int32(3), 40).value == (3**40 + 2**31) % 2**32 - 2**31  # wraps
    assert fx.math.clampf(fx.Float32(5.0), 0.0, 2.0) == fx.Float32(2.0)
    assert fx.math.sincos(fx.Float32(0.0)) == (fx.Float32(0.0), fx.Float32(1.0))
    assert not fx.math.isnormal(fx.Float32(1e-40)).value and fx.math.isnormal(fx.BFloat16(1.0)).value


@flyc.kernel
def composite_kernel(x: fx.Tensor, n: fx.Tensor, out: fx.Tensor, iout: fx.Tensor):
    i = fx.thread_idx.x
    a, k = x[i], n[i]
    s, c = fx.math.sincos(a)
    out[i, 0] = fx.math.fpowi(a, k)
    out[i, 1] = fx.math.clampf(a, -1.0, 1.0)
    out[i, 2] = s
    out[i, 3] = c
    iout[i, 0] = fx.math.ipowi(k, fx.Int32(3))
    iout[i, 1] = fx.math.ipowi(fx.Int32(-1), k)
    iout[i, 2] = fx.Int32(fx.math.isnormal(a).select(1, 0))


@flyc.jit
def run_composite(x, n, out, iout):
    composite_kernel(x, n, out, iout).launch(grid=1, block=x.shape[0])


def test_interpreter_runs_the_ops():
    x = np.array([2.0, -2.0, 0.5, NAN, 1e-40, 3.0, -0.0, INF], np.float32)
    n = np.array([3, 3, -2, 1, 2, 0, -1, 5], np.int32)
    out, iout = np.zeros((8, 4), np.float32), np.zeros((8, 3), np.int32)
    run_composite(x, n, out, iout)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(out[:, 0], np.power(x, n.astype(np.float32)), rtol=1e-6)
        assert np.array_equal(out[:, 1], np.clip(x, -1, 1), equal_nan=True)
        np.testing.assert_allclose(out[:, 2], np.sin(x), rtol=1e-6)
        np.testing.assert_allclose(out[:, 3], np.cos(x), rtol=1e-6)
    assert iout[:, 0].tolist() == (n.astype(np.int64) ** 3).tolist()  # n ** 3
    assert iout[:, 1].tolist() == [-1, -1, 1, -1, 1, 1, -1, -1]  # (-1) ** n, negative n by parity
    assert iout[:, 2].tolist() == [1, 1, 1, 0, 0, 1, 0, 0]


# -- the LLVM lowering, on the host ---------------------------------------------------------------


def _host(arg_types, res_type, body):
    """A host-callable function ``f(args) -> res`` from the GPU lowering of ``body`` (no NVVM intrinsics)."""
    return host_function(arg_types, res_type, body)[0]


@pytest.mark.parametrize("t", [T.i32, T.i64])
def test_ipowi_lowering_matches_the_interpreter(t):
    f = _host([t, t], t, fm.ipowi)
    dt = ir.numpy_dtype(t)
    xs = np.array([0, 1, -1, 2, -2, 3, 7, -5, 123456789, -(2**31)], dt)
    ns = np.array([0, 1, 2, 3, 5, 31, 63, -1, -2, -3], dt)
    for x in xs:
        for n in ns:
            ref = fm.ipowi.evaluate(_Fake(t), np.array(x), np.array(n))
            assert f(int(x), int(n)) == int(ref), (x, n)


class _Fake:
    def __init__(self, t):
        self.results = [type("R", (), {"type": t})()]


def test_clampf_and_isnormal_lowering_match_the_interpreter():
    clamp = _host([T.f32, T.f32, T.f32], T.f32, fm.clampf)
    normal = _host([T.f32], T.i1, fm.isnormal)
    xs = np.array([-3.0, -0.0, 0.0, 0.5, 2.0, NAN, INF, -INF, 1e-40, 1.17549435e-38, 3e38], np.float32)
    for x in xs:
        for lo, hi in [(-1.0, 1.0), (0.0, 0.0), (NAN, 1.0)]:
            ref = fm.clampf.evaluate(None, np.float32(x), np.float32(lo), np.float32(hi))
            got = clamp(float(x), lo, hi)
            assert (np.isnan(ref) and np.isnan(got)) or (got == ref and np.signbit(got) == np.signbit(ref)), (x, lo)
        assert normal(float(x)) == bool(fm.isnormal.evaluate(None, np.float32(x))), x


def test_fpowi_lowers_to_powf_of_the_converted_exponent():
    """The exponent is converted like ``arith.sitofp`` and goes through the target's ``powf`` (the
    interpreter: ``np.power`` of the converted exponent, compared above)."""

    def body(src, isrc, dst):
        ptr.store(fm.fpowi(ptr.load(src, result_types=[T.f32]), ptr.load(isrc, result_types=[T.i32])), dst)

    mod = build_kernel([PointerType(T.f32, "global"), PointerType(T.i32, "global"), PointerType(T.f32, "global")], body)
    text = emit_llvm(mod, Target(arch="sm_90a", math="approx"))
    assert "sitofp i32" in text and "llvm.nvvm.lg2.approx" in text and "llvm.nvvm.ex2.approx" in text


@pytest.mark.parametrize("elem", [T.f32, T.f16, T.bf16])
def test_ops_compile_to_ptx_scalar_and_vector(elem):
    ieb = T.i32

    def body(src, isrc, dst):
        for k, t in enumerate([elem, VectorType(4, elem)]):
            it = VectorType(4, ieb) if isinstance(t, VectorType) else ieb
            a = ptr.load(src, result_types=[t])
            n = ptr.load(isrc, result_types=[it])
            s, c = fm.sincos(a)
            r = arith.addf(arith.addf(fm.fpowi(a, n), fm.clampf(a, s, c)), arith.select(fm.isnormal(a), s, c))
            ptr.store(r, ptr.add(dst, arith.const(8 * k, T.i32)))
            ptr.store(fm.ipowi(n, n), ptr.add(isrc, arith.const(8 * k, T.i32)))

    mod = build_kernel([PointerType(elem, "global"), PointerType(ieb, "global"), PointerType(elem, "global")], body)
    ck = compile_module(mod, Target(arch="sm_90a", math="approx"))
    assert "sin.approx" in ck.ptx and "cos.approx" in ck.ptx and "max.NaN" in ck.ptx
    if find_ptxas() is not None:
        run_ptxas(ck.ptx, "sm_90a")
