"""``arith``: integer and float arithmetic, comparisons, select, casts, constants.

Integers are signless; signedness is chosen by the op (``divsi``/``divui``). Every op also works
elementwise on vectors. The ``evaluate`` functions are the semantics (shared by the interpreter and
constant folding); where LLVM leaves a result undefined they reproduce what NVIDIA GPUs do:
shifts by >= width give 0 (or the sign for ``shrsi``), float-to-int conversions saturate and map NaN
to 0, float-to-fp8 conversions saturate to the largest finite value (``satfinite``).
"""

from __future__ import annotations

import numpy as np

from ..ir import FloatType, IntegerType, Op, OpDef, Trait, Type, VectorType, numpy_dtype
from ..ir.types import i1
from ._base import (
    as_unsigned,
    bool_like,
    check_same_types,
    from_unsigned,
    rows_like,
    same_as_first,
    same_as_second,
    to_dtype,
)

P, C = Trait.PURE, Trait.COMMUTATIVE

# ---------------------------------------------------------------------------------------------
# constant
# ---------------------------------------------------------------------------------------------


def _const_eval(op: Op):
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
    evaluate=_const_eval,
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
    if a.dtype == np.bool_:
        return a & b
    q = np.floor_divide(a, _safe(b))
    r = np.subtract(a, np.multiply(q, _safe(b)))
    adj = (r != 0) & ((a < 0) != (b < 0))
    q = np.where(adj, q + np.ones_like(q), q)
    return np.where(b == 0, np.full_like(q, -1), q)


def _floordivsi(op, a, b):
    if a.dtype == np.bool_:
        return a & b
    q = np.floor_divide(a, _safe(b))
    return np.where(b == 0, np.full_like(q, -1), q)


def _ceildivsi(op, a, b):
    if a.dtype == np.bool_:
        return a & b
    sb = _safe(b)
    q = np.floor_divide(a, sb)  # NOTE: not -floor(-a/b): -INT_MIN overflows
    q = q + (np.remainder(a, sb) != 0).astype(q.dtype)
    return np.where(b == 0, np.full_like(q, -1), q)


def _remsi(op, a, b):
    if a.dtype == np.bool_:
        return np.zeros_like(a)
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


def _binop(name, ev, traits=(P,), fold=None, doc=""):
    return OpDef(
        name,
        operands=2,
        traits=traits + (Trait.SAME_TYPE,),
        infer=same_as_first,
        evaluate=ev,
        fold=fold,
        verify=check_same_types,
        fmt="binary",
        doc=doc,
    )


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


addi = _binop("arith.addi", _int_wrap(np.add), (P, C), _fold_identity(0), "integer add (wraps)")
subi = _binop("arith.subi", _int_wrap(np.subtract), (P,), _fold_identity(0, zero_if_same=True), "integer sub")
muli = _binop("arith.muli", _int_wrap(np.multiply), (P, C), _fold_identity(1, absorb=0), "integer mul (low bits)")
divsi = _binop("arith.divsi", _divsi, doc="signed division rounding toward zero")
divui = _binop("arith.divui", _unsigned(_udiv), doc="unsigned division")
floordivsi = _binop("arith.floordivsi", _floordivsi, doc="signed division rounding toward -inf")
ceildivsi = _binop("arith.ceildivsi", _ceildivsi, doc="signed division rounding toward +inf")
ceildivui = _binop("arith.ceildivui", _unsigned(_uceildiv), doc="unsigned division rounding up")
remsi = _binop("arith.remsi", _remsi, doc="signed remainder, sign of the dividend (C %)")
remui = _binop("arith.remui", _unsigned(_urem), doc="unsigned remainder")
andi = _binop("arith.andi", lambda op, a, b: np.bitwise_and(a, b), (P, C), _fold_identity(idempotent=True))
ori = _binop("arith.ori", lambda op, a, b: np.bitwise_or(a, b), (P, C), _fold_identity(0, idempotent=True))
xori = _binop("arith.xori", lambda op, a, b: np.bitwise_xor(a, b), (P, C), _fold_identity(0, zero_if_same=True))
shli = _binop("arith.shli", _shli, fold=_fold_identity(0), doc="shift left; amounts >= width give 0")
shrui = _binop("arith.shrui", _shrui, fold=_fold_identity(0), doc="logical shift right")
shrsi = _binop("arith.shrsi", _shrsi, fold=_fold_identity(0), doc="arithmetic shift right")
maxsi = _binop("arith.maxsi", lambda op, a, b: np.maximum(a, b), (P, C), _fold_identity(idempotent=True))
minsi = _binop("arith.minsi", lambda op, a, b: np.minimum(a, b), (P, C), _fold_identity(idempotent=True))
maxui = _binop("arith.maxui", _unsigned(np.maximum), (P, C), _fold_identity(idempotent=True))
minui = _binop("arith.minui", _unsigned(np.minimum), (P, C), _fold_identity(idempotent=True))


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


