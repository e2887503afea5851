"""``arith``: integer and float arithmetic, comparisons, select, casts, constants.

Integers are signless; signedness is chosen by the op (``divsi``/``divui``). Every op also works
elementwise on vectors. The ``evaluate`` functions are the semantics (shared by the interpreter and
constant folding); where LLVM leaves a result undefined they reproduce what NVIDIA GPUs do:
shifts by >= width give 0 (or the sign for ``shrsi``), float-to-int conversions saturate and map NaN
to 0, float-to-fp8 conversions saturate to the largest finite value (``satfinite``).

The casts and their rounding rules are declared in :mod:`flydsl.dialects._arith_casts` and
re-exported here; every public name is importable from this module.
"""

from __future__ import annotations

import numpy as np

from ..ir import FloatType, IntegerType, Op, OpDef, Trait, Type, VectorType, numpy_dtype
from ..ir.types import i1
from ._arith_casts import (
    FP8_MAX,
    ROUNDING_MODES,
    bitcast,
    extf,
    extsi,
    extui,
    float_round,
    float_round_directed,
    fptosi,
    fptoui,
    index_cast,
    index_castui,
    sitofp,
    truncf,
    trunci,
    uitofp,
)
from ._base import (
    ScalarSource,
    as_unsigned,
    bool_like,
    check_same_types,
    from_unsigned,
    int_scalar,
    rows_like,
    same_as_first,
    same_as_second,
    source_fn,
)

P, C = Trait.PURE, Trait.COMMUTATIVE

# ---------------------------------------------------------------------------------------------
# constant
# ---------------------------------------------------------------------------------------------


def const_value(op: Op):
    """The numpy value of an ``arith.constant`` (a vector's as ``(1, N)``): its ``evaluate``."""
    t = op.results[0].type
    v = op.attrs["value"]
    if isinstance(t, VectorType):
        return np.broadcast_to(np.asarray(v).astype(numpy_dtype(t)), (1, t.numel))
    return np.asarray(v).astype(numpy_dtype(t))


def _const_verify(op: Op):
    v = op.attrs["value"]
    t = op.results[0].type
    if isinstance(t, VectorType):
        a = np.asarray(v)
        if a.ndim not in (0, 1) or (a.ndim == 1 and a.shape[0] != t.numel):
            return f"dense value of shape {a.shape} does not fit {t}"
    elif isinstance(v, np.ndarray) and v.ndim != 0:
        return "scalar constant with an array value"
    return None


constant = OpDef(
    "arith.constant",
    operands=0,
    traits=(P, Trait.CONSTANT),
    attrs=("value",),
    evaluate=const_value,
    verify=_const_verify,
    fmt="constant",
    doc="a compile-time constant (scalar, or dense vector: splat or one value per lane)",
)


def normalize_constant(value, t: Type):
    """The canonical attribute value for a constant of type ``t`` (wrapped ints, rounded floats)."""
    if isinstance(t, VectorType):
        a = np.asarray(value)
        if a.ndim == 0:
            return np.asarray(normalize_constant(a.item(), t.elem)).astype(numpy_dtype(t))
        return np.array([normalize_constant(x, t.elem) for x in a.reshape(-1).tolist()]).astype(numpy_dtype(t))
    if isinstance(value, np.generic):
        value = value.item()
    if t.is_float:
        return float(np.asarray(value, dtype=np.float64).astype(numpy_dtype(t)).astype(np.float64))
    if t is i1:
        return bool(value)
    w = t.bitwidth
    v = int(value) & ((1 << w) - 1)
    return v - (1 << w) if v >= 1 << (w - 1) else v


def const(value, t: Type):
    """Build ``arith.constant`` of type ``t`` (value wrapped/rounded to the type)."""
    return constant(value=normalize_constant(value, t), result_types=[t])


# ---------------------------------------------------------------------------------------------
# integer binary ops
# ---------------------------------------------------------------------------------------------


def _t(op):
    return op.results[0].type


