"""Layouts: the ``Layout`` and ``ComposedLayout`` types, their construction and their codomain.

Input: shapes, strides and coordinates as IntTuples (see :mod:`flydsl.layout.inttuple`).
Output: :class:`Layout` / :class:`ComposedLayout` objects. Queries, coordinate mapping and
slicing live in :mod:`flydsl.layout.access`.

A ``Layout(shape, stride)`` is the function ``crd -> sum(crd_i * stride_i)``; an integer
coordinate into a multi-mode shape is first split colexicographically (mode 0 varies fastest,
the last mode takes the remainder). The algebra (composition, divides, products) lives in
:mod:`flydsl.layout.algebra`.
"""

from __future__ import annotations

from .inttuple import (
    INTS,
    TUPLES,
    Basis,
    _leaves,
    compact_col_major,
    congruent,
    equal,
    format_int_tuple,
    iadd,
    idiv,
    imul,
    is_static,
    isub,
    make_int_tuple,
    product,
    product_like,
    unflatten,
    weakly_congruent,
)
from .inttuple import depth as _depth
from .inttuple import rank as _rank
from .swizzle import Swizzle
from .views import wrap

__all__ = [
    "Layout",
    "ComposedLayout",
    "make_shape",
    "make_stride",
    "make_coord",
    "make_layout",
    "make_ordered_layout",
    "make_identity_layout",
    "make_layout_like",
    "make_composed_layout",
    "make_tile",
    "filter_zeros",
    "coprofile",
    "coshape",
    "cosize",
]


def _check_shape_leaf(s):
    if type(s) is Basis:
        raise TypeError(f"a shape cannot contain the basis element {s}; basis elements are strides")
    if type(s) in INTS and s < 0:
        raise ValueError(f"shape entries must be >= 0, got {s}")
    return s


class Layout:
    """``shape:stride`` -- an immutable function from coordinates to indices.

    Structural ``==`` (traced leaves compare by identity); hashable when static. ``str`` uses CuTe
    notation: ``(4,8):(1,4)``, ``32:1``, traced leaves print as ``?``.
    """

    __slots__ = ("_shape", "_stride", "_static", "_hash")

    def __init__(self, shape, stride=None):
        shape = make_int_tuple(shape)
        for s in _leaves(shape, []):
            if s is None:
                raise TypeError("a shape cannot contain None")
            _check_shape_leaf(s)
        if stride is None:
            stride = compact_col_major(shape)
        else:
            stride = make_int_tuple(stride)
            if any(x is None for x in _leaves(stride, [])):
                raise TypeError("a stride cannot contain None")
            if not congruent(shape, stride):
                raise ValueError(
                    f"make_layout: shape {format_int_tuple(shape)} and stride {format_int_tuple(stride)} "
                    "must have the same nesting"
                )
        self._shape, self._stride, self._static, self._hash = shape, stride, None, None

    @classmethod
    def _make(cls, shape, stride):
        obj = object.__new__(cls)
        obj._shape, obj._stride, obj._static, obj._hash = shape, stride, None, None
        return obj

    @property
    def shape(self):
        """The shape as user code sees it: an :class:`IntTuple` view (a tuple with FlyDSL's ``unpack()``), a
        :class:`StaticInt` for a static leaf, a run-time leaf as it is. The algebra reads ``_shape``, the
        plain nested tuple."""
        return wrap(self._shape)

    @property
    def stride(self):
        """The stride as user code sees it (the view of ``_stride``, as :attr:`shape`)."""
        return wrap(self._stride)

    @property
    def type(self):
        """The static type, FlyDSL's ``!fly.layout<shape:stride>`` (:class:`flydsl.layout.types.LayoutType`)."""
        from .types import LayoutType  # cycle: the type describes this class

        return LayoutType(self)

    @property
    def rank(self) -> int:
        return _rank(self._shape)

    @property
    def depth(self) -> int:
        return _depth(self._shape)

    @property
    def is_leaf(self) -> bool:
        return type(self._shape) not in TUPLES

    @property
    def is_static(self) -> bool:
        if self._static is None:
            self._static = is_static(self._shape) and is_static(self._stride)
        return self._static

    @property
    def is_static_shape(self) -> bool:
        return is_static(self._shape)

    @property
    def is_static_stride(self) -> bool:
        return is_static(self._stride)

    def size(self):
        return product(self._shape)

    def cosize(self):
        return cosize(self)

    def __call__(self, *crd):
        crd = crd[0] if len(crd) == 1 else crd
        if _has_none(crd):
            return _access.slice(crd, self)
        return _access.crd2idx(crd, self)

    def __getitem__(self, i):
        return _access.get(self, i)

    def __len__(self):
        return _rank(self._shape)

    def __iter__(self):
        for i in range(_rank(self._shape)):
            yield _access.get(self, i)

    def __bool__(self):
        return True

    def get_hier_coord(self, idx):
        """Hierarchical coordinate of index ``idx`` (stride-based, see :func:`idx2crd`)."""
        return _access.idx2crd(idx, self)

    def get_flat_coord(self, idx):
        return _access.get_flat_coord(idx, self)

    def get_1d_coord(self, idx):
        return _access.get_1d_coord(idx, self)

    def with_shape(self, *shape):
        """Reshape: ``composition(self, make_layout(shape))``."""
        from .algebra import composition  # cycle: the algebra computes on these classes

        return composition(self, Layout(shape[0] if len(shape) == 1 else shape))

    def __eq__(self, other):
        if type(other) is not Layout:
            return NotImplemented
        return equal(self._shape, other._shape) and equal(self._stride, other._stride)

    def __hash__(self):
        if self._hash is None:
            if not self.is_static:
                raise TypeError(f"layout {self} has run-time leaves and is not hashable")
            self._hash = hash(("Layout", self._shape, self._stride))
        return self._hash

    def __str__(self):
        return f"{format_int_tuple(self._shape)}:{format_int_tuple(self._stride)}"

    def __repr__(self):
        return f"Layout({self})"


