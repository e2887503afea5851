"""Misuse of DSL values raises at once, with a message in the user's terms that says what to write
instead (golden messages)."""

import pytest

import flydsl.expr as fx
from flydsl import ir
from flydsl.testing import trace_kernel

BOOL_MSG = (
    "cannot use a run-time Boolean as a Python bool (`if`, `while`, `and`/`or`/`not`, `bool()`): its value is "
    "known only when the kernel runs. Use `fx.const_expr(...)` for a test known at compile time, "
    "`cond.select(a, b)` to pick a value, or write the `if`/`while` in a @flyc.kernel body (it becomes "
    "scf.if/scf.while). max()/min()/sorted()/`in` over a Vector compare lanes in Python: use "
    'v.reduce("max"), v.reduce("min"), fx.max/fx.min, or (v == x).reduce("or") instead.'
)
INDEX_MSG = (
    "cannot use a run-time Int32 as a Python index (list/tuple index, slice or `range()` bound): its value is "
    "known only when the kernel runs. Index a Vector with it instead (`vec[i]` emits vector.extractelement), "
    "pick with `cond.select(a, b)`, or loop with `range(n)` in a @flyc.kernel body (it becomes scf.for); an "
    "unrolled `fx.range_constexpr` loop needs a compile-time bound."
)


@pytest.fixture
def rt():
    """Run-time Int32, Float32 and Boolean values inside a kernel trace."""
    with trace_kernel([ir.i32, ir.f32]) as t:
        i, f = fx.Int32(t.args[0]), fx.Float32(t.args[1])
        yield i, f, i < 3


def test_bool_of_runtime_value(rt):
    _, _, b = rt
    with pytest.raises(TypeError) as e:
        bool(b)
    assert str(e.value) == BOOL_MSG
    with pytest.raises(RuntimeError):  # FlyDSL raises RuntimeError: both are caught
        if b:
            pass


def test_int_float_of_runtime_value(rt):
    i, f, _ = rt
    with pytest.raises(TypeError, match=r"as a Python int \(`int\(\)`\).*\.to\(fx\.Int64\)"):
        int(i)
    with pytest.raises(TypeError, match=r"as a Python float.*\.to\(fx\.Float32\)"):
        float(f)
    with pytest.raises(TypeError, match="as a Python int"):
        i.to(int)


def test_range_and_list_index_with_runtime_value(rt):
    i, _, _ = rt
    with pytest.raises(TypeError) as e:
        range(i)
    assert str(e.value) == INDEX_MSG
    with pytest.raises(TypeError) as e:
        [1, 2, 3][i]
    assert str(e.value) == INDEX_MSG
    assert isinstance(e.value, fx.RuntimeValueError) and isinstance(e.value, RuntimeError)


def test_scalars_are_not_sequences(rt):
    i, _, _ = rt
    with pytest.raises(TypeError, match="Int32 is a scalar and cannot be iterated"):
        list(i)
    with pytest.raises(TypeError, match="has no len"):
        len(i)
    with pytest.raises(TypeError):
        list(fx.Int32(3))


@pytest.mark.parametrize("op", ["&", "|", "^", "<<", ">>"])
def test_bitwise_on_floats(op):
    with pytest.raises(TypeError) as e:
        eval(f"a {op} b", {"a": fx.Float32(1.0), "b": fx.Int32(1)})
    assert str(e.value) == (
        f"operator {op} needs integers, got Float32 and Int32; use .bitcast() to operate on a float's bits"
    )
    with pytest.raises(TypeError, match="operator ~ needs an integer, got Float32"):
        ~fx.Float32(1.0)


def test_integer_power_needs_a_compile_time_exponent(rt):
    i, _, _ = rt
    with pytest.raises(TypeError) as e:
        fx.Int32(2) ** i
    assert str(e.value) == (
        "integer ** needs a compile-time exponent; for a run-time exponent convert to a float first: "
        "x.to(fx.Float32) ** e"
    )
    with pytest.raises(ValueError, match=r"negative exponent \(-1\)"):
        i ** fx.Int32(-1)
    assert (i**3).dtype is fx.Int32  # a compile-time exponent unrolls into multiplications


def test_storage_floats_have_no_arithmetic():
    a = fx.Float8E4M3FN(1.0)
    with pytest.raises(TypeError) as e:
        a + a
    assert str(e.value) == (
        "operator + on Float8E4M3FN: narrow storage floats (fp8) support conversions only; convert first, "
        "e.g. x.to(fx.Float32) + y"
    )
    with pytest.raises(TypeError, match="narrow storage"):
        _ = a < 1.0
    with pytest.raises(TypeError, match="narrow storage"):
        _ = -a
    assert (a.to(fx.Float32) + 1.0).value == 2.0


def test_abs_of_boolean():
    with pytest.raises(TypeError, match=r"abs\(\) of a Boolean is undefined"):
        abs(fx.Boolean(True))


def test_conversion_errors():
    with pytest.raises(ValueError, match="cannot convert float NaN to Int32"):
        fx.Int32(float("nan"))
    with pytest.raises(OverflowError, match="cannot convert float inf"):
        fx.Int32(float("inf"))
    with pytest.raises(ValueError, match="cannot convert nan to Int32"):
        fx.Float32(float("nan")).to(fx.Int32)
    with pytest.raises(TypeError, match="cannot convert a Vector to the scalar Float32"):
        with trace_kernel([]):
            fx.Float32(fx.Vector.filled(4, 1.0, fx.Float32))
    with pytest.raises(TypeError, match="expected a DSL numeric type"):
        fx.Int32(1).to("f32")
