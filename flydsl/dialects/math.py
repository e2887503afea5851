"""``math``: transcendental and rounding functions on floats (and a few integer bit ops).

Semantics are the correctly rounded (or libm) results computed in float32/float64 and rounded to the
type. On NVIDIA the f32 transcendental functions lower to the hardware approximations Triton uses
(``ex2.approx``, ``lg2.approx``, ``sin.approx``, ``tanh.approx`` …); their error bounds are listed
in docs/numerics.md, and the interpreter's results differ from the GPU's within them.
"""

from __future__ import annotations

import math as _pymath

import numpy as np
from ml_dtypes import finfo

from ..ir import IntegerType, OpDef, Trait, VectorType, unsigned_dtype
from ._base import as_unsigned, bool_like, int_scalar, same_as_first
from .arith import ieee_maximum, ieee_minimum

P = Trait.PURE


def _in_f32(fn):
    """Compute in f32 for <=32-bit floats (f64 in f64), round back to the type."""

    def ev(op, *args):
        dt = args[0].dtype
        if dt == np.float64:
            return fn(*args)
        r = fn(*[a.astype(np.float32) for a in args])
        return np.asarray(r).astype(dt)

    return ev


def _in_f64(fn):
    """Compute in f64 and round to the type (for functions numpy lacks in f32)."""

    def ev(op, *args):
        dt = args[0].dtype
        r = fn(*[np.asarray(a, dtype=np.float64) for a in args])
        return np.asarray(r).astype(dt)

    return ev


_erf_u = np.frompyfunc(_pymath.erf, 1, 1)
_erfc_u = np.frompyfunc(_pymath.erfc, 1, 1)


def _erf(x):
    return np.asarray(_erf_u(x), dtype=np.float64)


def _erfc(x):
    return np.asarray(_erfc_u(x), dtype=np.float64)


def _rsqrt(x):
    return np.float64(1.0) / np.sqrt(x) if x.dtype == np.float64 else np.float32(1.0) / np.sqrt(x)


def _fma(a, b, c):
    # one rounding: the exact product of two f32 fits in f64; the f64 sum then rounds once to f32
    # (double rounding can only matter in rare halfway cases; see docs/numerics.md)
    return a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)


def _fma_ev(op, a, b, c):
    dt = a.dtype
    if dt == np.float64:
        return _fma_f64(a, b, c)
    return _fma(a, b, c).astype(dt)


def _fma_f64(a, b, c):
    # exact for f64 through Python fractions would be slow; math.fma exists from Python 3.13
    f = getattr(_pymath, "fma", None)
    if f is None:
        return a * b + c
    return np.asarray(np.frompyfunc(f, 3, 1)(a, b, c), dtype=np.float64)


def _round_half_away(x):
    # NOTE: not floor(x + 0.5): the sum rounds (0.49999997f + 0.5 == 1.0f, and above 2^23 it is off by one)
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.ones_like(t), x), t).astype(x.dtype)


def _unary(name, ev, doc="", scalar=None):
    return OpDef(name, operands=1, traits=(P,), infer=same_as_first, evaluate=ev, scalar=scalar, fmt="unary", doc=doc)


def _binary(name, ev, doc=""):
    return OpDef(name, operands=2, traits=(P,), infer=same_as_first, evaluate=ev, fmt="binary", doc=doc)


