"""FlyDSL's numeric type rules (docs/language/arithmetic_types.md): the common-type table, result types,
operand normalization, wrap-around, folding and the compile-time/run-time split — for scalars and
vectors alike."""

import operator

import pytest

import flydsl.expr as fx
from flydsl import ir
from flydsl.expr.numeric import common_type
from flydsl.testing import trace_kernel

I8, I16, I32, I64, U32 = fx.Int8, fx.Int16, fx.Int32, fx.Int64, fx.Uint32
F16, BF16, F32, F64 = fx.Float16, fx.BFloat16, fx.Float32, fx.Float64
COLS = [I8, I16, I32, I64, U32, F16, BF16, F32, F64]

# The table of docs/language/arithmetic_types.md, row by row (lhs), columns in COLS order (rhs).
TABLE = {
    I8: [I8, I16, I32, I64, U32, F16, BF16, F32, F64],
    I16: [I16, I16, I32, I64, U32, F16, BF16, F32, F64],
    I32: [I32, I32, I32, I64, U32, F32, F32, F32, F64],
    I64: [I64, I64, I64, I64, I64, F64, F64, F64, F64],
    U32: [U32, U32, U32, I64, U32, F32, F32, F32, F64],
    F16: [F16, F16, F32, F64, F32, F16, F32, F32, F64],
    BF16: [BF16, BF16, F32, F64, F32, F32, BF16, F32, F64],
    F32: [F32, F32, F32, F64, F32, F32, F32, F32, F64],
    F64: [F64, F64, F64, F64, F64, F64, F64, F64, F64],
}
PAIRS = [(a, b, TABLE[a][i]) for a in COLS for i, b in enumerate(COLS)]


@pytest.mark.parametrize("a,b,c", PAIRS, ids=[f"{a.__name__}-{b.__name__}" for a, b, _ in PAIRS])
def test_common_type_table(a, b, c):
    assert common_type(a, b) is c


def _scalar(t):
    return t(1)


def _vector(t):
    return fx.Vector.filled(4, 1, t)


KINDS = {
    "scalar": lambda a, b: (_scalar(a), _scalar(b)),
    "vector": lambda a, b: (_vector(a), _vector(b)),
    "vector-scalar": lambda a, b: (_vector(a), _scalar(b)),
    "scalar-vector": lambda a, b: (_scalar(a), _vector(b)),
}


def test_addition_follows_the_table_for_every_operand_kind():
    with trace_kernel([]):
        for a, b, c in PAIRS:
            for kind, make in KINDS.items():
                r = make(a, b)[0] + make(a, b)[1]
                assert r.dtype is c, f"{kind}: {a.__name__} + {b.__name__}"
                assert isinstance(r, fx.Vector) == (kind != "scalar")


def test_boolean_widens_to_int32_in_arithmetic_only():
    with trace_kernel([]):
        t, f = fx.Boolean(True), fx.Boolean(False)
        for op in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod):
            assert op(t, t if op in (operator.floordiv, operator.mod) else f).dtype is I32
        for op in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift, operator.lt):
            assert op(t, f).dtype is fx.Boolean
        assert (t + I8(1)).dtype is I32
        assert (t & I8(1)).dtype is I8
        vb = _vector(I32) < _vector(I32)
        assert (vb + vb).dtype is I32 and (vb & vb).dtype is fx.Boolean


@pytest.mark.parametrize(
    "t,expected",
    [(I8, F32), (I16, F32), (I32, F32), (I64, F64), (U32, F32), (F16, F16), (BF16, BF16), (F32, F32), (F64, F64)],
)
def test_truediv_result(t, expected):
    with trace_kernel([]):
        assert (t(3) / t(2)).dtype is expected
        assert (_vector(t) / _vector(t)).dtype is expected


@pytest.mark.parametrize("t", COLS)
def test_arithmetic_keeps_the_common_type(t):
    with trace_kernel([]):
        for op in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, operator.pow):
            assert op(t(3), t(2)).dtype is t
            assert op(_vector(t), t(2)).dtype is t


