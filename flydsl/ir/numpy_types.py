"""The numpy dtype that holds each IR scalar type (ml_dtypes for bf16 and fp8).

Integers are stored signed (MLIR integers are signless; unsigned ops reinterpret the bits).
``i1`` is ``numpy.bool_``; ``index`` is ``int64``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .types import FloatType, IndexType, IntegerType, Type

__all__ = ["numpy_dtype", "unsigned_dtype", "SIGNED_INT", "UNSIGNED_INT"]

SIGNED_INT = {1: np.bool_, 8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
UNSIGNED_INT = {1: np.bool_, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

_FLOAT = {
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "f32": np.float32,
    "f64": np.float64,
    "tf32": np.float32,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
}

_CACHE: dict[Type, np.dtype] = {}


def numpy_dtype(t: Type) -> np.dtype:
    """numpy dtype of a scalar type (or of a vector's element type)."""
    d = _CACHE.get(t)
    if d is not None:
        return d
    e = t.element_type
    if isinstance(e, IntegerType):
        if e.width not in SIGNED_INT:
            raise TypeError(f"no numpy dtype for {e}")
        d = np.dtype(SIGNED_INT[e.width])
    elif isinstance(e, IndexType):
        d = np.dtype(np.int64)
    elif isinstance(e, FloatType):
        d = np.dtype(_FLOAT[e.name])
    else:
        raise TypeError(f"no numpy dtype for {t}")
    _CACHE[t] = d
    return d


def unsigned_dtype(t: Type) -> np.dtype:
    """The unsigned numpy dtype of the same width as integer type ``t``."""
    return np.dtype(UNSIGNED_INT[t.element_type.bitwidth])
