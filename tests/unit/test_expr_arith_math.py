"""fx.arith, fx.math and fast-math control: op choice, type keeping, folding, FlyDSL's precedence."""

import math

import pytest

import flydsl.expr as fx
from flydsl import ir
from flydsl.expr._sem import fastmath as _fastmath
from flydsl.testing import trace_kernel

F32, I32, V4F32 = ir.f32, ir.i32, ir.VectorType(4, ir.f32)


def _lines(text, needle):
    return [ln for ln in text.splitlines() if needle in ln]


def test_top_level_exports():
    assert fx.max is fx.arith.max and fx.min is fx.arith.min and fx.ceildiv is fx.arith.ceildiv
    assert fx.maxnumf is fx.arith.maxnumf and fx.exp is fx.math.exp and fx.sqrt is fx.math.sqrt
    assert fx.arith.FastMathFlags is fx.FastMathFlags and fx.arith.RoundingMode is fx.RoundingMode
    for name in fx.math.__all__:
        assert callable(getattr(fx.math, name)) and getattr(fx.math, name).__doc__, name


@pytest.mark.parametrize(
    "fn,dtype,op",
    [
        (fx.max, fx.Float32, "maximumf"),
        (fx.min, fx.Float32, "minimumf"),
        (fx.max, fx.Int32, "maxsi"),
        (fx.min, fx.Int32, "minsi"),
        (fx.max, fx.Uint32, "maxui"),
        (fx.min, fx.Uint32, "minui"),
    ],
)
def test_max_min_dispatch(fn, dtype, op):
    with trace_kernel([dtype.ir_type, dtype.ir_type]) as t:
        r = fn(dtype(t.args[0]), dtype(t.args[1]))
        assert type(r) is dtype
    assert f"arith.{op}" in t.text


def test_max_min_common_type_nesting_vectors_and_folding():
    with trace_kernel([I32, ir.i64, I32, F32, F32, F32, ir.VectorType(4, I32)]) as t:
        a, b, c = fx.Int32(t.args[0]), fx.Int64(t.args[1]), fx.Int32(t.args[2])
        assert type(fx.max(a, b, c)) is fx.Int64
        x, y, z = (fx.Float32(v) for v in t.args[3:6])
        assert type(fx.min([x, (y, [z])])) is fx.Float32
        v = fx.Vector(t.args[6], (2, 2), fx.Int32)
        r = fx.max(v, fx.Int64(7))
        assert isinstance(r, fx.Vector) and r.shape == (2, 2) and r.dtype is fx.Int64
        fx.max(x, y, fastmath="contract")
    assert t.text.count("arith.maxsi") == 3 and t.text.count("arith.minimumf") == 2
    assert "vector<4xi64>" in t.text
    assert "fastmath" in _lines(t.text, "arith.maximumf")[0] and "contract" in _lines(t.text, "arith.maximumf")[0]
    assert type(fx.max(True)) is fx.Int32 and int(fx.max(True)) == 1
    assert math.isnan(fx.max(fx.Float32(math.nan), fx.Float32(1.0)).value)
    assert math.isnan(fx.max(fx.Float32(1.0), fx.Float32(math.nan)).value)
    assert math.copysign(1.0, fx.max(fx.Float32(-0.0), fx.Float32(0.0)).value) == 1.0
    assert math.copysign(1.0, fx.min(fx.Float32(0.0), fx.Float32(-0.0)).value) == -1.0
    assert fx.maxnumf(fx.Float32(math.nan), fx.Float32(1.0)).value == 1.0
    assert fx.minnumf(2.0, fx.Float32(math.nan)).value == 2.0
    assert fx.max(3, 7, fx.Int8(5)).value == 7 and fx.min(fx.Uint32(0xFFFFFFFF), fx.Uint32(1)).value == 1


def test_max_min_rejections():
    with pytest.raises(ValueError, match="at least one operand"):
        fx.max()
    with pytest.raises(TypeError, match="does not support Index"):
        fx.max(fx.Index(1), fx.Index(2))
    with pytest.raises(TypeError, match="narrow storage float"):
        fx.min(fx.Float8E5M2(1.0), fx.Float8E5M2(2.0))
    with pytest.raises(TypeError, match="needs float operands"):
        fx.maxnumf(fx.Int32(1), fx.Int32(2))


@pytest.mark.parametrize("lhs,rhs,expected", [(7, 2, 4), (7, -2, -3), (-7, 2, -3), (-7, -2, 4), (0, 3, 0)])
def test_signed_ceildiv_folds(lhs, rhs, expected):
    r = fx.ceildiv(fx.Int32(lhs), fx.Int32(rhs))
    assert type(r) is fx.Int32 and r.is_static() and r.value == expected


