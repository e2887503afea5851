"""The static types of layout values, with FlyDSL's names: ``IntTupleType``, ``LayoutType``, ``TileType``.

A type is the static part of a value — its nesting, its compile-time leaves, and ``?`` where a leaf is
known only at run time — printed as FlyDSL's ``fly`` dialect prints it: ``!fly.int_tuple<(9,(4,8))>``,
``!fly.layout<(4,8):(1,4)>``, ``!fly.tile<[4:1|8]>``. ``x.type`` of a layout, an int tuple or a basis
element gives its type; ``IntTupleType.get(spec)`` builds one from a Python spec, as FlyDSL's does. The
IR carries the same text as an opaque :class:`flydsl.ir.FlyType` (see docs/layout.md, "Layouts in the IR").

Two values have equal types when their static parts are equal (run-time leaves compare as ``?``).
"""

from __future__ import annotations

from .inttuple import Basis, _leaves, format_int_tuple, is_static, make_int_tuple
from .inttuple import depth as _depth
from .inttuple import rank as _rank
from .layout import Layout
from .tile import tile_modes

__all__ = ["IntTupleType", "LayoutType", "TileType", "type_body", "parse_body"]


def type_body(x) -> str:
    """The body of ``x``'s type (``(9,(4,8))``, ``(4,8):(1,4)``): CuTe notation, ``?`` for run-time leaves."""
    if isinstance(x, Layout):
        return f"{format_int_tuple(x._shape)}:{format_int_tuple(x._stride)}"
    return format_int_tuple(x)


class _FlyTypeBase:
    __slots__ = ()
    mnemonic = ""

    @property
    def body(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return f"!fly.{self.mnemonic}<{self.body}>"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.body})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.body == self.body

    def __hash__(self) -> int:
        return hash((self.mnemonic, self.body))


class IntTupleType(_FlyTypeBase):
    """The type of an int tuple (shape, stride, coordinate): ``!fly.int_tuple<(9,(4,8))>``.

    ``value`` is the int tuple itself (ints, basis elements, run-time leaves, nested tuples)."""

    __slots__ = ("value",)
    mnemonic = "int_tuple"

    def __init__(self, value):
        self.value = value

    @staticmethod
    def get(spec, context=None) -> IntTupleType:
        """The type of the static int tuple ``spec`` (ints, ``Basis`` leaves, nested tuples/lists)."""
        return IntTupleType(make_int_tuple(spec))

    @property
    def body(self) -> str:
        return format_int_tuple(self.value)

    @property
    def is_leaf(self) -> bool:
        return type(self.value) is not tuple

    @property
    def is_static(self) -> bool:
        return is_static(self.value)

    @property
    def rank(self) -> int:
        return _rank(self.value)

    @property
    def depth(self) -> int:
        return _depth(self.value)

    def at(self, i: int) -> IntTupleType:
        """The type of mode ``i``."""
        if type(self.value) is not tuple:
            if i != 0:
                raise IndexError(f"mode {i} of the leaf type {self}")
            return self
        return IntTupleType(self.value[i])

    @property
    def is_leaf_int(self) -> bool:
        return self.is_leaf and type(self.value) is not Basis and self.value is not None

    @property
    def is_leaf_basis(self) -> bool:
        return type(self.value) is Basis

    @property
    def get_leaf_as_basis(self) -> Basis:
        """The basis element of a basis leaf (its coefficient may be a run-time value)."""
        if type(self.value) is not Basis:
            raise ValueError(f"{self} is not a basis leaf")
        return self.value

    @property
    def get_static_leaf_int(self) -> int:
        if type(self.value) is not int:
            raise ValueError(f"{self} is not a static integer leaf")
        return self.value

    @property
    def has_none(self) -> bool:
        return any(x is None for x in _leaves(self.value, []))


