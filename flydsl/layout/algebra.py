"""The CuTe layout algebra: coalesce, composition, complement, inverses, divides and products.

Input: layouts (and tilers: a layout, an int ``n`` meaning ``n:1``, ``None`` meaning "leave this mode
alone", or a tuple of tilers applied mode by mode). Output: layouts.

Static inputs fold entirely in Python and results are memoized; traced leaves flow through the
operator-only helpers of :mod:`flydsl.layout.inttuple`. Where CuTe checks a divisibility condition
statically, static operands are checked here (``ValueError``); traced operands are assumed to
satisfy it, as CuTe does at run time.
"""

from __future__ import annotations

from functools import lru_cache, wraps
from math import gcd

from .access import append, get, size
from .inttuple import (
    INTS,
    TUPLES,
    Basis,
    _leaves,
    ceil_div,
    compact_col_major,
    format_int_tuple,
    idiv,
    imin,
    imul,
    ishape_div,
    make_int_tuple,
    product_each,
)
from .layout import ComposedLayout, Layout, cosize, filter_zeros, make_layout, make_ordered_layout
from .swizzle import Swizzle
from .tile import Tile

__all__ = [
    "coalesce",
    "filter",
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "tile_to_shape",
    "upcast",
    "downcast",
    "recast_layout",
    "make_layout_tv",
    "max_common_layout",
    "max_common_vector",
]


def _static_arg(a) -> bool:
    t = type(a)
    if t is int or a is None or t is Swizzle:
        return True
    if t is tuple:
        return all(_static_arg(e) for e in a)
    if t is Layout or t is ComposedLayout or t is Basis or t is Tile:
        return a.is_static
    return False


def _memo_static(fn):
    """Memoize ``fn`` on fully static (hence hashable and immutable) positional arguments."""
    cached = lru_cache(maxsize=8192)(fn)

    @wraps(fn)
    def wrapper(*args, **kw):
        if not kw and all(_static_arg(a) for a in args):
            return cached(*args)
        return fn(*args, **kw)

    wrapper.cache_clear = cached.cache_clear
    wrapper.cache_info = cached.cache_info
    return wrapper


def _is1(x) -> bool:
    return type(x) in INTS and x == 1


def _static_leaf(x) -> bool:
    return type(x) in INTS or (type(x) is Basis and x.is_static)


def _known_eq(x, y) -> bool:
    """True only when ``x == y`` is decidable at trace time and holds."""
    if type(x) in INTS and type(y) in INTS:
        return x == y
    if type(x) is Basis and type(y) is Basis and x.is_static and y.is_static:
        return x == y
    return False


def _coalesce_flat(shapes, strides):
    """Merge adjacent contiguous modes and drop static size-1 modes; returns (shape, stride)."""
    out_s, out_d = [], []
    for s, d in zip(shapes, strides):
        if _is1(s):
            continue
        if out_s:
            ps, pd = out_s[-1], out_d[-1]
            # NOTE: merge only when every operand is static, so coalescing never creates run-time ops.
            if type(ps) in INTS and type(s) in INTS and _static_leaf(pd) and _known_eq(imul(ps, pd), d):
                out_s[-1] = ps * s
                continue
        out_s.append(s)
        out_d.append(d)
    if not out_s:
        return 1, 0
    if len(out_s) == 1:
        return out_s[0], out_d[0]
    return tuple(out_s), tuple(out_d)


def _as_layout(x, what):
    if isinstance(x, Layout):
        return x
    if isinstance(x, ComposedLayout):
        raise TypeError(f"{what} needs a plain layout, got the composed layout {x}")
    return Layout(make_int_tuple(x))


@_memo_static
def _coalesce(layout):
    return Layout._make(*_coalesce_flat(_leaves(layout._shape, []), _leaves(layout._stride, [])))


