"""The numpy dtype that holds each IR scalar type (ml_dtypes for bf16 and fp8), and host scalars.

Integers are stored signed (MLIR integers are signless; unsigned ops reinterpret the bits).
``i1`` is ``numpy.bool_``; ``index`` is ``int64``.

*Host scalars* are the plain Python values that the host executor, compile-time folding and each
``OpDef``'s scalar hook compute on: an integer or index of width w ≥ 2 is a Python ``int`` wrapped
to a signed w-bit value, ``i1`` is a ``bool``, a float is a numpy scalar of its type
(``np.float32(…)``, ``ml_dtypes.bfloat16(…)``), a pointer is its address (an ``int``), a vector a
``(1, N)`` array. :func:`to_array` / :func:`from_array` convert to and from the arrays ``evaluate``
takes.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .types import BufferRsrcType, FloatType, IndexType, IntegerType, PointerType, Type, VectorType

__all__ = [
    "numpy_dtype",
    "unsigned_dtype",
    "SIGNED_INT",
    "UNSIGNED_INT",
    "to_array",
    "from_array",
    "wrap_signed",
    "int_wrapper",
]

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


def int_wrapper(width: int):
    """``f(v)``: a Python int as the host form of an integer of ``width`` bits (``bool`` for i1)."""
    if width == 1:
        return _to_bool
    half, mask = 1 << (width - 1), (1 << width) - 1
    return eval(f"lambda v: ((v + {half}) & {mask}) - {half}")  # noqa: S307 - two int constants


def _to_bool(v) -> bool:
    return bool(v & 1)


def wrap_signed(v: int, width: int) -> int:
    """``v`` modulo ``2**width`` as a signed value (the host form of an integer of that width)."""
    half = 1 << (width - 1)
    return ((v + half) & ((1 << width) - 1)) - half


def to_array(t: Type, v) -> np.ndarray:
    """A host scalar of type ``t`` as the array ``evaluate`` takes (0-d; ``(1, N)`` for a vector)."""
    if isinstance(t, VectorType):
        return np.asarray(v).reshape(1, t.numel)
    if isinstance(t, (PointerType, BufferRsrcType)):
        return np.asarray(v, dtype=np.int64)
    dt = numpy_dtype(t)
    if isinstance(t, FloatType):
        return np.asarray(v).astype(dt, copy=False)
    if dt == np.bool_:
        return np.asarray(bool(v))
    return np.asarray(wrap_signed(int(v), t.bitwidth)).astype(dt)


def from_array(t: Type, a):
    """The host scalar of type ``t`` held by an array ``evaluate`` returned."""
    if isinstance(t, VectorType):
        return np.asarray(a).reshape(1, t.numel)
    a = np.asarray(a).reshape(())
    if isinstance(t, FloatType):
        return a.astype(numpy_dtype(t), copy=False)[()]
    if a.dtype == np.bool_:
        return bool(a)
    return int(a)