mulhisi = _binop("arith.mulhisi", _mulhi(True), (P, C), doc="high half of the signed product")
mulhiui = _binop("arith.mulhiui", _mulhi(False), (P, C), doc="high half of the unsigned product")

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
    verify=_select_verify,
    fold=_select_fold,
    doc="cond ? a : b (lane-wise for an i1 vector condition)",
)

# ---------------------------------------------------------------------------------------------
# casts
# ---------------------------------------------------------------------------------------------

FP8_MAX = {"f8E4M3FN": 448.0, "f8E5M2": 57344.0, "f8E4M3FNUZ": 240.0, "f8E5M2FNUZ": 57344.0}


def _elem(t: Type) -> Type:
    return t.element_type


def _extsi(op, a):
    return to_dtype(-a.astype(np.int8) if a.dtype == np.bool_ else a, _t(op))


def _extui(op, a):
    return to_dtype(as_unsigned(a, op.operands[0].type), _t(op))


def _trunci(op, a):
    t = _t(op)
    if _elem(t).bitwidth == 1:
        return (a & 1).astype(np.bool_)
    return to_dtype(a, t)


def _sitofp(op, a):
    src = a.astype(np.int8) * -1 if a.dtype == np.bool_ else a
    return float_round(_int_to_f64(src, _elem(_t(op))), _elem(_t(op)))


def _uitofp(op, a):
    return float_round(_int_to_f64(as_unsigned(a, op.operands[0].type), _elem(_t(op))), _elem(_t(op)))


def _int_to_f64(a: np.ndarray, dst: FloatType) -> np.ndarray:
    """Integers as f64: exact up to 53 bits; wider ones round to odd unless ``dst`` is f64 itself, so
    that the single later rounding to ``dst`` is correct (the GPU converts 64-bit ints in one step)."""
    if a.dtype.itemsize < 8 or dst.name == "f64":
        return a.astype(np.float64)
    hi = (a >> 32).astype(np.float64) * 4294967296.0  # exact: 32 significant bits
    lo = (a & 0xFFFFFFFF).astype(np.float64)  # exact
    s = hi + lo
    bb = s - hi
    err = (hi - (s - bb)) + (lo - bb)  # TwoSum: the exact rounding error of s
    even = (np.asarray(s).view(np.uint64) & np.uint64(1)) == 0
    return np.where((err != 0) & even, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)


def _fptoi(signed: bool):
    def ev(op, a):
        t = _t(op)
        w = _elem(t).bitwidth
        x = np.trunc(a.astype(np.float64))
        nan = np.isnan(x)
        if w == 1:
            x = np.clip(np.where(nan, 0.0, x), -1 if signed else 0, 0 if signed else 1)
            return x != 0
        if signed:
            lo, hi, udt = -(1 << (w - 1)), (1 << (w - 1)) - 1, np.int64
        else:
            lo, hi, udt = 0, (1 << w) - 1, np.uint64
        big = x >= float(hi)
        small = x <= float(lo)
        safe = np.where(big | small | nan, 0.0, x).astype(udt)
        r = np.where(big, udt(hi), np.where(small, udt(lo), safe))
        r = np.where(nan, udt(0), r)
        return to_dtype(r, t) if signed else from_unsigned(r, t)

    return ev


