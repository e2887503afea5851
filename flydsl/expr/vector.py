"""``fx.Vector`` and its aliases (FlyDSL's ``flydsl.expr.vector``): ``Float32x4``, ``Vector[dtype, shape]``, the
``full``/``zeros_like`` factories and ``ReductionOp``.

``Vector[dtype, shape]`` (or ``VectorAlias(dtype, shape)``) is a cached subclass of ``Vector`` whose
constructor fixes dtype and shape. The aliases ``<Dtype>x<N>`` below are predefined for the common lane
counts; :func:`alias_by_name` (and ``fx.<Dtype>x<N>``) gives any other. The class and its operators live in
the semantic layer (:mod:`flydsl.expr._sem.vector`).
"""

from __future__ import annotations

import re

from ._sem.numeric import (
    BFloat16,
    Boolean,
    Float8E4M3FN,
    Float8E4M3FNUZ,
    Float8E5M2,
    Float8E5M2FNUZ,
    Float16,
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
)
from ._sem.vector import ReductionOp, Vector, VectorAlias

__all__ = [
    "Vector", "VectorAlias", "ReductionOp", "full", "full_like", "zeros_like", "ones_like", "empty_like",
    "alias_by_name", "ALIAS_NAMES",
    "Int8x1", "Int8x2", "Int8x3", "Int8x4", "Int8x8", "Int8x16", "Int8x32", "Int16x1", "Int16x2", "Int16x3",
    "Int16x4", "Int16x8", "Int16x16", "Int16x32", "Int32x1", "Int32x2", "Int32x3", "Int32x4", "Int32x8",
    "Int32x16", "Int32x32", "Int64x1", "Int64x2", "Int64x3", "Int64x4", "Int64x8", "Int64x16", "Int64x32",
    "Uint8x1", "Uint8x2", "Uint8x3", "Uint8x4", "Uint8x8", "Uint8x16", "Uint8x32", "Uint16x1", "Uint16x2",
    "Uint16x3", "Uint16x4", "Uint16x8", "Uint16x16", "Uint16x32", "Uint32x1", "Uint32x2", "Uint32x3", "Uint32x4",
    "Uint32x8", "Uint32x16", "Uint32x32", "Uint64x1", "Uint64x2", "Uint64x3", "Uint64x4", "Uint64x8",
    "Uint64x16", "Uint64x32", "Float16x1", "Float16x2", "Float16x3", "Float16x4", "Float16x8", "Float16x16",
    "Float16x32", "BFloat16x1", "BFloat16x2", "BFloat16x3", "BFloat16x4", "BFloat16x8", "BFloat16x16",
    "BFloat16x32", "Float32x1", "Float32x2", "Float32x3", "Float32x4", "Float32x8", "Float32x16", "Float32x32",
    "Float64x1", "Float64x2", "Float64x3", "Float64x4", "Float64x8", "Float64x16", "Float64x32",
    "Float8E4M3FNx1", "Float8E4M3FNx2", "Float8E4M3FNx3", "Float8E4M3FNx4", "Float8E4M3FNx8", "Float8E4M3FNx16",
    "Float8E4M3FNx32", "Float8E5M2x1", "Float8E5M2x2", "Float8E5M2x3", "Float8E5M2x4", "Float8E5M2x8",
    "Float8E5M2x16", "Float8E5M2x32", "Float8E4M3FNUZx1", "Float8E4M3FNUZx2", "Float8E4M3FNUZx3",
    "Float8E4M3FNUZx4", "Float8E4M3FNUZx8", "Float8E4M3FNUZx16", "Float8E4M3FNUZx32", "Float8E5M2FNUZx1",
    "Float8E5M2FNUZx2", "Float8E5M2FNUZx3", "Float8E5M2FNUZx4", "Float8E5M2FNUZx8", "Float8E5M2FNUZx16",
    "Float8E5M2FNUZx32",
]  # fmt: skip


def full(shape, fill_value, dtype) -> Vector:
    """A Vector of ``shape`` with every lane ``fill_value`` (converted to ``dtype``)."""
    return Vector.filled(shape, fill_value, dtype)


def full_like(a: Vector, fill_value, dtype=None) -> Vector:
    """A Vector shaped like ``a`` (dtype of ``a`` unless given), every lane ``fill_value``."""
    return Vector.filled_like(a, fill_value, dtype)


def zeros_like(a: Vector, dtype=None) -> Vector:
    """``full_like(a, 0, dtype)``."""
    return Vector.zeros_like(a, dtype)


def ones_like(a: Vector, dtype=None) -> Vector:
    """``full_like(a, 1, dtype)``."""
    return Vector.filled_like(a, 1, dtype)


