"""Hypothesis property tests of the layout algebra laws on thousands of small static layouts."""

import itertools

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from flydsl.layout import (
    Layout,
    Swizzle,
    blocked_product,
    coalesce,
    compatible,
    complement,
    composition,
    cosize,
    crd2idx,
    depth,
    flat_divide,
    flatten,
    get,
    get_1d_coord,
    idx2crd,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    make_layout_tv,
    make_ordered_layout,
    raked_product,
    right_inverse,
    size,
    slice_and_offset,
    tile_to_shape,
    tiled_divide,
    unflatten,
    zipped_divide,
)

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MEDIUM = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def table(layout):
    return [layout(i) for i in range(size(layout))]


def leaves(t):
    return list(flatten(t)) if isinstance(t, tuple) else [t]


@st.composite
def shapes(draw, dims=st.integers(1, 4), max_leaves=4, max_depth=2):
    """Nested shapes with at most ``max_leaves`` leaves."""
    budget = [draw(st.integers(1, max_leaves))]

    def build(d):
        if d == 0 or budget[0] <= 1 or draw(st.booleans()):
            budget[0] -= 1
            return draw(dims)
        n = draw(st.integers(1, min(3, budget[0])))
        return tuple(build(d - 1) for _ in range(n))

    if draw(st.booleans()):
        return draw(dims)
    n = draw(st.integers(1, max_leaves))
    budget[0] = n
    return tuple(build(max_depth - 1) for _ in range(n))


@st.composite
def layouts(draw, dims=st.integers(1, 4), strides=st.integers(0, 12), max_leaves=4):
    shape = draw(shapes(dims=dims, max_leaves=max_leaves))
    flat = [draw(strides) for _ in leaves(shape)]
    return Layout(shape, unflatten(flat, shape) if isinstance(shape, tuple) else flat[0])


POW2_DIMS = st.sampled_from([1, 2, 4])
POW2_STRIDES = st.sampled_from([0, 1, 2, 4, 8, 16, 32])


@st.composite
def injective_layouts(draw, dims=st.integers(1, 4), gaps=st.sampled_from([1, 1, 1, 2, 3]), max_leaves=4):
    """Injective layouts whose strides nest (each stride is a multiple of a smaller mode's extent)."""
    shape = draw(shapes(dims=dims, max_leaves=max_leaves))
    flat = leaves(shape)
    order = draw(st.permutations(range(len(flat))))
    strides = [0] * len(flat)
    cur = draw(st.sampled_from([1, 1, 2]))
    for k in order:
        strides[k] = cur
        cur *= flat[k] * draw(gaps)
    return Layout(shape, unflatten(strides, shape) if isinstance(shape, tuple) else strides[0])


def injective_modulo_zeros(layout):
    """Distinct images once the stride-0 (broadcast) modes are ignored: composition distributes."""
    zero = 1
    for s, d in zip(leaves(layout.shape), leaves(layout.stride)):
        if d == 0:
            zero *= s
    return len(set(table(layout))) * zero == size(layout)


def span(layout):
    """Smallest M with every mode's extent d*s dividing... the top of the nested stride chain."""
    return max([d * s for s, d in zip(leaves(layout.shape), leaves(layout.stride)) if d] + [1])


# ---------------------------------------------------------------------------------------------


@FAST
@given(layouts())
def test_coalesce_preserves_function_and_size(layout):
    c = coalesce(layout)
    assert size(c) == size(layout)
    assert depth(c) <= 1
    assert table(c) == table(layout)
    by_mode = coalesce(layout, tuple(1 for _ in range(layout.rank)))
    assert by_mode.rank == layout.rank and table(by_mode) == table(layout)


@FAST
@given(layouts(dims=POW2_DIMS, strides=POW2_STRIDES), layouts(dims=POW2_DIMS, strides=POW2_STRIDES))
def test_composition_is_function_composition_pow2(a, b):
    if not injective_modulo_zeros(b):
        return
    r = composition(a, b)  # powers of two always satisfy the divisibility conditions
    ca = coalesce(a)
    assert compatible(b.shape, r.shape)
    for i in range(size(b)):
        assert r(i) == ca(b(i))
        if b(i) < size(a):
            assert r(i) == a(b(i))


