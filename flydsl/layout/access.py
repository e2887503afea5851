"""Queries, structure operations, coordinate mapping and slicing of layouts and IntTuples.

Input: layouts, IntTuples, coordinates (``None`` = slicing wildcard) and indices; leaves may be
traced integers. Output: sub-layouts, IntTuples, indices and coordinates.
"""

from __future__ import annotations

from .inttuple import (
    INTS,
    TUPLES,
    Basis,
    _leaves,
    compact_col_major,
    format_int_tuple,
    iadd,
    idiv,
    imod,
    imul,
    is_static,
    isub,
    make_int_tuple,
    product,
)
from .inttuple import depth as _depth
from .inttuple import rank as _rank
from .layout import ComposedLayout, Layout, _coprofile_of, _has_none
from .swizzle import Swizzle

__all__ = [
    "size",
    "rank",
    "depth",
    "shape",
    "stride",
    "get",
    "get_",
    "select",
    "group",
    "take",
    "append",
    "prepend",
    "crd2idx",
    "idx2crd",
    "get_hier_coord",
    "get_flat_coord",
    "get_1d_coord",
    "slice",
    "slice_and_offset",
    "dice",
    "get_scalar",
    "get_leaves",
]


# ---------------------------------------------------------------------------------------------
# Queries and structure
# ---------------------------------------------------------------------------------------------


def _layout_like(x):
    return isinstance(x, (Layout, ComposedLayout))


def size(x, *path):
    """Number of coordinates: product of the shape (of mode ``path`` if given)."""
    if path:
        x = get(x, *path)
    if _layout_like(x) or isinstance(x, Swizzle):
        return x.size()
    return product(make_int_tuple(x))


def rank(x, *path) -> int:
    """Number of top-level modes (of mode ``path`` if given)."""
    if path:
        x = get(x, *path)
    return x.rank if _layout_like(x) else _rank(x)


def depth(x, *path) -> int:
    """Nesting depth of the shape (0 for a leaf)."""
    if path:
        x = get(x, *path)
    return x.depth if _layout_like(x) else _depth(x)


def shape(x, *path):
    """The shape of a layout (of mode ``path`` if given); an IntTuple is its own shape."""
    if path:
        x = get(x, *path)
    return x._shape if _layout_like(x) else x


def stride(x, *path):
    """The stride of a layout (of mode ``path`` if given)."""
    if path:
        x = get(x, *path)
    return x._stride


def _get1(x, i):
    if type(i) not in INTS:
        raise TypeError(f"mode index must be an int, got {i!r}")
    if isinstance(x, Layout):
        if type(x._shape) not in TUPLES:
            if i not in (0, -1):
                raise IndexError(f"mode {i} out of range for a rank-1 layout {x}")
            return x
        n = len(x._shape)
        if not -n <= i < n:
            raise IndexError(f"mode {i} out of range for layout {x} of rank {n}")
        return Layout._make(x._shape[i], x._stride[i])
    if isinstance(x, ComposedLayout):
        return ComposedLayout(x.inner, x.offset, _get1(x.outer, i))
    if type(x) in TUPLES:
        if not -len(x) <= i < len(x):
            raise IndexError(f"mode {i} out of range for {format_int_tuple(x)} of rank {len(x)}")
        return x[i]
    if i not in (0, -1):
        raise IndexError(f"mode {i} out of range for the leaf {format_int_tuple(x)}")
    return x


def get(x, *path):
    """Mode ``path`` of a tuple or layout: ``get(L, 1)``, ``get(L, 1, 0)`` or ``get(L, (1, 0))``."""
    if len(path) == 1 and (type(path[0]) in TUPLES or isinstance(path[0], list)):
        path = tuple(path[0])
    for i in path:
        x = _get1(x, i)
    return x


def get_(x, mode):
    """FlyDSL's ``get_``: ``mode`` is an int or a path list."""
    return get(x, mode)


def _split(x):
    """(kind, modes) for structure operations; leaves count as rank-1."""
    if isinstance(x, Layout):
        if type(x._shape) in TUPLES:
            return [Layout._make(s, d) for s, d in zip(x._shape, x._stride)]
        return [x]
    if type(x) in TUPLES:
        return list(x)
    return [x]


def _join(modes, like):
    if isinstance(like, Layout):
        return Layout._make(tuple(m._shape for m in modes), tuple(m._stride for m in modes))
    return tuple(modes)


def _structural(fn):
    """Run a structure operation on a ComposedLayout's outer layout."""

    def wrapper(x, *args, **kw):
        if isinstance(x, ComposedLayout):
            return ComposedLayout(x.inner, x.offset, wrapper(x.outer, *args, **kw))
        if not isinstance(x, Layout):
            x = make_int_tuple(x)
        return fn(x, *args, **kw)

    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