def _has_none(x):
    if x is None:
        return True
    if type(x) in TUPLES:
        return any(_has_none(e) for e in x)
    return False


class ComposedLayout:
    """``inner o offset o outer``: the function ``crd -> inner(offset + outer(crd))``.

    ``inner`` is a :class:`Swizzle` or a layout, ``outer`` a layout giving the domain (shape).
    Prints as CuTe does: ``Sw<3,4,3> o 0 o (8,64):(64,1)``.
    """

    __slots__ = ("_inner", "_offset", "_outer")

    def __init__(self, inner, offset, outer):
        if not isinstance(inner, (Swizzle, Layout, ComposedLayout)):
            raise TypeError(f"ComposedLayout inner must be a Swizzle or a layout, got {inner!r}")
        if not isinstance(outer, (Layout, ComposedLayout)):
            raise TypeError(f"ComposedLayout outer must be a layout, got {outer!r}")
        self._inner, self._offset, self._outer = inner, make_int_tuple(offset), outer

    inner = property(lambda self: self._inner)
    offset = property(lambda self: self._offset)
    outer = property(lambda self: self._outer)
    shape = property(lambda self: self._outer.shape, doc="The domain shape (the outer layout's shape), a view.")
    _shape = property(lambda self: self._outer._shape, doc="The plain domain shape the algebra reads.")

    @property
    def stride(self):
        raise TypeError("a ComposedLayout has no stride: it is not linear; use .outer.stride for the outer layout")

    _stride = stride

    rank = property(lambda self: self._outer.rank)
    depth = property(lambda self: self._outer.depth)
    is_leaf = property(lambda self: self._outer.is_leaf)

    @property
    def is_static(self) -> bool:
        return is_static(self._offset) and self._inner.is_static and self._outer.is_static

    def size(self):
        return self._outer.size()

    def cosize(self):
        return cosize(self)

    def __call__(self, *crd):
        crd = crd[0] if len(crd) == 1 else crd
        if _has_none(crd):
            return _access.slice(crd, self)
        hi = _access.swizzle_passthrough(self._inner, crd, self._outer)  # sw(a + kP) == sw(a) + kP
        if hi:
            return iadd(self._inner(iadd(self._offset, isub(self._outer(crd), hi))), hi)
        return self._inner(iadd(self._offset, self._outer(crd)))

    def __getitem__(self, i):
        return _access.get(self, i)

    def __len__(self):
        return self._outer.rank

    def __bool__(self):
        return True

    def __eq__(self, other):
        if type(other) is not ComposedLayout:
            return NotImplemented
        return self._inner == other._inner and equal(self._offset, other._offset) and self._outer == other._outer

    def __hash__(self):
        return hash(("ComposedLayout", self._inner, self._offset, self._outer))

    def __str__(self):
        return f"{self._inner} o {format_int_tuple(self._offset)} o {self._outer}"

    def __repr__(self):
        return f"ComposedLayout({self})"


