"""How a DSL scalar argument is passed to a compiled host function in C terms (FlyDSL's
``__c_abi_spec__`` for numbers): one slot of the ctypes type that holds a value of the class's IR type —
the host parameter :mod:`flydsl.compiler.abi` gives a run-time scalar of that class."""

from __future__ import annotations

import ctypes

import numpy as np

__all__ = ["scalar_slot"]

_INTS = {
    (8, True): ctypes.c_int8, (16, True): ctypes.c_int16, (32, True): ctypes.c_int32, (64, True): ctypes.c_int64,
    (8, False): ctypes.c_uint8, (16, False): ctypes.c_uint16, (32, False): ctypes.c_uint32,
    (64, False): ctypes.c_uint64,
}  # fmt: skip
_FLOATS = {32: ctypes.c_float, 64: ctypes.c_double}


def _value(a):
    """The Python value of an argument: a Python number, or a compile-time DSL scalar."""
    return a.value if getattr(a, "_is_numeric", False) else a


def _int_fill(a, s):
    s.value = int(_value(a))  # ctypes keeps the low bits: the integer's two's-complement at the slot's width


def _bool_fill(a, s):
    s.value = bool(_value(a))


def _float_fill(a, s):
    s.value = float(_value(a))


def _bits_fill(dtype):
    def fill(a, s):
        s.value = int(np.array(_value(a), dtype=dtype).view(np.uint16))

    return fill


def scalar_slot(cls) -> tuple:
    """``(ctype, fill)`` of a Numeric class: ``fill(arg, storage)`` writes a Python number or static
    value of the argument into a ctypes storage of ``ctype``.

    Raises:
        TypeError: a class that cannot be a run-time host argument (fp8 storage floats).
    """
    if cls.is_integer:
        if cls.width == 1:
            return ctypes.c_bool, _bool_fill
        return _INTS[(cls.width, cls.signed is not False)], _int_fill
    if cls.is_float and cls.width in _FLOATS:
        return _FLOATS[cls.width], _float_fill
    if cls.is_float and cls.width == 16:  # f16 / bf16: the bits, as the kernel ABI passes them
        return ctypes.c_uint16, _bits_fill(cls.numpy_dtype)
    raise TypeError(f"{cls.__name__} cannot be passed to a host function (convert it first, e.g. to Float32)")