def _range(n, begin, end, what):
    end = n if end is None else end
    if not (type(begin) in INTS and type(end) in INTS and 0 <= begin <= end <= n):
        raise IndexError(f"{what}: range [{begin}, {end}) is not within the {n} modes")
    return end


@_structural
def take(x, begin, end=None):
    """Modes ``[begin, end)``; a single mode is returned unwrapped (FlyDSL: ``take(L,0,1) == L[0]``)."""
    modes = _split(x)
    end = _range(len(modes), begin, end, "take")
    if end - begin == 1:
        return modes[begin]
    return _join(modes[begin:end], x)


@_structural
def select(x, indices):
    """The modes at ``indices``, in that order (always a tuple / tuple-shaped layout)."""
    modes = _split(x)
    if type(indices) in INTS:
        indices = (indices,)
    for i in indices:
        if type(i) not in INTS or not -len(modes) <= i < len(modes):
            raise IndexError(f"select: mode {i!r} out of range for rank {len(modes)}")
    return _join([modes[i] for i in indices], x)


@_structural
def group(x, begin, end=None):
    """Gather modes ``[begin, end)`` into one nested mode: ``group((a,b,c), 0, 2) == ((a,b),c)``."""
    modes = _split(x)
    end = _range(len(modes), begin, end, "group")
    inner = _join(modes[begin:end], x)
    return _join(modes[:begin] + [inner] + modes[end:], x)


def _pad(x, elem, n, front):
    if isinstance(x, Layout) and elem is None:
        elem = Layout._make(1, 0)
    if isinstance(x, Layout) and not isinstance(elem, Layout):
        elem = Layout(elem)
    if elem is None:
        raise TypeError("append/prepend on an IntTuple needs the element to add")
    if not isinstance(x, Layout):
        elem = make_int_tuple(elem)
    modes = _split(x)
    if n is None:
        n = len(modes) + 1
    if n < len(modes):
        raise ValueError(f"cannot pad {len(modes)} modes to rank {n}")
    if n == len(modes) == 1:
        return x
    extra = [elem] * (n - len(modes))
    return _join(extra + modes if front else modes + extra, x)


@_structural
def append(x, elem=None, *, n=None):
    """Add ``elem`` as the last mode, or pad to rank ``n`` with it (layouts pad with ``1:0``)."""
    return _pad(x, elem, n, False)


@_structural
def prepend(x, elem=None, *, n=None):
    """Add ``elem`` as the first mode, or pad to rank ``n`` with it (layouts pad with ``1:0``)."""
    return _pad(x, elem, n, True)


# ---------------------------------------------------------------------------------------------
# Coordinate mapping
# ---------------------------------------------------------------------------------------------


def _crd2idx(c, s, d):
    if type(c) in TUPLES:
        if type(s) not in TUPLES or len(c) != len(s):
            raise ValueError(f"crd2idx: coordinate {format_int_tuple(c)} does not match shape {format_int_tuple(s)}")
        acc = 0
        for ci, si, di in zip(c, s, d):
            acc = iadd(acc, _crd2idx(ci, si, di))
        return acc
    if c is None:
        raise ValueError("crd2idx: None is a slicing wildcard, not a coordinate; use slice()")
    if type(s) in TUPLES:
        acc = 0
        n = len(s)
        for i in range(n - 1):
            sz = product(s[i])
            acc = iadd(acc, _crd2idx(imod(c, sz), s[i], d[i]))
            c = idiv(c, sz)
        if n:
            acc = iadd(acc, _crd2idx(c, s[n - 1], d[n - 1]))
        return acc
    return imul(c, d)


def crd2idx(crd, shape_or_layout, stride_=None):
    """Index of coordinate ``crd``: ``crd2idx(crd, layout)`` or ``crd2idx(crd, shape, stride)``.

    ``crd2idx(crd, shape)`` uses the compact column-major stride (the colexicographic rank). An
    integer coordinate into a multi-mode shape is split colexicographically (the last mode takes
    the remainder, so out-of-range indices extend the last mode). Basis strides yield coordinate
    tuples. Raises ``ValueError`` when ``crd`` is not weakly congruent to the shape.
    """
    if isinstance(shape_or_layout, ComposedLayout):
        return shape_or_layout(crd)
    crd = make_int_tuple(crd)
    if isinstance(shape_or_layout, Layout):
        s, d = shape_or_layout._shape, shape_or_layout._stride
    else:
        s = make_int_tuple(shape_or_layout)
        d = compact_col_major(s) if stride_ is None else make_int_tuple(stride_)
    r = _crd2idx(crd, s, d)
    if type(r) is Basis or type(r) in TUPLES or any(type(x) is Basis for x in _leaves(d, [])):
        r = iadd(_coprofile_of(d), r)
    return r