exp = _unary("math.exp", _in_f32(np.exp))
exp2 = _unary("math.exp2", _in_f32(np.exp2))
expm1 = _unary("math.expm1", _in_f32(np.expm1))
log = _unary("math.log", _in_f32(np.log))
log2 = _unary("math.log2", _in_f32(np.log2))
log10 = _unary("math.log10", _in_f32(np.log10))
log1p = _unary("math.log1p", _in_f32(np.log1p))
sqrt = _unary("math.sqrt", _in_f32(np.sqrt), "correctly rounded square root")
rsqrt = _unary("math.rsqrt", _in_f32(_rsqrt), "1/sqrt(x)")
cbrt = _unary("math.cbrt", _in_f32(np.cbrt))
sin = _unary("math.sin", _in_f32(np.sin))
cos = _unary("math.cos", _in_f32(np.cos))
tan = _unary("math.tan", _in_f32(np.tan))
asin = _unary("math.asin", _in_f32(np.arcsin))
acos = _unary("math.acos", _in_f32(np.arccos))
atan = _unary("math.atan", _in_f32(np.arctan))
sinh = _unary("math.sinh", _in_f32(np.sinh))
cosh = _unary("math.cosh", _in_f32(np.cosh))
tanh = _unary("math.tanh", _in_f32(np.tanh))
asinh = _unary("math.asinh", _in_f32(np.arcsinh))
acosh = _unary("math.acosh", _in_f32(np.arccosh))
atanh = _unary("math.atanh", _in_f32(np.arctanh))
erf = _unary("math.erf", _in_f64(_erf))
erfc = _unary("math.erfc", _in_f64(_erfc))
absf = _unary("math.absf", lambda op, a: np.abs(a), "clears the sign bit")
ceil = _unary("math.ceil", lambda op, a: np.ceil(a))
floor = _unary("math.floor", lambda op, a: np.floor(a))
trunc = _unary("math.trunc", lambda op, a: np.trunc(a))
round = _unary("math.round", _in_f32(_round_half_away), "round half away from zero")
roundeven = _unary("math.roundeven", lambda op, a: np.rint(a), "round half to even")
powf = _binary("math.powf", _in_f32(np.power))
atan2 = _binary("math.atan2", _in_f32(np.arctan2))
copysign = _binary("math.copysign", _in_f32(np.copysign))
fma = OpDef(
    "math.fma",
    operands=3,
    traits=(P,),
    infer=same_as_first,
    evaluate=_fma_ev,
    fmt="unary",
    doc="a*b+c with a single rounding",
)


def _absi(op, a):
    if a.dtype == np.bool_:
        return a
    return np.abs(a)  # wraps for INT_MIN like the hardware


def _popcount(op, a):
    t = op.results[0].type
    u = np.asarray(a).view(unsigned_dtype(t)) if a.dtype != np.bool_ else a.astype(np.uint8)
    bits = np.unpackbits(np.ascontiguousarray(u).view(np.uint8).reshape(u.shape + (-1,)), axis=-1)
    return bits.sum(axis=-1).astype(a.dtype)


def _count_zeros(op, a, leading: bool):
    """Zero bits before the first one, from the top (``leading``) or the bottom; the width for 0."""
    t = op.results[0].type
    w = t.element_type.bitwidth
    u = as_unsigned(a, t).astype(np.uint64)
    n = np.zeros(u.shape, dtype=np.int64)
    for k in range(w):
        i = w - 1 - k if leading else k
        hit = ((u >> np.uint64(i)) & np.uint64(1)).astype(bool)
        n = np.where((n == k) & ~hit, n + 1, n)
    return n.astype(a.dtype)


def _ctlz(op, a):
    return _count_zeros(op, a, leading=True)


def _cttz(op, a):
    return _count_zeros(op, a, leading=False)


# the integer ops on host scalars (see flydsl.dialects._base.int_scalar): a as a signed int, w its width
INT_SCALAR_EXPR = {
    "math.absi": "abs(a)",
    "math.ctpop": "bin(a & m).count('1')",
    "math.ctlz": "w - (a & m).bit_length()",
    "math.cttz": "w if a & m == 0 else ((a & m) & -(a & m)).bit_length() - 1",
}
absi = _unary("math.absi", _absi, scalar=int_scalar(INT_SCALAR_EXPR["math.absi"], 1))
ctpop = _unary("math.ctpop", _popcount, "number of set bits", int_scalar(INT_SCALAR_EXPR["math.ctpop"], 1))
ctlz = _unary("math.ctlz", _ctlz, "count leading zeros", int_scalar(INT_SCALAR_EXPR["math.ctlz"], 1))
cttz = _unary("math.cttz", _cttz, "count trailing zeros", int_scalar(INT_SCALAR_EXPR["math.cttz"], 1))


def _class_op(name, fn):
    def infer(types, attrs):
        return [bool_like(types[0])]

    return OpDef(name, operands=1, traits=(P,), infer=infer, evaluate=lambda op, a: fn(a), fmt="unary")


isnan = _class_op("math.isnan", np.isnan)
isinf = _class_op("math.isinf", np.isinf)
isfinite = _class_op("math.isfinite", np.isfinite)


def _isnormal(a):
    tiny = finfo(a.dtype).smallest_normal
    with np.errstate(invalid="ignore"):
        return np.isfinite(a) & (np.abs(a) >= tiny)


isnormal = _class_op("math.isnormal", _isnormal)


# -- MLIR's composite math ops: one op each in the IR (FlyDSL's IR shows them), lowered per target -----


def _fpowi(op, x, n):
    """``x ** n``: ``n`` converted (rounding to nearest) to the compute float, then ``powf``."""
    dt = x.dtype
    ct = np.float64 if dt == np.float64 else np.float32
    with np.errstate(all="ignore"):
        return np.power(x.astype(ct), np.asarray(n).astype(ct)).astype(dt)


