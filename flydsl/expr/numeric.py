"""``fx`` scalar types (FlyDSL's ``flydsl.expr.numeric``): ``Int8 … Uint64``, ``Boolean``, ``Index``,
``Float16 … Float64`` and the fp8 storage types, with ``as_numeric`` and the promotion lattice.

The classes and their operators are defined in the semantic layer (:mod:`flydsl.expr._sem.numeric`);
this module is their public name.
"""

from __future__ import annotations

from ._sem.errors import RuntimeValueError
from ._sem.numeric import (
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
    Index,
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
    as_numeric,
    common_type,
    is_dsl_value,
    numeric_type_of,
)

__all__ = [
    "Numeric", "Integer", "Float", "Boolean", "Index", "Int8", "Int16", "Int32", "Int64", "Uint8", "Uint16",
    "Uint32", "Uint64", "Float16", "BFloat16", "Float32", "Float64", "Float8E4M3FN", "Float8E5M2",
    "Float8E4M3FNUZ", "Float8E5M2FNUZ", "as_numeric", "common_type", "numeric_type_of", "is_dsl_value",
    "RuntimeValueError",
]  # fmt: skip
