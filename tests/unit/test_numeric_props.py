"""Property tests: a compile-time fold equals the run-time op's semantics (the ``evaluate`` of the op the
run-time path emits, on numpy arrays) and equals an independent reference (Python integers, exact
fractions with IEEE rounding), bit for bit.

Each kernel is traced once per (operation, type); hypothesis draws batches of operands, folds each pair
on the host and evaluates the traced ops on the whole batch at once.
"""

import math
import operator
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flydsl.expr as fx
from flydsl.testing import evaluate, trace_kernel

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
INT_TYPES = [fx.Int8, fx.Int16, fx.Int32, fx.Int64, fx.Uint8, fx.Uint16, fx.Uint32, fx.Uint64]
INT_KINDS = ["add", "sub", "mul", "floordiv", "mod", "and", "or", "xor", "lshift", "rshift"]
CMP_KINDS = ["lt", "le", "gt", "ge", "eq", "ne"]
PY_OP = {"and": operator.and_, "or": operator.or_, "truediv": operator.truediv}
FLOAT_TYPES = [fx.Float16, fx.BFloat16, fx.Float32, fx.Float64]


def _op(kind):
    return PY_OP.get(kind) or getattr(operator, kind)


_TRACES: dict = {}


def _traced(key, arg_types, body):
    """Trace ``body(*dsl_args)`` once per key; returns (trace, result)."""
    if key not in _TRACES:
        with trace_kernel([a.ir_type for a in arg_types]) as t:
            r = body(*[c._make(v) for c, v in zip(arg_types, t.args)])
        _TRACES[key] = (t, r)
    return _TRACES[key]


def _as_array(values, C):
    if C.is_integer:
        w = C.width
        signed = [((v % (1 << w)) ^ (1 << (w - 1))) - (1 << (w - 1)) for v in values]
        return np.array(signed, dtype=C.numpy_dtype)
    return np.array(values, dtype=np.float64).astype(C.numpy_dtype)


def _read(arr, C):
    """Python values of a result array, read as type ``C`` (unsigned types reinterpret)."""
    if C is fx.Boolean:
        return [bool(x) for x in arr]
    if C.is_integer:
        return [C.from_py(int(x)) for x in arr.astype(np.int64)]
    return [float(x) for x in arr.astype(np.float64)]


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


# ---------------------------------------------------------------------------------------------
# integers
# ---------------------------------------------------------------------------------------------


def _bounds(C):
    w = C.width
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if C.signed else (0, (1 << w) - 1)


def _int_strategy(C):
    lo, hi = _bounds(C)
    edges = sorted({lo, lo + 1, -1 if C.signed else 1, 0, 1, 2, hi - 1, hi, C.width - 1, C.width})
    return st.one_of(st.sampled_from([e for e in edges if lo <= e <= hi]), st.integers(lo, hi))