@FAST
@given(layouts(), layouts(strides=st.integers(0, 6)))
@example(Layout((2, 3, 2), (0, 0, 1)), Layout((1, 2, 3), (0, 3, 2)))
def test_composition_general_when_defined(a, b):
    if not injective_modulo_zeros(b):
        return
    try:
        r = composition(a, b)
    except ValueError as e:
        assert "divisibility condition violated" in str(e)
        return
    ca = coalesce(a)
    assert compatible(b.shape, r.shape)
    # CuTe's composition is by mode of the tiler (left-distributive by definition), and under the weak shape
    # divisibility condition a mode may end inside a mode of `a`: each mode is then function composition,
    # but sums across modes need not be (a∘(2,3):(3,2) with a = (6,2):(0,1): a(3) + a(4) != a(7)).
    for s, d in zip(leaves(b.shape), leaves(b.stride)):
        mode = Layout(s, d)
        rm = composition(a, mode)
        assert [rm(i) for i in range(s)] == [ca(mode(i)) for i in range(s)]
    if len(leaves(coalesce(b).shape)) == 1:
        assert [r(i) for i in range(size(b))] == [ca(b(i)) for i in range(size(b))]


@MEDIUM
@given(
    layouts(dims=POW2_DIMS, strides=POW2_STRIDES, max_leaves=2),
    layouts(dims=POW2_DIMS, strides=POW2_STRIDES, max_leaves=2),
    layouts(dims=POW2_DIMS, strides=POW2_STRIDES, max_leaves=2),
)
def test_by_mode_composition(a0, a1, b1):
    if not injective_modulo_zeros(b1):
        return
    a = make_layout(a0, a1)
    b0 = Layout(2)
    r = composition(a, (b0, b1))
    assert r.rank == 2
    for i, j in itertools.product(range(size(b0)), range(size(b1))):
        assert r(i, j) == coalesce(a0)(b0(i)) + coalesce(a1)(b1(j))


@FAST
@given(layouts())
def test_right_inverse(layout):
    r = right_inverse(layout)
    assert [layout(r(i)) for i in range(size(r))] == list(range(size(r)))


@FAST
@given(injective_layouts())
def test_left_inverse(layout):
    li = left_inverse(layout)
    assert [li(layout(i)) for i in range(size(layout))] == list(range(size(layout)))


@FAST
@given(injective_layouts(), st.integers(1, 3), st.integers(1, 40))
def test_complement(layout, k, m):
    image = set(table(layout))
    # any cotarget: disjoint (but for 0), ordered, and covering at least the cotarget
    c = complement(layout, m)
    vals = table(c)
    assert all(v not in image for v in vals[1:])
    assert vals == sorted(vals) and len(set(vals)) == len(vals)
    assert cosize(make_layout(layout, c)) >= m
    # a multiple of the span: (layout, complement) is a bijection onto [0, M)
    big_m = span(layout) * k
    full = make_layout(layout, complement(layout, big_m))
    assert sorted(table(full)) == list(range(big_m))


@FAST
@given(layouts(dims=POW2_DIMS, strides=POW2_STRIDES), injective_layouts(dims=POW2_DIMS, gaps=st.sampled_from([1, 2])))
def test_logical_divide_round_trip(a, t):
    if span(t) > size(a) or size(a) % span(t):
        return
    ld = logical_divide(a, t)
    tt = make_layout(t, complement(t, size(a)))
    assert size(ld) == size(a) and sorted(table(tt)) == list(range(size(a)))
    assert table(ld) == [a(tt(i)) for i in range(size(a))]
    assert table(get(ld, 0)) == table(composition(a, t))
    assert table(zipped_divide(a, t)) == table(ld)
    assert table(tiled_divide(a, t)) == table(ld) == table(flat_divide(a, t))


@MEDIUM
@given(
    st.sampled_from([2, 4, 8]),
    st.sampled_from([2, 4, 8]),
    injective_layouts(dims=POW2_DIMS, gaps=st.just(1), max_leaves=2),
    injective_layouts(dims=POW2_DIMS, gaps=st.just(1), max_leaves=2),
)
def test_by_mode_divide_flavours(m, n, t0, t1):
    if m % span(t0) or n % span(t1):
        return
    a = Layout((m, n), (n, 1))
    tiler = (t0, t1)
    ld, zd = logical_divide(a, tiler), zipped_divide(a, tiler)
    r0, r1 = size(ld[0]) // size(t0), size(ld[1]) // size(t1)
    for i0, i1, j0, j1 in itertools.product(range(size(t0)), range(size(t1)), range(r0), range(r1)):
        assert zd((i0, i1), (j0, j1)) == ld((i0, j0), (i1, j1))
    assert table(tiled_divide(a, tiler)) == table(zd) == table(flat_divide(a, tiler))
    assert sorted(table(ld)) == list(range(m * n))


def _product_or_none(fn, a, b):
    """CuTe defines the product only when complement(a) o b is a layout (divisibility)."""
    try:
        return fn(a, b)
    except ValueError as e:
        assert "divisibility condition violated" in str(e)
        return None


