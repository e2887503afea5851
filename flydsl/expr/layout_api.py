"""``fx`` layout functions with FlyDSL's names, on layouts and on tensors alike.

Input: shapes, strides, coordinates and tilers as nested tuples/lists whose leaves are Python ints,
``fx`` integers (compile-time ones fold to ints, run-time ones stay ``Int32``), raw ``i32`` IR values,
``E(i)`` basis elements or ``None`` (a slicing wildcard); layouts (:class:`flydsl.layout.Layout`,
``ComposedLayout``); or tensors (``fx.Tensor``).

Output: the algebra of :mod:`flydsl.layout` (CuTe semantics, see docs/layout.md). A function that
transforms a layout returns, for a tensor argument, the same memory viewed through the transformed
layout (``fx.logical_divide(A, tile)`` divides ``A.layout`` and keeps ``A``'s data); queries
(``fx.size``, ``fx.shape``, …) read the tensor's layout. Shapes and strides come back as
:class:`IntTuple` (a tuple with FlyDSL's ``unpack()``), static sizes as :class:`StaticInt` (an ``int``
with ``unpack()``), run-time sizes as ``fx.Int32``.
"""

from __future__ import annotations

import functools

from .. import layout as L
from ..layout import Basis, ComposedLayout, Layout, Swizzle, Tile
from ._sem import flyir
from ._sem.inttuple import (
    IntTuple,
    StaticInt,
    as_int_tuple,
    as_tiler,
    is_tensor,
    unwrap_single_mode,
    wrap,
)
from ._sem.numeric import Boolean, Numeric

__all__ = [
    "IntTuple", "StaticInt", "Tile", "as_int_tuple", "is_tensor", "Layout", "ComposedLayout", "Swizzle", "Basis", "E",
    "make_shape", "make_stride", "make_coord", "make_int_tuple", "make_layout", "make_ordered_layout",
    "make_identity_layout", "make_layout_like", "make_composed_layout", "make_tile", "make_layout_tv",
    "size", "cosize", "coshape", "coprofile", "rank", "depth", "shape", "stride", "get_shape", "get_stride",
    "get_layout", "get", "get_", "get_scalar", "get_leaves", "select", "group", "take", "append", "prepend",
    "slice", "dice", "filter_zeros", "coalesce", "composition", "complement", "right_inverse", "left_inverse",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product",
    "tiled_product", "flat_product", "blocked_product", "block_product", "raked_product", "tile_to_shape",
    "upcast", "downcast", "recast_layout", "crd2idx", "idx2crd", "get_hier_coord", "get_flat_coord",
    "get_1d_coord", "elem_less", "ceil_div", "shape_div", "int_tuple_add", "int_tuple_sub", "int_tuple_mul",
    "int_tuple_div", "int_tuple_mod", "int_tuple_product", "int_tuple_product_each", "int_tuple_product_like",
    "equal", "composed_get_inner", "composed_get_offset", "composed_get_outer", "max_common_vector",
]  # fmt: skip

E = L.E


def _layout_of(x, what: str):
    if is_tensor(x):
        return x.layout
    if isinstance(x, (Layout, ComposedLayout)):
        return x
    raise TypeError(f"{what} needs a layout or a tensor, got {type(x).__name__} {x!r}")


def _arg(x, what):
    """A layout-or-int-tuple argument of a query/structure function."""
    if is_tensor(x):
        return x.layout
    if isinstance(x, (Layout, ComposedLayout, Swizzle)):
        return x
    return as_int_tuple(x, what)


# ---------------------------------------------------------------------------------------------------
# Construction
# ---------------------------------------------------------------------------------------------------


def make_shape(*modes) -> IntTuple:
    """A shape from its modes: ``fx.make_shape(M, (2, 8))``. Leaves: ints or run-time integers."""
    t = as_int_tuple(modes, "make_shape")
    flyir.int_tuple(t, "make_shape")
    return IntTuple(t)