def _int_wrap(fn):
    """Apply ``fn`` on signed storage; i1 goes through uint8 and wraps mod 2."""

    def ev(op, a, b):
        if a.dtype == np.bool_:
            return (fn(a.astype(np.uint8), b.astype(np.uint8)) & 1).astype(np.bool_)
        return fn(a, b)

    return ev


def _unsigned(fn):
    def ev(op, a, b):
        t = _t(op)
        return from_unsigned(fn(as_unsigned(a, t), as_unsigned(b, t)), t)

    return ev


def _safe(b):
    return np.where(b == 0, np.ones_like(b), b)


def _divsi(op, a, b):
    if a.dtype == np.bool_:  # as signed 1-bit ints: x / -1 is x (true is -1), x / 0 is -1 (true)
        return np.where(b, a, True)
    q = np.floor_divide(a, _safe(b))
    r = np.subtract(a, np.multiply(q, _safe(b)))
    adj = (r != 0) & ((a < 0) != (b < 0))
    q = np.where(adj, q + np.ones_like(q), q)
    return np.where(b == 0, np.full_like(q, -1), q)


def _floordivsi(op, a, b):
    if a.dtype == np.bool_:
        return np.where(b, a, True)
    q = np.floor_divide(a, _safe(b))
    return np.where(b == 0, np.full_like(q, -1), q)


def _ceildivsi(op, a, b):
    if a.dtype == np.bool_:
        return np.where(b, a, True)
    sb = _safe(b)
    q = np.floor_divide(a, sb)  # NOTE: not -floor(-a/b): -INT_MIN overflows
    q = q + (np.remainder(a, sb) != 0).astype(q.dtype)
    return np.where(b == 0, np.full_like(q, -1), q)


def _remsi(op, a, b):
    if a.dtype == np.bool_:  # x % -1 is 0, x % 0 is x
        return np.where(b, False, a)
    r = np.fmod(a, _safe(b))
    return np.where(b == 0, a, r)


def _udiv(a, b):
    q = np.floor_divide(a, _safe(b))
    return np.where(b == 0, np.full_like(q, np.iinfo(q.dtype).max), q)


def _uceildiv(a, b):
    sb = _safe(b)
    q = np.floor_divide(a, sb)
    q = q + (np.remainder(a, sb) != 0).astype(q.dtype)
    return np.where(b == 0, np.full_like(q, np.iinfo(q.dtype).max), q)


def _urem(a, b):
    return np.where(b == 0, a, np.remainder(a, _safe(b)))


def _shift_amount(op, b):
    t = _t(op)
    return as_unsigned(b, t).astype(np.uint64), t.element_type.bitwidth


def _shli(op, a, b):
    amt, w = _shift_amount(op, b)
    t = _t(op)
    ua = as_unsigned(a, t).astype(np.uint64)
    r = np.where(amt >= w, np.uint64(0), np.left_shift(ua, np.minimum(amt, np.uint64(63))))
    return from_unsigned(r & np.uint64((1 << w) - 1) if w < 64 else r, t)


def _shrui(op, a, b):
    amt, w = _shift_amount(op, b)
    t = _t(op)
    ua = as_unsigned(a, t).astype(np.uint64)
    r = np.where(amt >= w, np.uint64(0), np.right_shift(ua, np.minimum(amt, np.uint64(63))))
    return from_unsigned(r, t)


def _shrsi(op, a, b):
    amt, w = _shift_amount(op, b)
    if a.dtype == np.bool_:
        return a
    sa = a.astype(np.int64)
    r = np.right_shift(sa, np.minimum(amt, np.uint64(w - 1)).astype(np.int64))
    return r.astype(a.dtype)


def _signed_max(op, a, b):
    if a.dtype == np.bool_:  # as signed 1-bit ints true (-1) is the smaller
        return a & b
    return np.maximum(a, b)


def _signed_min(op, a, b):
    if a.dtype == np.bool_:
        return a | b
    return np.minimum(a, b)


def _binop(name, ev, traits=(P,), fold=None, doc="", scalar=None):
    return OpDef(
        name,
        operands=2,
        traits=traits + (Trait.SAME_TYPE,),
        infer=same_as_first,
        evaluate=ev,
        scalar=scalar,
        fold=fold,
        verify=check_same_types,
        fmt="binary",
        doc=doc,
    )