def coalesce(layout, profile=None, *, pattern=None):
    """Simplify a layout without changing it as a function of the 1-D index (size is preserved).

    Flattens, drops static size-1 modes and merges ``s0:d0, s1:s0*d0`` into ``s0*s1:d0``; the
    result has depth <= 1 (``coalesce((4,8):(1,4)) == 32:1``). With a tuple ``profile`` (FlyDSL
    ``pattern``) the modes covered by the profile are coalesced one by one, keeping the rank.
    Modes with run-time shapes or strides are never merged (that would need run-time checks).
    """
    profile = pattern if profile is None else profile
    if isinstance(layout, ComposedLayout):
        return ComposedLayout(layout.inner, layout.offset, coalesce(layout.outer, profile))
    layout = _as_layout(layout, "coalesce")
    if type(profile) in TUPLES:
        modes = list(layout) if type(layout._shape) in TUPLES else [layout]
        if len(profile) > len(modes):
            raise ValueError(f"coalesce: profile {format_int_tuple(profile)} has more modes than {layout}")
        parts = [coalesce(m, p) for m, p in zip(modes, profile)] + modes[len(profile) :]
        return Layout._make(tuple(p._shape for p in parts), tuple(p._stride for p in parts))
    return _coalesce(layout)


def filter(layout):
    """Remove static stride-0 and size-1 modes, then coalesce (CuTe ``filter``)."""
    return coalesce(filter_zeros(_as_layout(layout, "filter")))


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


def _compose_leaf(flat_s, flat_d, s, d, lhs):
    """``lhs o s:d`` where ``lhs`` is given by its coalesced leaves."""
    n = len(flat_s)
    if n == 1:
        return s, imul(flat_d[0], d)
    if _is1(s):
        return 1, 0
    out_s, out_d = [], []
    rest_shape, rest_stride = s, d
    for i in range(n - 1):
        a, b = flat_s[i], flat_d[i]
        if type(a) in INTS and type(rest_stride) in INTS and a % rest_stride and rest_stride % a:
            raise ValueError(
                f"composition: stride divisibility condition violated: stride {rest_stride} of the tiler "
                f"neither divides nor is a multiple of mode size {a} of the layout {lhs}"
            )
        new_a = ishape_div(a, rest_stride)
        if not _is1(new_a):
            take = imin(new_a, rest_shape)
            # NOTE: CuTe's (and FlyDSL's) weak shape divisibility: what is left of the tiler must be a
            # multiple of what this mode takes; a tiler that ends inside a mode is fine
            # ((5,15):(19,51) o 3:1 == 3:19).
            if type(take) in INTS and type(rest_shape) in INTS and rest_shape % take:
                raise ValueError(
                    f"composition: shape divisibility condition violated: tiler size {s} does not fit "
                    f"the modes of the layout {lhs} (remaining size {rest_shape} vs mode size {new_a})"
                )
            out_s.append(take)
            out_d.append(imul(rest_stride, b))
            rest_shape = ishape_div(rest_shape, take)
        if _is1(rest_shape):
            break
        rest_stride = ishape_div(rest_stride, a)
    else:
        out_s.append(rest_shape)
        out_d.append(imul(rest_stride, flat_d[n - 1]))
    return _coalesce_flat(out_s, out_d)


