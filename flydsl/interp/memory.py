"""The interpreter's virtual address space: :class:`Memory` (global buffers) and :class:`Arena`.

Global pointers in the interpreter are int64 byte addresses. ``Memory.register(array, name)``
places a C-contiguous numpy array (any dtype, ml_dtypes included) at a fresh base address, aligned
to 256 bytes and never 0, with a gap after every buffer at least as large as the buffer itself, so
that a stray index lands in no buffer and faults. Addresses are never reused: a pointer into an
unregistered buffer faults instead of reading a newer one. Kernels read and write the registered
arrays in place, through byte views.

Shared and local memory do not live here (they are per block / per thread and per launch); the
generic address space maps them into two windows above every global address:
``SHARED_WINDOW + offset`` and ``LOCAL_WINDOW + offset`` (see :mod:`flydsl.interp.access`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Memory", "Arena", "Buffer", "SHARED_WINDOW", "LOCAL_WINDOW", "WINDOW_SHIFT", "view_dtype"]

WINDOW_SHIFT = 40
SHARED_WINDOW = 0x7E << WINDOW_SHIFT  # generic address of shared-memory offset 0
LOCAL_WINDOW = 0x7F << WINDOW_SHIFT  # generic address of local-memory offset 0
_FIRST_BASE = 0x1000_0000
_MIN_GAP = 1 << 16
_ALIGN = 256


def view_dtype(dt: np.dtype) -> np.dtype:
    """The dtype used to view memory for values of ``dt`` (bool is stored as one byte 0/1)."""
    return np.dtype(np.uint8) if dt == np.bool_ else dt


class Arena:
    """A flat byte array with cached typed views (``typed(dt)``: the largest prefix viewable as ``dt``)."""

    __slots__ = ("u8", "nbytes", "_views")

    def __init__(self, u8: np.ndarray):
        self.u8 = u8
        self.nbytes = int(u8.shape[0])
        self._views: dict = {}

    def typed(self, dt: np.dtype) -> np.ndarray:
        v = self._views.get(dt)
        if v is None:
            n = self.nbytes - self.nbytes % dt.itemsize
            v = self.u8[:n].view(dt)
            self._views[dt] = v
        return v


class Buffer(Arena):
    """A registered global buffer: ``[base, base + nbytes)`` backed by ``array``."""

    __slots__ = ("base", "end", "name", "array")

    def __init__(self, array: np.ndarray, name: str, base: int):
        super().__init__(array.reshape(-1).view(np.uint8))
        self.array = array
        self.name = name
        self.base = base
        self.end = base + self.nbytes

    def __repr__(self) -> str:
        return f"Buffer({self.name!r}, base=0x{self.base:x}, {self.nbytes} bytes, {self.array.dtype})"


class Memory:
    """A virtual global address space of registered numpy arrays."""

    def __init__(self):
        self._bufs: list[Buffer] = []
        self._bases = np.empty(0, np.int64)
        self._ends = np.empty(0, np.int64)
        self._next = _FIRST_BASE

    # -- registration ----------------------------------------------------------------------------

    def register(self, array: np.ndarray, name: str = "") -> int:
        """Place ``array`` in the address space; returns its base byte address.

        Args:
            array: a C-contiguous numpy array (any dtype); kernels access it in place.
            name: used in fault messages.
        Raises:
            TypeError / ValueError: not a numpy array, or not C-contiguous.
        """
        if not isinstance(array, np.ndarray):
            raise TypeError(f"Memory.register takes a numpy array, got {type(array).__name__}")
        if not array.flags.c_contiguous:
            raise ValueError(f"buffer '{name}' is not C-contiguous (pass np.ascontiguousarray(x) and copy back)")
        base = self._next
        buf = Buffer(array, name or f"buffer@0x{base:x}", base)
        gap = max(_MIN_GAP, buf.nbytes)
        nxt = base + max(buf.nbytes, 1) + gap
        self._next = (nxt + _ALIGN - 1) // _ALIGN * _ALIGN
        if self._next >= SHARED_WINDOW:
            raise MemoryError("the interpreter's global address space is exhausted")
        self._bufs.append(buf)
        self._rebuild()
        return base

    def unregister(self, key) -> None:
        """Remove a buffer given by its base address, its array or its name (KeyError if unknown)."""
        for i, b in enumerate(self._bufs):
            if (isinstance(key, np.ndarray) and b.array is key) or (
                not isinstance(key, np.ndarray) and (b.base == key if isinstance(key, int) else b.name == key)
            ):
                del self._bufs[i]
                self._rebuild()
                return
        raise KeyError(f"no registered buffer {key!r}")

    def base_of(self, array: np.ndarray) -> int:
        """Base address of a registered array (by identity)."""
        for b in self._bufs:
            if b.array is array:
                return b.base
        raise KeyError("array is not registered")

    @property
    def buffers(self) -> list[Buffer]:
        return list(self._bufs)

    def _rebuild(self) -> None:
        self._bases = np.array([b.base for b in self._bufs], np.int64)
        self._ends = np.array([b.end for b in self._bufs], np.int64)

    # -- lookup ----------------------------------------------------------------------------------

    def find(self, addr: int) -> Buffer | None:
        """The buffer whose bytes contain ``addr``, or None."""
        i = int(np.searchsorted(self._bases, addr, "right")) - 1
        if i >= 0 and addr < self._ends[i]:
            return self._bufs[i]
        return None

    def nearest(self, addr: int) -> Buffer | None:
        """The buffer containing ``addr``, else the closest one (for fault messages)."""
        if not self._bufs:
            return None
        i = int(np.searchsorted(self._bases, addr, "right")) - 1
        cands = [j for j in (i, i + 1) if 0 <= j < len(self._bufs)]

        def dist(j):
            b = self._bufs[j]
            return 0 if b.base <= addr < b.end else min(abs(addr - b.base), abs(addr - b.end + 1))

        return self._bufs[min(cands, key=dist)]

    def locate(self, a: np.ndarray, size: int):
        """Map element addresses to buffers.

        Args:
            a: int64 addresses (k,), each the first byte of a ``size``-byte element.
        Returns:
            ``(groups, bad)``: ``groups`` is a list of ``(buffer, pos)`` with ``pos`` None (all k) or
            an index array; ``bad`` is the position of the first element outside every buffer, or -1.
        """
        bases, ends = self._bases, self._ends
        if a.shape[0] == 0:
            return [], -1
        lo = int(a.min())
        hi = int(a.max())
        i = int(np.searchsorted(bases, lo, "right")) - 1
        if i >= 0 and hi + size <= ends[i]:
            return [(self._bufs[i], None)], -1
        idx = np.searchsorted(bases, a, "right") - 1
        safe = np.maximum(idx, 0)
        ok = (idx >= 0) & (a + size <= ends[safe]) if len(bases) else np.zeros(a.shape, np.bool_)
        if not ok.all():
            return [], int(np.flatnonzero(~ok)[0])
        groups = []
        for j in np.unique(idx).tolist():
            groups.append((self._bufs[j], np.flatnonzero(idx == j)))
        return groups, -1