# The integer ops on host scalars: the value before wrapping to the width, of the operands a, b as
# signed ints (w: the width, m: its mask). Division by zero gives what ``evaluate`` gives: -1 (all ones)
# for the quotients, the dividend for the remainders; shift amounts are unsigned, and >= w shift out
# every bit (shrsi: the sign).
INT_SCALAR_EXPR = {
    "arith.addi": "a + b",
    "arith.subi": "a - b",
    "arith.muli": "a * b",
    "arith.andi": "a & b",
    "arith.ori": "a | b",
    "arith.xori": "a ^ b",
    "arith.divsi": "-1 if b == 0 else (a // b if (a < 0) == (b < 0) else -(-a // b))",
    "arith.remsi": "a if b == 0 else a - b * _tdiv(a, b)",
    "arith.floordivsi": "-1 if b == 0 else a // b",
    "arith.ceildivsi": "-1 if b == 0 else -((-a) // b)",
    "arith.divui": "-1 if b & m == 0 else (a & m) // (b & m)",
    "arith.remui": "a if b & m == 0 else (a & m) % (b & m)",
    "arith.ceildivui": "-1 if b & m == 0 else -(-(a & m) // (b & m))",
    "arith.shli": "0 if b & m >= w else a << (b & m)",
    "arith.shrui": "0 if b & m >= w else (a & m) >> (b & m)",
    "arith.shrsi": "a >> min(b & m, w - 1)",
    "arith.maxsi": "a if a >= b else b",
    "arith.minsi": "a if a <= b else b",
    "arith.maxui": "max(a & m, b & m)",
    "arith.minui": "min(a & m, b & m)",
    "arith.mulhisi": "(a * b) >> w",
    "arith.mulhiui": "((a & m) * (b & m)) >> w",
}


def _ibinop(name, ev, traits=(P,), fold=None, doc=""):
    return _binop(name, ev, traits, fold, doc, int_scalar(INT_SCALAR_EXPR[name]))


def _fold_identity(identity_rhs=None, absorb=None, idempotent=False, zero_if_same=False):
    """Algebraic folds for integer ops: ``x op e -> x``, ``x op z -> z``, ``x op x``."""

    def fold(op, consts):
        a, b = op.operands
        ca, cb = consts
        if identity_rhs is not None:
            if cb is not None and _all_eq(cb, identity_rhs):
                return [a]
            if Trait.COMMUTATIVE in op.defn.traits and ca is not None and _all_eq(ca, identity_rhs):
                return [b]
        if absorb is not None:
            if cb is not None and _all_eq(cb, absorb):
                return [b]
            if ca is not None and _all_eq(ca, absorb):
                return [a]
        if idempotent and a is b:
            return [a]
        if zero_if_same and a is b:
            return [np.zeros((), dtype=numpy_dtype(a.type))]
        return None

    return fold


def _all_eq(arr, v) -> bool:
    return bool(np.all(np.asarray(arr) == v))


