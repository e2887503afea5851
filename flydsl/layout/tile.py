"""Tiles: FlyDSL's ``Tile`` value, what ``fx.make_tile`` returns and ``TiledCopy.tile_mn`` is.

A tile is a tiler (the second operand of composition, the divides and the products) as a value. Its
``tiler`` is what the algebra computes with: a tuple of modes applied mode by mode, or — a *leaf* tile,
``make_tile(256)`` — one mode applied to the whole layout (CuTe's non-tuple tiler). Each mode is an int
``n`` (``n:1``), a layout, ``None`` (keep the layout's mode) or a nested tuple of modes.

``unpack()`` gives each mode's value, as FlyDSL's ``Tile.unpack``: ints as ints, layouts as layouts, nested
modes as tuples; a leaf tile gives its single mode, a tile of several modes a tuple. A tile also reads like
the tuple of its modes (``len``, iteration, ``t[i]``, ``==`` with a tile or — not a leaf — a tuple of the
same modes); ``str`` is the ``!fly.tile`` body ``[8|64]``, ``type`` the :class:`TileType`.
"""

from __future__ import annotations

from .inttuple import TUPLES, equal, is_static, make_int_tuple
from .inttuple import rank as _rank
from .layout import ComposedLayout, Layout

__all__ = ["Tile", "tile_modes"]


def tile_modes(m):
    """One tile mode, normalized: layouts and ``None`` as they are, tuples/lists/tiles as tuples of modes, an
    integer (static or run-time) as an int-tuple leaf."""
    t = type(m)
    if t is Layout or t is ComposedLayout or m is None:
        return m
    if t is Tile:
        return m._tiler
    if t is tuple or t is list or isinstance(m, (tuple, list)):
        return tuple(tile_modes(e) for e in m)
    return make_int_tuple(m)


def _same(a, b) -> bool:
    if type(a) is tuple:
        return type(b) in TUPLES and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (Layout, ComposedLayout)):
        return type(b) is type(a) and a == b
    return equal(a, b)  # ints and basis elements by value, None and run-time leaves by identity


def _unpack(m):
    if type(m) is tuple:
        return tuple(_unpack(e) for e in m)
    return m


class Tile:
    """A tiler as a value. ``Tile.make(*modes)`` is ``fx.make_tile``: one mode makes a leaf tile (a tuple or
    list of modes as the only argument makes a tile of those modes), several a tile of several modes."""

    __slots__ = ("_tiler",)

    def __init__(self, tiler):
        self._tiler = tiler

    @classmethod
    def make(cls, *modes) -> Tile:
        if len(modes) == 1:
            return cls(tile_modes(modes[0]))
        return cls(tile_modes(modes))

    @property
    def tiler(self):
        """What the algebra takes: the tuple of modes, or the single mode of a leaf tile."""
        return self._tiler

    @property
    def is_leaf(self) -> bool:
        return type(self._tiler) is not tuple

    @property
    def rank(self) -> int:
        return _rank(self._tiler)

    @property
    def is_static(self) -> bool:
        return is_static(self._tiler)

    @property
    def type(self):
        """The static type, FlyDSL's ``!fly.tile<[8|64]>``."""
        from .types import TileType  # cycle: the types describe these values

        return TileType(self._tiler)

    def unpack(self):
        """Each mode's value (FlyDSL's ``Tile.unpack``): a leaf tile's mode, else a tuple with one entry per
        mode — ints, run-time integers, layouts, ``None``, and tuples for nested modes."""
        return _unpack(self._tiler)

    def _modes(self) -> tuple:
        return self._tiler if type(self._tiler) is tuple else (self._tiler,)

    def __len__(self) -> int:
        return self.rank

    def __iter__(self):
        return iter(self._modes())

    def __getitem__(self, i):
        return self._modes()[i]

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        if type(other) is Tile:
            return _same(self._tiler, other._tiler)
        if isinstance(other, tuple) and type(self._tiler) is tuple:
            return _same(self._tiler, other)
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        if not is_static(self._tiler):
            raise TypeError(f"tile {self} has run-time modes and is not hashable")
        return hash(self._tiler) if type(self._tiler) is tuple else hash(("Tile", self._tiler))

    def __str__(self) -> str:
        return self.type.body

    def __repr__(self) -> str:
        return f"Tile({self})"