@FAST
@given(injective_layouts(max_leaves=3, gaps=st.sampled_from([1, 1, 1, 1, 2])), injective_layouts(max_leaves=2))
def test_logical_product(a, b):
    p = _product_or_none(logical_product, a, b)
    if p is None:
        return
    assert size(p) == size(a) * size(b)
    assert get(p, 0) == a
    rest = complement(a, size(a) * cosize(b))
    for j in range(size(b)):
        for i in range(size(a)):
            assert p(i + size(a) * j) == a(i) + rest(b(j))
    vals = table(p)
    assert len(set(vals)) == len(vals)


@MEDIUM
@given(injective_layouts(max_leaves=3, gaps=st.just(1)), injective_layouts(max_leaves=3))
def test_blocked_and_raked_products(a, b):
    bp, rp = _product_or_none(blocked_product, a, b), _product_or_none(raked_product, a, b)
    if bp is None:
        assert rp is None
        return
    assert size(bp) == size(rp) == size(a) * size(b)
    vb, vr = table(bp), table(rp)
    assert len(set(vb)) == len(vb) and set(vb) == set(vr)
    assert set(table(logical_product(a, b))) == set(vb)


@FAST
@given(shapes(max_leaves=4), st.data())
def test_crd2idx_idx2crd_round_trip(shape, data):
    n = len(leaves(shape))
    order = data.draw(st.permutations(range(n)))
    layout = make_ordered_layout(shape, unflatten(order, shape) if isinstance(shape, tuple) else 0)
    for i in range(size(layout)):
        assert crd2idx(idx2crd(i, layout), layout) == i  # stride-based (FlyDSL)
        assert crd2idx(idx2crd(i, shape), shape) == i  # shape-based (CuTe)
        assert get_1d_coord(layout(i), layout) == i


@FAST
@given(st.integers(0, 3), st.integers(0, 3), st.integers(-4, 4))
def test_swizzle_is_an_involution_and_bijection(bits, base, shift):
    if abs(shift) < bits:
        return
    sw = Swizzle(bits, base, shift)
    dom = range(sw.size())
    assert all(sw(sw(x)) == x for x in dom)
    assert sorted(sw(x) for x in dom) == list(dom)


@MEDIUM
@given(st.integers(1, 3), st.integers(0, 2), layouts(dims=POW2_DIMS, strides=POW2_STRIDES))
def test_swizzled_layout_is_swizzle_after_layout(bits, base, layout):
    sw = Swizzle(bits, base, bits)
    composed = composition(sw, layout)
    assert table(composed) == [sw(layout(i)) for i in range(size(layout))]


@MEDIUM
@given(st.data())
def test_make_layout_tv_inverts_the_raked_product(data):
    thr_shape = (data.draw(st.sampled_from([1, 2, 4])), data.draw(st.sampled_from([1, 2, 4, 8])))
    val_shape = (data.draw(st.sampled_from([1, 2])), data.draw(st.sampled_from([1, 2, 4])))
    thr = make_ordered_layout(thr_shape, data.draw(st.sampled_from([(0, 1), (1, 0)])))
    val = make_ordered_layout(val_shape, data.draw(st.sampled_from([(0, 1), (1, 0)])))
    tiler, tv = make_layout_tv(thr, val)
    mn = raked_product(thr, val)
    assert tiler == (thr_shape[0] * val_shape[0], thr_shape[1] * val_shape[1])
    for t, v in itertools.product(range(size(thr)), range(size(val))):
        assert mn(tv(t, v)) == t + size(thr) * v


@MEDIUM
@given(st.data())
def test_tile_to_shape_covers_the_target(data):
    bm, bn = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    km, kn = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    block = make_ordered_layout((bm, bn), data.draw(st.sampled_from([(0, 1), (1, 0)])))
    order = data.draw(st.sampled_from([None, (0, 1), (1, 0)]))
    r = tile_to_shape(block, (bm * km, bn * kn), order)
    assert size(r) == bm * km * bn * kn
    assert sorted(table(r)) == list(range(size(r)))
    for i, j in itertools.product(range(bm), range(bn)):
        assert r(i, j) == block(i, j)


@FAST
@given(layouts(max_leaves=3), st.data())
def test_slice_and_offset(layout, data):
    shape_ = layout.shape
    if not isinstance(shape_, tuple):
        return
    crd = tuple(data.draw(st.one_of(st.none(), st.integers(0, size(m) - 1))) for m in layout)
    sub, off = slice_and_offset(crd, layout)
    free = [i for i, c in enumerate(crd) if c is None]
    for sub_i in range(size(sub)):
        sub_crd = idx2crd(sub_i, sub.shape)
        full = list(crd)
        for k, mode in enumerate(free):
            full[mode] = sub_crd[k]
        assert layout(tuple(full)) == off + sub(sub_crd)
