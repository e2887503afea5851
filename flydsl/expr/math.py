"""``fx.math``: transcendental, rounding and bit-counting functions (the ``math`` dialect).

Each function keeps its exemplar's kind and type: a ``Float32`` in gives a ``Float32`` out, a Vector of
``BFloat16`` gives a Vector of ``BFloat16``; ``isnan``/``isinf``/``isfinite`` give Booleans. Operands
may be DSL values, raw IR values or Python numbers (a Python number enters as ``Float32``); as in FlyDSL,
a raw IR value as the first operand gives raw IR value(s) back. All
compile-time operands fold through the op's own semantics (the interpreter's: correctly rounded libm
results; the GPU's fast approximations differ within the bounds listed in docs/numerics.md). Float ops
take ``fastmath=`` (op keyword > ``with fx.fastmath(...)`` > compilation default).
"""

from __future__ import annotations

import functools

from ..dialects import math as _d
from ..ir import Value
from ._sem.fastmath import fastmath_attrs
from ._sem.fold import fold
from ._sem.numeric import Boolean, Float32, Numeric, apply_op, common_type, math_operand
from ._sem.vector import Vector, as_vector_operand, lanes_of

# fmt: off
_UNARY_FLOAT = {
    "exp": "e**x", "exp2": "2**x", "expm1": "e**x - 1 (accurate near 0)", "log": "natural logarithm",
    "log2": "base-2 logarithm", "log10": "base-10 logarithm", "log1p": "log(1 + x) (accurate near 0)",
    "sqrt": "square root (correctly rounded)", "rsqrt": "1 / sqrt(x)", "cbrt": "cube root",
    "sin": "sine", "cos": "cosine", "tan": "tangent", "asin": "arc sine", "acos": "arc cosine",
    "atan": "arc tangent", "sinh": "hyperbolic sine", "cosh": "hyperbolic cosine", "tanh": "hyperbolic tangent",
    "asinh": "inverse hyperbolic sine", "acosh": "inverse hyperbolic cosine", "atanh": "inverse hyperbolic tangent",
    "erf": "error function", "erfc": "complementary error function", "absf": "absolute value (clears the sign)",
    "ceil": "round toward +inf", "floor": "round toward -inf", "trunc": "round toward zero",
    "round": "round half away from zero", "roundeven": "round half to even",
}
_BINARY_FLOAT = {"powf": "a ** b", "atan2": "atan(a / b) in the right quadrant", "copysign": "|a| with the sign of b"}
_CLASSIFY = {"isnan": "x is NaN", "isinf": "x is +inf or -inf", "isfinite": "x is neither NaN nor infinite"}
_UNARY_INT = {
    "absi": "absolute value (INT_MIN stays INT_MIN)", "ctpop": "number of set bits",
    "ctlz": "number of leading zero bits", "cttz": "number of trailing zero bits",
}
# fmt: on

__all__ = [
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "cbrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "erfc",
    "absf",
    "ceil",
    "floor",
    "trunc",
    "round",
    "roundeven",
    "powf",
    "atan2",
    "copysign",
    "fma",
    "isnan",
    "isinf",
    "isfinite",
    "absi",
    "ctpop",
    "ctlz",
    "cttz",
]


def raw_like_exemplar(fn=None, *, exemplar: int = 0):
    """FlyDSL's rule for its builder wrappers: when the exemplar operand (the ``exemplar``-th positional
    argument) is a raw IR value, the result is raw IR value(s) too; DSL operands give DSL values."""
    if fn is None:
        return lambda f: raw_like_exemplar(f, exemplar=exemplar)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        r = fn(*args, **kwargs)
        if len(args) > exemplar and type(args[exemplar]) is Value:
            return tuple(x.ir_value() for x in r) if isinstance(r, tuple) else r.ir_value()
        return r

    return wrapper


def _operand(x, name: str, want_float: bool):
    v = as_vector_operand(x)
    if v is None:
        raise TypeError(f"fx.math.{name}: expected a DSL value, an IR value or a Python number, got {x!r}")
    if want_float and isinstance(x, int) and not isinstance(x, bool):
        return Float32(x)
    return math_operand(v, name, want_float)


def _make_unary_float(name: str, what: str):
    defn = getattr(_d, name)

    def fn(x, *, fastmath=None):
        v = _operand(x, name, True)
        return apply_op(defn, [v], v.dtype, v.dtype, fastmath_attrs(fastmath))

    fn.__doc__ = (
        f"{what.capitalize()} (``math.{name}``), lane-wise on Vectors.\n\n"
        "Args:\n    x: a float (DSL scalar or Vector, raw IR value, Python number).\n"
        "    fastmath: fast-math flags for this op.\n\nReturns:\n    The same kind and type as ``x``.\n\n"
        "Raises:\n    TypeError: an integer or fp8 operand."
    )
    return fn


