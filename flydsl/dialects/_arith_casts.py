"""``arith`` casts and their numpy semantics (re-exported by :mod:`flydsl.dialects.arith`).

Integer extension/truncation, int ↔ float conversions (float → int saturating, NaN → 0), float
extension/truncation (RNE; fp8 saturating to the largest finite value; ``truncf``'s optional IEEE
rounding ``rounding``), ``bitcast`` (i1 vectors pack bit by bit, LSB = lane 0) and index casts.
``float_round`` and ``float_round_directed`` are the rounding rules the interpreter and the host
runtime share.
"""

from __future__ import annotations

import numpy as np

from ..ir import FloatType, Op, OpDef, Trait, Type, VectorType, numpy_dtype
from ._base import ScalarSource, as_unsigned, from_unsigned, source_fn, to_dtype

__all__ = [
    "extsi", "extui", "trunci", "sitofp", "uitofp", "fptosi", "fptoui", "extf", "truncf", "bitcast",
    "index_cast", "index_castui", "FP8_MAX", "float_round", "float_round_directed", "ROUNDING_MODES",
]  # fmt: skip

P = Trait.PURE


def _t(op):
    return op.results[0].type


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
    if _elem(_t(op)).bitwidth == 1:
        return (a & 1).astype(np.bool_)
    return _extsi(op, a)  # sign-extends (an i1 true is -1) or truncates


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


def _int_cast_scalar(zero_extend_below: int):
    """The scalar hook of an integer cast: the source's value wrapped to the result's width — its unsigned
    value when the source is narrower than ``zero_extend_below`` bits, else its signed value (an i1 source:
    true is -1). ``scalar.source(op)`` is the same as a :class:`~flydsl.dialects._base.ScalarSource`."""

    def source(op) -> ScalarSource | None:
        st, dt = op.operands[0].type, op.results[0].type
        if isinstance(st, VectorType):
            return None
        sw = st.bitwidth
        if sw < zero_extend_below:
            return ScalarSource("a & sm", {"sm": (1 << sw) - 1}, dt.bitwidth)
        return ScalarSource("-a" if sw == 1 else "a", {}, dt.bitwidth)

    def scalar(op):
        src = source(op)
        return source_fn(src, 1) if src is not None else None

    scalar.source = lambda op: None if op.operands[0].type.bitwidth == 1 else source(op)  # plans: no i1 sources
    return scalar


def _cast(name, ev, kind, doc, scalar=None):
    return OpDef(
        name, operands=1, traits=(P,), evaluate=ev, scalar=scalar, verify=_cast_verify(kind), fmt="cast", doc=doc
    )


extsi = _cast("arith.extsi", _extsi, "iext", "sign-extend", _int_cast_scalar(0))
extui = _cast("arith.extui", _extui, "iext", "zero-extend", _int_cast_scalar(65))
trunci = _cast("arith.trunci", _trunci, "itrunc", "truncate to the low bits", _int_cast_scalar(0))
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
index_cast = _cast(
    "arith.index_cast", _index_cast, "index", "index ↔ integer (sign-extend or truncate)", _int_cast_scalar(0)
)
index_castui = _cast(
    "arith.index_castui",
    _index_castui,
    "index",
    "index ↔ integer (zero-extend or truncate)",
    _int_cast_scalar(64),
)