def make_stride(*modes) -> IntTuple:
    """A stride from its modes (leaves may be basis elements ``E(i)``)."""
    t = as_int_tuple(modes, "make_stride")
    flyir.int_tuple(t, "make_stride")
    return IntTuple(t)


def make_coord(*modes) -> IntTuple:
    """A coordinate; ``None`` marks a mode kept by :func:`slice`."""
    t = as_int_tuple(modes, "make_coord")
    flyir.int_tuple(t, "make_coord")
    return IntTuple(t)


def make_int_tuple(*elems):
    """An IntTuple from its elements (one element stays a leaf)."""
    t = as_int_tuple(elems[0] if len(elems) == 1 else elems, "make_int_tuple")
    flyir.int_tuple(t)
    return wrap(t)


def make_layout(*args, stride=None) -> Layout:
    """``make_layout(shape, stride=None)``, or ``make_layout(layout_a, layout_b, …)`` (concatenation).

    Args:
        shape: an int, a run-time integer or a (nested) tuple of them. stride: congruent to ``shape``;
            default compact column-major (static shape-1 modes get stride 0).

    Raises:
        ValueError: shape and stride nest differently. TypeError: a non-integer leaf.
    """
    if args and all(isinstance(a, Layout) for a in args) and stride is None:
        out = L.make_layout(*args)
        flyir.layout(out)
        return out
    if len(args) == 2 and stride is None:
        args, stride = args[:1], args[1]
    if len(args) != 1:
        raise TypeError("make_layout takes (shape, stride=None) or one or more layouts")
    s = as_int_tuple(args[0], "make_layout shape")
    d = None if stride is None else as_int_tuple(stride, "make_layout stride")
    out = L.make_layout(s, stride=d)
    if flyir.recording():
        flyir.from_parts("make_layout", out, flyir.int_tuple(s), flyir.int_tuple(out._stride))
    return out


def make_ordered_layout(shape, order=None) -> Layout:
    """A compact layout whose modes follow ``order`` (``(1, 0)`` is row-major, ``(0, 1)`` column-major).

    A scalar ``order`` (FlyDSL's ``make_ordered_layout(shape, 0)``) means column-major; equal entries in
    a tuple order share a starting stride, as in CuTe."""
    s = as_int_tuple(shape, "make_ordered_layout shape")
    o = None if order is None else as_int_tuple(order, "make_ordered_layout order")
    if type(o) is int and type(s) is tuple:
        o = None
    out = L.make_ordered_layout(s, o)
    flyir.ordered_layout(out, s, o)
    return out


def make_identity_layout(shape) -> Layout:
    """The layout mapping each coordinate to itself (strides ``E(0), E(1), …``)."""
    s = as_int_tuple(shape, "make_identity_layout")
    out = L.make_identity_layout(s)
    if flyir.recording():
        flyir.from_parts("make_identity_layout", out, flyir.int_tuple(s))
    return out


def make_layout_like(x) -> Layout:
    """A compact layout with ``x``'s shape and the order of its strides (stride-0 modes kept)."""
    return L.make_layout_like(_layout_of(x, "make_layout_like"))


def make_composed_layout(inner, offset_or_outer, outer=None) -> ComposedLayout:
    """``inner o offset o outer`` — e.g. ``fx.make_composed_layout(fx.Swizzle(3, 4, 3), 0, layout)`` for a
    swizzled shared-memory layout (the swizzle applies to ``offset + outer(crd)``)."""
    if outer is None:
        return L.make_composed_layout(inner, _layout_of(offset_or_outer, "make_composed_layout"))
    return L.make_composed_layout(inner, as_int_tuple(offset_or_outer, "offset"), _layout_of(outer, "outer"))


def make_tile(*modes) -> Tile:
    """A :class:`Tile` (FlyDSL's): one entry per mode — a Layout, an int ``n`` meaning ``n:1``, None (keep
    the mode), a tuple of those (a nested tile) or a tile. One mode makes a leaf tile, applied to the whole
    layout as CuTe's non-tuple tiler (``make_tile(256).unpack() == 256``); a single tuple or list is the
    list of modes (``make_tile([l0, l1])`` is ``make_tile(l0, l1)``)."""
    out = Tile.make(*as_tiler(modes))
    flyir.tile(out)
    return out