addi = _ibinop("arith.addi", _int_wrap(np.add), (P, C), _fold_identity(0), "integer add (wraps)")
subi = _ibinop("arith.subi", _int_wrap(np.subtract), (P,), _fold_identity(0, zero_if_same=True), "integer sub")
muli = _ibinop("arith.muli", _int_wrap(np.multiply), (P, C), _fold_identity(1, absorb=0), "integer mul (low bits)")
divsi = _ibinop("arith.divsi", _divsi, doc="signed division rounding toward zero")
divui = _ibinop("arith.divui", _unsigned(_udiv), doc="unsigned division")
floordivsi = _ibinop("arith.floordivsi", _floordivsi, doc="signed division rounding toward -inf")
ceildivsi = _ibinop("arith.ceildivsi", _ceildivsi, doc="signed division rounding toward +inf")
ceildivui = _ibinop("arith.ceildivui", _unsigned(_uceildiv), doc="unsigned division rounding up")
remsi = _ibinop("arith.remsi", _remsi, doc="signed remainder, sign of the dividend (C %)")
remui = _ibinop("arith.remui", _unsigned(_urem), doc="unsigned remainder")
andi = _ibinop("arith.andi", lambda op, a, b: np.bitwise_and(a, b), (P, C), _fold_identity(idempotent=True))
ori = _ibinop("arith.ori", lambda op, a, b: np.bitwise_or(a, b), (P, C), _fold_identity(0, idempotent=True))
xori = _ibinop("arith.xori", lambda op, a, b: np.bitwise_xor(a, b), (P, C), _fold_identity(0, zero_if_same=True))
shli = _ibinop("arith.shli", _shli, fold=_fold_identity(0), doc="shift left; amounts >= width give 0")
shrui = _ibinop("arith.shrui", _shrui, fold=_fold_identity(0), doc="logical shift right")
shrsi = _ibinop("arith.shrsi", _shrsi, fold=_fold_identity(0), doc="arithmetic shift right")
maxsi = _ibinop("arith.maxsi", _signed_max, (P, C), _fold_identity(idempotent=True))
minsi = _ibinop("arith.minsi", _signed_min, (P, C), _fold_identity(idempotent=True))
maxui = _ibinop("arith.maxui", _unsigned(np.maximum), (P, C), _fold_identity(idempotent=True))
minui = _ibinop("arith.minui", _unsigned(np.minimum), (P, C), _fold_identity(idempotent=True))


def _mulhi(signed: bool):
    def ev(op, a, b):
        t = _t(op)
        w = t.element_type.bitwidth
        if signed:
            p = a.astype(np.int64) * b.astype(np.int64) if w <= 32 else None
        else:
            p = as_unsigned(a, t).astype(np.uint64) * as_unsigned(b, t).astype(np.uint64) if w <= 32 else None
        if p is None:  # 64-bit: exact through Python ints
            fa = np.asarray(a if signed else as_unsigned(a, t)).astype(object)
            fb = np.asarray(b if signed else as_unsigned(b, t)).astype(object)
            hi = (fa * fb) >> 64
            return from_unsigned(np.asarray(hi & ((1 << 64) - 1)).astype(np.uint64), t)
        return from_unsigned((p >> w).astype(np.uint64) & np.uint64((1 << w) - 1), t)

    return ev


mulhisi = _ibinop("arith.mulhisi", _mulhi(True), (P, C), doc="high half of the signed product")
mulhiui = _ibinop("arith.mulhiui", _mulhi(False), (P, C), doc="high half of the unsigned product")

# ---------------------------------------------------------------------------------------------
# float binary ops (attribute `fastmath`: e.g. "fast", "contract,afn")
# ---------------------------------------------------------------------------------------------


def _fl32(fn):
    """Float op computed in f32 (or f64 for f64) and rounded back."""

    def ev(op, a, b):
        dt = a.dtype
        if dt == np.float64 or dt == np.float32:
            return fn(a, b)
        return fn(a.astype(np.float32), b.astype(np.float32)).astype(dt)

    return ev


addf = _binop("arith.addf", _fl32(np.add), (P, C), doc="IEEE add, round to nearest even")
subf = _binop("arith.subf", _fl32(np.subtract), doc="IEEE sub")
mulf = _binop("arith.mulf", _fl32(np.multiply), (P, C), doc="IEEE mul")
divf = _binop("arith.divf", _fl32(np.divide), doc="IEEE division (approximate under fastmath)")
remf = _binop("arith.remf", _fl32(np.fmod), doc="float remainder, sign of the dividend (C fmod)")


def ieee_maximum(a, b):
    """IEEE-754 ``maximum``: NaN-propagating, and ``-0.0 < +0.0`` (numpy's maximum leaves zeros unordered)."""
    r = np.maximum(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero & ~(np.signbit(a) & np.signbit(b)), np.zeros_like(r), r)


def ieee_minimum(a, b):
    """IEEE-754 ``minimum``: NaN-propagating, and ``-0.0 < +0.0``."""
    r = np.minimum(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero & (np.signbit(a) | np.signbit(b)), np.negative(np.zeros_like(r)), r)