# ---------------------------------------------------------------------------------------------
# Construction
# ---------------------------------------------------------------------------------------------


def make_shape(*modes):
    """A shape tuple from its modes: ``make_shape(4, (2, 8)) == (4, (2, 8))``."""
    return make_int_tuple(modes)


def make_stride(*modes):
    """A stride tuple from its modes (leaves may be basis elements)."""
    return make_int_tuple(modes)


def make_coord(*modes):
    """A coordinate tuple; ``None`` marks a wildcard mode for slicing."""
    return make_int_tuple(modes)


def make_layout(*args, stride=None):
    """``make_layout(shape, stride=None)`` or ``make_layout(layout_a, layout_b, ...)``.

    With a shape, the default stride is compact column-major (LayoutLeft; static shape-1 modes
    get stride 0). With layouts, the result has one mode per argument (concatenation).
    """
    if args and all(isinstance(a, Layout) for a in args) and stride is None:
        if len(args) == 1:
            return args[0]
        return Layout._make(tuple(a._shape for a in args), tuple(a._stride for a in args))
    if len(args) == 2 and stride is None:
        return Layout(args[0], args[1])
    if len(args) != 1:
        raise TypeError("make_layout takes (shape, stride=None) or one or more layouts")
    return Layout(args[0], stride)


def _compact_order(shape, order):
    if not weakly_congruent(order, shape):
        raise ValueError(
            f"order {format_int_tuple(order)} does not match the nesting of shape {format_int_tuple(shape)}"
        )
    flat_order = _leaves(order, [])
    for o in flat_order:
        if type(o) is Basis or o is None:
            raise TypeError(f"order entries must be integers, got {o}")
    ref_shape = _leaves(product_like(shape, order), [])
    top = max((o for o in flat_order if type(o) in INTS), default=0)
    # NOTE: run-time order entries rank after every static one, left to right (CuTe's rule).
    ref_order = [o if type(o) in INTS else top + 1 + i for i, o in enumerate(flat_order)]

    def build(s, o):
        if type(o) in TUPLES:
            return tuple(build(si, oi) for si, oi in zip(s, o))
        start = 1
        for rs, ro in zip(ref_shape, ref_order):
            if ro < o:
                start = imul(start, rs)
        return compact_col_major(s, start)

    return build(shape, unflatten(ref_order, order))


def make_ordered_layout(shape, order=None):
    """A compact layout whose modes are laid out in increasing ``order``.

    ``order`` is weakly congruent to ``shape``; ``(0, 1)`` is column-major, ``(1, 0)`` row-major.
    Sub-shapes covered by one order entry are column-major among themselves. Equal orders get
    the same starting stride (as in CuTe); run-time entries rank after all static ones.
    """
    shape = make_int_tuple(shape)
    if order is None:
        return Layout(shape)
    return Layout(shape, _compact_order(shape, make_int_tuple(order)))


def _basis_like(shape):
    if type(shape) not in TUPLES:
        return 1
    out = []
    for i, s in enumerate(shape):
        sub = _basis_like(s)

        def lift(x, i=i):
            return Basis(1, (i,) + (x._modes if type(x) is Basis else ()))

        out.append(_map_leaves(lift, sub))
    return tuple(out)


def _map_leaves(fn, t):
    if type(t) in TUPLES:
        return tuple(_map_leaves(fn, e) for e in t)
    return fn(t)