def make_layout_tv(thr_layout, val_layout) -> tuple:
    """``(tiler_mn, layout_tv)`` for a thread layout and a per-thread value layout (both static).

    ``layout_tv`` maps (thread, value) to the colexicographic index in the ``tiler_mn`` tile (CuTe's
    ``make_layout_tv``: ``right_inverse(raked_product(thr, val))`` reshaped to (threads, values)).

    Raises:
        ValueError: a run-time (non-static) thread or value layout.
    """
    for what, lay in (("thr_layout", thr_layout), ("val_layout", val_layout)):
        if not isinstance(lay, Layout) or not lay.is_static:
            raise ValueError(f"make_layout_tv: {what} must be a static layout, got {lay!r}")
    tiler, tv = L.make_layout_tv(thr_layout, val_layout)
    return IntTuple(tiler), tv


# ---------------------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------------------


def size(x, *path):
    """Number of elements (of mode ``path``): a :class:`StaticInt` when static, else an ``Int32``."""
    return wrap(L.size(_arg(x, "size"), *path))


def cosize(x):
    """Size of the codomain (max index + 1) of a layout or a tensor's layout."""
    return wrap(L.cosize(_layout_of(x, "cosize")))


def coshape(x):
    """Extent of the codomain per codomain mode."""
    return wrap(L.coshape(_layout_of(x, "coshape")))


def coprofile(x):
    """The nesting of the codomain (``0`` for integer strides)."""
    return wrap(L.coprofile(_layout_of(x, "coprofile")))


def rank(x, *path) -> int:
    """Number of top-level modes (of mode ``path``)."""
    return L.rank(_arg(x, "rank"), *path)


def depth(x, *path) -> int:
    """Nesting depth (0 for a leaf)."""
    return L.depth(_arg(x, "depth"), *path)


def shape(x, *path):
    """The shape (of mode ``path``) as an :class:`IntTuple` (a leaf for a rank-0 mode)."""
    return wrap(L.shape(_arg(x, "shape"), *path))


def stride(x, *path):
    """The stride (of mode ``path``)."""
    return wrap(L.stride(_layout_of(x, "stride"), *path))


get_shape, get_stride = shape, stride


def get_layout(t):
    """The layout of a tensor (a layout is returned as is)."""
    return _layout_of(t, "get_layout")


def get(x, *path):
    """Mode ``path`` of a layout, tensor (a view of that mode) or int tuple: ``fx.get(L, 1)``."""
    if is_tensor(x):
        return x._with_layout(L.get(x.layout, *path))
    return wrap(L.get(_arg(x, "get"), *path))


def get_(x, mode):
    """FlyDSL's ``get_``: ``mode`` is an int or a path list."""
    return get(x, mode)


def get_scalar(x):
    """The single leaf of a leaf or one-element tuple."""
    return wrap(L.get_scalar(as_int_tuple(x, "get_scalar")))


def get_leaves(x, dynamic_only=False) -> tuple:
    """All leaves, flat (``dynamic_only``: only the run-time ones)."""
    return L.get_leaves(as_int_tuple(x, "get_leaves"), dynamic_only)


def elem_less(a, b) -> Boolean:
    """``a_i < b_i`` for every leaf (extra modes of ``b`` ignored): a ``Boolean`` (run-time when any
    leaf is) — the predicate of a coordinate tensor against a shape: ``fx.elem_less(crd, (M, N))``."""
    r = L.elem_less(as_int_tuple(a, "elem_less"), as_int_tuple(b, "elem_less"))
    return r if isinstance(r, Numeric) else Boolean(bool(r))


def equal(a, b) -> bool:
    """Structural equality of two int tuples (traced leaves compare by identity)."""
    return L.equal(as_int_tuple(a, "equal"), as_int_tuple(b, "equal"))