def ieee_maxnum(a, b):
    """``maximumNumber``: NaN-ignoring (libm fmax) with ``-0.0 < +0.0``, as NVIDIA's ``max`` (numpy's
    fmax returns either zero)."""
    r = np.fmax(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero & ~(np.signbit(a) & np.signbit(b)), np.zeros_like(r), r)


def ieee_minnum(a, b):
    """``minimumNumber``: NaN-ignoring (libm fmin) with ``-0.0 < +0.0``, as NVIDIA's ``min``."""
    r = np.fmin(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero & (np.signbit(a) | np.signbit(b)), np.negative(np.zeros_like(r)), r)


maximumf = _binop("arith.maximumf", _fl32(ieee_maximum), (P, C), doc="max, NaN-propagating, -0 < +0")
minimumf = _binop("arith.minimumf", _fl32(ieee_minimum), (P, C), doc="min, NaN-propagating, -0 < +0")
maxnumf = _binop("arith.maxnumf", _fl32(ieee_maxnum), (P, C), doc="max, NaN-ignoring (libm fmax), -0 < +0")
minnumf = _binop("arith.minnumf", _fl32(ieee_minnum), (P, C), doc="min, NaN-ignoring (libm fmin), -0 < +0")

negf = OpDef(
    "arith.negf",
    operands=1,
    traits=(P,),
    infer=same_as_first,
    evaluate=lambda op, a: np.negative(a),
    fmt="unary",
    doc="float negation (flips the sign bit)",
)

# ---------------------------------------------------------------------------------------------
# comparisons and select
# ---------------------------------------------------------------------------------------------

CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
CMPF_PREDICATES = (
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
)  # fmt: skip

_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater}
_CMP["ge"] = np.greater_equal


def _cmpi_eval(op, a, b):
    p = op.attrs["predicate"]
    if p in ("eq", "ne"):
        return _CMP[p](a, b)
    if p[0] == "u":
        t = op.operands[0].type
        a, b = as_unsigned(a, t), as_unsigned(b, t)
    elif a.dtype == np.bool_:  # signed i1: true is -1
        a, b = -a.astype(np.int8), -b.astype(np.int8)
    return _CMP[p[1:]](a, b)


def _cmpf_eval(op, a, b):
    p = op.attrs["predicate"]
    if p == "false":
        return np.zeros(np.broadcast(a, b).shape, np.bool_)
    if p == "true":
        return np.ones(np.broadcast(a, b).shape, np.bool_)
    unordered = np.isnan(a) | np.isnan(b)
    if p == "ord":
        return ~unordered
    if p == "uno":
        return unordered
    base = {"eq": np.equal, "gt": np.greater, "ge": np.greater_equal, "lt": np.less, "le": np.less_equal}
    if p[1:] == "ne":
        r = np.not_equal(a, b)
        return (r & ~unordered) if p[0] == "o" else (r | unordered)
    r = base[p[1:]](a, b)
    return (r & ~unordered) if p[0] == "o" else (r | unordered)


# arith.cmpi on host scalars: operands as signed ints wrapped to their width, m the width's mask
CMPI_SCALAR_EXPR = {
    "eq": "a == b", "ne": "a != b",
    "slt": "a < b", "sle": "a <= b", "sgt": "a > b", "sge": "a >= b",
    "ult": "(a & m) < (b & m)", "ule": "(a & m) <= (b & m)", "ugt": "(a & m) > (b & m)", "uge": "(a & m) >= (b & m)",
}  # fmt: skip


def _cmpi_source(op) -> ScalarSource | None:
    t = op.operands[0].type
    if isinstance(t, VectorType):
        return None
    return ScalarSource(CMPI_SCALAR_EXPR[op.attrs["predicate"]], {"m": (1 << t.bitwidth) - 1}, None)


def _cmpi_scalar(op):
    src = _cmpi_source(op)
    if src is None:
        return None
    # i1 operands are bools: unsigned they compare as 0/1; signed, true is -1
    return source_fn(src, 2, negate_i1=op.operands[0].type.bitwidth == 1 and op.attrs["predicate"][0] == "s")