class LayoutType(_FlyTypeBase):
    """The type of a layout: ``!fly.layout<(4,8):(1,4)>``; ``layout`` is the layout itself."""

    __slots__ = ("layout",)
    mnemonic = "layout"

    def __init__(self, layout):
        self.layout = layout

    @staticmethod
    def get(shape, stride, context=None) -> LayoutType:
        """The type of the static layout ``shape:stride``."""
        return LayoutType(Layout(getattr(shape, "value", shape), getattr(stride, "value", stride)))

    @property
    def body(self) -> str:
        return type_body(self.layout)

    shape = property(lambda self: IntTupleType(self.layout._shape))
    stride = property(lambda self: IntTupleType(self.layout._stride))
    rank = property(lambda self: self.layout.rank)
    depth = property(lambda self: self.layout.depth)
    is_leaf = property(lambda self: self.layout.is_leaf)
    is_static = property(lambda self: self.layout.is_static)
    is_static_shape = property(lambda self: self.layout.is_static_shape)
    is_static_stride = property(lambda self: self.layout.is_static_stride)


class TileType(_FlyTypeBase):
    """The type of a tiler: one mode per entry, each an int ``n`` (``n:1``), a layout, ``None`` (keep the
    mode) or a nested tile; prints ``!fly.tile<[4:1|8]>``."""

    __slots__ = ("modes",)
    mnemonic = "tile"

    def __init__(self, modes):
        self.modes = modes

    @staticmethod
    def get(modes, context=None) -> TileType:
        """A tile type from its modes (ints, ``LayoutType``s, ``None``, nested lists)."""
        return TileType(_tile_modes(modes))

    @property
    def body(self) -> str:
        return _tile_body(self.modes)

    @property
    def is_leaf(self) -> bool:
        return type(self.modes) is not tuple

    @property
    def rank(self) -> int:
        return _rank(self.modes)

    def at(self, i: int):
        return self.modes[i] if type(self.modes) is tuple else self.modes


def _tile_modes(m):
    if isinstance(m, (list, tuple)):
        return tuple(_tile_modes(e) for e in m)
    if isinstance(m, LayoutType):
        return m.layout
    return tile_modes(m)


def _tile_body(m) -> str:
    if type(m) is tuple:
        return "[" + "|".join(_tile_body(e) for e in m) + "]"
    if m is None:
        return "_"
    return type_body(m)


def parse_body(mnemonic: str, body: str):
    """The static value a type body denotes: ``parse_body("int_tuple", "(4,(2,8))") == (4, (2, 8))``,
    ``parse_body("layout", "(4,8):(1,4)")`` a :class:`Layout`; basis leaves (``2E0``) become :class:`Basis`.

    Raises:
        ValueError: a run-time leaf (``?``): its value is not in the type; or text that is not a body.
    """
    text = body.replace(" ", "")
    if "?" in text:
        raise ValueError(f"!fly.{mnemonic}<{body}> has run-time leaves; its value is not in its type")
    if mnemonic == "int_tuple":
        return _parse_tuple(text)
    if mnemonic == "layout":
        depth = 0
        for i, ch in enumerate(text):
            depth += (ch == "(") - (ch == ")")
            if ch == ":" and depth == 0:
                return Layout(_parse_tuple(text[:i]), _parse_tuple(text[i + 1 :]))
    raise ValueError(f"cannot read the value of !fly.{mnemonic}<{body}>")


def _parse_tuple(text: str):
    value, end = _parse_at(text, 0)
    if end != len(text):
        raise ValueError(f"unexpected {text[end:]!r} in the int tuple {text!r}")
    return value


def _parse_at(text: str, i: int):
    if text.startswith("(", i):
        items, i = [], i + 1
        while True:
            v, i = _parse_at(text, i)
            items.append(v)
            if text.startswith(",", i):
                i += 1
            elif text.startswith(")", i):
                return tuple(items), i + 1
            else:
                raise ValueError(f"expected ',' or ')' at {i} in {text!r}")
    j = i
    while j < len(text) and text[j] not in ",()":
        j += 1
    leaf = text[i:j]
    if leaf == "_":
        return None, j
    num, *modes = leaf.split("E")
    try:
        return (Basis(int(num), [int(m) for m in modes]) if modes else int(num)), j
    except ValueError:
        raise ValueError(f"{leaf!r} is not an integer or basis leaf (in {text!r})") from None
