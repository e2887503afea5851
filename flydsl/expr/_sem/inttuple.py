"""Shapes, strides and coordinates as kernel code sees them, and the leaf protocol of layouts that hold
run-time integers.

* :class:`IntTuple` (a tuple with FlyDSL's ``unpack()``) and :class:`StaticInt` (an ``int`` with it): what
  layout queries return; :func:`as_int_tuple` turns user input (lists, fx integers, raw ``i32`` values)
  into the plain nested tuples :mod:`flydsl.layout` computes on (run-time leaves stay ``Int32``).
* The leaf protocol: the run-time leaves of a layout (:func:`layout_leaves`) cross regions and kernel
  boundaries as IR values and are put back with :func:`layout_rebuild`; :func:`layout_key` is the static
  part that specializes a kernel.
* Divisibility: what an offset is known to be a multiple of (:func:`offset_divisibility`), which
  decides how wide a memory access may be.
"""

from __future__ import annotations

from math import gcd

from ... import layout as L
from ...ir import Value
from ...layout import Basis, ComposedLayout, Layout, Tile
from ...layout.views import IntTuple, StaticInt, wrap
from .numeric import Boolean, Int32, Numeric, as_numeric

__all__ = [
    "IntTuple", "StaticInt", "py_int", "int_leaf", "as_int_tuple", "wrap", "is_tensor", "as_tiler",
    "unwrap_single_mode", "stride_divisibility", "divisibility", "offset_divisibility", "leaf_values",
    "replace_leaves", "layout_leaves", "layout_rebuild", "static_part", "layout_key",
]  # fmt: skip


def py_int(x) -> int:
    if type(x) is int:
        return x
    return int(x)  # a static Numeric converts; a run-time one raises with the DSL's hint


def int_leaf(x, what: str):
    t = type(x)
    if t is int or t is Basis or x is None:
        return x
    if t is bool:
        raise TypeError(f"{what}: {x!r} is a bool, not an integer; write 0/1 if you meant a number")
    if t is Value:
        x = as_numeric(x)
    if isinstance(x, Numeric):
        if not type(x).is_integer or type(x) is Boolean:
            raise TypeError(f"{what}: {type(x).__name__} {x!r} is not an integer; layouts hold integers")
        if x.is_static():
            return int(x.value)
        return x if type(x) is Int32 else x.to(Int32)
    if isinstance(x, int):  # StaticInt, numpy-like ints
        return int(x)
    if hasattr(x, "__index__") and not hasattr(x, "__fly_values__"):
        return x.__index__()
    if t is Tile:  # a tile of integer modes is the int tuple of its sizes (fx.size(make_tile(4, 8)) == 32)
        return as_int_tuple(x.tiler, what)
    raise TypeError(f"{what}: {x!r} of type {type(x).__name__} is not an integer")


def as_int_tuple(x, what: str = "int tuple"):
    """``x`` as a plain nested tuple for :mod:`flydsl.layout`: IntTuples and lists become tuples,
    compile-time ``fx`` integers become ints, run-time integers ``Int32``; ``None`` is kept.

    Raises:
        TypeError: a leaf that is not an integer (a float, a bool, a tensor …).
    """
    if isinstance(x, (tuple, list)):
        return tuple(as_int_tuple(e, what) for e in x)
    return int_leaf(x, what)


def is_tensor(x) -> bool:
    """True for an ``fx.Tensor`` (any memory: global, shared, registers, coordinates)."""
    return getattr(type(x), "_is_fly_tensor", False)


def as_tiler(t):
    """A tiler argument: a Tile, a Layout, an int, None, or a (nested) tuple/list of those (make_tile)."""
    if isinstance(t, (Layout, ComposedLayout)) or t is None:
        return t
    if type(t) is Tile:
        return t.tiler
    if isinstance(t, (tuple, list)):
        return tuple(as_tiler(e) for e in t)
    return int_leaf(t, "tiler")