def int_reference(kind, a, b, C):
    """The integer semantics, from scratch: two's complement wrap, C remainder, GPU shifts."""
    w, hi = C.width, _bounds(C)[1]

    def wrap(v):
        v %= 1 << w
        return v - (1 << w) if C.signed and v > hi else v

    if kind in CMP_KINDS:
        return _op(kind)(a, b)
    if kind == "floordiv":
        return wrap(a // b)
    if kind == "mod":
        r = abs(a) % abs(b)
        return wrap(-r if a < 0 else r)
    if kind in ("lshift", "rshift"):
        s = b % (1 << w)  # the amount is read unsigned
        if kind == "lshift":
            return 0 if s >= w else wrap(a << s)
        if s >= w:
            return -1 if a < 0 else 0
        return a >> s
    return wrap(_op(kind)(a, b))


@pytest.mark.parametrize("C", INT_TYPES, ids=lambda c: c.__name__)
@SETTINGS
@given(data=st.data())
def test_integer_fold_equals_runtime_equals_reference(C, data):
    pairs = data.draw(st.lists(st.tuples(_int_strategy(C), _int_strategy(C)), min_size=1, max_size=24))
    for kind in INT_KINDS + CMP_KINDS:
        ps = [(a, b) for a, b in pairs if not (kind in ("floordiv", "mod") and b == 0)]
        if not ps:
            continue
        t, r = _traced(("int", kind, C), [C, C], _op(kind))
        R = r.dtype
        (out,) = evaluate(t, [_as_array([a for a, _ in ps], C), _as_array([b for _, b in ps], C)], [r])
        runtime = _read(out, R)
        for (a, b), rt in zip(ps, runtime):
            folded = _op(kind)(C(a), C(b))
            assert folded.is_static() and folded.dtype is R
            ref = int_reference(kind, a, b, C)
            assert folded.value == rt == ref, f"{C.__name__}({a}) {kind} {C.__name__}({b})"


@pytest.mark.parametrize("C", INT_TYPES, ids=lambda c: c.__name__)
def test_integer_division_by_compile_time_zero_raises(C):
    with pytest.raises(ZeroDivisionError, match="by zero"):
        C(7) // C(0)
    with pytest.raises(ZeroDivisionError, match="by zero"):
        C(7) % C(0)


# ---------------------------------------------------------------------------------------------
# floats: an exact reference
# ---------------------------------------------------------------------------------------------


def _udtype(dt):
    return np.dtype(f"u{np.dtype(dt).itemsize}")


def _neighbor(x: float, dt, up: bool) -> float:
    """The next representable value of dtype ``dt`` above (``up``) or below ``x`` (±inf past the finite
    range; fnuz formats have no -0)."""
    w = np.dtype(dt).itemsize * 8
    u = int(np.array([x]).astype(dt).view(_udtype(dt))[0])
    sign, mag = u >> (w - 1), u & ((1 << (w - 1)) - 1)
    if mag == 0:
        sign, mag = (0 if up else 1), 1
    elif up != bool(sign):
        mag += 1
    else:
        mag -= 1
    if mag == 0:
        return 0.0 if _is_fnuz(dt) or not sign else -0.0
    r = float(np.array([(sign << (w - 1)) | mag], dtype=_udtype(dt)).view(dt).astype(np.float64)[0])
    if mag >= 1 << (w - 1) or math.isnan(r) or abs(r) > _finite_max(dt):
        return math.inf if up else -math.inf
    return r


def _finite_max(dt) -> float:
    return float(ml_dtypes.finfo(dt).max)


def _is_fnuz(dt) -> bool:
    return "fnuz" in np.dtype(dt).name


def bracket(q: Fraction, dt):
    """``(lo, hi)``: the representable values of ``dt`` nearest below and above the exact ``q`` (±inf past
    the finite range)."""
    mx = _finite_max(dt)
    if q > mx:
        return mx, math.inf
    if q < -mx:
        return -math.inf, -mx
    with np.errstate(over="ignore"):
        c = float(np.array([float(q)]).astype(dt).astype(np.float64)[0])  # within an ulp of q
    c = math.copysign(mx, c) if math.isinf(c) else c
    while Fraction(c) > q:
        c = _neighbor(c, dt, up=False)
    while _le(_neighbor(c, dt, up=True), q):
        c = _neighbor(c, dt, up=True)
    return (c, c) if Fraction(c) == q else (c, _neighbor(c, dt, up=True))


def _le(x: float, q: Fraction) -> bool:
    return x < 0 if math.isinf(x) else Fraction(x) <= q


def _even(x: float, dt) -> bool:
    return int(np.array([x]).astype(dt).view(_udtype(dt))[0]) & 1 == 0


def round_exact(q: Fraction, dt, mode: str = "to_nearest_even", zero_sign: float = 1.0) -> float:
    """IEEE-754 rounding of the exact rational ``q`` to ``dt``; a zero result takes ``zero_sign``."""
    lo, hi = bracket(q, dt)
    if lo == hi:
        r = lo
    elif mode == "downward":
        r = lo
    elif mode == "upward":
        r = hi
    elif mode == "toward_zero":
        r = lo if q > 0 else hi
    else:
        mx = _finite_max(dt)
        dlo = q - Fraction(lo) if math.isfinite(lo) else None
        dhi = Fraction(hi) - q if math.isfinite(hi) else None
        if dlo is None or dhi is None:  # past the largest finite value: the overflow threshold is max + ulp/2
            half = (Fraction(mx) - Fraction(_neighbor(mx, dt, up=False))) / 2
            over = abs(q) >= Fraction(mx) + half
            sign = 1.0 if q > 0 else -1.0
            r = sign * math.inf if over else sign * mx
        elif dlo != dhi:
            r = lo if dlo < dhi else hi
        elif mode == "to_nearest_away":
            r = lo if abs(lo) > abs(hi) else hi
        else:
            r = lo if _even(lo, dt) else hi
    if r == 0:
        r = 0.0 if _is_fnuz(dt) else math.copysign(0.0, zero_sign if q == 0 else (1.0 if q > 0 else -1.0))
    return r


def _float_strategy(C):
    if C is fx.Float64:
        return st.floats(width=64)
    if C is fx.Float32:
        return st.floats(width=32)
    # narrow floats: f32 draws rounded to the type (hypothesis' width=16 filters too much)
    return st.floats(width=32).map(lambda x: _round_to(x, C.numpy_dtype))


def _round_to(x: float, dt) -> float:
    with np.errstate(over="ignore"):
        return float(np.array([x], np.float32).astype(dt)[0])


def float_reference(kind, a, b, C):
    dt = C.numpy_dtype
    if not (math.isfinite(a) and math.isfinite(b)):
        with np.errstate(all="ignore"):
            return float(np.array([_op(kind)(np.float64(a), np.float64(b))]).astype(dt)[0])
    if kind == "truediv" and b == 0:
        if a == 0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    q = _op(kind)(Fraction(a), Fraction(b))
    with np.errstate(all="ignore"):
        zero_sign = float(_op(kind)(np.float64(a), np.float64(b)))  # IEEE's sign of an exact zero
    return round_exact(q, dt, zero_sign=zero_sign if q == 0 else 1.0)


@pytest.mark.parametrize("C", FLOAT_TYPES, ids=lambda c: c.__name__)
@SETTINGS
@given(data=st.data())
def test_float_arithmetic_fold_equals_runtime_equals_reference(C, data):
    pairs = data.draw(st.lists(st.tuples(_float_strategy(C), _float_strategy(C)), min_size=1, max_size=16))
    for kind in ("add", "sub", "mul", "truediv"):
        t, r = _traced(("float", kind, C), [C, C], _op(kind))
        (out,) = evaluate(t, [_as_array([a for a, _ in pairs], C), _as_array([b for _, b in pairs], C)], [r])
        for (a, b), rt in zip(pairs, _read(out, C)):
            folded = _op(kind)(C(a), C(b))
            ref = float_reference(kind, a, b, C)
            assert _same(folded.value, rt) and _same(rt, ref), f"{C.__name__}: {a!r} {kind} {b!r}: {rt} vs {ref}"


@pytest.mark.parametrize("C", [fx.Float16, fx.BFloat16, fx.Float32], ids=lambda c: c.__name__)
@SETTINGS
@given(data=st.data())
def test_float_compares_fold_equals_runtime(C, data):
    pairs = data.draw(st.lists(st.tuples(_float_strategy(C), _float_strategy(C)), min_size=1, max_size=16))
    for kind in CMP_KINDS:
        t, r = _traced(("fcmp", kind, C), [C, C], _op(kind))
        (out,) = evaluate(t, [_as_array([a for a, _ in pairs], C), _as_array([b for _, b in pairs], C)], [r])
        for (a, b), rt in zip(pairs, _read(out, fx.Boolean)):
            # ordered predicates (false on NaN), except != which is unordered (true on NaN)
            ref = _op(kind)(a, b)
            assert _op(kind)(C(a), C(b)).value == rt == ref, f"{a!r} {kind} {b!r}"


# ---------------------------------------------------------------------------------------------
# conversions
# ---------------------------------------------------------------------------------------------

FP8 = [fx.Float8E4M3FN, fx.Float8E5M2, fx.Float8E4M3FNUZ, fx.Float8E5M2FNUZ]


def _convert_check(S, D, xs, ref, mode=None):
    t, r = _traced(("cvt", S, D, mode), [S], lambda x: x.to(D, rounding_mode=mode))
    (out,) = evaluate(t, [_as_array(xs, S)], [r])
    for x, rt in zip(xs, _read(out, D)):
        expect = ref(x)
        assert _same(rt, expect), f"{S.__name__}({x!r}).to({D.__name__}, {mode}): {rt!r} vs {expect!r}"
        if mode is None:
            try:
                folded = S(x).to(D)
            except (ValueError, OverflowError):
                assert S.is_float and D.is_integer and not math.isfinite(x)  # NaN/inf have no integer value
                continue
            assert _same(folded.value, rt), f"fold {S.__name__}({x!r}).to({D.__name__}): {folded.value!r}"


@pytest.mark.parametrize("D", [fx.Float16, fx.BFloat16] + FP8, ids=lambda c: c.__name__)
@SETTINGS
@given(xs=st.lists(st.floats(width=32), min_size=1, max_size=16))
def test_narrowing_f32_rounds_to_nearest_even_and_fp8_saturates(D, xs):
    dt = D.numpy_dtype

    def ref(x):
        if math.isnan(x):
            return math.nan
        if D.is_storage:  # satfinite: clamp to the largest finite value, then round
            mx = _finite_max(dt)
            x = min(max(x, -mx), mx)
        elif math.isinf(x):
            return x
        return round_exact(Fraction(x), dt, zero_sign=x)

    _convert_check(fx.Float32, D, xs, ref)


@pytest.mark.parametrize("S", [fx.Int32, fx.Uint32, fx.Int64, fx.Uint64, fx.Int8], ids=lambda c: c.__name__)
@pytest.mark.parametrize("D", [fx.Float16, fx.BFloat16, fx.Float32, fx.Float64], ids=lambda c: c.__name__)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_int_to_float_rounds_to_nearest_even(S, D, data):
    xs = data.draw(st.lists(_int_strategy(S), min_size=1, max_size=16))
    _convert_check(S, D, xs, lambda x: round_exact(Fraction(x), D.numpy_dtype))


@pytest.mark.parametrize("S", [fx.Float16, fx.BFloat16, fx.Float32, fx.Float64], ids=lambda c: c.__name__)
@pytest.mark.parametrize("D", [fx.Int8, fx.Int32, fx.Uint8, fx.Uint32, fx.Int64, fx.Uint64], ids=lambda c: c.__name__)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_float_to_int_truncates_and_saturates(S, D, data):
    lo, hi = _bounds(D)
    xs = data.draw(st.lists(_float_strategy(S), min_size=1, max_size=16))

    def ref(x):
        if math.isnan(x):
            return 0
        if math.isinf(x):
            return hi if x > 0 else lo
        return min(max(int(x), lo), hi)

    _convert_check(S, D, xs, ref)


MODES = ["downward", "upward", "toward_zero", "to_nearest_away", "to_nearest_even"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "S,D", [(fx.Float32, fx.Float16), (fx.Float32, fx.BFloat16), (fx.Float64, fx.Float32), (fx.Float64, fx.Float16)]
)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_directed_rounding_of_runtime_narrowing(S, D, mode, data):
    xs = data.draw(st.lists(_float_strategy(S), min_size=1, max_size=16))
    dt = D.numpy_dtype

    def ref(x):
        if math.isnan(x):
            return math.nan
        if math.isinf(x):
            return x
        return round_exact(Fraction(x), dt, mode, zero_sign=x)

    _convert_check(S, D, xs, ref, mode)


def test_rounding_mode_attribute_and_errors():
    from flydsl import ir

    with trace_kernel([ir.f32]) as t:
        a = fx.Float32(t.args[0])
        a.to(fx.Float16, rounding_mode=fx.RoundingMode.upward)
        a.to(fx.Float16)
        assert a.to(fx.Float32, rounding_mode=fx.RoundingMode.downward) is a
        a.to(fx.Float16).to(fx.Float32, rounding_mode="downward")  # widening is exact: no attribute
        a.to(fx.Float16).to(fx.BFloat16, rounding_mode=fx.RoundingMode.toward_zero)
        with pytest.raises(TypeError, match="float-to-float"):
            a.to(fx.Int32, rounding_mode=fx.RoundingMode.upward)
        with pytest.raises(TypeError, match="float-to-float"):
            fx.Int32(t.args[0].owner.args[0] if False else 1).to(fx.Float32, rounding_mode="upward")
        with pytest.raises(ValueError, match="unknown rounding mode"):
            a.to(fx.Float16, rounding_mode="sideways")
        with pytest.raises(ValueError, match="Float16, BFloat16 and Float32"):
            a.to(fx.Float8E4M3FN, rounding_mode="upward")
    assert 'arith.truncf %arg0 {rounding = "upward"} : f32 to f16' in t.text
    assert "arith.truncf %arg0 : f32 to f16" in t.text
    assert '{rounding = "toward_zero"} : f32 to bf16' in t.text
    assert t.text.count("rounding") == 2
    with pytest.raises(ValueError, match="run-time value"):
        fx.Float32(1.5).to(fx.Float16, rounding_mode=fx.RoundingMode.upward)