def _idx2crd_shape(i, s):
    if type(i) in TUPLES:
        if type(s) not in TUPLES or len(i) != len(s):
            raise ValueError(f"idx2crd: index {format_int_tuple(i)} does not match shape {format_int_tuple(s)}")
        return tuple(_idx2crd_shape(a, b) for a, b in zip(i, s))
    if type(s) not in TUPLES:
        return i
    out = []
    for k in range(len(s) - 1):
        sz = product(s[k])
        out.append(_idx2crd_shape(imod(i, sz), s[k]))
        i = idiv(i, sz)
    if s:
        out.append(_idx2crd_shape(i, s[-1]))
    return tuple(out)


def _idx2crd_stride(i, s, d):
    if type(i) in TUPLES:
        if type(s) not in TUPLES or len(i) != len(s):
            raise ValueError(f"idx2crd: index {format_int_tuple(i)} does not match shape {format_int_tuple(s)}")
        return tuple(_idx2crd_stride(a, b, c) for a, b, c in zip(i, s, d))
    if type(s) in TUPLES:
        return tuple(_idx2crd_stride(i, b, c) for b, c in zip(s, d))
    if type(d) is Basis:
        raise TypeError("idx2crd: basis strides (identity layouts) already produce coordinates; use crd2idx")
    if (type(s) in INTS and s == 1) or (type(d) in INTS and d == 0):
        return 0
    return imod(idiv(i, d), s)


def idx2crd(idx, shape_or_layout, stride_=None):
    """Coordinate of index ``idx``.

    * ``idx2crd(idx, layout)`` / ``idx2crd(idx, shape, stride)`` -- FlyDSL's (and CuTe's 3-argument)
      stride-based rule: each leaf is ``(idx // stride) % shape``; static shape-1 and stride-0
      modes give 0. ``idx2crd(5, (4,8):(8,1)) == (0, 5)``. It inverts ``crd2idx`` only for
      indices in the image of a layout whose strides do not overlap.
    * ``idx2crd(idx, shape)`` -- CuTe's 2-argument shape-based rule: the colexicographic split
      (the inverse of ``crd2idx(crd, shape)``), the last mode taking the remainder.
      ``idx2crd(5, (4,8)) == (1, 1)``.
    """
    idx = make_int_tuple(idx)
    if isinstance(shape_or_layout, Layout):
        return _idx2crd_stride(idx, shape_or_layout._shape, shape_or_layout._stride)
    if isinstance(shape_or_layout, ComposedLayout):
        raise TypeError("idx2crd does not accept a ComposedLayout (its inner map is not invertible this way)")
    s = make_int_tuple(shape_or_layout)
    if stride_ is None:
        return _idx2crd_shape(idx, s)
    return _idx2crd_stride(idx, s, make_int_tuple(stride_))


def get_hier_coord(idx, layout):
    """Hierarchical coordinate of index ``idx`` in ``layout`` (stride-based :func:`idx2crd`)."""
    return idx2crd(idx, layout)


def get_flat_coord(idx, layout):
    """Per top-level mode, the 1-D (colexicographic) coordinate of index ``idx``.

    ``get_flat_coord(5, ((2,4),8):((1,2),8)) == (5, 0)``; a leaf layout gives an int.
    """
    h = idx2crd(idx, layout)
    s = layout._shape
    if type(s) not in TUPLES:
        return h
    return tuple(_crd2idx(hc, sc, compact_col_major(sc)) for hc, sc in zip(h, s))


def get_1d_coord(idx, layout):
    """The colexicographic 1-D coordinate of index ``idx``: ``crd2idx(idx2crd(idx, L), shape(L))``."""
    s = layout._shape
    return _crd2idx(idx2crd(idx, layout), s, compact_col_major(s))


# ---------------------------------------------------------------------------------------------
# Slicing
# ---------------------------------------------------------------------------------------------


def _lift(c, t, keep_none: bool):
    """The modes of ``t`` that coordinate ``c`` keeps, concatenated one level deep: where ``c`` is
    ``None`` (``keep_none``: :func:`slice`) or where it is not (:func:`dice`)."""
    if type(c) in TUPLES:
        if type(t) not in TUPLES or len(c) != len(t):
            what = "slice" if keep_none else "dice"
            raise ValueError(f"{what}: coordinate {format_int_tuple(c)} does not match {format_int_tuple(t)}")
        out = ()
        for ci, ti in zip(c, t):
            out += _lift(ci, ti, keep_none)
        return out
    return (t,) if (c is None) == keep_none else ()