def float_round(x: np.ndarray, dst: FloatType) -> np.ndarray:
    """Round float64/float32 data to ``dst`` as the GPU does (RNE; fp8 saturating to max finite)."""
    m = FP8_MAX.get(dst.name)
    if m is not None:
        x = _f64_to_f32_round_odd(x) if x.dtype == np.float64 else x.astype(np.float32)
        return np.clip(x, -m, m).astype(numpy_dtype(dst))
    if dst.name == "bf16" and x.dtype == np.float64:
        x = _f64_to_f32_round_odd(x)
    return x.astype(numpy_dtype(dst))


def _f64_to_f32_round_odd(x: np.ndarray) -> np.ndarray:
    """f64 → f32 with round-to-odd, so that a later RNE rounding to bf16 or fp8 is correctly rounded."""
    f = x.astype(np.float32)
    back = f.astype(np.float64)
    inexact = (back != x) & np.isfinite(x)
    bits = f.view(np.uint32)
    odd = (bits & np.uint32(1)) == 1
    # move toward x by one ulp when the nearest f32 has an even mantissa and is inexact
    fix = inexact & ~odd
    toward = np.where(back < x, np.uint32(1), np.uint32(0xFFFFFFFF))
    pos = (bits & np.uint32(0x80000000)) == 0  # the sign bit: -0.0 counts as negative
    step = np.where(pos, toward, np.where(toward == 1, np.uint32(0xFFFFFFFF), np.uint32(1)))
    out = np.where(fix, bits + step, bits).astype(np.uint32)
    return out.view(np.float32)


def _extf(op, a):
    return a.astype(numpy_dtype(_t(op)))


def _truncf(op, a):
    dst = _elem(_t(op))
    src = a
    if src.dtype.itemsize == 1 or src.dtype == np.float16 or str(src.dtype) == "bfloat16":
        src = src.astype(np.float32)
    mode = op.attrs.get("rounding")
    if mode is None or mode == "to_nearest_even":
        return float_round(src, dst)
    return float_round_directed(src, dst, mode)


# IEEE-754 rounding modes of ``arith.truncf`` (attribute ``rounding``; absent = to_nearest_even)
ROUNDING_MODES = ("to_nearest_even", "downward", "upward", "toward_zero", "to_nearest_away")
_DIRECTED_DST = ("f16", "bf16", "f32")


def _step_bits(bits: np.ndarray, up: np.ndarray, width: int) -> np.ndarray:
    """The neighbour of each float (given by its unsigned bits) toward +inf (``up``) or -inf.

    IEEE formats are sign-magnitude: moving away from zero adds one to the magnitude bits, toward
    zero subtracts one; from a zero of either sign the step lands on the smallest subnormal.
    """
    sign = np.asarray(bits >> (width - 1)).astype(bool)
    mag = bits & ((1 << (width - 1)) - 1)
    one = np.ones_like(bits)
    is_zero = mag == 0
    away = up != sign  # up on a positive value, or down on a negative one, grows the magnitude
    new_mag = np.where(away | is_zero, mag + one, mag - one)
    new_sign = np.where(is_zero, ~up, sign)
    return np.where(new_sign, new_mag | (one << (width - 1)), new_mag).astype(bits.dtype)