# ---------------------------------------------------------------------------------------------------
# Functions on layouts that, given a tensor, view its memory through the result
# ---------------------------------------------------------------------------------------------------


def _on_layout_or_tensor(fn, name: str, doc: str, *, tiler_args: int = 0, int_args: int = 0):
    """A public function ``name(x, *args)``: ``fn(layout, *args)`` for a layout (or int tuple), the same
    memory viewed through ``fn(x.layout, *args)`` for a tensor."""

    @functools.wraps(fn)
    def api(x, *args, **kwargs):
        args = list(args)
        for i in range(min(tiler_args, len(args))):
            args[i] = as_tiler(args[i])
        for i in range(min(int_args, len(args))):
            args[i] = as_int_tuple(args[i], name)
        if is_tensor(x):
            return x._with_layout(fn(x.layout, *args, **kwargs))
        if not isinstance(x, (Layout, ComposedLayout)):
            x = as_int_tuple(x, name)
        return wrap(fn(x, *args, **kwargs))

    api.__name__ = api.__qualname__ = name
    api.__doc__ = doc
    api.__wrapped__ = fn
    return api


_CONTRACT = (
    "\n\nArgs:\n    x: a layout, an int tuple, or a tensor (whose memory is then viewed through the result).\n\n"
    "Returns:\n    A layout (an IntTuple for int tuples), or a tensor over the same memory.\n\n"
    "Raises:\n    ValueError/TypeError: as :mod:`flydsl.layout` (incompatible tilers, non-integer leaves)."
)


def _view_fn(name, fn, doc, tilers=0, ints=0):
    return _on_layout_or_tensor(fn, name, doc + _CONTRACT, tiler_args=tilers, int_args=ints)


# name = _view_fn(name, layout function, summary, number of tiler args, number of int-tuple args)
logical_divide = _view_fn(
    "logical_divide", L.logical_divide, "Divide by a tiler: ``((TileM,RestM),(TileN,RestN),…)``.", 1
)
zipped_divide = _view_fn("zipped_divide", L.zipped_divide, "Divide: ``((TileM,TileN),(RestM,RestN,…))``.", 1)
tiled_divide = _view_fn("tiled_divide", L.tiled_divide, "Divide: ``((TileM,TileN),RestM,RestN,…)``.", 1)
flat_divide = _view_fn(
    "flat_divide",
    L.flat_divide,
    "Divide: ``(TileM,TileN,RestM,RestN,…)``; ``fx.flat_divide(A, tile)[None, None, bx, by]`` is tile (bx, by).",
    1,
)
composition = _view_fn(
    "composition", L.composition, "``x o tiler``: ``crd -> x(tiler(crd))`` (by mode for a tuple).", 1
)
coalesce = _view_fn(
    "coalesce", L.coalesce, "The same function with merged modes (depth <= 1, or per profile mode).", 0, 1
)
select = _view_fn("select", L.select, "The modes at ``indices``, in that order.")
group = _view_fn("group", L.group, "Gather modes ``[begin, end)`` into one nested mode.")
take = _view_fn("take", L.take, "Modes ``[begin, end)`` (a single mode unwrapped).")
append = _view_fn("append", L.append, "Add a last mode (layouts pad with ``1:0``).")
prepend = _view_fn("prepend", L.prepend, "Add a first mode (layouts pad with ``1:0``).")


def slice(x, crd):  # noqa: A001
    """Keep the modes where ``crd`` is ``None``: ``fx.slice(t, (None, bid))`` is column ``bid`` of ``t``.

    As in FlyDSL, a result with a single kept mode is that mode (``slice(((8,24),(3,5)), (None, b))`` is
    ``(8,24)``; CuTe would keep the rank-1 wrapper ``((8,24))``).

    Args:
        x: a tensor (the result views the same memory, offset to the fixed coordinates), a layout, or an
            int tuple. FlyDSL's ``(src, coord)`` and CuTe's ``(coord, src)`` orders are both accepted.
        crd: a coordinate with ``None`` wildcards; fixed entries may be run-time integers.

    Raises:
        ValueError: ``crd`` does not match the shape. IndexError: a static entry out of range (tensors).
    """
    if is_tensor(crd) and not is_tensor(x):
        x, crd = crd, x
    if is_tensor(x):
        return x._slice(crd)
    if isinstance(crd, (Layout, ComposedLayout)):
        x, crd = crd, x
    src = x if isinstance(x, (Layout, ComposedLayout)) else as_int_tuple(x, "slice")
    r = L.slice(src, as_int_tuple(crd, "slice"))
    if isinstance(r, (Layout, ComposedLayout)):
        return unwrap_single_mode(r)
    return wrap(r[0] if type(r) is tuple and len(r) == 1 else r)


