"""Shared helpers for dialect declarations: result-type inference and numpy semantics helpers.

Value shapes in ``evaluate`` functions (the executable semantics shared by the interpreter and the
constant folder): a scalar is an array of ndim <= 1 (``()`` or ``(1,)`` when the same for every
thread, ``(T,)`` per thread); a vector is an array of ndim 2 (``(1, N)`` or ``(T, N)``).
"""

from __future__ import annotations

import numpy as np

from ..ir import IntegerType, Op, Type, VectorType, numpy_dtype, unsigned_dtype
from ..ir.types import i1

__all__ = [
    "same_as_first",
    "same_as_second",
    "bool_like",
    "is_vec",
    "as_unsigned",
    "from_unsigned",
    "to_dtype",
    "rows_like",
    "check_same_types",
]


def same_as_first(types, attrs):
    return [types[0]]


def same_as_second(types, attrs):
    return [types[1]]


def bool_like(t: Type) -> Type:
    """``i1`` for a scalar, ``vector<Nxi1>`` for a vector."""
    if isinstance(t, VectorType):
        return VectorType(t.shape, i1)
    return i1


def is_vec(t: Type) -> bool:
    return isinstance(t, VectorType)


def as_unsigned(a: np.ndarray, t: Type) -> np.ndarray:
    """Reinterpret a signed-stored integer array as unsigned (i1 stays bool)."""
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    return np.asarray(a).view(unsigned_dtype(t))


def from_unsigned(a: np.ndarray, t: Type) -> np.ndarray:
    e = t.element_type
    if isinstance(e, IntegerType) and e.width == 1:
        return (np.asarray(a) & 1).astype(np.bool_)
    return np.asarray(a).astype(unsigned_dtype(t), copy=False).view(numpy_dtype(t))


def to_dtype(a, t: Type) -> np.ndarray:
    return np.asarray(a).astype(numpy_dtype(t), copy=False)


def rows_like(cond: np.ndarray, value_is_vector: bool) -> np.ndarray:
    """Make a scalar (per-thread) condition broadcast against vector values."""
    if value_is_vector and cond.ndim <= 1:
        return np.asarray(cond)[..., None]
    return cond


def check_same_types(op: Op) -> str | None:
    ts = [v.type for v in op.operands] + [r.type for r in op.results]
    if any(t is not ts[0] for t in ts):
        return "operand and result types must match, got " + ", ".join(map(str, ts))
    return None
