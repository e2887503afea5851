"""The memory a tensor argument may touch: a view's extent checked against the allocation behind it.

A view built with ``as_strided`` (numpy or torch), or a torch tensor whose storage was shrunk afterwards,
can describe elements past the end of the memory it lives in; a kernel reading them reads another
object's memory (or faults far past it). Before a launch, :func:`check_extent` compares the byte range
the view's shape and strides span with the allocation the framework exposes: the torch storage, or the
root of a numpy array's ``base`` chain (an array that owns its data, or a buffer object). Arrays and
tensors that are not views cost nothing; where the allocation is unknown (memory numpy did not allocate
and no base records), nothing is checked.
"""

from __future__ import annotations

from ctypes import addressof, c_char

import numpy as np

__all__ = ["check_extent", "span", "torch_view_inside"]


def span(ptr: int, shape, strides_bytes, itemsize: int) -> tuple[int, int]:
    """``[lo, hi)`` byte addresses covered by a (non-empty) strided view starting at ``ptr``."""
    lo = hi = ptr
    for n, s in zip(shape, strides_bytes):
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + itemsize


def _address(a: np.ndarray) -> int:
    try:  # writable contiguous memory (what owns data): the cheap way
        return addressof(c_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.__array_interface__["data"][0]


def _numpy_allocation(a: np.ndarray) -> tuple[int, int] | None:
    """``[start, end)`` of the memory at the root of ``a``'s base chain, or None when unknown."""
    b = a.base
    for _ in range(64):
        if isinstance(b, np.ndarray):
            if b.base is None:
                if not b.flags.owndata:
                    return None
                start = _address(b)
                return start, start + b.nbytes
            b = b.base
            continue
        if b is None:
            return None
        inner = getattr(b, "base", None)  # numpy's as_strided wrapper keeps the original array here
        if isinstance(inner, np.ndarray) and hasattr(b, "__array_interface__"):
            b = inner
            continue
        try:
            root = np.frombuffer(b, np.uint8)  # bytes, bytearray, memoryview, mmap: the whole buffer
        except (TypeError, ValueError, BufferError):
            return None
        start = _address(root)
        return start, start + root.nbytes
    return None


def check_extent(ref) -> tuple | None:
    """None when the view of ``ref`` (a :class:`~flydsl.runtime.args.TensorRef`) stays inside its
    allocation (or the allocation is unknown); else ``(lo, hi, start, end)`` byte addresses."""
    obj = ref.obj
    if isinstance(obj, np.ndarray):
        if obj.base is None or obj.size == 0:
            return None  # numpy allocated it for exactly this array (or no element is addressed)
        alloc = _numpy_allocation(obj)
        if alloc is None:
            return None
        lo, hi = span(ref.ptr, obj.shape, obj.strides, obj.itemsize)
    else:
        storage = getattr(obj, "untyped_storage", None)
        if storage is None or obj._base is None or obj.numel() == 0:
            return None  # not a view: torch allocated its storage for it (and checks its own resizes)
        s = storage()
        start = s.data_ptr()
        alloc = (start, start + s.nbytes())
        isz = obj.element_size()
        lo, hi = span(ref.ptr, obj.shape, [x * isz for x in obj.stride()], isz)
    if lo < alloc[0] or hi > alloc[1]:
        return lo, hi, alloc[0], alloc[1]
    return None


def torch_view_inside(t) -> bool:
    """True when torch tensor ``t`` (a view: ``t._base`` is set) stays inside its storage (the fast path's
    guard; a view outside takes the full path, which reports FLY223)."""
    if t.numel() == 0:
        return True
    s = t.untyped_storage()
    start = s.data_ptr()
    isz = t.element_size()
    lo, hi = span(t.data_ptr(), t.shape, [x * isz for x in t.stride()], isz)
    return start <= lo and hi <= start + s.nbytes()
