"""Shared-memory allocation: ``fx.Arena`` (a bump allocator) and ``fx.SharedAllocator``.

``allocator.allocate(T)`` pads the cursor to ``T``'s alignment (or ``alignment=`` if larger) and returns
an ``fx.Storage[T]`` there; ``allocate(n)`` allocates ``n`` raw bytes (``Storage[Array[Uint8, n]]``);
``allocated_bytes`` is the cursor, padding included.

``fx.SharedAllocator(base_alignment=16, *, static=True)`` lives inside one ``@flyc.kernel`` (at most one
per kernel):

* ``static=True`` — each ``allocate`` is one static shared allocation (``ptr.shared_alloc``, C's
  ``__shared__``), laid out in program order; the kernel's total is checked against the target's
  ``smem_static_max`` (48 KB on sm_90).
* ``static=False`` — every allocation is an offset into the dynamic shared memory base
  (``ptr.dynamic_shared``, C's ``extern __shared__``); the total (plus any static shared memory) is
  checked against ``smem_dynamic_max`` (227 KB on sm_90) and recorded on the kernel as the
  ``dynamic_smem_bytes`` attribute, which ``launch(smem=None)`` uses.
"""

from __future__ import annotations

from .. import ir
from . import gpu as _gpu
from ._sem.context import current_target
from ._sem.numeric import Int8, Uint8
from .struct import Array, Storage, dsl_align_of, dsl_size_of, is_storable

__all__ = ["Arena", "SharedAllocator", "SharedMemoryError", "DYNAMIC_SMEM_ATTR"]

SharedMemoryError = _gpu.SharedMemoryError
DYNAMIC_SMEM_ATTR = "dynamic_smem_bytes"  # gpu.func attribute: bytes of dynamic shared memory the kernel needs


def _align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


class Arena:
    """A bump allocator over memory a subclass provides (:attr:`base_ptr`).

    Args:
        base_alignment: the alignment of the base address (a power of two).
    """

    def __init__(self, base_alignment: int = 16):
        if type(base_alignment) is not int or base_alignment <= 0 or base_alignment & (base_alignment - 1):
            raise ValueError(f"base_alignment must be a positive power of two, got {base_alignment!r}")
        self.base_alignment = base_alignment
        self._cursor = 0

    @property
    def allocated_bytes(self) -> int:
        """Bytes allocated so far, alignment padding included."""
        return self._cursor

    @property
    def base_ptr(self):
        """The base address (a subclass provides it)."""
        raise NotImplementedError("fx.Arena has no memory of its own; a subclass provides base_ptr")

    def allocate(self, t, alignment: int | None = None) -> Storage:
        """A ``Storage[t]`` of fresh memory (``t``: a storable type, or a byte count).

        Args:
            t: a storable type (Numeric, ``fx.Array``, ``fx.Align``, ``@fx.struct``/``@fx.union``) or a
                positive int (raw bytes, ``Storage[Array[Uint8, n]]``).
            alignment: raise this allocation's start alignment (a power of two).

        Raises:
            TypeError: ``t`` is not storable. ValueError: a non-positive byte count or bad alignment.
        """
        if isinstance(t, int) and not isinstance(t, bool):
            if t <= 0:
                raise ValueError(f"allocate(nbytes): nbytes must be > 0, got {t}")
            t = Array[Uint8, t]
        if not is_storable(t):
            raise TypeError(f"allocate: {getattr(t, '__name__', t)!r} is not Storable")
        a = dsl_align_of(t)
        if alignment is not None:
            if type(alignment) is not int or alignment <= 0 or alignment & (alignment - 1):
                raise ValueError(f"allocate: alignment must be a positive power of two, got {alignment!r}")
            a = max(a, alignment)
        size = dsl_size_of(t)
        start = _align_up(self._cursor, a)
        ptr = self._place(t, start, size, a)
        self._cursor = start + size
        return Storage[t](ptr, self._known_align(a))

    def _known_align(self, a: int) -> int:
        """The alignment an allocation aligned to ``a`` is known to have (offsets are relative to the base)."""
        return min(a, self.base_alignment)

    def _place(self, t, start: int, size: int, align: int):
        return self.base_ptr.recast(Int8) + start


def _enclosing_kernel() -> ir.Op | None:
    b = ir.current_block()
    while b is not None:
        op = b.parent_op
        if op is None:
            return None
        if op.defn.name == "gpu.func" and op.attrs.get("kernel"):
            return op
        b = op.parent
    return None


_ALLOCATOR_ATTR = "shared_allocator"


class SharedAllocator(Arena):
    """The shared-memory allocator of a kernel (see the module docstring).

    Args:
        base_alignment: alignment of the shared base (16 by default).
        static: True: static allocations (checked against ``smem_static_max``); False: offsets into the
            dynamic shared memory sized at launch (checked against ``smem_dynamic_max``).

    Raises:
        RuntimeError: created outside a ``@flyc.kernel`` body, or a second one in the same kernel.
    """

    def __init__(self, base_alignment: int = 16, *, static: bool = True):
        super().__init__(base_alignment)
        k = _enclosing_kernel()
        if k is None:
            raise RuntimeError("fx.SharedAllocator() can only be created inside a @flyc.kernel body")
        if k.attrs.get(_ALLOCATOR_ATTR):
            raise RuntimeError(
                "Only one SharedAllocator per kernel: allocate every buffer from the first one "
                "(allocator.allocate(...) can be called many times)"
            )
        k.attrs[_ALLOCATOR_ATTR] = "static" if static else "dynamic"
        self.static = bool(static)
        self._kernel = k
        self._dyn_base = None

    @property
    def base_ptr(self):
        """The dynamic shared base (``static=False`` only)."""
        if self.static:
            raise RuntimeError("a static SharedAllocator has no base pointer: each allocation is its own buffer")
        if self._dyn_base is None:
            self._dyn_base = _gpu.get_dyn_shared()
        return self._dyn_base

    def _known_align(self, a: int) -> int:
        return a if self.static else min(a, self.base_alignment)

    def _place(self, t, start: int, size: int, align: int):
        name = getattr(t, "__name__", str(t))
        tgt = current_target()
        if self.static:
            used = _gpu.shared_usage()
            end = _align_up(used, align) + size
            if end > tgt.smem_static_max:
                raise SharedMemoryError(
                    f"SharedAllocator: allocating {name} ({size} bytes, align {align}) brings this kernel's "
                    f"static shared memory to {end} bytes ({used} already allocated), over the "
                    f"{tgt.smem_static_max}-byte static limit of {tgt.arch}. Use fx.SharedAllocator(static=False) "
                    f"(dynamic shared memory, up to {tgt.smem_dynamic_max} bytes on {tgt.arch}) or allocate less"
                )
            return _gpu.alloc_shared(Uint8, size, align).recast(Int8)
        total = start + size
        static_used = _gpu.shared_usage()
        if total + static_used > tgt.smem_dynamic_max:
            raise SharedMemoryError(
                f"SharedAllocator(static=False): allocating {name} ({size} bytes, align {align}) brings this "
                f"kernel's dynamic shared memory to {total} bytes (+{static_used} static), over the "
                f"{tgt.smem_dynamic_max}-byte limit of {tgt.arch}. Use smaller tiles or fewer pipeline stages"
            )
        self._kernel.attrs[DYNAMIC_SMEM_ATTR] = _align_up(total, 16)
        return self.base_ptr.recast(Int8) + start