def unwrap_single_mode(layout):
    """A slice that keeps one mode is that mode (FlyDSL's rule; CuTe keeps the rank-1 wrapper):
    ``slice(((8,24),(3,5)), (None, b))`` is ``(8,24)``, so the tile can be divided by a 2-mode tiler."""
    outer = layout.outer if isinstance(layout, ComposedLayout) else layout
    if type(outer._shape) is not tuple or len(outer._shape) != 1:
        return layout
    one = Layout._make(outer._shape[0], outer._stride[0])
    return ComposedLayout(layout.inner, layout.offset, one) if isinstance(layout, ComposedLayout) else one


def stride_divisibility(d, ddiv) -> int:
    """What a stride is known to be a multiple of."""
    if type(d) is int:
        return abs(d)
    if type(d) is Basis:
        return 0
    return ddiv or 1


def divisibility(c, s, d, ddiv) -> int:
    if c is None:
        return 0
    if type(c) is tuple:
        g = 0
        for ci, si, di in zip(c, s, d):
            g = gcd(g, divisibility(ci, si, di, ddiv))
        return g
    if type(s) is tuple:  # an integer coordinate into several modes
        if type(c) is int:
            return divisibility(L.idx2crd(c, s), s, d, ddiv)
        g = 0
        for di in L.flatten(d):
            g = gcd(g, stride_divisibility(di, ddiv))
        return g
    dv = stride_divisibility(d, ddiv)
    return abs(c) * dv if type(c) is int else dv


def offset_divisibility(crd, layout, ddiv) -> int:
    """What the offset of ``crd`` in ``layout`` is known to be a multiple of (0: it is exactly 0)."""
    if isinstance(layout, ComposedLayout):
        return 0
    return divisibility(crd, layout._shape, layout._stride, ddiv)


def leaf_values(t, out: list) -> list:
    if type(t) is tuple:
        for x in t:
            leaf_values(x, out)
    elif type(t) is Basis:
        if type(t.value) is not int:
            out.append(t.value)
    elif t is not None and type(t) is not int:
        out.append(t)
    return out


def _leaf_type(x):
    """The Numeric class a dynamic leaf is rebuilt as: its own (an Int64 stride stays 64-bit), else Int32."""
    tp = type(x)
    return tp if isinstance(x, Numeric) and tp.is_integer else Int32


def replace_leaves(t, it):
    if type(t) is tuple:
        return tuple(replace_leaves(x, it) for x in t)
    if type(t) is Basis:
        return t if type(t.value) is int else Basis(_leaf_type(t.value)._make(next(it)), t.modes)
    return t if type(t) is int or t is None else _leaf_type(t)._make(next(it))


def layout_leaves(layout) -> list:
    if isinstance(layout, ComposedLayout):
        inner = layout_leaves(layout.inner) if isinstance(layout.inner, (Layout, ComposedLayout)) else []
        return inner + leaf_values(layout.offset, []) + layout_leaves(layout.outer)
    return leaf_values(layout._stride, leaf_values(layout._shape, []))


def layout_rebuild(layout, it):
    if isinstance(layout, ComposedLayout):
        inner = layout.inner
        if isinstance(inner, (Layout, ComposedLayout)):
            inner = layout_rebuild(inner, it)
        off = replace_leaves(layout.offset, it)
        return ComposedLayout(inner, off, layout_rebuild(layout.outer, it))
    shape = replace_leaves(layout._shape, it)
    return Layout._make(shape, replace_leaves(layout._stride, it))


def static_part(t):
    if type(t) is tuple:
        return tuple(static_part(x) for x in t)
    if type(t) is Basis:
        return ("E", t.value if type(t.value) is int else None, tuple(t.modes))
    return t if type(t) is int else None


def layout_key(layout):
    if isinstance(layout, ComposedLayout):
        inner = layout.inner if not isinstance(layout.inner, (Layout, ComposedLayout)) else layout_key(layout.inner)
        return ("composed", inner, static_part(layout.offset), layout_key(layout.outer))
    return (static_part(layout._shape), static_part(layout._stride))
