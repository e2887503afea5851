"""Conversions between DSL scalar types: ``x.to(T)``, ``T(x)`` and ``x.bitcast(T)``.

The cast op is chosen once, by :func:`cast_plan`, for compile-time scalars, run-time scalars and
vectors alike; compile-time values fold through the same ops' numpy semantics, so a folded cast equals
the run-time one (float→int truncates toward zero and saturates, NaN → 0, like the GPU).
"""

from __future__ import annotations

import enum
import math as _pymath

import numpy as np

from .. import ir
from ..dialects import arith
from ..ir import Value, VectorType
from .numeric import Boolean, Float32, Index, Int32, Int64, Numeric, _fold, numeric_type_of

__all__ = ["convert", "bitcast", "resolve_dtype", "RoundingMode", "cast_plan", "cast_ir", "check_rounding_mode"]


class RoundingMode(str, enum.Enum):
    """IEEE-754 rounding modes for float→float ``.to(..., rounding_mode=)`` on run-time values.

    Members are strings (the IR spelling of the ``rounding`` attribute of ``arith.truncf``).
    """

    to_nearest_even = "to_nearest_even"
    downward = "downward"
    upward = "upward"
    toward_zero = "toward_zero"
    to_nearest_away = "to_nearest_away"

    def __str__(self) -> str:
        return self.value


_DIRECTED_RESULTS = frozenset((ir.f16, ir.bf16, ir.f32))


def resolve_dtype(dtype) -> type[Numeric]:
    """A Numeric class from a Numeric class or a scalar ``ir.Type`` (``T.f32``).

    Raises:
        TypeError: anything else (a vector type, a Python type, an instance…).
    """
    if isinstance(dtype, type) and issubclass(dtype, Numeric):
        return dtype
    if isinstance(dtype, ir.Type) and not isinstance(dtype, VectorType):
        return numeric_type_of(dtype)
    raise TypeError(f"expected a DSL numeric type (e.g. fx.Float32) or a scalar IR type (T.f32), got {dtype!r}")


def check_rounding_mode(S, D, rounding_mode, static: bool):
    """Validate ``rounding_mode`` for a cast from ``S`` to ``D``; returns the mode's text or None.

    Raises:
        TypeError: a mode on a cast that is not float-to-float.
        ValueError: an unknown mode, a mode on a compile-time value, or a result type without directed
            rounding (fp8).
    """
    if rounding_mode is None:
        return None
    if not (S.is_float and D.is_float):
        raise TypeError(f"rounding_mode applies to float-to-float casts only, not {S.__name__} to {D.__name__}")
    try:
        mode = RoundingMode(rounding_mode).value
    except ValueError:
        names = ", ".join(m.value for m in RoundingMode)
        raise ValueError(f"unknown rounding mode {rounding_mode!r}; use fx.RoundingMode.<mode> ({names})") from None
    if static:
        raise ValueError(
            "rounding_mode needs a run-time value: a compile-time constant is narrowed on the host "
            "(round-to-nearest-even)"
        )
    if D.width < S.width or (D.width == S.width and D is not S):
        if D.ir_type not in _DIRECTED_RESULTS:
            raise ValueError(f"rounding_mode supports Float16, BFloat16 and Float32 results, not {D.__name__}")
    return mode