def float_round_directed(x: np.ndarray, dst: FloatType, mode: str) -> np.ndarray:
    """Round f32/f64 data to ``dst`` (f16, bf16 or f32) with an IEEE-754 ``mode`` other than RNE.

    The round-to-nearest-even result is corrected by one step where it lies on the wrong side of the
    exact value (directed modes) or where a tie went toward zero (``to_nearest_away``). NaN stays NaN.
    """
    x = np.asarray(x)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.asarray(float_round(x, dst))
    width = dst.bitwidth
    udt = np.dtype(f"u{width // 8}")
    bits = np.ascontiguousarray(r).view(udt)
    xd = x.astype(np.float64)
    back = r.astype(np.float64)
    finite_x = ~np.isnan(xd)
    if mode == "downward":
        fix, up = back > xd, np.zeros(r.shape, bool)
    elif mode == "upward":
        fix, up = back < xd, np.ones(r.shape, bool)
    elif mode == "toward_zero":
        fix = np.abs(back) > np.abs(xd)
        up = back < 0
    elif mode == "to_nearest_away":
        toward_x = back < xd
        other = _step_bits(bits, toward_x, width).view(r.dtype).astype(np.float64)
        with np.errstate(invalid="ignore"):
            tie = (back != xd) & (np.abs(xd - back) == np.abs(other - xd))
        fix = tie & (np.abs(back) < np.abs(xd))
        up = toward_x
    else:
        raise ValueError(f"unknown rounding mode {mode!r}; expected one of {', '.join(ROUNDING_MODES)}")
    fix = fix & finite_x
    out = np.where(fix, _step_bits(bits, up, width), bits).astype(udt)
    return out.view(r.dtype)


def _bitcast(op, a):
    t = _t(op)
    dt = numpy_dtype(t)
    src_t = op.operands[0].type
    if a.dtype == np.bool_ or dt == np.bool_:
        # i1 vectors pack into integers bit by bit (LSB = lane 0)
        return _bitcast_bits(a, src_t, t)
    a = np.ascontiguousarray(a)
    if isinstance(t, VectorType) or isinstance(src_t, VectorType):
        if a.ndim < 2:
            a = a.reshape(a.shape + (1,)) if a.ndim == 1 else a.reshape(1, 1)
        r = a.view(dt)
        if not isinstance(t, VectorType):
            r = r[..., 0]
        return r
    return a.view(dt)


def _bitcast_bits(a, src_t, t):
    bits_src = _to_bits(a, src_t)
    return _from_bits(bits_src, t)


def _to_bits(a, t):
    e = t.element_type
    w = e.bitwidth
    if w == 1:
        b = a.astype(np.uint8)
        return b if isinstance(t, VectorType) else b[..., None]
    u = as_unsigned(a, t) if e.is_int_like else np.ascontiguousarray(a).view(f"u{w // 8}")
    if not isinstance(t, VectorType):
        u = u[..., None]
    shifts = np.arange(w, dtype=np.uint64)
    bits = (u.astype(np.uint64)[..., None] >> shifts) & np.uint64(1)
    return bits.reshape(bits.shape[:-2] + (-1,)).astype(np.uint8)


def _from_bits(bits, t):
    e = t.element_type
    w = e.bitwidth
    if w == 1:
        r = bits.astype(np.bool_)
        return r if isinstance(t, VectorType) else r[..., 0]
    n = bits.shape[-1] // w
    b = bits.reshape(bits.shape[:-1] + (n, w)).astype(np.uint64)
    val = (b << np.arange(w, dtype=np.uint64)).sum(axis=-1).astype(f"u{w // 8}")
    r = val.view(numpy_dtype(t))
    return r if isinstance(t, VectorType) else r[..., 0]


def _index_cast(op, a):
    return to_dtype(a, _t(op)) if _elem(_t(op)).bitwidth != 1 else (a & 1).astype(np.bool_)


def _index_castui(op, a):
    src = op.operands[0].type
    if _elem(src).bitwidth < 64:
        return to_dtype(as_unsigned(a, src), _t(op))
    return _index_cast(op, a)