def test_ceildiv():
    assert fx.ceildiv(fx.Uint32(0xFFFFFFFF), fx.Uint32(2)).value == 0x80000000  # no a + b - 1 overflow
    with pytest.raises(ZeroDivisionError):
        fx.ceildiv(fx.Uint32(1), fx.Uint32(0))
    with pytest.raises(OverflowError):
        fx.ceildiv(fx.Int32(-(1 << 31)), fx.Int32(-1))
    with pytest.raises(TypeError, match="requires integer operands"):
        fx.ceildiv(fx.Float32(3.0), fx.Float32(2.0))
    with pytest.raises(TypeError, match="does not support Boolean"):
        fx.ceildiv(fx.Boolean(True), fx.Boolean(True))
    with pytest.raises(TypeError, match="does not support Index"):
        fx.ceildiv(fx.Index(3), fx.Index(2))
    with trace_kernel([I32, I32, ir.VectorType(4, I32)]) as t:
        assert type(fx.ceildiv(fx.Int32(t.args[0]), fx.Int32(t.args[1]))) is fx.Int32
        assert type(fx.ceildiv(fx.Uint32(t.args[0]), 4)) is fx.Uint32
        r = fx.ceildiv(fx.Vector(t.args[2], (2, 2), fx.Uint32), fx.Uint32(t.args[1]))
        assert r.shape == (2, 2) and r.dtype is fx.Uint32
    assert "arith.ceildivsi" in t.text and t.text.count("arith.ceildivui") == 2
    assert "arith.addi" not in t.text and "arith.subi" not in t.text


def test_cmp_select_constant_and_passthroughs():
    with trace_kernel([I32, I32, F32, ir.index]) as t:
        a, b, f = fx.Int32(t.args[0]), fx.Int32(t.args[1]), fx.Float32(t.args[2])
        assert type(fx.arith.cmpi("slt", a, b)) is fx.Boolean
        assert type(fx.arith.cmpi(fx.arith.CmpIPredicate.uge, t.args[0], 3)) is fx.Boolean
        assert type(fx.arith.cmpf(fx.arith.CmpFPredicate.ord, f, 1.0)) is fx.Boolean
        assert fx.arith.cmpi("eq", fx.Int32(3), 3).value is True
        assert type(fx.arith.select(a < b, a, b)) is fx.Int32
        with pytest.raises(ValueError, match="unknown predicate 'lt'"):
            fx.arith.cmpi("lt", a, b)
        with pytest.raises(TypeError, match="use cmpf"):
            fx.arith.cmpi("eq", f, f)
        assert fx.arith.constant(42, index=True).dtype is fx.Index
        assert fx.arith.constant(1.0, type=fx.T.f16).dtype is fx.Float16
        assert fx.arith.constant(7).value == 7
        assert fx.arith.constant(2.0, type=fx.T.f32x4).shape == (4,)
        r = fx.arith.addf(t.args[2], t.args[2], fastmath="fast")
        assert type(r) is fx.Float32  # raw IR values in, DSL values out
        assert type(fx.arith.shrui(fx.Int32(t.args[0]), 3)) is fx.Int32
        assert fx.arith.addi(fx.Int32(3), 4).value == 7 and fx.arith.divsi(fx.Int32(-7), fx.Int32(2)).value == -3
        assert type(fx.arith.index_cast(fx.T.index, a)) is fx.Index
        assert type(fx.arith.index_cast(fx.T.i32, t.args[3])) is fx.Int32
        assert type(fx.arith.sitofp(fx.T.f32, a)) is fx.Float32 and fx.arith.sitofp(fx.T.f32, fx.Int32(3)).value == 3.0
        assert type(fx.arith.negf(f)) is fx.Float32
        with pytest.raises(TypeError, match="takes float operands"):
            fx.arith.addf(a, b)
        with pytest.raises(TypeError, match="needs operands of one type"):
            fx.arith.addi(a, fx.Int64(1))
        assert type(f.minimumf(f)) is fx.Float32 and type(f.maximumf(2.0)) is fx.Float32
    text = t.text
    assert "cmpi slt" in text and "cmpi uge" in text and "cmpf ord" in text and "arith.shrui" in text
    assert "arith.addf %arg2, %arg2 fastmath<fast>" in text
    assert "arith.index_cast %arg0 : i32 to index" in text and "arith.minimumf" in text


# FlyDSL's composites (fpowi, clampf, sincos …) are built from these ops: tested in test_compat_api.py
COMPOSITE = ("fpowi", "ipowi", "clampf", "sincos", "isnormal")
UNARY = [n for n in fx.math.__all__ if n not in ("powf", "atan2", "copysign", "fma", *COMPOSITE)]
UNARY_INT = ["absi", "ctpop", "ctlz", "cttz"]
CLASSIFY = ["isnan", "isinf", "isfinite"]