def _make_nary_float(name: str, what: str, arity: int):
    defn = getattr(_d, name)

    def fn(*args, fastmath=None):
        if len(args) != arity:
            raise TypeError(f"fx.math.{name} takes {arity} operands, got {len(args)}")
        vs = [_operand(a, name, True) for a in args]
        C = vs[0].dtype
        for v in vs[1:]:
            C = common_type(C, v.dtype)
        return apply_op(defn, vs, C, C, fastmath_attrs(fastmath))

    fn.__doc__ = (
        f"{what} (``math.{name}``), lane-wise; operands convert to their common float type and scalars "
        "broadcast over Vectors.\n\nReturns:\n    A DSL value of the common type.\n\n"
        "Raises:\n    TypeError: an integer or fp8 operand, or a wrong operand count."
    )
    return fn


def _make_classify(name: str, what: str):
    defn = getattr(_d, name)

    def fn(x):
        v = _operand(x, name, True)
        return apply_op(defn, [v], v.dtype, Boolean, {})

    fn.__doc__ = f"Whether {what} (``math.{name}``).\n\nReturns:\n    Boolean (a Boolean Vector for a Vector)."
    return fn


def _make_unary_int(name: str, what: str):
    defn = getattr(_d, name)

    def fn(x):
        v = _operand(x, name, False)
        return apply_op(defn, [v], v.dtype, v.dtype, {})

    fn.__doc__ = (
        f"The {what} (``math.{name}``), lane-wise.\n\nReturns:\n    The same kind and type as ``x``.\n\n"
        "Raises:\n    TypeError: a float or Boolean operand."
    )
    return fn


def _define(name: str, fn):
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    return fn


exp = _define("exp", _make_unary_float("exp", _UNARY_FLOAT["exp"]))
exp2 = _define("exp2", _make_unary_float("exp2", _UNARY_FLOAT["exp2"]))
expm1 = _define("expm1", _make_unary_float("expm1", _UNARY_FLOAT["expm1"]))
log = _define("log", _make_unary_float("log", _UNARY_FLOAT["log"]))
log2 = _define("log2", _make_unary_float("log2", _UNARY_FLOAT["log2"]))
log10 = _define("log10", _make_unary_float("log10", _UNARY_FLOAT["log10"]))
log1p = _define("log1p", _make_unary_float("log1p", _UNARY_FLOAT["log1p"]))
sqrt = _define("sqrt", _make_unary_float("sqrt", _UNARY_FLOAT["sqrt"]))
rsqrt = _define("rsqrt", _make_unary_float("rsqrt", _UNARY_FLOAT["rsqrt"]))
cbrt = _define("cbrt", _make_unary_float("cbrt", _UNARY_FLOAT["cbrt"]))
sin = _define("sin", _make_unary_float("sin", _UNARY_FLOAT["sin"]))
cos = _define("cos", _make_unary_float("cos", _UNARY_FLOAT["cos"]))
tan = _define("tan", _make_unary_float("tan", _UNARY_FLOAT["tan"]))
asin = _define("asin", _make_unary_float("asin", _UNARY_FLOAT["asin"]))
acos = _define("acos", _make_unary_float("acos", _UNARY_FLOAT["acos"]))
atan = _define("atan", _make_unary_float("atan", _UNARY_FLOAT["atan"]))
sinh = _define("sinh", _make_unary_float("sinh", _UNARY_FLOAT["sinh"]))
cosh = _define("cosh", _make_unary_float("cosh", _UNARY_FLOAT["cosh"]))
tanh = _define("tanh", _make_unary_float("tanh", _UNARY_FLOAT["tanh"]))
asinh = _define("asinh", _make_unary_float("asinh", _UNARY_FLOAT["asinh"]))
acosh = _define("acosh", _make_unary_float("acosh", _UNARY_FLOAT["acosh"]))
atanh = _define("atanh", _make_unary_float("atanh", _UNARY_FLOAT["atanh"]))
erf = _define("erf", _make_unary_float("erf", _UNARY_FLOAT["erf"]))
erfc = _define("erfc", _make_unary_float("erfc", _UNARY_FLOAT["erfc"]))
absf = _define("absf", _make_unary_float("absf", _UNARY_FLOAT["absf"]))
ceil = _define("ceil", _make_unary_float("ceil", _UNARY_FLOAT["ceil"]))
floor = _define("floor", _make_unary_float("floor", _UNARY_FLOAT["floor"]))
trunc = _define("trunc", _make_unary_float("trunc", _UNARY_FLOAT["trunc"]))
round = _define("round", _make_unary_float("round", _UNARY_FLOAT["round"]))
roundeven = _define("roundeven", _make_unary_float("roundeven", _UNARY_FLOAT["roundeven"]))
powf = _define("powf", _make_nary_float("powf", _BINARY_FLOAT["powf"].capitalize(), 2))
atan2 = _define("atan2", _make_nary_float("atan2", _BINARY_FLOAT["atan2"].capitalize(), 2))
copysign = _define("copysign", _make_nary_float("copysign", _BINARY_FLOAT["copysign"].capitalize(), 2))
fma = _define("fma", _make_nary_float("fma", "``a * b + c`` with one rounding", 3))
isnan = _define("isnan", _make_classify("isnan", _CLASSIFY["isnan"]))
isinf = _define("isinf", _make_classify("isinf", _CLASSIFY["isinf"]))
isfinite = _define("isfinite", _make_classify("isfinite", _CLASSIFY["isfinite"]))
absi = _define("absi", _make_unary_int("absi", _UNARY_INT["absi"]))
ctpop = _define("ctpop", _make_unary_int("ctpop", _UNARY_INT["ctpop"]))
ctlz = _define("ctlz", _make_unary_int("ctlz", _UNARY_INT["ctlz"]))
cttz = _define("cttz", _make_unary_int("cttz", _UNARY_INT["cttz"]))