def empty_like(a: Vector, dtype=None) -> Vector:
    """A Vector shaped like ``a``; registers have no "uninitialized" state here, so it is zero-filled."""
    return Vector.filled_like(a, 0, dtype)


_ALIAS_DTYPES = (
    Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float16, BFloat16, Float32, Float64,
    Float8E4M3FN, Float8E5M2, Float8E4M3FNUZ, Float8E5M2FNUZ,
)  # fmt: skip
_ALIAS_LANES = (1, 2, 3, 4, 8, 16, 32)
ALIAS_NAMES = tuple(f"{d.__name__}x{n}" for d in _ALIAS_DTYPES for n in _ALIAS_LANES)
_DTYPE_BY_NAME = {d.__name__: d for d in _ALIAS_DTYPES + (Boolean,)}
_ALIAS_RE = re.compile(r"^([A-Za-z0-9]+?)x([1-9][0-9]*)$")


def alias_by_name(name: str) -> type | None:
    """``"Float32x4"`` → ``Float32x4`` for any lane count (None when the name is not an alias)."""
    m = _ALIAS_RE.match(name)
    if m is None or m.group(1) not in _DTYPE_BY_NAME:
        return None
    return VectorAlias(_DTYPE_BY_NAME[m.group(1)], int(m.group(2)))


