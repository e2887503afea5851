"""Hopper shared-memory layouts in the layout algebra, and what the hardware needs derived from them:
wgmma matrix-descriptor fields and TMA boxes.

Canonical swizzle atoms (CuTe's ``GMMA::Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom``), in elements of
``e`` bytes with ``T = 16/e`` elements per 16-byte unit and ``W = swizzle/16`` units per row::

    K-major   Sw<B, 4-log2(e), 3> o (8, W·T):(W·T, 1)       (MN, K) = (8 rows, one swizzle row of K)
    MN-major  Sw<B, 4-log2(e), 3> o (W·T, 8):(1, W·T)       (MN, K) = (one swizzle row of MN, 8)

with ``B = log2(W)`` (no swizzle: ``W = 1`` and no ``Sw``). A tile is the atom repeated over
``(MN, K[, stages])`` (:func:`gmma_smem_layout`, CuTe's ``tile_to_shape``). The swizzle acts on the
element offset from a base aligned to its period (1024 bytes for 128-byte swizzling): the same
absolute-address swizzle TMA writes and wgmma reads.

Nothing here is hand-written per kernel: :func:`gmma_desc_fields` fits the PTX canonical layout of a
wgmma operand (a ``rows × k`` view of such a tile) to the layout itself and checks it at every
element, and :func:`tma_box_plan` finds the TMA boxes that write a tile exactly as its layout says.
Both raise :class:`GmmaLayoutError` (a ``ValueError``) naming what is not representable.
"""

from __future__ import annotations

from functools import lru_cache

from .algebra import tile_to_shape
from .inttuple import INTS, TUPLES, flatten
from .layout import ComposedLayout, Layout
from .swizzle import Swizzle

__all__ = [
    "SWIZZLES", "GmmaLayoutError", "gmma_atom", "gmma_smem_layout", "GmmaDescFields", "gmma_desc_fields",
    "encode_gmma_desc", "TmaBoxPlan", "tma_box_plan", "layout_table", "split_swizzle", "swizzle_bytes_of",
]  # fmt: skip

SWIZZLES = (0, 32, 64, 128)
_LAYOUT_TYPE = {0: 0, 128: 1, 64: 2, 32: 3}  # swizzle bytes -> descriptor bits 62-63


class GmmaLayoutError(ValueError):
    """A shared-memory layout that a wgmma descriptor or a TMA box cannot express."""


def _log2(x: int) -> int:
    return x.bit_length() - 1


def _elem_bytes(elem_bits: int) -> int:
    if elem_bits not in (8, 16, 32):
        raise GmmaLayoutError(f"wgmma/TMA shared layouts take 8-, 16- or 32-bit elements, got {elem_bits} bits")
    return elem_bits // 8