def _ipowi(op, x, n):
    """``x ** n`` wrapping like multiplication; for ``n < 0``: 1 when ``x == 1``, +/-1 when ``x == -1``
    (by the parity of ``n``), else 0 (MLIR leaves ``0 ** -k`` undefined; 0 here)."""
    dt = x.dtype
    if dt == np.bool_:  # i1: x ** n is x unless n == 0
        return np.where(np.asarray(n) == 0, True, x)
    w = op.results[0].type.element_type.width
    u = np.dtype(f"uint{max(8, dt.itemsize * 8)}")
    base = np.asarray(x).astype(u)
    e = np.asarray(n).astype(u)
    acc = np.ones(np.broadcast(base, e).shape, dtype=u)
    with np.errstate(over="ignore"):
        for k in range(w):
            bit = ((e >> u.type(k)) & u.type(1)).astype(bool)
            acc = np.where(bit, acc * base, acc)
            base = base * base
    r = acc.astype(dt)
    neg = np.asarray(n) < 0
    odd = (np.asarray(n) & 1).astype(bool)
    small = np.where(x == 1, dt.type(1), np.where(x == -1, np.where(odd, dt.type(-1), dt.type(1)), dt.type(0)))
    return np.where(neg, small.astype(dt), r)


def _clampf(op, x, lo, hi):
    dt = x.dtype
    ct = np.float64 if dt == np.float64 else np.float32
    r = ieee_minimum(ieee_maximum(x.astype(ct), lo.astype(ct)), hi.astype(ct))
    return r.astype(dt)


def _same_types(op):
    ts = [v.type for v in op.operands]
    if any(t != ts[0] for t in ts[1:]):
        return f"{op.defn.name} needs operands of one type, got {', '.join(map(str, ts))}"
    return None


def _fpowi_verify(op):
    x, n = (v.type for v in op.operands)
    xe, ne = x.element_type, n.element_type
    if not xe.is_float or not isinstance(ne, IntegerType):
        return f"math.fpowi needs a float base and an integer exponent, got {x} and {n}"
    if isinstance(x, VectorType) != isinstance(n, VectorType) or (isinstance(x, VectorType) and x.shape != n.shape):
        return f"math.fpowi: base {x} and exponent {n} must be both scalars or vectors of one shape"
    return None


fpowi = OpDef(
    "math.fpowi", operands=2, traits=(P,), infer=same_as_first, evaluate=_fpowi, verify=_fpowi_verify,
    doc="x ** n for a float x and an integer n (n converted to the float type, then powf)",
)  # fmt: skip
ipowi = OpDef(
    "math.ipowi", operands=2, traits=(P,), infer=same_as_first, evaluate=_ipowi, verify=_same_types,
    fmt="binary", doc="x ** n for integers, wrapping; n < 0 gives 1, +/-1 or 0",
)  # fmt: skip
clampf = OpDef(
    "math.clampf", operands=3, traits=(P,), infer=same_as_first, evaluate=_clampf, verify=_same_types,
    fmt="unary", doc="minimumf(maximumf(x, lo), hi): NaN-propagating clamp",
)  # fmt: skip


def _sincos_infer(types, attrs):
    return [types[0], types[0]]


#: (sin x, cos x): two results, so the interpreter runs it through its own step (not ``evaluate``)
sincos = OpDef("math.sincos", operands=1, results=2, traits=(P,), infer=_sincos_infer, doc="(sin x, cos x)")

UNARY_FLOAT = {
    "exp": exp, "exp2": exp2, "expm1": expm1, "log": log, "log2": log2, "log10": log10, "log1p": log1p,
    "sqrt": sqrt, "rsqrt": rsqrt, "cbrt": cbrt, "sin": sin, "cos": cos, "tan": tan, "asin": asin,
    "acos": acos, "atan": atan, "sinh": sinh, "cosh": cosh, "tanh": tanh, "asinh": asinh, "acosh": acosh,
    "atanh": atanh, "erf": erf, "erfc": erfc, "absf": absf, "ceil": ceil, "floor": floor, "trunc": trunc,
    "round": round, "roundeven": roundeven,
}  # fmt: skip

__all__ = list(UNARY_FLOAT) + [
    "powf", "atan2", "copysign", "fma", "absi", "ctpop", "ctlz", "cttz", "isnan", "isinf", "isfinite",
    "isnormal", "fpowi", "ipowi", "clampf", "sincos", "UNARY_FLOAT", "VectorType",
]  # fmt: skip