def _compose_rec(lhs, flat, s, d):
    if type(s) in TUPLES:
        parts = [_compose_rec(lhs, flat, si, di) for si, di in zip(s, d)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    if type(d) is Basis:
        return _compose_rec(get(lhs, *d._modes), None, s, d.value)
    if type(d) in INTS and d == 0:
        return s, 0
    if flat is None:
        c = coalesce(lhs)
        flat = (_leaves(c._shape, []), _leaves(c._stride, []))
    return _compose_leaf(flat[0], flat[1], s, d, lhs)


@_memo_static
def _compose_layouts(lhs, rhs):
    has_basis = any(type(x) is Basis for x in _leaves(rhs._stride, []))
    flat = None
    if not has_basis:
        c = coalesce(lhs)
        flat = (_leaves(c._shape, []), _leaves(c._stride, []))
    return Layout._make(*_compose_rec(lhs, flat, rhs._shape, rhs._stride))


def _by_mode(fn, layout, tiler, what):
    """Apply ``fn(mode_i, tiler_i)`` to the first ``len(tiler)`` modes; keep the other modes."""
    modes = list(layout) if type(layout._shape) in TUPLES else [layout]
    if len(tiler) > len(modes):
        raise ValueError(f"{what}: the tiler has {len(tiler)} modes but the layout {layout} has {len(modes)}")
    parts = [fn(m, t) for m, t in zip(modes, tiler)] + modes[len(tiler) :]
    return Layout._make(tuple(p._shape for p in parts), tuple(p._stride for p in parts))


@_memo_static
def composition(lhs, rhs):
    """Functional composition ``R = lhs o rhs``: ``R(c) == lhs(rhs(c))`` for every ``c`` of ``rhs``.

    ``rhs`` is a Layout (1-D composition), an int ``n`` (``n:1``), ``None`` (identity) or a tuple
    of those applied mode by mode (a tiler). ``compatible(shape(rhs), shape(R))`` holds. A Swizzle
    or ComposedLayout ``lhs`` gives a ComposedLayout. Raises ``ValueError`` when a static stride or
    shape divisibility condition fails (the result would not be a layout).
    """
    if isinstance(lhs, Swizzle):
        return ComposedLayout(lhs, 0, _as_layout(rhs, "composition"))
    if isinstance(lhs, ComposedLayout):
        return ComposedLayout(lhs.inner, lhs.offset, composition(lhs.outer, rhs))
    if not isinstance(lhs, Layout):
        raise TypeError(f"composition: the left operand must be a layout or swizzle, got {lhs!r}")
    if type(rhs) is Tile:
        rhs = rhs.tiler
    if rhs is None:
        return lhs
    if type(rhs) in TUPLES or isinstance(rhs, list):
        return _by_mode(composition, lhs, tuple(rhs), "composition")
    if isinstance(rhs, ComposedLayout):
        if isinstance(rhs.inner, Swizzle):
            raise TypeError("composition: cannot compose a layout with a swizzled layout on the right")
        return ComposedLayout(composition(lhs, rhs.inner), rhs.offset, rhs.outer)
    if isinstance(rhs, Swizzle):
        raise TypeError("composition: a swizzle can only be the left operand (use composition(swizzle, layout))")
    if not isinstance(rhs, Layout):
        rhs = Layout(make_int_tuple(rhs))
    return _compose_layouts(lhs, rhs)


# ---------------------------------------------------------------------------------------------
# Complement and inverses
# ---------------------------------------------------------------------------------------------


def _coalesce_shape(shape_):
    """Coalesce a compact shape: drop static 1s, merge adjacent static modes."""
    out = []
    for s in _leaves(shape_, []):
        if _is1(s):
            continue
        if out and type(out[-1]) in INTS and type(s) in INTS:
            out[-1] *= s
        else:
            out.append(s)
    if not out:
        return 1
    return out[0] if len(out) == 1 else tuple(out)


@_memo_static
def _complement(layout, cotarget, overlap_ok=False):
    f = filter(layout)
    fs, fd = _leaves(f._shape, []), _leaves(f._stride, [])
    if len(fs) == 1 and type(fd[0]) in INTS and fd[0] == 0:
        rest = _coalesce_shape(cotarget)
        return Layout._make(rest, compact_col_major(rest))
    if len(fs) > 1 and not all(type(d) in INTS for d in fd):
        raise TypeError(
            f"complement: the strides of {layout} must be static when it has more than one mode "
            "(they are sorted at trace time)"
        )
    if any(type(d) is Basis for d in fd):
        raise TypeError(f"complement: basis strides are not supported ({layout})")
    modes = sorted(zip(fd, fs), key=lambda m: m[0]) if len(fs) > 1 else [(fd[0], fs[0])]
    res_s, res_d = [], []
    cur = 1
    for d, s in modes:
        new_shape = idiv(d, cur)
        if type(new_shape) in INTS and new_shape == 0 and not overlap_ok:
            raise ValueError(f"complement: {layout} is not injective (or its modes overlap), so it has no complement")
        res_s.append(new_shape)
        res_d.append(cur)
        cur = imul(d, s)
    rest = _coalesce_shape(ceil_div(cotarget, cur))
    res_s.append(rest)
    res_d.append(compact_col_major(rest, cur))
    return coalesce(Layout._make(tuple(res_s), tuple(res_d)))


def complement(layout, cotarget=None, *, codomain_size=None, overlap_ok=False):
    """The layout of the indices in ``[0, size(cotarget))`` that ``layout`` does not reach.

    The result is ordered (increasing strides), its image meets ``layout``'s only at 0, and
    ``make_layout(layout, complement(layout, M))`` is a bijection onto ``[0, M)`` when the sorted
    strides nest (each a multiple of the previous stride times its size) and ``M`` is a multiple
    of the largest ``stride * size``. ``cotarget`` (FlyDSL ``codomain_size``)
    defaults to ``cosize(layout)``; a tuple keeps its static factors static. Needs static strides
    when ``layout`` has more than one mode (``TypeError``).

    Overlapping modes (sorted by stride, a mode starts inside the previous one's extent, e.g. the
    non-injective ``(3,2):(1,2)``) leave no complement: CuTe rejects them (a ``static_assert``), and so do we
    (``ValueError``) unless ``overlap_ok``, which gives FlyDSL's answer — the same computation, where the
    overlapping mode's extent quotient is 0, so the result has size 0 ("no complement"). ``fx.complement``
    passes ``overlap_ok=True``; the divides and products, which need a real complement, do not.
    """
    cotarget = codomain_size if cotarget is None else cotarget
    layout = _as_layout(layout, "complement")
    cotarget = cosize(layout) if cotarget is None else make_int_tuple(cotarget)
    return _complement(layout, cotarget, overlap_ok)


@_memo_static
def right_inverse(layout):
    """A layout ``R`` with ``layout(R(i)) == i`` for all ``i < size(R)`` (the largest such prefix).

    Follows the chain of strides 1, s0*d0, ... through the coalesced layout; modes with run-time
    strides never match and end the chain, a run-time shape ends it after its mode (as in CuTe).
    Returns ``1:0`` when no stride-1 mode exists.
    """
    if isinstance(layout, ComposedLayout):
        raise TypeError("right_inverse needs a plain layout, not a composed (swizzled) layout")
    layout = _as_layout(layout, "right_inverse")
    c = coalesce(layout)
    fs, fd = _leaves(c._shape, []), _leaves(c._stride, [])
    rstride = _leaves(compact_col_major(tuple(fs)), [])
    used = [False] * len(fs)
    out_s, out_d = [], []
    nxt = 1
    while True:
        for i, d in enumerate(fd):
            if not used[i] and type(d) in INTS and abs(d) == nxt and not _is1(fs[i]):
                break
        else:
            break
        used[i] = True
        out_s.append(fs[i])
        out_d.append(rstride[i] if fd[i] > 0 else -rstride[i])
        if type(fs[i]) not in INTS:
            break
        nxt = fs[i] * nxt
    if not out_s:
        return Layout._make(1, 0)
    if len(out_s) == 1:
        return Layout._make(out_s[0], out_d[0])
    return Layout._make(tuple(out_s), tuple(out_d))


def left_inverse(layout):
    """A layout ``L`` with ``L(layout(i)) == i`` for all ``i < size(layout)`` (``layout`` injective)."""
    layout = _as_layout(layout, "left_inverse")
    return right_inverse(make_layout(layout, complement(layout)))


# ---------------------------------------------------------------------------------------------
# Divide
# ---------------------------------------------------------------------------------------------


def _tiler_layout(t):
    if isinstance(t, (Layout, ComposedLayout)):
        return t
    return Layout(make_int_tuple(t))


@_memo_static
def _logical_divide_1d(layout, tiler):
    cotarget = coalesce(layout)._shape
    return composition(layout, make_layout(tiler, complement(tiler, cotarget)))


@_memo_static
def logical_divide(layout, tiler):
    """``layout o (tiler, complement(tiler, size(layout)))``: mode 0 is the tile, mode 1 the tiles.

    A tuple tiler divides mode by mode (``None`` leaves a mode alone);
    ``logical_divide((4,2,3):(2,1,8), 4:2) == ((2,2),(2,3)):((4,1),(2,8))``. Run-time shapes are
    fine with a static tiler (``flat_divide`` of ``(M,N):(N,1)`` by ``(64,64)``).
    """
    if isinstance(layout, ComposedLayout):
        return ComposedLayout(layout.inner, layout.offset, logical_divide(layout.outer, tiler))
    layout = _as_layout(layout, "logical_divide")
    if type(tiler) is Tile:
        tiler = tiler.tiler
    if tiler is None:
        return layout
    if type(tiler) in TUPLES or isinstance(tiler, list):
        return _by_mode(logical_divide, layout, tuple(tiler), "logical_divide")
    return _logical_divide_1d(layout, _tiler_layout(tiler))


def _unzip(layout, tiler):
    """Gather the first sub-modes ("tiles") into mode 0 and the rest into mode 1."""
    if type(tiler) not in TUPLES and not isinstance(tiler, list):
        return layout
    modes = list(layout) if type(layout._shape) in TUPLES else [layout]
    firsts, seconds = [], []
    for m, t in zip(modes, tiler):
        if t is None:
            firsts.append(Layout._make(1, 0))
            seconds.append(m)
        elif type(t) in TUPLES or isinstance(t, list):
            u = _unzip(m, t)
            firsts.append(get(u, 0))
            seconds.append(get(u, 1))
        else:
            firsts.append(get(m, 0))
            seconds.append(get(m, 1))
    seconds += modes[len(tiler) :]
    a = Layout._make(tuple(x._shape for x in firsts), tuple(x._stride for x in firsts))
    b = Layout._make(tuple(x._shape for x in seconds), tuple(x._stride for x in seconds))
    return make_layout(a, b)


def _on_outer(fn):
    def wrapper(layout, tiler):
        if type(tiler) is Tile:
            tiler = tiler.tiler
        if isinstance(layout, ComposedLayout):
            return ComposedLayout(layout.inner, layout.offset, wrapper(layout.outer, tiler))
        return fn(_as_layout(layout, fn.__name__), tiler)

    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


def _spread(layout, levels):
    """Splice the top-level modes of modes ``levels`` of a rank-2 layout into one flat list."""
    out = []
    for i in range(2):
        m = get(layout, i)
        out += list(m) if (i in levels and type(m._shape) in TUPLES) else [m]
    return Layout._make(tuple(x._shape for x in out), tuple(x._stride for x in out))


@_memo_static
@_on_outer
def zipped_divide(layout, tiler):
    """``((TileM,TileN,...), (RestM,RestN,...,L,...))``; mode 0 equals ``composition(layout, tiler)``.

    A ``None`` tiler mode contributes a ``1:0`` tile and its whole mode to the rest.
    """
    return _unzip(logical_divide(layout, tiler), tiler)


@_memo_static
@_on_outer
def tiled_divide(layout, tiler):
    """``((TileM,TileN,...), RestM, RestN, ..., L, ...)``."""
    return _spread(zipped_divide(layout, tiler), (1,))


@_memo_static
@_on_outer
def flat_divide(layout, tiler):
    """``(TileM, TileN, ..., RestM, RestN, ..., L, ...)``."""
    return _spread(zipped_divide(layout, tiler), (0, 1))


# ---------------------------------------------------------------------------------------------
# Product
# ---------------------------------------------------------------------------------------------


@_memo_static
def _logical_product_1d(block, tiler):
    return make_layout(block, composition(complement(block, imul(size(block), cosize(tiler))), tiler))


@_memo_static
def logical_product(block, tiler):
    """``(block, complement(block, size(block)*cosize(tiler)) o tiler)``: ``tiler`` copies of ``block``.

    A tuple tiler multiplies mode by mode (``None`` leaves a mode alone).
    """
    if isinstance(block, ComposedLayout):
        return ComposedLayout(block.inner, block.offset, logical_product(block.outer, tiler))
    block = _as_layout(block, "logical_product")
    if type(tiler) is Tile:
        tiler = tiler.tiler
    if tiler is None:
        return block
    if type(tiler) in TUPLES or isinstance(tiler, list):
        return _by_mode(logical_product, block, tuple(tiler), "logical_product")
    return _logical_product_1d(block, _tiler_layout(tiler))


@_memo_static
@_on_outer
def zipped_product(block, tiler):
    """``((M,N,...), (TileM,TileN,...,L,...))`` from a by-mode logical product."""
    return _unzip(logical_product(block, tiler), tiler)


@_memo_static
@_on_outer
def tiled_product(block, tiler):
    """``((M,N,...), TileM, TileN, ..., L, ...)``."""
    return _spread(zipped_product(block, tiler), (1,))


@_memo_static
@_on_outer
def flat_product(block, tiler):
    """``(M, N, ..., TileM, TileN, ..., L, ...)``."""
    return _spread(zipped_product(block, tiler), (0, 1))


def _zip2(a, b, r):
    """Mode ``i`` of the result is ``(a_i, b_i)``; for rank 1 the single mode is ``(a, b)``."""
    if r == 1:
        # NOTE: composition may split a leaf of the tiler into several modes, so a rank-1 product's
        # halves can have different ranks; the single result mode keeps each half whole.
        pairs = [make_layout(get(a, 0) if a.rank == 1 else a, get(b, 0) if b.rank == 1 else b)]
    else:
        pairs = [make_layout(get(a, i), get(b, i)) for i in range(r)]
    return Layout._make(tuple(p._shape for p in pairs), tuple(p._stride for p in pairs))


def _rank_product(block, tiler, raked):
    tiler = _tiler_layout(tiler)
    r = max(block.rank, tiler.rank)
    res = logical_product(append(block, n=r), append(tiler, n=r))
    first, second = get(res, 0), get(res, 1)
    return _zip2(second, first, r) if raked else _zip2(first, second, r)


@_memo_static
@_on_outer
def blocked_product(block, tiler):
    """Rank-sensitive product: mode ``i`` is ``(block_i, tiler_i)``, ``block`` repeated as whole blocks.

    Both operands are padded to the same rank with ``1:0`` modes.
    """
    return _rank_product(block, tiler, False)


@_memo_static
@_on_outer
def raked_product(block, tiler):
    """Like :func:`blocked_product` with mode ``i`` ``(tiler_i, block_i)``: ``block`` is interleaved."""
    return _rank_product(block, tiler, True)


@_memo_static
def tile_to_shape(block, trg_shape, ord_shape=None):
    """Repeat ``block`` (blocked) until it covers ``trg_shape``; the repetitions follow ``ord_shape``.

    Each mode of the result is coalesced. ``ValueError`` if a static block mode does not divide
    the matching target mode.
    """
    if isinstance(block, ComposedLayout):
        return ComposedLayout(block.inner, block.offset, tile_to_shape(block.outer, trg_shape, ord_shape))
    block = _as_layout(block, "tile_to_shape")
    trg_shape = make_int_tuple(trg_shape)
    r = len(trg_shape) if type(trg_shape) in TUPLES else 1
    if block.rank > r:
        raise ValueError(f"tile_to_shape: {block} has more modes than the target shape {format_int_tuple(trg_shape)}")
    padded = append(block, n=r)
    block_shape = product_each(padded._shape)
    target = product_each(trg_shape)
    bl = block_shape if type(block_shape) in TUPLES else (block_shape,)
    tg = target if type(target) in TUPLES else (target,)
    for b, t in zip(bl, tg):
        if type(b) in INTS and type(t) in INTS and t % b:
            raise ValueError(
                f"tile_to_shape: block {block} does not divide the target shape {format_int_tuple(trg_shape)}"
            )
    product_shape = ceil_div(target, block_shape)
    tiler = make_ordered_layout(product_shape, ord_shape)
    return coalesce(blocked_product(padded, tiler), product_shape)


# ---------------------------------------------------------------------------------------------
# Recast
# ---------------------------------------------------------------------------------------------


def _upcast_leaf(s, d, n):
    if type(d) is Basis:
        raise TypeError("upcast: basis strides are not supported")
    if type(d) in INTS:
        if d == 0:
            return s, 0
        ad = abs(d)
        if ad % n and n % ad:
            raise ValueError(f"upcast by {n}: stride {d} neither divides nor is a multiple of {n}")
        new_d = ishape_div(ad, n)
        return ishape_div(s, ishape_div(n, ad)), new_d if d > 0 else -new_d
    # NOTE: run-time strides are assumed to be multiples of n (CuTe's safe_div).
    return s, idiv(d, n)


def _downcast_leaf(s, d, n):
    if type(d) in INTS and abs(d) == 1:
        return imul(s, n), d
    return s, imul(d, n)


def _map_layout(layout, fn):
    def rec(s, d):
        if type(s) in TUPLES:
            parts = [rec(a, b) for a, b in zip(s, d)]
            return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        return fn(s, d)

    return Layout._make(*rec(layout._shape, layout._stride))


def _check_factor(n, what):
    if type(n) not in INTS or n < 1:
        raise TypeError(f"{what}: the factor must be a positive Python int, got {n!r}")


def _swizzle_scale(sw, n, up):
    if n & (n - 1):
        raise ValueError(f"cannot recast {sw} by {n}: swizzles recast only by powers of two")
    k = n.bit_length() - 1
    if not up:
        return Swizzle(sw.bits, sw.base + k, sw.shift)
    if sw.base >= k:
        return Swizzle(sw.bits, sw.base - k, sw.shift)
    return Swizzle(max(sw.bits + sw.base - k, 0), 0, sw.shift)


def upcast(layout, n):
    """Reinterpret a layout of elements as one of ``n``-times wider elements (strides and sizes / ``n``)."""
    _check_factor(n, "upcast")
    if n == 1:
        return layout
    if isinstance(layout, ComposedLayout):
        inner = layout.inner
        inner = _swizzle_scale(inner, n, True) if isinstance(inner, Swizzle) else upcast(inner, n)
        return ComposedLayout(inner, idiv(layout.offset, n), upcast(layout.outer, n))
    return _map_layout(_as_layout(layout, "upcast"), lambda s, d: _upcast_leaf(s, d, n))


def downcast(layout, n):
    """Reinterpret a layout of elements as one of ``n``-times narrower elements."""
    _check_factor(n, "downcast")
    if n == 1:
        return layout
    if isinstance(layout, ComposedLayout):
        inner = layout.inner
        inner = _swizzle_scale(inner, n, False) if isinstance(inner, Swizzle) else downcast(inner, n)
        return ComposedLayout(inner, imul(layout.offset, n), downcast(layout.outer, n))
    return _map_layout(_as_layout(layout, "downcast"), lambda s, d: _downcast_leaf(s, d, n))


def recast_layout(layout, old_bits, new_bits):
    """Re-express a layout of ``old_bits``-wide elements in ``new_bits``-wide elements.

    With ``new/old = num/den`` in lowest terms: upcast by ``num`` then downcast by ``den``
    (``recast_layout((2,3,4):(1,2,4), 16, 32) == (1,3,4):(1,1,2)``).
    """
    for name, v in (("old_bits", old_bits), ("new_bits", new_bits)):
        if type(v) not in INTS or v <= 0:
            raise TypeError(f"recast_layout: {name} must be a positive Python int, got {v!r}")
    g = gcd(old_bits, new_bits)
    num, den = new_bits // g, old_bits // g
    return downcast(upcast(layout, num), den)


# ---------------------------------------------------------------------------------------------
# Thread-value layouts and vectorization helpers
# ---------------------------------------------------------------------------------------------


@_memo_static
def make_layout_tv(thr_layout, val_layout):
    """``(tiler_mn, layout_tv)`` for a thread layout and a per-thread value layout (CuTe).

    ``layout_mn = raked_product(thr, val)`` maps an (m, n) tile coordinate to ``thr + val*size(thr)``;
    ``layout_tv = right_inverse(layout_mn)`` reshaped to ``(size(thr), size(val))`` maps
    (thread, value) back to the tile; ``tiler_mn = product_each(shape(layout_mn))``.
    """
    thr_layout = _tiler_layout(thr_layout)
    val_layout = _tiler_layout(val_layout)
    layout_mn = raked_product(thr_layout, val_layout)
    layout_tv = composition(right_inverse(layout_mn), Layout((size(thr_layout), size(val_layout))))
    return product_each(layout_mn._shape), layout_tv


def max_common_layout(a, b):
    """The largest layout ``R`` (a static stride-1 run) such that ``a(R(i))`` and ``b(R(i))`` are both ``i``."""
    inv_b = right_inverse(b)
    common = coalesce(composition(a, inv_b))
    first = get(common, 0) if type(common._shape) in TUPLES else common
    if type(first._shape) in INTS and type(first._stride) in INTS and first._stride == 1:
        return composition(inv_b, first)
    return Layout._make(1, 0)


def max_common_vector(a, b):
    """Number of elements that are contiguous in both ``a`` and ``b`` (a static int)."""
    n = size(max_common_layout(a, b))
    return n if type(n) in INTS else 1