@pytest.mark.parametrize("name", UNARY)
def test_math_unary_ops_keep_the_exemplar_type(name):
    fn = getattr(fx.math, name)
    is_int = name in UNARY_INT
    dtype = fx.Uint32 if is_int else fx.BFloat16
    with trace_kernel([dtype.ir_type, ir.VectorType(4, dtype.ir_type)]) as t:
        s, v = dtype(t.args[0]), fx.Vector(t.args[1], (2, 2), dtype)
        out = fx.Boolean if name in CLASSIFY else dtype
        r, rv = fn(s), fn(v)
        assert type(r) is out and isinstance(rv, fx.Vector) and rv.dtype is out and rv.shape == (2, 2)
        c = fn(dtype(3) if is_int else dtype(0.5))
        assert c.is_static() and type(c) is out
    assert t.count(f"math.{name}") == 2


def test_math_binary_ternary_and_folding():
    with trace_kernel([F32, V4F32]) as t:
        x, v = fx.Float32(t.args[0]), fx.Vector(t.args[1])
        assert type(fx.math.powf(x, 2.0)) is fx.Float32
        assert fx.math.atan2(v, x).shape == (4,)
        assert type(fx.math.copysign(fx.Float16(1.0), x)) is fx.Float32
        assert fx.fma(v, v, 1.0).shape == (4,)
        with pytest.raises(TypeError, match="needs a float, got Int32"):
            fx.exp(fx.Int32(1))
        with pytest.raises(TypeError, match="narrow storage float"):
            fx.exp(fx.Float8E4M3FN(1.0))
        with pytest.raises(TypeError, match="needs an integer, got Float32"):
            fx.math.ctpop(x)
    assert t.count("vector.broadcast") == 1 and "math.fma" in t.text  # the literal 1.0 splats as a constant
    assert fx.exp(fx.Float32(0.0)).value == 1.0 and fx.sqrt(4).value == 2.0 and type(fx.sqrt(4)) is fx.Float32
    assert fx.math.round(fx.Float32(2.5)).value == 3.0 and fx.math.roundeven(fx.Float32(2.5)).value == 2.0
    assert fx.fma(fx.Float32(2.0), 3.0, 1.0).value == 7.0 and fx.math.ctlz(fx.Uint32(1)).value == 31
    assert fx.isnan(fx.Float32(math.nan)).value is True and fx.math.absi(fx.Int32(-4)).value == 4


def test_fastmath_flags():
    F = fx.FastMathFlags
    assert str(F.fast) == "fast" and str(F.reassoc | F.contract) == "reassoc,contract" and str(F.none) == "none"
    assert _fastmath.parse_fastmath("nnan,ninf") == F.nnan | F.ninf
    assert _fastmath.parse_fastmath(["afn", F.nsz]) == F.afn | F.nsz
    with pytest.raises(ValueError, match="unknown fast-math flag 'quick'"):
        _fastmath.parse_fastmath("quick")
    assert _fastmath.default_from_hints({"fast_fp_math": True}) == F.fast
    assert _fastmath.default_from_hints({"fast_fp_math": True, "fastmath": "contract"}) == F.contract
    assert _fastmath.default_from_hints({}) is None


def test_fastmath_precedence():
    with trace_kernel([F32, F32, I32]) as t:
        a, b, i = fx.Float32(t.args[0]), fx.Float32(t.args[1]), fx.Int32(t.args[2])
        _ = a + b  # 0: none
        with fx.fastmath(fx.FastMathFlags.fast):
            with fx.fastmath(fx.FastMathFlags.contract):
                _ = a * b  # contract
            _ = a + b  # 1: fast
            _ = -a
            _ = a**b
            _ = fx.exp(a)
            _ = fx.exp(a, fastmath="none")  # explicit none wins over the block
            _ = fx.sqrt(a, fastmath="afn")
            _ = i + i  # integers never carry flags
            _ = fx.maxnumf(a, b)
        _ = a - b
        with _fastmath.compile_default("reassoc"):
            _ = a / b  # the compilation default
            with fx.fastmath("nnan"):
                _ = a % b  # the block wins over the default
    text = t.text
    add = _lines(text, "arith.addf")
    assert "fastmath" not in add[0] and "fastmath<fast>" in add[1]
    assert "fastmath<contract>" in _lines(text, "arith.mulf")[0]
    assert "fastmath" not in _lines(text, "arith.subf")[0]
    assert "fastmath<fast>" in _lines(text, "arith.negf")[0] and "fastmath<fast>" in _lines(text, "math.powf")[0]
    exps = _lines(text, "math.exp")
    assert "fastmath<fast>" in exps[0] and "fastmath" not in exps[1]
    assert "fastmath<afn>" in _lines(text, "math.sqrt")[0]
    assert "fastmath" not in _lines(text, "arith.addi")[0]
    assert "fastmath<fast>" in _lines(text, "arith.maxnumf")[0]
    assert "fastmath<reassoc>" in _lines(text, "arith.divf")[0]
    assert "fastmath<nnan>" in _lines(text, "arith.remf")[0]
    assert fx.exp(fx.Float32(0.0), fastmath="fast").value == 1.0  # compile-time folds ignore flags