def make_identity_layout(shape):
    """The layout mapping each coordinate to itself: strides are basis elements ``(1E0, 1E1, ...)``.

    Nested modes get nested bases (``((2,3),4) -> ((1E0E0,1E0E1),1E1)``); a scalar shape gets stride 1.
    ``crd2idx`` on it returns coordinate tuples.
    """
    shape = make_int_tuple(shape)
    return Layout(shape, _basis_like(shape))


def filter_zeros(layout):
    """Replace the shape of every static stride-0 mode by 1 (CuTe ``filter_zeros``)."""

    def fz(s, d):
        return 1 if type(d) in INTS and d == 0 else s

    return Layout._make(_map2(fz, layout._shape, layout._stride), layout._stride)


def _map2(fn, a, b):
    if type(a) in TUPLES:
        return tuple(_map2(fn, x, y) for x, y in zip(a, b))
    return fn(a, b)


def make_layout_like(layout):
    """A compact layout with ``layout``'s shape whose strides follow the order of its strides.

    Static stride-0 modes stay stride 0 (CuTe ``make_layout_like``).
    """
    if isinstance(layout, ComposedLayout):
        layout = layout.outer
    return Layout._make(layout._shape, _compact_order(filter_zeros(layout)._shape, layout._stride))


def make_composed_layout(inner, offset_or_outer, outer=None):
    """``make_composed_layout(inner, outer)`` or ``(inner, offset, outer)``; default offset = coprofile."""
    if outer is None:
        outer = offset_or_outer
        offset = coprofile(outer)
    else:
        offset = offset_or_outer
    return ComposedLayout(inner, offset, outer)


def make_tile(*modes):
    """A tiler: one entry per mode -- a Layout, an int ``n`` (meaning ``n:1``), a nested tuple or None."""
    out = []
    for m in modes:
        if isinstance(m, (Layout, ComposedLayout)) or m is None:
            out.append(m)
        elif type(m) in TUPLES or isinstance(m, list):
            out.append(make_tile(*m))
        else:
            out.append(make_int_tuple(m))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Codomain
# ---------------------------------------------------------------------------------------------


def _coprofile_of(stride_):
    acc = 0
    for d in _leaves(stride_, []):
        if type(d) is Basis:
            acc = iadd(acc, Basis(1, d._modes).to_tuple())
    return _map_leaves(lambda _: 0, acc)


def coprofile(layout):
    """The nesting of the codomain: ``0`` for integer strides, e.g. ``(0,0)`` for an identity layout."""
    if isinstance(layout, ComposedLayout):
        return coprofile(layout.inner) if isinstance(layout.inner, Layout) else 0
    return _coprofile_of(layout._stride)


def _abs(d):
    if type(d) in INTS:
        return -d if d < 0 else d
    if type(d) is Basis and type(d.value) in INTS and d.value < 0:
        return Basis(-d.value, d._modes)
    return d


def coshape(layout):
    """Extent of the codomain: ``layout(shape - 1) + 1`` per codomain coordinate (|strides|)."""
    if isinstance(layout, ComposedLayout):
        return product(coshape(layout.inner)) if isinstance(layout.inner, Layout) else cosize(layout)
    acc = _coprofile_of(layout._stride)
    for s, d in zip(_leaves(layout._shape, []), _leaves(layout._stride, [])):
        acc = iadd(acc, imul(isub(s, 1), _abs(d)))
    return _map_leaves(lambda v: iadd(v, 1), acc)


def cosize(layout):
    """Size of the codomain: ``max index + 1`` (``1 + sum((s-1)*|d|)`` for integer strides).

    For a swizzled ComposedLayout this is the outer cosize plus offset rounded up to a whole
    swizzle block of ``2**(bits+base)`` (an upper bound, exact for aligned layouts).
    """
    if isinstance(layout, Swizzle):
        return layout.size()
    if isinstance(layout, ComposedLayout):
        if isinstance(layout.inner, Swizzle):
            n = iadd(layout.offset, cosize(layout.outer))
            block = 1 << (layout.inner.bits + layout.inner.base)
            return imul(idiv(iadd(n, block - 1), block), block)
        return cosize(layout.inner)
    return product(coshape(layout))


# cycle: access.py computes on the classes above and their methods delegate to it; imported last and
# used only inside the methods (no name is read from it at import time)
from . import access as _access  # noqa: E402