@pytest.mark.parametrize("t", [I8, I16, I32, I64, U32])
def test_bitwise_keeps_integer_type(t):
    with trace_kernel([]):
        for op in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift):
            assert op(t(6), t(3)).dtype is t
            assert op(_vector(t), _vector(t)).dtype is t


@pytest.mark.parametrize("t", COLS + [fx.Boolean])
def test_comparisons_give_boolean(t):
    with trace_kernel([]):
        for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
            assert op(t(1), t(2)).dtype is fx.Boolean
            r = op(_vector(t), t(2))
            assert isinstance(r, fx.Vector) and r.dtype is fx.Boolean and r.shape == (4,)


def test_literal_normalization():
    with trace_kernel([]):
        assert (I8(1) + 5).dtype is I32
        assert (I32(3) + 5_000_000_000).dtype is I64
        assert (I32(3) + 1.0).dtype is F32
        assert (BF16(1) + 1.0).dtype is F32
        assert (_vector(BF16) + 1.0).dtype is F32
        assert (_vector(F32) + 1).dtype is F32
        assert (_vector(I32) + 1.0).dtype is F32
        assert fx.as_numeric(True).dtype is fx.Boolean
        assert fx.as_numeric(2**40).dtype is I64
        assert fx.Numeric.from_python_value(1.5).dtype is F32


@pytest.mark.parametrize(
    "t,value,expected",
    [
        (fx.Uint32, 2**32 + 5, 5),
        (fx.Uint32, -1, 0xFFFFFFFF),
        (fx.Int32, 2**31, -(2**31)),
        (fx.Uint64, 2**64 + 5, 5),
        (fx.Uint64, -1, 2**64 - 1),
        (fx.Int64, 2**63, -(2**63)),
        (fx.Int8, 200, -56),
        (fx.Uint8, 256 + 7, 7),
        (fx.Boolean, 5, True),
        (fx.Boolean, 0, False),
    ],
)
def test_construction_wraps_like_a_c_cast(t, value, expected):
    r = t(value)
    assert r.is_static() and r.value == expected


@pytest.mark.parametrize(
    "src,dst,value,expected",
    [(fx.Int32, fx.Uint8, -1, 255), (fx.Int8, fx.Uint32, -1, 0xFFFFFFFF), (fx.Uint64, fx.Uint32, 2**40 + 3, 3)],
)
def test_static_narrowing_and_widening(src, dst, value, expected):
    assert dst(src(value)).value == expected


def test_folds_wrap_at_every_width():
    assert (fx.Uint32(0xFFFFFFFF) + fx.Uint32(2)).value == 1
    assert (fx.Uint64(2**64 - 1) + fx.Uint64(2)).value == 1
    assert (fx.Uint64(2**64 - 1) * fx.Uint64(3)).value == 2**64 - 3
    assert (fx.Int8(127) + fx.Int8(1)).value == -128
    assert (fx.Int16(-32768) - fx.Int16(1)).value == 32767