def _none_to_zero(c):
    if c is None:
        return 0
    if type(c) in TUPLES:
        return tuple(_none_to_zero(e) for e in c)
    return c


def _crd_and_target(a, b):
    """Accept FlyDSL's ``(src, coord)`` and CuTe's ``(coord, src)`` argument orders."""
    if _layout_like(a):
        return b, a
    if _layout_like(b):
        return a, b
    a, b = make_int_tuple(a), make_int_tuple(b)
    if _has_none(a) and not _has_none(b):
        return a, b
    return b, a


def _zero_dynamic(c):
    if type(c) in TUPLES:
        return tuple(_zero_dynamic(x) for x in c)
    return c if type(c) in INTS or c is None else 0


def swizzle_passthrough(inner, crd, outer) -> int:
    """The part of ``outer(crd)`` (``None`` as 0) that the swizzle ``inner`` passes through unchanged: the
    multiple of the swizzle's period in its compile-time terms (0 for a non-swizzle ``inner``).

    A swizzle reads and writes only the bits below its period ``P = 2**(B + M + |S|)``, so
    ``sw(a + k·P) == sw(a) + k·P`` exactly; moving ``k·P`` out of the swizzle leaves a (compile-time) linear
    offset that the addressing folds into an immediate, and one swizzled register serves every tile.
    """
    if not isinstance(inner, Swizzle) or inner.bits == 0:
        return 0
    stat = crd2idx(_zero_dynamic(_none_to_zero(crd)), outer)
    if type(stat) not in INTS:
        return 0
    return stat - stat % inner.size()


def slice_and_offset(a, b):
    """``(sub_layout, offset)`` for a coordinate with ``None`` wildcards (either argument order).

    ``layout(crd) == offset + sub_layout(free part of crd)``. For a ComposedLayout the offset is
    folded into the composed layout's offset (the inner map is not linear); only what a swizzle passes
    through unchanged (:func:`swizzle_passthrough`, a compile-time multiple of its period) is returned.
    """
    crd, x = _crd_and_target(a, b)
    crd = make_int_tuple(crd)
    if isinstance(x, ComposedLayout):
        sub, off = slice_and_offset(crd, x.outer)
        hi = swizzle_passthrough(x.inner, crd, x.outer)
        return ComposedLayout(x.inner, iadd(x.offset, isub(off, hi) if hi else off), sub), hi
    if crd is None:
        return x, 0
    sub = Layout._make(_lift(crd, x._shape, keep_none=True), _lift(crd, x._stride, keep_none=True))
    off = crd2idx(_none_to_zero(crd), x)
    return sub, off


def slice(a, b):
    """Keep the modes where the coordinate is ``None``: ``slice((None, 3), L)`` / ``slice(L, (None, 3))``.

    Works on layouts and on IntTuples (``slice((4,8,16), (None,3,None)) == (4,16)``); the kept
    modes are concatenated one level deep, as in CuTe.
    """
    crd, x = _crd_and_target(a, b)
    if isinstance(x, (Layout, ComposedLayout)):
        return slice_and_offset(crd, x)[0]
    if crd is None:
        return x
    return _lift(crd, x, keep_none=True)


def dice(a, b):
    """Keep the modes where the coordinate is *not* ``None`` (the complement of :func:`slice`)."""
    crd, x = _crd_and_target(a, b)
    if isinstance(x, ComposedLayout):
        return ComposedLayout(x.inner, x.offset, dice(crd, x.outer))
    if isinstance(x, Layout):
        if crd is None:
            return Layout._make((), ())
        return Layout._make(_lift(crd, x._shape, keep_none=False), _lift(crd, x._stride, keep_none=False))
    if crd is None:
        return ()
    return _lift(crd, x, keep_none=False)


# ---------------------------------------------------------------------------------------------
# FlyDSL extractors
# ---------------------------------------------------------------------------------------------


def get_scalar(x):
    """The single leaf of a leaf or one-element tuple (``get_scalar((5,)) == 5``)."""
    x = make_int_tuple(x)
    leaves = _leaves(x, [])
    if len(leaves) != 1:
        raise ValueError(f"get_scalar: {format_int_tuple(x)} has {len(leaves)} leaves, expected exactly one")
    return leaves[0]


def get_leaves(x, dynamic_only=False):
    """All leaves as a flat tuple; ``dynamic_only`` keeps only run-time leaves."""
    leaves = _leaves(make_int_tuple(x), [])
    if dynamic_only:
        leaves = [v for v in leaves if not is_static(v)]
    return tuple(leaves)
