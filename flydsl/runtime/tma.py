"""TMA descriptors on the CUDA device: the canonical descriptor (flydsl/dialects/nvvm_sm90.py) encoded into
the driver's 128-byte ``CUtensorMap`` with ``cuTensorMapEncodeTiled``.

The host function of a launcher computes the canonical record on every call (cheap: cached per pointer,
extents and strides in the interpreter's host op); the kernel's parameter packer turns it into the
``CUtensorMap`` through :func:`encoded`, which caches the driver's encoding per canonical record —
i.e. per (pointer, shape, strides, box, swizzle, element type, fill, L2 promotion). A cached launch with
the same tensors costs one dictionary lookup and a 128-byte copy per descriptor.

The driver is called through ``ctypes`` on ``libcuda.so.1`` (as the launch path does), else through
cuda-bindings. Encoding failures raise :class:`TmaEncodeError` with the driver's message and the fields.
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict

import numpy as np

from ..dialects.nvvm_sm90 import TmaFields, tma_desc_decode

__all__ = ["TmaEncodeError", "encoded", "encode_fields", "set_tmap_param"]

_LOCK = threading.Lock()
_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 4096
_FN: list = [None]


class TmaEncodeError(RuntimeError):
    """``cuTensorMapEncodeTiled`` refused a descriptor."""


def _ctypes_encoder():
    f = _FN[0]
    if f is None:
        try:
            f = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
            u32, u64, p = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
            f.argtypes = [p, ctypes.c_int, u32, p, ctypes.POINTER(u64), ctypes.POINTER(u64), ctypes.POINTER(u32),
                          ctypes.POINTER(u32), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]  # fmt: skip
            f.restype = ctypes.c_int
        except (OSError, AttributeError):
            f = False
        _FN[0] = f
    return f or None


def encode_fields(f: TmaFields) -> bytes:
    """The driver's ``CUtensorMap`` (128 bytes) for ``f``.

    Raises:
        TmaEncodeError: the driver refused (its error name and the fields), or no driver is available.
    """
    err = f.check()
    if err:
        raise TmaEncodeError(f"invalid TMA descriptor: {err}")
    r = f.rank
    swz = {0: 0, 32: 1, 64: 2, 128: 3}[f.swizzle]
    fn = _ctypes_encoder()
    if fn is not None:
        out = (ctypes.c_uint64 * 16)()
        dims = (ctypes.c_uint64 * r)(*f.dims)
        strides = (ctypes.c_uint64 * max(1, r - 1))(*(f.strides or (0,)))
        box = (ctypes.c_uint32 * r)(*f.box)
        es = (ctypes.c_uint32 * r)(*f.elem_strides)
        res = fn(ctypes.addressof(out), f.dtype_code, r, ctypes.c_void_p(f.address), dims, strides, box, es, 0, swz,
                 f.l2_promotion, 1 if f.oob_nan else 0)  # fmt: skip
        if res != 0:
            raise TmaEncodeError(f"cuTensorMapEncodeTiled failed ({_error_name(res)}) for {_describe(f)}")
        return bytes(out)
    return _encode_bindings(f, swz)


def _encode_bindings(f: TmaFields, swz: int) -> bytes:
    try:
        from cuda.bindings import driver as d
    except ImportError:
        raise TmaEncodeError("TMA descriptors need the CUDA driver (libcuda) or cuda-bindings") from None
    res = d.cuTensorMapEncodeTiled(
        d.CUtensorMapDataType(f.dtype_code), f.rank, f.address, list(f.dims), list(f.strides), list(f.box),
        list(f.elem_strides), d.CUtensorMapInterleave(0), d.CUtensorMapSwizzle(swz),
        d.CUtensorMapL2promotion(f.l2_promotion), d.CUtensorMapFloatOOBfill(1 if f.oob_nan else 0),
    )  # fmt: skip
    if res[0] != d.CUresult.CUDA_SUCCESS:
        raise TmaEncodeError(f"cuTensorMapEncodeTiled failed ({res[0]}) for {_describe(f)}")
    return ctypes.string_at(int(res[1].getPtr()), 128)


def _error_name(code: int) -> str:
    try:
        from cuda.bindings import driver as d

        from .cuda import _error_name as name

        return name(d.CUresult(code))
    except Exception:  # noqa: BLE001 - reporting must not fail
        return f"CUresult {code}"


def _describe(f: TmaFields) -> str:
    return (
        f"address 0x{f.address:x}, extents {f.dims}, byte strides {f.strides}, box {f.box}, "
        f"element type code {f.dtype_code}, swizzle {f.swizzle}"
    )


def encoded(value) -> bytes:
    """The ``CUtensorMap`` of a canonical descriptor value (int64 ``(1, 16)`` array or its bytes), cached."""
    key = value if isinstance(value, bytes) else np.ascontiguousarray(np.asarray(value)).tobytes()
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    f = tma_desc_decode(np.frombuffer(key, np.int64))
    if f is None:
        raise TmaEncodeError("a TMA descriptor parameter got something that is not a descriptor from tma_make_desc")
    enc = encode_fields(f)
    with _LOCK:
        _CACHE[key] = enc
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return enc


def set_tmap_param(slot, value) -> None:
    """The parameter packer's setter for a ``!fly.tma_desc`` kernel parameter (a 128-byte slot)."""
    ctypes.memmove(ctypes.addressof(slot), encoded(value), 128)