def cast_plan(S, D) -> list:
    """The ops converting ``S`` to ``D``: a list of ``(op, T)`` steps (``op`` None: same bits, new type;
    ``"nonzero"``: the ``!= 0`` test). Only ``truncf`` steps take a rounding mode."""
    if S is D:
        return []
    if D is Boolean:
        return [("nonzero", D)]
    if S.is_integer and D.is_integer:
        if S is Index or D is Index:
            if S is Boolean:
                return [(arith.extui, Int32), (arith.index_cast, D)]
            # index -> iN truncates or keeps the bits; iN -> index extends by the source's signedness
            return [(arith.index_cast if (S is Index or S.signed) else arith.index_castui, D)]
        if S.ir_type is D.ir_type:
            return [(None, D)]
        if D.width > S.width:
            return [(arith.extsi if (S.signed and S is not Boolean) else arith.extui, D)]
        return [(arith.trunci, D)]
    if S.is_integer:  # -> float
        if S is Index:
            return [(arith.index_cast, Int64), (arith.sitofp, D)]
        return [(arith.sitofp if (S.signed and S is not Boolean) else arith.uitofp, D)]
    if D.is_integer:  # float ->
        if D is Index:
            return [(arith.fptosi, Int64), (arith.index_cast, D)]
        return [(arith.fptosi if D.signed else arith.fptoui, D)]
    if D.width > S.width:
        return [(arith.extf, D)]
    if D.width < S.width:
        return [(arith.truncf, D)]
    # same width, different format (f16 <-> bf16, fp8 kinds): exactly through f32, one rounding
    return [(arith.extf, Float32), (arith.truncf, D)]


def _lanes_type(T, lanes):
    return T.ir_type if lanes is None else VectorType(lanes, T.ir_type)


def cast_ir(v: Value, S, D, rounding_mode=None, lanes=None) -> Value:
    """Build the cast of a run-time value (scalar, or a ``lanes``-wide vector) from ``S`` to ``D``."""
    from .vector import splat_ir

    cur = S
    for op, T in cast_plan(S, D):
        if op is None:
            pass
        elif op == "nonzero":
            zero = cur._make(cur.zero)
            z = zero.ir_value() if lanes is None else splat_ir(zero, lanes)
            defn, pred = (arith.cmpf, "une") if cur.is_float else (arith.cmpi, "ne")
            v = defn(v, z, predicate=pred)
        else:
            attrs = {"rounding": rounding_mode} if (op is arith.truncf and rounding_mode is not None) else {}
            v = op(v, result_types=[_lanes_type(T, lanes)], **attrs)
        cur = T
    return v


def _fold_cast(pv, S, D):
    cur = S
    for op, T in cast_plan(S, D):
        if op is None:
            pv = T.from_py(pv)
        elif op == "nonzero":
            pv = bool(pv != 0)
        else:
            pv = _fold(op, T, [cur], [pv])
        cur = T
    return pv


def convert(x: Numeric, dtype, rounding_mode=None):
    """``x.to(dtype)``: a Numeric class, scalar IR type, ``int``/``float``/``bool`` (compile-time only) or
    ``ir.Value`` (the materialized IR value)."""
    if dtype is int or dtype is float or dtype is bool:
        if rounding_mode is not None:
            raise TypeError("rounding_mode applies to float-to-float casts only")
        return dtype(x._static_or_raise(dtype.__name__))
    if dtype is Value:
        return x.ir_value()
    D = resolve_dtype(dtype)
    S = type(x)
    v = x.value
    static = type(v) is not Value
    mode = check_rounding_mode(S, D, rounding_mode, static)
    if S is D:
        return x
    if static:
        if S.is_float and D.is_integer and D is not Boolean and (_pymath.isnan(v) or _pymath.isinf(v)):
            err = ValueError if _pymath.isnan(v) else OverflowError
            raise err(f"cannot convert {v} to {D.__name__}")
        return D._make(_fold_cast(v, S, D))
    return D._make(cast_ir(v, S, D, mode))


def bitcast(x: Numeric, dtype):
    """``x.bitcast(dtype)``: the same bits as another type of equal width.

    Raises:
        TypeError: a width mismatch or a dtype that is not a DSL type.
    """
    D = resolve_dtype(dtype)
    S = type(x)
    if D.width != S.width:
        raise TypeError(f"bitcast needs equal widths: {S.__name__} is {S.width} bits, {D.__name__} is {D.width}")
    if S is D:
        return x
    if S.ir_type is D.ir_type:
        return D._make(x.value if not x.is_static() else D.from_py(x.value))
    v = x.value
    if type(v) is not Value:
        a = np.asarray(v, dtype=S.numpy_dtype)
        return D._make(D._py_from_np(a.view(D.numpy_dtype)))
    return D._make(arith.bitcast(v, result_types=[D.ir_type]))