def _cast_verify(kind):
    def verify(op):
        s, d = op.operands[0].type, op.results[0].type
        if isinstance(s, VectorType) != isinstance(d, VectorType):
            if kind != "bitcast":
                return f"cannot cast between a scalar and a vector ({s} to {d})"
        elif isinstance(s, VectorType) and kind != "bitcast" and s.shape != d.shape:
            return f"vector shapes differ ({s} to {d})"
        es, ed = s.element_type, d.element_type
        ok = {
            "iext": es.is_integer and ed.is_integer and ed.bitwidth > es.bitwidth,
            "itrunc": es.is_integer and ed.is_integer and ed.bitwidth < es.bitwidth,
            "itof": es.is_integer and ed.is_float,
            "ftoi": es.is_float and ed.is_integer,
            "fext": es.is_float and ed.is_float and ed.bitwidth > es.bitwidth,
            "ftrunc": es.is_float and ed.is_float and (ed.bitwidth < es.bitwidth or es is not ed),
            "index": es.is_int_like and ed.is_int_like and (es.is_index or ed.is_index),
            "bitcast": s.bitwidth == d.bitwidth,
        }[kind]
        if not ok:
            return f"invalid {op.defn.name} from {s} to {d}"
        return None

    return verify


def _cast(name, ev, kind, doc):
    return OpDef(name, operands=1, traits=(P,), evaluate=ev, verify=_cast_verify(kind), fmt="cast", doc=doc)


extsi = _cast("arith.extsi", _extsi, "iext", "sign-extend")
extui = _cast("arith.extui", _extui, "iext", "zero-extend")
trunci = _cast("arith.trunci", _trunci, "itrunc", "truncate to the low bits")
sitofp = _cast("arith.sitofp", _sitofp, "itof", "signed int → float (RNE)")
uitofp = _cast("arith.uitofp", _uitofp, "itof", "unsigned int → float (RNE)")
fptosi = _cast("arith.fptosi", _fptoi(True), "ftoi", "float → signed int, toward zero, saturating, NaN → 0")
fptoui = _cast("arith.fptoui", _fptoi(False), "ftoi", "float → unsigned int, toward zero, saturating")
extf = _cast("arith.extf", _extf, "fext", "widen a float (exact)")
truncf = _cast(
    "arith.truncf",
    _truncf,
    "ftrunc",
    "narrow a float (RNE; fp8 saturates: satfinite); attr rounding: an IEEE mode for f16/bf16/f32 results",
)


def _truncf_verify(op: Op):
    msg = _cast_verify("ftrunc")(op)
    if msg:
        return msg
    mode = op.attrs.get("rounding")
    if mode is None:
        return None
    if mode not in ROUNDING_MODES:
        return f"unknown rounding mode {mode!r}; expected one of {', '.join(ROUNDING_MODES)}"
    dst = op.results[0].type.element_type
    if dst.name not in _DIRECTED_DST:
        return f"rounding modes apply to f16, bf16 and f32 results, not {dst}"
    return None


truncf.verify = _truncf_verify
bitcast = _cast("arith.bitcast", _bitcast, "bitcast", "reinterpret bits (same total width)")
index_cast = _cast("arith.index_cast", _index_cast, "index", "index ↔ integer (sign-extend or truncate)")
index_castui = _cast("arith.index_castui", _index_castui, "index", "index ↔ integer (zero-extend or truncate)")

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
    "constant", "const", "normalize_constant", "addi", "subi", "muli", "divsi", "divui", "floordivsi",
    "ceildivsi", "ceildivui", "remsi", "remui", "andi", "ori", "xori", "shli", "shrui", "shrsi", "maxsi",
    "minsi", "maxui", "minui", "mulhisi", "mulhiui", "addf", "subf", "mulf", "divf", "remf", "maximumf",
    "minimumf", "maxnumf", "minnumf", "negf", "cmpi", "cmpf", "select", "extsi", "extui", "trunci", "sitofp",
    "uitofp", "fptosi", "fptoui", "extf", "truncf", "bitcast", "index_cast", "index_castui",
    "CMPI_PREDICATES", "CMPF_PREDICATES", "FP8_MAX", "float_round", "float_round_directed", "ROUNDING_MODES",
    "ieee_maximum", "ieee_minimum", "ieee_maxnum", "ieee_minnum", "IntegerType",
]  # fmt: skip