def test_signed_floordiv_floors_and_mod_truncates():
    # `//` is floordivsi, `%` is remsi (C remainder: the sign of the dividend), folded or not
    assert (fx.Int32(7) // fx.Int32(-2)).value == -4
    assert (fx.Int32(-7) // fx.Int32(2)).value == -4
    assert (fx.Int32(7) % fx.Int32(-2)).value == 1
    assert (fx.Int32(-7) % fx.Int32(2)).value == -1
    assert (fx.Uint32(7) // fx.Uint32(2)).value == 3
    assert divmod(fx.Int32(7), fx.Int32(3)) == (fx.Int32(2), fx.Int32(1))


def test_float_floordiv_and_mod():
    assert (fx.Float32(7.5) // fx.Float32(2.0)).value == 3.0
    assert (fx.Float32(-7.5) // fx.Float32(2.0)).value == -4.0
    assert (fx.Float32(-7.5) % fx.Float32(2.0)).value == -1.5  # remf: sign of the dividend


def test_compile_time_property():
    with trace_kernel([ir.i32]) as t:
        n = fx.Int32(t.args[0])
        r = fx.Int32(3) + fx.Int32(4)
        assert r.is_static() and r.value == 7
        assert not (fx.Int32(3) + n).is_static()
        assert not (n + n).is_static()
        assert (~fx.Int32(0)).value == -1 and (~fx.Uint32(0)).value == 0xFFFFFFFF
        assert (~fx.Boolean(True)).value is False
        assert (-fx.Int32(3)).value == -3 and abs(fx.Int32(-5)).value == 5
        assert (fx.Int32(2) ** 10).value == 1024 and (fx.Int8(2) ** fx.Int8(7)).value == -128
        assert (fx.Int8(2) ** 7).dtype is fx.Int32  # the literal enters as Int32
    assert t.count("arith.addi") == 2


def test_runtime_ops_choose_ops_by_signedness():
    with trace_kernel([ir.i32, ir.i32]) as t:
        a, b = fx.Int32(t.args[0]), fx.Int32(t.args[1])
        ua, ub = fx.Uint32(t.args[0]), fx.Uint32(t.args[1])
        _ = (a // b, a % b, a >> b, a < b, ua // ub, ua % ub, ua >> ub, ua < ub, a / b, -ua, ~ua)
    for op in ("floordivsi", "remsi", "shrsi", "divui", "remui", "shrui", "sitofp", "divf", "xori", "subi"):
        assert f"arith.{op}" in t.text, op
    assert "cmpi slt" in t.text and "cmpi ult" in t.text


def test_float_compare_predicates():
    with trace_kernel([ir.f32, ir.f32]) as t:
        a, b = fx.Float32(t.args[0]), fx.Float32(t.args[1])
        _ = (a < b, a <= b, a > b, a >= b, a == b, a != b)
    for p in ("olt", "ole", "ogt", "oge", "oeq", "une"):
        assert f"cmpf {p}" in t.text


def test_mixed_compare_converts_to_the_common_type_first():
    with trace_kernel([ir.i32, ir.f32]) as t:
        r = fx.Int32(t.args[0]) < fx.Float32(t.args[1])
        assert r.dtype is fx.Boolean
    assert "arith.sitofp" in t.text and "arith.cmpf" in t.text


def test_numeric_introspection():
    assert (fx.Int32.width, fx.Int32.log_width) == (32, 5)
    assert (fx.Int8.log_width, fx.Int64.log_width, fx.Float16.log_width) == (3, 6, 4)
    assert fx.Int32(5).dtype is fx.Int32
    assert fx.Numeric.from_ir_type(ir.f32) is fx.Float32
    assert fx.Numeric.from_ir_type(fx.T.i32()) is fx.Int32
    assert fx.Numeric.from_ir_type(ir.index) is fx.Index
    assert fx.Float32.zero == 0.0 and fx.Int32.zero == 0 and fx.Boolean.zero is False
    with pytest.raises(TypeError, match="no DSL scalar type"):
        fx.Numeric.from_ir_type(ir.VectorType(4, ir.f32))
    x = fx.Int32(7)
    assert fx.as_numeric(x) is x and x.to(fx.Int32) is x
    assert int(fx.Int32(5)) == 5 and bool(fx.Boolean(True)) is True and float(fx.Float32(1.5)) == 1.5


def test_to_conversion_ops():
    with trace_kernel([ir.i32, ir.f32, ir.f16]) as t:
        i, f, h = fx.Int32(t.args[0]), fx.Float32(t.args[1]), fx.Float16(t.args[2])
        _ = (i.to(fx.Float32), fx.Uint32(i).to(fx.Float32), f.to(fx.Int32), f.to(fx.Uint32), i.to(fx.Int8))
        _ = (i.to(fx.Int64), fx.Uint32(i).to(fx.Int64), h.to(fx.Float32), f.to(fx.BFloat16), h.to(fx.BFloat16))
        _ = (i.to(fx.Index), f.to(fx.Boolean), i.to(fx.Boolean))
    for op in ("sitofp", "uitofp", "fptosi", "fptoui", "trunci", "extsi", "extui", "extf", "truncf", "index_cast"):
        assert f"arith.{op}" in t.text, op
    assert "f16 to f32" in t.text and "f32 to bf16" in t.text  # f16 -> bf16 goes through f32
    assert "cmpf une" in t.text and "cmpi ne" in t.text


def test_static_conversions_fold():
    assert fx.Int32(5).to(fx.Float32).value == 5.0 and fx.Int32(5).to(fx.Float32).is_static()
    assert fx.Float32(-3.7).to(fx.Int32).value == -3
    assert fx.Float32(3e9).to(fx.Int32).value == 2**31 - 1  # saturates like cvt.rzi
    assert fx.Float32(-1.0).to(fx.Uint32).value == 0
    assert fx.Int8(300.0).value == 127 and fx.Uint8(-5.0).value == 0
    assert fx.Float32(1000.0).to(fx.Float8E4M3FN).value == 448.0  # satfinite
    assert fx.Float32(1.0 + 2**-11).to(fx.Float16).value == 1.0  # ties to even
    assert fx.Float32(2.5).to(fx.Boolean).value is True and fx.Float32(0.0).to(fx.Boolean).value is False
    assert fx.Int32(5).to(int) == 5 and fx.Float32(1.5).to(float) == 1.5
    # a Python float rounds as a run-time truncf from f64 would: correctly (no f64->f32->bf16 double
    # rounding), fp8 saturating
    x = 1 + 2**-8 + 2**-30
    assert fx.BFloat16(x).value == fx.Float64(x).to(fx.BFloat16).value == 1.0078125
    assert fx.Float8E4M3FN(1000.0).value == 448.0 and fx.Float8E5M2(float("inf")).value == 57344.0


def test_bitcast_and_select():
    assert fx.Float32(1.0).bitcast(fx.Int32).value == 0x3F800000
    assert fx.Int32(-1).bitcast(fx.Uint32).value == 0xFFFFFFFF
    assert fx.Uint16(0x3C00).bitcast(fx.Float16).value == 1.0
    with pytest.raises(TypeError, match="equal widths"):
        fx.Float32(1.0).bitcast(fx.Int16)
    with pytest.raises(TypeError):
        fx.Float32(1.0).bitcast(123)
    assert fx.Boolean(True).select(fx.Int32(1), fx.Float32(2.0)).dtype is fx.Float32
    assert fx.Int32(5).select(fx.Int32(10), fx.Int32(20)).value == 10
    assert fx.Float32(0.0).select(fx.Int32(1), fx.Int32(2)).value == 2
    with trace_kernel([ir.i32, ir.f32]) as t:
        x, f = fx.Int32(t.args[0]), fx.Float32(t.args[1])
        assert (x < 2).select(1.0, x).dtype is fx.Float32
        assert not fx.Boolean(True).select(x, fx.Int32(0)).is_static()
        assert x.select(fx.Int32(1), fx.Int32(2)).dtype is fx.Int32
        assert f.select(1, 2).dtype is fx.Int32
    assert t.count("arith.select") == 3 and "cmpi ne" in t.text and "cmpf une" in t.text


def test_dsl_value_protocol():
    with trace_kernel([ir.i32]) as t:
        x = fx.Uint32(t.args[0])
        vals = x.__fly_values__()
        assert vals == [t.args[0]]
        y = x.__fly_rebuild__(vals)
        assert type(y) is fx.Uint32 and not y.is_static()
        s = fx.Int32(7).__fly_values__()
        assert len(s) == 1 and s[0].type is ir.i32