# -- MLIR's composite math ops (one op each: ``math.fpowi`` …, lowered per target) ------------------


def fpowi(x, n, *, fastmath=None):
    """``x ** n`` for a float ``x`` and an integer ``n`` (``math.fpowi``: ``n`` converted to the float
    type by rounding to nearest, then ``powf``; IEEE ``pow`` gives a negative base's sign for odd ``n``).

    Returns:
        The kind and type of ``x`` (a Vector when either operand is one).
    """
    v = _operand(x, "fpowi", True)
    e = _operand(n, "fpowi", False)
    C, E = v.dtype, e.dtype
    attrs = fastmath_attrs(fastmath)
    if isinstance(v, Numeric) and isinstance(e, Numeric):
        if v.is_static() and e.is_static():
            return C._make(fold(_d.fpowi, C, [C, E], [v.value, e.value]))
        return C._make(_d.fpowi(v.ir_value(), e.ir_value(), **attrs))
    shape = v.shape if isinstance(v, Vector) else e.shape
    return Vector._make(_d.fpowi(lanes_of(v, C, shape), lanes_of(e, E, shape), **attrs), shape, C)


def ipowi(x, n):
    """``x ** n`` for integers (``math.ipowi``): wraps like multiplication; for ``n < 0`` the result is
    1 when ``x == 1``, +/-1 when ``x == -1`` (by the parity of ``n``), else 0.

    Returns:
        The common integer type of ``x`` and ``n``.
    """
    v, e = _operand(x, "ipowi", False), _operand(n, "ipowi", False)
    C = common_type(v.dtype, e.dtype)
    return apply_op(_d.ipowi, [v, e], C, C, {})


def clampf(x, lo, hi, *, fastmath=None):
    """``minimumf(maximumf(x, lo), hi)`` (``math.clampf``; NaN-propagating), in the common float type."""
    vs = [_operand(a, "clampf", True) for a in (x, lo, hi)]
    C = common_type(common_type(vs[0].dtype, vs[1].dtype), vs[2].dtype)
    return apply_op(_d.clampf, vs, C, C, fastmath_attrs(fastmath))


def sincos(x, *, fastmath=None):
    """``(sin(x), cos(x))`` from one ``math.sincos`` op (two results of the kind and type of ``x``)."""
    v = _operand(x, "sincos", True)
    C = v.dtype
    if isinstance(v, Numeric) and v.is_static():
        return sin(v), cos(v)
    s, c = _d.sincos(v.ir_value(), **fastmath_attrs(fastmath))
    if isinstance(v, Vector):
        return Vector._make(s, v.shape, C), Vector._make(c, v.shape, C)
    return C._make(s), C._make(c)


isnormal = _define("isnormal", _make_classify("isnormal", "x is a normal float: finite, non-zero and not subnormal"))

__all__ += ["fpowi", "ipowi", "clampf", "sincos", "isnormal"]

for _name in __all__:  # raw IR operands give raw IR results (FlyDSL's wrappers do the same)
    globals()[_name] = raw_like_exemplar(globals()[_name])
