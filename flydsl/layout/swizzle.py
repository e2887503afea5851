"""Bit swizzles (CuTe ``Swizzle<B, M, S>``): integer -> integer permutations used for shared memory.

Input: an offset (static int or traced integer). Output: the swizzled offset.
"""

from __future__ import annotations

from .inttuple import INTS

__all__ = ["Swizzle"]


class Swizzle:
    """CuTe's ``Swizzle<B, M, S>``, constructed as ``Swizzle(bits, base, shift)``.

    FlyDSL spells the same three parameters ``Swizzle(mask, base, shift)``: ``mask`` there is the
    *number of mask bits* ``B``, not a bit mask. With

    * ``bits`` (B): how many bits are xor-ed,
    * ``base`` (M): how many low bits are left alone (``2**M`` elements form an unswizzled vector),
    * ``shift`` (S): the distance between the source bits (``yyy``) and the target bits (``zzz``),

    ``yyy_mask = (2**B - 1) << (M + max(0, S))``, ``zzz_mask = (2**B - 1) << (M - min(0, S))`` and
    ``apply(x) = x ^ ((x & yyy_mask) >> S)`` (a left shift by ``-S`` when ``S < 0``). ``|S| >= B``
    keeps the two bit ranges disjoint, so the swizzle is an involution and a bijection of every
    aligned block of ``2**(B + M + |S|)`` offsets. Prints as ``Sw<B,M,S>``.
    """

    __slots__ = ("_bits", "_base", "_shift")

    def __init__(self, bits: int, base: int, shift: int):
        for name, v in (("bits", bits), ("base", base), ("shift", shift)):
            if type(v) not in INTS:
                raise TypeError(f"Swizzle {name} must be a Python int, got {v!r}")
        if bits < 0 or base < 0:
            raise ValueError(f"Swizzle(bits={bits}, base={base}, shift={shift}): bits and base must be >= 0")
        if abs(shift) < bits:
            raise ValueError(
                f"Swizzle(bits={bits}, base={base}, shift={shift}): |shift| must be >= bits so that the "
                "source and target bit ranges do not overlap"
            )
        self._bits, self._base, self._shift = bits, base, shift

    bits = property(lambda self: self._bits, doc="Number of xor-ed bits (CuTe ``B``).")
    base = property(lambda self: self._base, doc="Number of untouched low bits (CuTe ``M``).")
    shift = property(lambda self: self._shift, doc="Distance from source to target bits (CuTe ``S``).")
    mask = property(lambda self: self._bits, doc="FlyDSL's name for ``bits`` (a bit count, not a mask).")

    @property
    def yyy_mask(self) -> int:
        """The source bits that are read."""
        return ((1 << self._bits) - 1) << (self._base + max(0, self._shift))

    @property
    def zzz_mask(self) -> int:
        """The target bits that are flipped."""
        return ((1 << self._bits) - 1) << (self._base - min(0, self._shift))

    @property
    def is_static(self) -> bool:
        return True

    def apply(self, offset):
        """Swizzle an offset; a traced offset needs ``& ^ >> <<`` operators."""
        if self._bits == 0:
            return offset
        if type(offset) not in INTS and not hasattr(offset, "__xor__"):
            raise TypeError(f"cannot swizzle {offset!r}: it does not support bitwise operators")
        picked = offset & self.yyy_mask
        moved = picked >> self._shift if self._shift >= 0 else picked << -self._shift
        return offset ^ moved

    __call__ = apply

    def size(self) -> int:
        """The period of the permutation: ``2**(B + M + |S|)``."""
        return 1 << (self._bits + self._base + abs(self._shift))

    cosize = size

    def __eq__(self, other):
        if type(other) is not Swizzle:
            return NotImplemented
        return (self._bits, self._base, self._shift) == (other._bits, other._base, other._shift)

    def __hash__(self):
        return hash(("Swizzle", self._bits, self._base, self._shift))

    def __str__(self):
        return f"Sw<{self._bits},{self._base},{self._shift}>"

    __repr__ = __str__