def _swizzle(swizzle: int, e: int) -> Swizzle | None:
    if swizzle not in SWIZZLES:
        raise GmmaLayoutError(f"swizzle must be one of {SWIZZLES} bytes, got {swizzle!r}")
    if swizzle == 0:
        return None
    return Swizzle(_log2(swizzle // 16), 4 - _log2(e), 3)


def gmma_atom(elem_bits: int, major: str = "K", swizzle: int = 128):
    """The canonical atom over ``(MN, K)`` (see the module docstring)."""
    e = _elem_bytes(elem_bits)
    w, t = max(1, swizzle // 16), 16 // e
    if major == "K":
        outer = Layout((8, w * t), (w * t, 1))
    elif major == "MN":
        outer = Layout((w * t, 8), (1, w * t))
    else:
        raise GmmaLayoutError(f"major must be 'K' or 'MN', got {major!r}")
    sw = _swizzle(swizzle, e)
    return outer if sw is None else ComposedLayout(sw, 0, outer)


def gmma_smem_layout(elem_bits: int, shape, major: str = "K", swizzle: int = 128, stages: int | None = None):
    """A tile ``(MN, K)`` (or ``(MN, K, stages)``) of the canonical atom, as CuTe's ``tile_to_shape``
    (K-major: atoms repeat along MN first; MN-major: along K first).

    Raises:
        GmmaLayoutError: the tile extents are not multiples of the atom's.
    """
    atom = gmma_atom(elem_bits, major, swizzle)
    mn, k = shape
    tgt = (mn, k) if stages is None else (mn, k, stages)
    a_mn, a_k = (atom.outer if isinstance(atom, ComposedLayout) else atom)._shape
    if mn % a_mn or k % a_k:
        raise GmmaLayoutError(
            f"a {major}-major {swizzle}-byte-swizzled tile of {elem_bits}-bit elements needs MN a multiple of {a_mn} "
            f"and K a multiple of {a_k}, got ({mn}, {k})"
        )
    # NOTE: MN-major atoms repeat along K first, so that a TMA box of a whole swizzle row of MN by all
    # of K is dense (one copy per MN atom column instead of one per 8 rows of K)
    order = None if major == "K" else ((1, 0) if stages is None else (1, 0, 2))
    return tile_to_shape(atom, tgt, order)


def split_swizzle(layout):
    """``(swizzle or None, offset, outer layout)`` of a layout or swizzled ComposedLayout."""
    if isinstance(layout, ComposedLayout):
        inner = layout.inner
        if not isinstance(inner, Swizzle):
            raise GmmaLayoutError(f"only swizzle compositions are supported, got {layout}")
        off = layout.offset
        if type(off) not in INTS:
            raise GmmaLayoutError(f"the layout's offset must be static, got {layout}")
        return inner, off, layout.outer
    if isinstance(layout, Layout):
        return None, 0, layout
    raise GmmaLayoutError(f"expected a layout, got {layout!r}")


def swizzle_bytes_of(sw: Swizzle | None, e: int) -> int:
    """The 32/64/128-byte hardware swizzle that ``sw`` (in elements of ``e`` bytes) is, 0 for none."""
    if sw is None or sw.bits == 0:
        return 0
    if sw.shift != 3 or sw.base != 4 - _log2(e) or not 1 <= sw.bits <= 3:
        raise GmmaLayoutError(
            f"{sw} on {8 * e}-bit elements is not a hardware swizzle (32/64/128-byte swizzles are "
            f"Sw<1..3,{4 - _log2(e)},3> here)"
        )
    return 16 << sw.bits


def _mode_values(shape, stride) -> list[int]:
    """Values of one (hierarchical) mode for its colexicographic index 0, 1, …"""
    s, d = flatten(shape), flatten(stride)
    s = s if type(s) in TUPLES else (s,)
    d = d if type(d) in TUPLES else (d,)
    vals = [0]
    for n, st in zip(s, d):
        if type(n) not in INTS or type(st) not in INTS:
            raise GmmaLayoutError("the shared-memory layout must be static")
        vals = [v + i * st for i in range(n) for v in vals]
    return vals


@lru_cache(maxsize=256)
def _tables(outer: Layout) -> tuple:
    if outer.rank < 2:
        raise GmmaLayoutError(f"expected an (MN, K[, stages]) layout, got {outer}")
    modes = [_mode_values(outer._shape[i], outer._stride[i]) for i in range(outer.rank)]
    m0, m1 = modes[0], modes[1]
    return tuple(tuple(a + b for b in m1) for a in m0), tuple(tuple(m) for m in modes[2:])


def layout_table(outer: Layout, offset: int = 0, rest=()) -> list[list[int]]:
    """``table[i][j] = offset + outer(i, j, *rest)`` over modes 0 and 1 of a static layout (modes after
    the second are fixed at the colexicographic indices ``rest``)."""
    tab, more = _tables(outer)
    extra = offset + sum(more[i][r] for i, r in enumerate(rest))
    return [[v + extra for v in row] for row in tab]


class GmmaDescFields:
    """The layout-dependent part of a wgmma descriptor (byte offsets) and the operand's start offset."""

    __slots__ = ("swizzle", "lbo", "sbo", "start")

    def __init__(self, swizzle: int, lbo: int, sbo: int, start: int):
        self.swizzle, self.lbo, self.sbo, self.start = swizzle, lbo, sbo, start

    def __repr__(self) -> str:
        return f"GmmaDescFields(swizzle={self.swizzle}, lbo={self.lbo}, sbo={self.sbo}, start={self.start})"

    def __eq__(self, other):
        return isinstance(other, GmmaDescFields) and (self.swizzle, self.lbo, self.sbo, self.start) == (
            other.swizzle, other.lbo, other.sbo, other.start)  # fmt: skip

    def __hash__(self):
        return hash((self.swizzle, self.lbo, self.sbo, self.start))


@lru_cache(maxsize=1024)
def gmma_desc_fields(layout, elem_bits: int, major: str, origin=(0, 0), extent=None, rest=()) -> GmmaDescFields:
    """Descriptor fields of a wgmma operand: the ``extent = (rows, k)`` block at ``origin`` of a tile
    stored with ``layout`` (over ``(MN, K[, stages])`` in elements; ``rest`` fixes the modes after K,
    e.g. the stage). The default block is the whole tile.

    ``start`` is the byte offset of the block's element (0, 0) before the swizzle (what the
    descriptor's start address adds to the buffer base, which must be aligned to the swizzle period).
    Raises :class:`GmmaLayoutError` when the block is not the PTX canonical layout of its swizzle mode,
    naming the first element where they differ.
    """
    e = _elem_bytes(elem_bits)
    sw, off, outer = split_swizzle(layout)
    swz = swizzle_bytes_of(sw, e)
    t = 16 // e
    w = max(1, swz // 16)
    full = layout_table(outer, off, rest)
    r0, k0 = origin
    rows, k = extent if extent is not None else (len(full) - r0, len(full[0]) - k0)
    if r0 + rows > len(full) or k0 + k > len(full[0]):
        raise GmmaLayoutError(f"the block {extent} at {origin} is outside the {len(full)}x{len(full[0])} tile")
    tab = [row[k0 : k0 + k] for row in full[r0 : r0 + rows]]
    if rows % 8 or k % t:
        raise GmmaLayoutError(f"a wgmma operand is a multiple of 8 rows and of {t} elements of K, got {rows}x{k}")
    o = tab[0][0]

    def d(r, kk):
        return tab[r][kk] - o

    if major == "K":
        sbo = d(8, 0) if rows > 8 else 8 * w * t
        lbo = d(0, t) if (swz == 0 and k > t) else (t if swz else 8 * t)
        if swz and k * e > swz:
            raise GmmaLayoutError(
                f"a K-major operand's K extent ({k * e} bytes) must fit in one {swz}-byte swizzle row"
            )

        def canon(r, kk):
            row = (r % 8) * (t if swz == 0 else w * t) + (r // 8) * sbo
            return row + ((kk // t) * lbo + kk % t if swz == 0 else kk)

    elif major == "MN":
        if swz == 0:
            sbo = d(t, 0) if rows > t else 8 * t
            lbo = d(0, 8) if k > 8 else 8 * t * (rows // t)

            def canon(r, kk):
                return r % t + (r // t) * sbo + (kk % 8) * t + (kk // 8) * lbo

        else:
            lbo = d(t * w, 0) if rows > t * w else 8 * w * t
            sbo = d(0, 8) if k > 8 else 8 * w * t * (rows // (t * w))

            def canon(r, kk):
                return r % t + (r // t) % w * t + r // (t * w) * lbo + (kk % 8) * w * t + (kk // 8) * sbo

    else:
        raise GmmaLayoutError(f"major must be 'K' or 'MN', got {major!r}")
    for r in range(rows):
        for kk in range(k):
            if d(r, kk) != canon(r, kk):
                raise GmmaLayoutError(
                    f"{layout} is not a canonical {major}-major layout for wgmma "
                    f"({'no' if swz == 0 else f'{swz}-byte'} swizzle): element ({r}, {kk}) is at offset {d(r, kk)}, "
                    f"the canonical layout puts it at {canon(r, kk)}"
                )
    for what, v in (("leading", lbo), ("stride", sbo)):
        b = v * e
        if b % 16 or not 0 <= b < 1 << 18:
            raise GmmaLayoutError(f"the {what}-dimension byte offset {b} is not a multiple of 16 below 2^18")
    if (o * e) % 16:
        raise GmmaLayoutError(f"the operand starts at byte {o * e}, not a multiple of 16")
    return GmmaDescFields(swz, lbo * e, sbo * e, o * e)


def encode_gmma_desc(start_byte_addr: int, fields: GmmaDescFields) -> int:
    """The 64-bit descriptor for an operand whose element (0, 0) is at ``start_byte_addr`` (static)."""
    return encode_desc_static(fields) | ((start_byte_addr >> 4) & 0x3FFF)


def encode_desc_static(fields: GmmaDescFields) -> int:
    """The descriptor bits that do not depend on the address (LBO, SBO, layout type)."""
    return (
        (((fields.lbo >> 4) & 0x3FFF) << 16)
        | (((fields.sbo >> 4) & 0x3FFF) << 32)
        | (_LAYOUT_TYPE[fields.swizzle] << 62)
    )


class TmaBoxPlan:
    """How TMA writes one tile: ``box`` (dim 0 = the contiguous mode), the swizzle, and one
    ``(smem element offset, coordinate offset along the contiguous mode, along the other)`` per box."""

    __slots__ = ("box", "swizzle", "boxes", "elem_bytes")

    def __init__(self, box, swizzle, boxes, elem_bytes):
        self.box, self.swizzle, self.boxes, self.elem_bytes = box, swizzle, boxes, elem_bytes

    @property
    def box_bytes(self) -> int:
        return self.box[0] * self.box[1] * self.elem_bytes

    @property
    def tile_bytes(self) -> int:
        return self.box_bytes * len(self.boxes)

    def __repr__(self) -> str:
        return f"TmaBoxPlan(box={self.box}, swizzle={self.swizzle}, boxes={self.boxes})"


@lru_cache(maxsize=256)
def tma_box_plan(layout, elem_bits: int, contiguous: int = 1, rest=(), max_rows: int | None = None) -> TmaBoxPlan:
    """The TMA boxes that write a tile stored with ``layout`` (over ``(MN, K[, stages])``; mode
    ``contiguous`` (0 or 1) is the global tensor's unit-stride mode; ``rest`` fixes the modes after
    the second, e.g. the stage): the largest box the layout stores densely row after row, of at most
    ``max_rows`` rows (along the other mode) when given.

    Raises:
        GmmaLayoutError: the layout is not what any TMA box sequence writes.
    """
    e = _elem_bytes(elem_bits)
    sw, off, outer = split_swizzle(layout)
    swz = swizzle_bytes_of(sw, e)
    if contiguous not in (0, 1):
        raise GmmaLayoutError(f"contiguous must be mode 0 or 1, got {contiguous}")
    tab = layout_table(outer, off, rest)
    if contiguous == 0:
        tab = [list(col) for col in zip(*tab)]  # index [contiguous mode][other] -> [other][contiguous]
    n_o, n_c = len(tab), len(tab[0])
    cap = min(256, n_c, (swz // e) if swz else 256)
    b0 = 1
    while b0 < cap and tab[0][b0] == tab[0][0] + b0:
        b0 += 1
    while b0 > 1 and (n_c % b0 or (b0 * e) % 16):
        b0 -= 1
    if (b0 * e) % 16 or n_c % b0:
        raise GmmaLayoutError(
            f"{layout}: TMA writes rows of a multiple of 16 bytes along the contiguous mode; this layout stores "
            f"only {b0} element(s) ({b0 * e} bytes) contiguously"
        )
    b1 = 1
    while b1 < min(256, n_o, max_rows or 256) and all(tab[b1][j] == tab[0][0] + b1 * b0 + j for j in range(b0)):
        b1 += 1
    while n_o % b1:
        b1 -= 1
    boxes = []
    for o0 in range(0, n_o, b1):
        for c0 in range(0, n_c, b0):
            base = tab[o0][c0]
            if (base * e) % 128:
                raise GmmaLayoutError(f"{layout}: a TMA box would start at byte {base * e}, not 128-byte aligned")
            for i in range(b1):
                for j in range(b0):
                    if tab[o0 + i][c0 + j] != base + i * b0 + j:
                        raise GmmaLayoutError(
                            f"{layout} is not stored as TMA boxes of {b0}x{b1}: element ({o0 + i}, {c0 + j}) of "
                            "the tile breaks the box's row-after-row order"
                        )
            boxes.append((base, c0, o0))
    return TmaBoxPlan((b0, b1), swz, tuple(boxes), e)