def dice(x, crd):
    """Keep the modes where ``crd`` is *not* ``None`` (the complement of :func:`slice`; layouts and tuples)."""
    src = _layout_of(x, "dice") if is_tensor(x) or isinstance(x, (Layout, ComposedLayout)) else as_int_tuple(x, "dice")
    return wrap(L.dice(src, as_int_tuple(crd, "dice")))


def filter_zeros(x):
    """Replace the shape of every static stride-0 mode by 1."""
    return L.filter_zeros(_layout_of(x, "filter_zeros"))


# ---------------------------------------------------------------------------------------------------
# Layout-only algebra
# ---------------------------------------------------------------------------------------------------


def complement(layout, codomain_size=None) -> Layout:
    """The layout of the codomain points ``layout`` does not reach, up to ``codomain_size`` (CuTe).

    A layout whose modes overlap (non-injective, e.g. ``(3,2):(1,2)``) has no complement: the result has
    size 0, as FlyDSL's (CuTe rejects such a layout at compile time)."""
    cs = None if codomain_size is None else as_int_tuple(codomain_size, "complement")
    return L.complement(_layout_of(layout, "complement"), cs, overlap_ok=True)


def right_inverse(layout) -> Layout:
    """``R`` with ``layout(R(i)) == i`` on ``layout``'s image prefix."""
    return L.right_inverse(_layout_of(layout, "right_inverse"))


def left_inverse(layout) -> Layout:
    """``R`` with ``R(layout(i)) == i``."""
    return L.left_inverse(_layout_of(layout, "left_inverse"))


def _product(fn):
    def api(layout, tiler):
        return fn(_layout_of(layout, fn.__name__), as_tiler(tiler))

    api.__name__ = api.__qualname__ = fn.__name__
    api.__doc__ = (
        f"CuTe's ``{fn.__name__}`` of a layout by a tiler (layouts only; see docs/layout.md for the mode order)."
    )
    return api


logical_product = _product(L.logical_product)
zipped_product = _product(L.zipped_product)
tiled_product = _product(L.tiled_product)
flat_product = _product(L.flat_product)
blocked_product = _product(L.blocked_product)
raked_product = _product(L.raked_product)
block_product = blocked_product


def tile_to_shape(block, trg_shape, ord_shape=None) -> Layout:
    """Repeat ``block`` to cover ``trg_shape`` (in ``ord_shape`` order)."""
    o = None if ord_shape is None else as_int_tuple(ord_shape, "tile_to_shape")
    return L.tile_to_shape(_layout_of(block, "tile_to_shape"), as_int_tuple(trg_shape, "tile_to_shape"), o)


def upcast(layout, n: int):
    """The layout in units of ``n`` elements."""
    return L.upcast(_layout_of(layout, "upcast"), n)


def downcast(layout, n: int):
    """The layout in units of ``1/n`` elements."""
    return L.downcast(_layout_of(layout, "downcast"), n)


def recast_layout(layout, old_bits, new_bits):
    """The layout re-expressed for elements of ``new_bits`` instead of ``old_bits`` (ints, Numeric classes
    or IR types with a width)."""
    return L.recast_layout(_layout_of(layout, "recast_layout"), _bits(old_bits), _bits(new_bits))