_cmpi_scalar.source = lambda op: None if op.operands[0].type.bitwidth == 1 else _cmpi_source(op)


def _cmp_infer(types, attrs):
    return [bool_like(types[0])]


def _cmp_verify(preds):
    def verify(op):
        if op.attrs.get("predicate") not in preds:
            return f"unknown predicate {op.attrs.get('predicate')!r}; expected one of {', '.join(preds)}"
        if op.operands[0].type is not op.operands[1].type:
            return "both operands must have the same type"
        return None

    return verify


cmpi = OpDef(
    "arith.cmpi",
    operands=2,
    traits=(P,),
    attrs=("predicate",),
    infer=_cmp_infer,
    evaluate=_cmpi_eval,
    scalar=_cmpi_scalar,
    verify=_cmp_verify(CMPI_PREDICATES),
    fmt="cmp",
    doc="integer comparison → i1",
)
cmpf = OpDef(
    "arith.cmpf",
    operands=2,
    traits=(P,),
    attrs=("predicate",),
    infer=_cmp_infer,
    evaluate=_cmpf_eval,
    verify=_cmp_verify(CMPF_PREDICATES),
    fmt="cmp",
    doc="float comparison → i1 (o* ordered, u* unordered)",
)


def _select_eval(op, c, a, b):
    return np.where(rows_like(c, isinstance(op.results[0].type, VectorType)), a, b)


def _select_pick(c, a, b):
    return a if c else b


def _select_scalar(op):
    return None if isinstance(op.results[0].type, VectorType) else _select_pick


def _select_verify(op):
    c, a, b = op.operands
    if a.type is not b.type:
        return f"both choices must have one type, got {a.type} and {b.type}"
    if c.type is not i1 and c.type is not bool_like(a.type):
        return f"condition must be i1 or {bool_like(a.type)}, got {c.type}"
    return None


def _select_fold(op, consts):
    c, a, b = op.operands
    cc = consts[0]
    if a is b:
        return [a]
    if cc is not None and np.asarray(cc).ndim == 0:
        return [a if bool(cc) else b]
    return None


select = OpDef(
    "arith.select",
    operands=3,
    traits=(P,),
    infer=same_as_second,
    evaluate=_select_eval,
    scalar=_select_scalar,
    verify=_select_verify,
    fold=_select_fold,
    doc="cond ? a : b (lane-wise for an i1 vector condition)",
)

# int-like (integer or index), float and "any" operand classes for ops that the front end picks
INT_BINARY = {
    "add": addi, "sub": subi, "mul": muli, "and": andi, "or": ori, "xor": xori,
    "shl": shli, "shrs": shrsi, "shru": shrui,
}  # fmt: skip
FLOAT_BINARY = {"add": addf, "sub": subf, "mul": mulf, "div": divf, "rem": remf}


def is_float_type(t: Type) -> bool:
    return isinstance(t.element_type, FloatType)


def is_int_type(t: Type) -> bool:
    return t.element_type.is_int_like and not isinstance(t.element_type, FloatType)


__all__ = [
    "constant", "const", "const_value", "normalize_constant", "addi", "subi", "muli", "divsi", "divui", "floordivsi",
    "ceildivsi", "ceildivui", "remsi", "remui", "andi", "ori", "xori", "shli", "shrui", "shrsi", "maxsi",
    "minsi", "maxui", "minui", "mulhisi", "mulhiui", "addf", "subf", "mulf", "divf", "remf", "maximumf",
    "minimumf", "maxnumf", "minnumf", "negf", "cmpi", "cmpf", "select", "extsi", "extui", "trunci", "sitofp",
    "uitofp", "fptosi", "fptoui", "extf", "truncf", "bitcast", "index_cast", "index_castui",
    "CMPI_PREDICATES", "CMPF_PREDICATES", "FP8_MAX", "float_round", "float_round_directed", "ROUNDING_MODES",
    "ieee_maximum", "ieee_minimum", "ieee_maxnum", "ieee_minnum", "IntegerType", "INT_SCALAR_EXPR",
]  # fmt: skip
