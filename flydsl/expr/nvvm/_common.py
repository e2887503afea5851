"""Helpers shared by :mod:`.hopper` and :mod:`.tma`: integer operands and mbarrier pointers."""

from __future__ import annotations

from ...ir import AddressSpace, i64
from ..numeric import Int32, Int64, Numeric, as_numeric
from ..pointer import Pointer, as_pointer


def _i32(x, what: str):
    v = as_numeric(x)
    if not isinstance(v, Numeric) or not v.dtype.is_integer:
        raise TypeError(f"{what} must be an integer, got {x!r}")
    return (v if v.dtype is Int32 else v.to(Int32)).ir_value()


def _bar(bar) -> Pointer:
    """The mbarrier pointer (an 8-byte aligned fx.Int64 in shared memory; raw byte pointers are recast)."""
    p = bar.ptr if hasattr(type(bar), "peek") else as_pointer(bar)  # an fx.Storage from a SharedAllocator
    if p.address_space != AddressSpace.SHARED:
        raise TypeError(
            f"an mbarrier is an fx.Int64 in shared memory, got a {p.memspace} pointer {p.type} "
            "(allocate it with fx.alloc_shared(fx.Int64, n, align=8) or a SharedAllocator)"
        )
    return p if p.type.elem is i64 else p.recast(Int64)