def _bits(x) -> int:
    if isinstance(x, int) and not isinstance(x, bool):
        return int(x)
    w = getattr(x, "width", None)
    if w is None:
        w = getattr(x, "bitwidth", None)
    if isinstance(w, int):
        return w
    raise TypeError(f"recast_layout takes bit widths as ints, Numeric classes or IR types, got {x!r}")


def max_common_vector(a, b) -> int:
    """How many elements are contiguous in both ``a`` and ``b`` (layouts or tensors)."""
    return L.max_common_vector(_layout_of(a, "max_common_vector"), _layout_of(b, "max_common_vector"))


def composed_get_inner(x):
    """The inner map (Swizzle or layout) of a composed layout (or a tensor over one)."""
    return L.composed_get_inner(_layout_of(x, "composed_get_inner"))


def composed_get_offset(x):
    """The offset of a composed layout."""
    return L.composed_get_offset(_layout_of(x, "composed_get_offset"))


def composed_get_outer(x):
    """The outer layout of a composed layout."""
    return L.composed_get_outer(_layout_of(x, "composed_get_outer"))


# ---------------------------------------------------------------------------------------------------
# Coordinates and int-tuple arithmetic
# ---------------------------------------------------------------------------------------------------


def crd2idx(crd, layout):
    """Index of coordinate ``crd`` in a layout (or tensor's layout); a tuple for basis strides."""
    return wrap(L.crd2idx(as_int_tuple(crd, "crd2idx"), _shape_or_layout(layout, "crd2idx")))


def idx2crd(idx, layout):
    """Coordinate of index ``idx`` (FlyDSL's stride rule for layouts, CuTe's shape rule for shapes)."""
    return wrap(L.idx2crd(as_int_tuple(idx, "idx2crd"), _shape_or_layout(layout, "idx2crd")))


def get_hier_coord(idx, layout):
    """Hierarchical coordinate of index ``idx`` (stride rule)."""
    return wrap(L.get_hier_coord(as_int_tuple(idx, "get_hier_coord"), _layout_of(layout, "get_hier_coord")))


def get_flat_coord(idx, layout):
    """Per top-level mode, the 1-D coordinate of index ``idx``."""
    return wrap(L.get_flat_coord(as_int_tuple(idx, "get_flat_coord"), _layout_of(layout, "get_flat_coord")))


def get_1d_coord(idx, layout):
    """The colexicographic 1-D coordinate of index ``idx``."""
    return wrap(L.get_1d_coord(as_int_tuple(idx, "get_1d_coord"), _layout_of(layout, "get_1d_coord")))


def _shape_or_layout(x, what):
    if is_tensor(x) or isinstance(x, (Layout, ComposedLayout)):
        return _layout_of(x, what)
    return as_int_tuple(x, what)


def _int_tuple_fn(fn, doc: str):
    def api(*args):
        return wrap(fn(*[as_int_tuple(a, fn.__name__) for a in args]))

    api.__name__ = api.__qualname__ = fn.__name__
    api.__doc__ = doc
    return api


ceil_div = _int_tuple_fn(L.ceil_div, "Element-wise ``ceil(a / b)``.")
shape_div = _int_tuple_fn(L.shape_div, "CuTe's ``shape_div`` (exact division of shapes, checked when static).")
int_tuple_add = _int_tuple_fn(L.int_tuple_add, "Element-wise ``a + b`` (a scalar broadcasts).")
int_tuple_sub = _int_tuple_fn(L.int_tuple_sub, "Element-wise ``a - b``.")
int_tuple_mul = _int_tuple_fn(L.int_tuple_mul, "Element-wise ``a * b``.")
int_tuple_div = _int_tuple_fn(L.int_tuple_div, "Element-wise ``a // b``.")
int_tuple_mod = _int_tuple_fn(L.int_tuple_mod, "Element-wise ``a % b``.")
int_tuple_product = _int_tuple_fn(L.product, "Product of all leaves.")
int_tuple_product_each = _int_tuple_fn(L.product_each, "Product of each top-level mode.")
int_tuple_product_like = _int_tuple_fn(L.product_like, "Products taken at the leaves of a guide tuple.")