# the predefined aliases (ALIAS_NAMES), one per common dtype and lane count
Int8x1 = VectorAlias(Int8, 1)
Int8x2 = VectorAlias(Int8, 2)
Int8x3 = VectorAlias(Int8, 3)
Int8x4 = VectorAlias(Int8, 4)
Int8x8 = VectorAlias(Int8, 8)
Int8x16 = VectorAlias(Int8, 16)
Int8x32 = VectorAlias(Int8, 32)
Int16x1 = VectorAlias(Int16, 1)
Int16x2 = VectorAlias(Int16, 2)
Int16x3 = VectorAlias(Int16, 3)
Int16x4 = VectorAlias(Int16, 4)
Int16x8 = VectorAlias(Int16, 8)
Int16x16 = VectorAlias(Int16, 16)
Int16x32 = VectorAlias(Int16, 32)
Int32x1 = VectorAlias(Int32, 1)
Int32x2 = VectorAlias(Int32, 2)
Int32x3 = VectorAlias(Int32, 3)
Int32x4 = VectorAlias(Int32, 4)
Int32x8 = VectorAlias(Int32, 8)
Int32x16 = VectorAlias(Int32, 16)
Int32x32 = VectorAlias(Int32, 32)
Int64x1 = VectorAlias(Int64, 1)
Int64x2 = VectorAlias(Int64, 2)
Int64x3 = VectorAlias(Int64, 3)
Int64x4 = VectorAlias(Int64, 4)
Int64x8 = VectorAlias(Int64, 8)
Int64x16 = VectorAlias(Int64, 16)
Int64x32 = VectorAlias(Int64, 32)
Uint8x1 = VectorAlias(Uint8, 1)
Uint8x2 = VectorAlias(Uint8, 2)
Uint8x3 = VectorAlias(Uint8, 3)
Uint8x4 = VectorAlias(Uint8, 4)
Uint8x8 = VectorAlias(Uint8, 8)
Uint8x16 = VectorAlias(Uint8, 16)
Uint8x32 = VectorAlias(Uint8, 32)
Uint16x1 = VectorAlias(Uint16, 1)
Uint16x2 = VectorAlias(Uint16, 2)
Uint16x3 = VectorAlias(Uint16, 3)
Uint16x4 = VectorAlias(Uint16, 4)
Uint16x8 = VectorAlias(Uint16, 8)
Uint16x16 = VectorAlias(Uint16, 16)
Uint16x32 = VectorAlias(Uint16, 32)
Uint32x1 = VectorAlias(Uint32, 1)
Uint32x2 = VectorAlias(Uint32, 2)
Uint32x3 = VectorAlias(Uint32, 3)
Uint32x4 = VectorAlias(Uint32, 4)
Uint32x8 = VectorAlias(Uint32, 8)
Uint32x16 = VectorAlias(Uint32, 16)
Uint32x32 = VectorAlias(Uint32, 32)
Uint64x1 = VectorAlias(Uint64, 1)
Uint64x2 = VectorAlias(Uint64, 2)
Uint64x3 = VectorAlias(Uint64, 3)
Uint64x4 = VectorAlias(Uint64, 4)
Uint64x8 = VectorAlias(Uint64, 8)
Uint64x16 = VectorAlias(Uint64, 16)
Uint64x32 = VectorAlias(Uint64, 32)
Float16x1 = VectorAlias(Float16, 1)
Float16x2 = VectorAlias(Float16, 2)
Float16x3 = VectorAlias(Float16, 3)
Float16x4 = VectorAlias(Float16, 4)
Float16x8 = VectorAlias(Float16, 8)
Float16x16 = VectorAlias(Float16, 16)
Float16x32 = VectorAlias(Float16, 32)
BFloat16x1 = VectorAlias(BFloat16, 1)
BFloat16x2 = VectorAlias(BFloat16, 2)
BFloat16x3 = VectorAlias(BFloat16, 3)
BFloat16x4 = VectorAlias(BFloat16, 4)
BFloat16x8 = VectorAlias(BFloat16, 8)
BFloat16x16 = VectorAlias(BFloat16, 16)
BFloat16x32 = VectorAlias(BFloat16, 32)
Float32x1 = VectorAlias(Float32, 1)
Float32x2 = VectorAlias(Float32, 2)
Float32x3 = VectorAlias(Float32, 3)
Float32x4 = VectorAlias(Float32, 4)
Float32x8 = VectorAlias(Float32, 8)
Float32x16 = VectorAlias(Float32, 16)
Float32x32 = VectorAlias(Float32, 32)
Float64x1 = VectorAlias(Float64, 1)
Float64x2 = VectorAlias(Float64, 2)
Float64x3 = VectorAlias(Float64, 3)
Float64x4 = VectorAlias(Float64, 4)
Float64x8 = VectorAlias(Float64, 8)
Float64x16 = VectorAlias(Float64, 16)
Float64x32 = VectorAlias(Float64, 32)
Float8E4M3FNx1 = VectorAlias(Float8E4M3FN, 1)
Float8E4M3FNx2 = VectorAlias(Float8E4M3FN, 2)
Float8E4M3FNx3 = VectorAlias(Float8E4M3FN, 3)
Float8E4M3FNx4 = VectorAlias(Float8E4M3FN, 4)
Float8E4M3FNx8 = VectorAlias(Float8E4M3FN, 8)
Float8E4M3FNx16 = VectorAlias(Float8E4M3FN, 16)
Float8E4M3FNx32 = VectorAlias(Float8E4M3FN, 32)
Float8E5M2x1 = VectorAlias(Float8E5M2, 1)
Float8E5M2x2 = VectorAlias(Float8E5M2, 2)
Float8E5M2x3 = VectorAlias(Float8E5M2, 3)
Float8E5M2x4 = VectorAlias(Float8E5M2, 4)
Float8E5M2x8 = VectorAlias(Float8E5M2, 8)
Float8E5M2x16 = VectorAlias(Float8E5M2, 16)
Float8E5M2x32 = VectorAlias(Float8E5M2, 32)
Float8E4M3FNUZx1 = VectorAlias(Float8E4M3FNUZ, 1)
Float8E4M3FNUZx2 = VectorAlias(Float8E4M3FNUZ, 2)
Float8E4M3FNUZx3 = VectorAlias(Float8E4M3FNUZ, 3)
Float8E4M3FNUZx4 = VectorAlias(Float8E4M3FNUZ, 4)
Float8E4M3FNUZx8 = VectorAlias(Float8E4M3FNUZ, 8)
Float8E4M3FNUZx16 = VectorAlias(Float8E4M3FNUZ, 16)
Float8E4M3FNUZx32 = VectorAlias(Float8E4M3FNUZ, 32)
Float8E5M2FNUZx1 = VectorAlias(Float8E5M2FNUZ, 1)
Float8E5M2FNUZx2 = VectorAlias(Float8E5M2FNUZ, 2)
Float8E5M2FNUZx3 = VectorAlias(Float8E5M2FNUZ, 3)
Float8E5M2FNUZx4 = VectorAlias(Float8E5M2FNUZ, 4)
Float8E5M2FNUZx8 = VectorAlias(Float8E5M2FNUZ, 8)
Float8E5M2FNUZx16 = VectorAlias(Float8E5M2FNUZ, 16)
Float8E5M2FNUZx32 = VectorAlias(Float8E5M2FNUZ, 32)


def __getattr__(name: str):
    """Vector aliases of any lane count (``Float32x5``), and, as FlyDSL's ``flydsl.expr.vector`` does, the
    rest of ``fx``'s names (``T``, ``full``, ``full_like`` …)."""
    alias = alias_by_name(name)
    if alias is not None:
        return alias
    from flydsl import expr as fx  # cycle: the package imports this module

    if name in fx.__all__ or name in fx.COMPAT_NAMES:
        return getattr(fx, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
