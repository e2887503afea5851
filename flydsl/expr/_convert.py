"""Conversions between DSL scalar types: ``x.to(T)``, ``T(x)`` and ``x.bitcast(T)``.

The cast op is chosen exactly as for run-time values; compile-time values fold through the same op's
numpy semantics, so a folded cast equals the run-time one (float→int saturates like the GPU).
"""

from __future__ import annotations

import math as _pymath

import numpy as np

from .. import ir
from ..dialects import arith
from ..ir import Value
from .numeric import Boolean, Float32, Index, Int32, Int64, Numeric, _fold, numeric_type_of

__all__ = ["convert", "bitcast", "resolve_dtype", "RoundingMode"]


class RoundingMode:
    """IEEE-754 rounding modes for float→float ``.to(..., rounding_mode=)`` on run-time values."""

    to_nearest_even = "rn"
    downward = "rm"
    upward = "rp"
    toward_zero = "rz"
    to_nearest_away = "rna"
    ALL = ("rn", "rm", "rp", "rz", "rna")


def resolve_dtype(dtype) -> type[Numeric]:
    """A Numeric class from a Numeric class, an ``ir.Type`` or a Python type name."""
    if isinstance(dtype, type) and issubclass(dtype, Numeric):
        return dtype
    if isinstance(dtype, ir.Type):
        return numeric_type_of(dtype)
    raise TypeError(f"expected a DSL numeric type (e.g. fx.Float32) or an IR type, got {dtype!r}")


def convert(x: Numeric, dtype, rounding_mode=None):
    if dtype is int or dtype is float or dtype is bool:
        if rounding_mode is not None:
            raise TypeError("rounding_mode applies to float-to-float casts only")
        return dtype(x._static_or_raise(f"a Python {dtype.__name__}"))
    if dtype is Value:
        return x.ir_value()
    D = resolve_dtype(dtype)
    S = type(x)
    if rounding_mode is not None:
        if not (S.is_float and D.is_float):
            raise TypeError("rounding_mode applies to float-to-float casts only")
        if rounding_mode not in RoundingMode.ALL:
            raise ValueError(f"unknown rounding mode {rounding_mode!r}; use fx.RoundingMode.<mode>")
        if x.is_static():
            raise ValueError(
                "rounding_mode needs a run-time value: a compile-time constant is narrowed on the host "
                "(round-to-nearest-even)"
            )
    if S is D and rounding_mode is None:
        return x
    return _cast(x, S, D, rounding_mode)


def _cast(x: Numeric, S, D, rounding_mode):
    v = x._v
    static = type(v) is not Value
    if D is Boolean:
        if S.is_float:
            return _one(x, arith.cmpf, Boolean, S, static, _zero_like(S), predicate="une")
        return _one(x, arith.cmpi, Boolean, S, static, _zero_like(S), predicate="ne")
    if S.is_integer and D.is_integer:
        if S is Index or D is Index:
            if S is Boolean:
                return _cast(_cast(x, S, Int32, None), Int32, D, None)
            # index -> iN truncates or keeps the bits; iN -> index extends by the source's signedness
            op = arith.index_cast if (S is Index or S.signed) else arith.index_castui
            return _apply(op, x, S, D, static)
        if S.ir_type is D.ir_type:
            return D._make(v if not static else D.from_py(v))
        if D.width > S.width:
            op = arith.extsi if (S.signed and S is not Boolean) else arith.extui
        else:
            op = arith.trunci
        return _apply(op, x, S, D, static)
    if S.is_integer and D.is_float:
        if S is Index:
            return _cast(_cast(x, S, Int64, None), Int64, D, None)
        op = arith.sitofp if (S.signed and S is not Boolean) else arith.uitofp
        return _apply(op, x, S, D, static)
    if S.is_float and D.is_integer:
        if static and (_pymath.isnan(v) or _pymath.isinf(v)):
            raise ValueError(f"cannot convert {v} to {D.__name__}")
        if D is Index:
            return _cast(_cast(x, S, Int64, None), Int64, D, None)
        op = arith.fptosi if D.signed else arith.fptoui
        return _apply(op, x, S, D, static)
    # float -> float
    if D.width > S.width:
        return _apply(arith.extf, x, S, D, static)
    if D.width < S.width:
        return _apply(arith.truncf, x, S, D, static, rounding_mode)
    # same width, different format (f16 <-> bf16, fp8 kinds): through f32
    return _cast(_cast(x, S, Float32, None), Float32, D, rounding_mode)


def _zero_like(S):
    return S._make(0.0 if S.is_float else (False if S is Boolean else 0))


def _one(x, defn, D, S, static, other, **attrs):
    if static:
        return D._make(_fold(defn, D, [S, S], [x._v, other._v], **attrs))
    return D._make(defn(x._v, other.ir_value(), **attrs))


def _apply(defn, x, S, D, static, rounding_mode=None):
    if static:
        return D._make(_fold(defn, D, [S], [x._v]))
    attrs = {"rounding": rounding_mode} if rounding_mode not in (None, "rn") else {}
    return D._make(defn(x._v, result_types=[D.ir_type], **attrs))


def bitcast(x: Numeric, dtype):
    D = resolve_dtype(dtype)
    S = type(x)
    if D.width != S.width:
        raise TypeError(f"bitcast needs equal widths: {S.__name__} is {S.width} bits, {D.__name__} is {D.width}")
    if S is D:
        return x
    if S.ir_type is D.ir_type:
        return D._make(x._v)
    v = x._v
    if type(v) is not Value:
        a = np.asarray(v, dtype=S.numpy_dtype)
        return D._make(D._py_from_np(a.view(D.numpy_dtype)))
    return D._make(arith.bitcast(v, result_types=[D.ir_type]))
