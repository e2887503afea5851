"""Raw-pointer arguments: ``flyc.from_c_void_p(dtype, address)`` (FlyDSL's name).

The launcher receives the address as an ``fx.Pointer`` of ``dtype`` in ``address_space`` (global by
default); the specialization key holds the dtype, the address space and the alignment (``assumed_align``,
else the address's own, capped at 16). On the GPU the address is passed as is; the CPU interpreter
registers the live tensor/array that holds it (:func:`flydsl.runtime.raw_pointer.owning_region`).
"""

from __future__ import annotations

from ..expr._sem.numeric import resolve_dtype
from ..ir import AddressSpace
from ..runtime.args import alignment_of
from ..runtime.raw_pointer import RawAddress

__all__ = ["PointerArg", "from_c_void_p", "convert_pointer_arg"]


class PointerArg:
    """An address with its element type, address space and known alignment."""

    __slots__ = ("dtype", "address", "address_space", "alignment", "assumed")

    def __init__(self, dtype, address: int, address_space=AddressSpace.GLOBAL, alignment: int = 0):
        self.dtype, self.address = dtype, int(address)
        self.address_space = AddressSpace.BY_NAME.get(address_space, address_space)
        self.assumed = alignment  # the caller's assumed_align (0: none, the address's own is used)
        self.alignment = alignment or alignment_of(self.address)

    def __repr__(self) -> str:
        return f"PointerArg({self.dtype.__name__}, 0x{self.address:x})"


def from_c_void_p(dtype, ptr, *, address_space=AddressSpace.GLOBAL, assumed_align=None) -> PointerArg:
    """A raw address (an int or a ``ctypes.c_void_p``) as an ``fx.Pointer`` argument of ``dtype``.

    Raises:
        TypeError: ``dtype`` is not an fx numeric type, or ``ptr`` is not an address.
    """
    addr = getattr(ptr, "value", ptr)
    if addr is None:
        addr = 0
    if isinstance(addr, bool) or not isinstance(addr, int):
        raise TypeError(f"from_c_void_p needs an integer address or a ctypes.c_void_p, got {type(ptr).__name__}")
    align = min(16, int(assumed_align)) if assumed_align else 0
    return PointerArg(resolve_dtype(dtype), addr, address_space, align)


def convert_pointer_arg(p: PointerArg, key: list, vals: list) -> None:
    """The key part and launch value of a :class:`PointerArg` (the specializer's converter of the type)."""
    key.append(("pointer", p.dtype, p.address_space, p.alignment))
    vals.append(RawAddress(p.address))
