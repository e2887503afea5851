"""Specialized Vector types (``Float32x4``, ``Vector[Float32, (2, 2)]``) and the Vector factories.

``Vector[dtype, shape]`` (or ``VectorAlias(dtype, shape)``) is a cached subclass of ``Vector`` whose
constructor fixes dtype and shape: it takes one scalar (splat), a list/tuple of ``numel`` scalars, or a
vector value of that type. Operations on an alias return plain ``Vector``s except identity operations
(``+v``, ``v.to(v.dtype)``, ``v.broadcast_to(v.shape)``, ``v[None]``) and the alias's own constructors.
"""

from __future__ import annotations

import re

from ..ir import VectorType
from . import _shape
from .numeric import (
    BFloat16,
    Boolean,
    Float,
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
    Integer,
    Numeric,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
)
from .vector import Vector

__all__ = ["VectorAlias", "full", "full_like", "zeros_like", "ones_like", "empty_like", "ALIAS_NAMES", "alias_by_name"]

_CACHE: dict[tuple, type] = {}
_ABSTRACT = (Numeric, Integer, Float)


def VectorAlias(dtype, shape) -> type:
    """The Vector subclass of element type ``dtype`` and logical ``shape`` (cached: one class per pair).

    Args:
        dtype: a concrete Numeric class (``fx.Float32``…).
        shape: an int or a nested tuple/list of positive ints.

    Returns:
        ``Float32x4`` for ``(Float32, 4)``; ``Vector[Float32, (2, 2)]`` for a multi-mode shape.

    Raises:
        TypeError: an abstract or non-Numeric dtype, or a shape that is not positive ints at every level.
    """
    if not (isinstance(dtype, type) and issubclass(dtype, Numeric)) or dtype in _ABSTRACT:
        raise TypeError(f"Vector[dtype, lanes] needs a concrete Numeric dtype (e.g. fx.Float32), got {dtype!r}")
    canon = _shape.canonical_shape(shape)
    key = (dtype, canon)
    cls = _CACHE.get(key)
    if cls is None:
        n = _shape.numel(canon)
        name = f"{dtype.__name__}x{n}" if canon == (n,) else f"Vector[{dtype.__name__}, {canon!r}]"
        cls = type(
            name,
            (Vector,),
            {
                "__slots__": (),
                "__module__": "flydsl.expr",
                "__qualname__": name,
                "__doc__": f"A Vector of {n} {dtype.__name__} lanes, shape {canon}.",
                "_alias_dtype": dtype,
                "_alias_shape": canon,
                "ir_type": VectorType(n, dtype.ir_type),
            },
        )
        _CACHE[key] = cls
    return cls


def _class_getitem(cls, params):
    if cls._alias_dtype is not None:
        raise TypeError(f"{cls.__name__} is already specialized")
    if not isinstance(params, tuple) or len(params) != 2:
        raise TypeError(f"use Vector[dtype, lanes] (or Vector[dtype, shape]), got Vector[{params!r}]")
    return VectorAlias(*params)


Vector.__class_getitem__ = classmethod(_class_getitem)


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


for _name in ALIAS_NAMES:
    globals()[_name] = alias_by_name(_name)
