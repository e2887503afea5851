"""Kernel argument packing for ``cuLaunchKernel``: a ``void*[]`` built once per kernel, whose slots
(ctypes scalars) are overwritten on every launch.

Each parameter kind has a setter ``set(slot, value)``. Pointers accept a Python int, anything with
``data_ptr()`` (torch tensors), ``__cuda_array_interface__`` (cupy, numba) or ``.ptr`` (cuda.core
buffers); the converter for each argument type is found once and cached, so the per-call cost is a
dict lookup and one attribute call.
"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np

from ..codegen.kernel_info import param_kind

__all__ = ["ParamPack", "PARAM_KINDS", "pointer_of"]

# kind -> ctypes slot type
PARAM_KINDS = {
    "ptr": ctypes.c_uint64,
    "i1": ctypes.c_uint8,
    "i8": ctypes.c_int8,
    "i16": ctypes.c_int16,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "f16": ctypes.c_uint16,
    "bf16": ctypes.c_uint16,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "rsrc": ctypes.c_uint64 * 2,
    "tmap": ctypes.c_uint64 * 16,  # a TMA descriptor (CUtensorMap), 128 bytes by value (runtime/tma.py)
}

_PTR_CONVERTERS: dict[type, object] = {}


def _ptr_from_data_ptr(x) -> int:
    return x.data_ptr()


def _ptr_from_cai(x) -> int:
    return x.__cuda_array_interface__["data"][0]


def _ptr_from_attr(x) -> int:
    return int(x.ptr)


def _ptr_from_int(x) -> int:
    return int(x)


def _ptr_none(x) -> int:
    return 0


def _find_ptr_converter(tp: type):
    if tp is int or issubclass(tp, (int, np.integer)):
        return _ptr_from_int
    if tp is type(None):
        return _ptr_none
    if hasattr(tp, "data_ptr"):
        return _ptr_from_data_ptr
    if hasattr(tp, "__cuda_array_interface__"):
        return _ptr_from_cai
    if hasattr(tp, "ptr"):
        return _ptr_from_attr
    if hasattr(tp, "__int__"):
        return _ptr_from_int
    if issubclass(tp, np.ndarray):
        raise TypeError("a numpy array lives in host memory; pass a device tensor or a device pointer (int)")
    raise TypeError(
        f"cannot pass a {tp.__name__} as a device pointer; pass a torch CUDA tensor, an object with "
        "__cuda_array_interface__, or an int address"
    )


def pointer_of(x) -> int:
    """Device address of ``x`` (see the module docstring)."""
    tp = type(x)
    conv = _PTR_CONVERTERS.get(tp)
    if conv is None:
        conv = _PTR_CONVERTERS[tp] = _find_ptr_converter(tp)
    return conv(x)


def _set_ptr(slot, x):
    tp = type(x)
    if tp is int:
        slot.value = x
        return
    conv = _PTR_CONVERTERS.get(tp)
    if conv is None:
        conv = _PTR_CONVERTERS[tp] = _find_ptr_converter(tp)
    slot.value = conv(x)


def _set_int(slot, x):
    slot.value = x if type(x) is int else int(x)


def _set_bool(slot, x):
    slot.value = 1 if x else 0


def _set_float(slot, x):
    slot.value = x


def _set_f16(slot, x):
    slot.value = int(np.array(x, dtype=np.float16).view(np.uint16))


def bf16_bits(x) -> int:
    """A Python float's bf16 bits as the native helper packs them: rounded to f32 first, then to bf16 (ties to
    even each time). Explicit, because ml_dtypes 0.7 rounds a double to bf16 in one step (1 + 2^-8 + 2^-30
    gave 0x3F81 there, 0x3F80 through f32)."""
    with np.errstate(over="ignore"):
        return int(np.array(x, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))


def _set_bf16(slot, x):
    slot.value = bf16_bits(x)


def _set_rsrc(slot, x):
    base, nbytes = x
    slot[0] = pointer_of(base)
    slot[1] = int(nbytes)


def _set_tmap(slot, x):
    from .tma import set_tmap_param

    set_tmap_param(slot, x)


_SETTERS = {
    "ptr": _set_ptr,
    "i1": _set_bool,
    "i8": _set_int,
    "i16": _set_int,
    "i32": _set_int,
    "i64": _set_int,
    "f16": _set_f16,
    "bf16": _set_bf16,
    "f32": _set_float,
    "f64": _set_float,
    "rsrc": _set_rsrc,
    "tmap": _set_tmap,
}


class ParamPack:
    """The ``void*[]`` of one kernel and its per-slot setters."""

    __slots__ = ("kinds", "slots", "array", "address", "setters", "n")

    def __init__(self, kinds):
        kinds = [_kind_of(k) for k in kinds]
        for k in kinds:
            if k not in PARAM_KINDS:
                raise ValueError(f"unsupported kernel parameter kind {k!r}; known: {', '.join(PARAM_KINDS)}")
        self.kinds = kinds
        self.slots = [PARAM_KINDS[k]() for k in kinds]
        self.n = len(kinds)
        self.array = (ctypes.c_void_p * max(self.n, 1))(*[ctypes.addressof(s) for s in self.slots])
        self.address = ctypes.addressof(self.array)
        self.setters = [_SETTERS[k] for k in kinds]

    def set(self, args, kernel: str) -> None:
        """Write ``args`` into the slots (raises TypeError naming the kernel and the argument)."""
        if len(args) != self.n:
            raise TypeError(f"kernel {kernel} takes {self.n} arguments, got {len(args)}")
        slots = self.slots
        for i, setter in enumerate(self.setters):
            try:
                setter(slots[i], args[i])
            except (TypeError, ValueError, OverflowError) as e:
                raise TypeError(f"kernel {kernel}: argument {i} ({self.kinds[i]}): {e}") from None


def _kind_of(k) -> str:
    """A kind string from a kind, a :class:`~flydsl.codegen.ParamSpec`, or an IR type."""
    kind = getattr(k, "kind", None)
    if kind is not None:
        return str(kind)
    if isinstance(k, str):
        return "i64" if k == "index" else k
    return param_kind(k)
