"""Golden tests of flydsl.layout against CuTe's documented semantics and FlyDSL's golden data.

Every golden is also checked by brute force where a function can be enumerated.
"""

import itertools

import pytest

from flydsl.layout import (
    Basis,
    ComposedLayout,
    E,
    Swizzle,
    append,
    blocked_product,
    ceil_div,
    coalesce,
    complement,
    composition,
    coprofile,
    coshape,
    cosize,
    crd2idx,
    depth,
    dice,
    downcast,
    elem_less,
    flat_divide,
    flat_product,
    flatten,
    get,
    get_,
    get_1d_coord,
    get_flat_coord,
    get_leaves,
    get_scalar,
    group,
    idx2crd,
    int_tuple_add,
    int_tuple_div,
    int_tuple_mod,
    int_tuple_mul,
    int_tuple_product,
    int_tuple_product_each,
    int_tuple_product_like,
    int_tuple_sub,
    left_inverse,
    logical_divide,
    logical_product,
    make_composed_layout,
    make_coord,
    make_identity_layout,
    make_int_tuple,
    make_layout,
    make_layout_like,
    make_layout_tv,
    make_ordered_layout,
    make_shape,
    make_stride,
    make_tile,
    max_common_vector,
    prefix_product,
    prepend,
    raked_product,
    rank,
    recast_layout,
    right_inverse,
    select,
    shape_div,
    size,
    slice,
    slice_and_offset,
    take,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    unflatten,
    upcast,
    zipped_divide,
    zipped_product,
)


def L(shape, stride=None):
    return make_layout(shape, stride)


def table(layout):
    """The layout as a function of its 1-D index."""
    return [layout(i) for i in range(size(layout))]


# ---------------------------------------------------------------------------------------------
# Printing and construction
# ---------------------------------------------------------------------------------------------


def test_printing_cute_notation():
    assert str(L((4, 8), (1, 4))) == "(4,8):(1,4)"
    assert str(L(32, 1)) == "32:1"
    assert str(L((4,), (1,))) == "(4):(1)"
    assert str(L((9, (4, 8)), (59, (13, 1)))) == "(9,(4,8)):(59,(13,1))"
    assert str(Swizzle(3, 4, 3)) == "Sw<3,4,3>"
    composed = make_composed_layout(Swizzle(3, 4, 3), L((8, 64), (64, 1)))
    assert str(composed) == "Sw<3,4,3> o 0 o (8,64):(64,1)"
    assert repr(L((4, 8))) == "Layout((4,8):(1,4))"
    assert str(make_identity_layout((4, 8))) == "(4,8):(1E0,1E1)"


def test_default_stride_is_compact_column_major():
    assert L((4, 8)) == L((4, 8), (1, 4))
    assert L((2, (3, 4))) == L((2, (3, 4)), (1, (2, 6)))
    # static shape-1 modes get stride 0, as CuTe's LayoutLeft
    assert L((2, 1, 3)) == L((2, 1, 3), (1, 0, 2))
    assert L(8) == L(8, 1)


def test_layout_equality_and_hash():
    a, b = L((4, 8), (1, 4)), L((4, 8), (1, 4))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert L((4,), (1,)) != L(4, 1)  # structure matters
    assert L((4, 8), (1, 4)) != L((4, 8), (8, 1))


def test_make_tuple_helpers():
    assert make_shape(4, (2, 8)) == (4, (2, 8))
    assert make_stride(1, E(1)) == (1, Basis(1, [1]))
    assert make_coord(None, 3) == (None, 3)
    assert make_int_tuple([4, [2, 8]]) == (4, (2, 8))
    assert make_int_tuple(4, 8) == (4, 8)
    assert make_tile(4, L(8, 2), None) == (4, L(8, 2), None)


def test_make_ordered_layout():
    assert make_ordered_layout((4, 8), (1, 0)) == L((4, 8), (8, 1))
    assert make_ordered_layout((4, 8), (0, 1)) == L((4, 8), (1, 4))
    # CuTe's documented example
    assert make_ordered_layout((2, 2, 2, 2), (0, 2, 3, 1)) == L((2, 2, 2, 2), (1, 4, 8, 2))
    # an order entry covering a nested mode: that mode is column-major inside
    assert make_ordered_layout(((2, 3), 4), (1, 0)) == L(((2, 3), 4), ((4, 8), 1))


def test_make_layout_like_keeps_static_zero_strides():
    assert make_layout_like(L((2, 2, 2, 2), (0, 2, 4, 1))) == L((2, 2, 2, 2), (0, 2, 4, 1))
    assert make_layout_like(L((4, 8), (100, 3))) == L((4, 8), (8, 1))


def test_identity_layout_and_basis():
    ident = make_identity_layout((4, 8))
    assert ident.stride == (E(0), E(1))
    for c in itertools.product(range(4), range(8)):
        assert ident(c) == c
    assert ident(5) == (1, 1)
    nested = make_identity_layout(((2, 3), 4))
    assert str(nested) == "((2,3),4):((1E0E0,1E0E1),1E1)"
    assert nested(((1, 2), 3)) == ((1, 2), 3)
    assert make_identity_layout(8) == L(8, 1)


def test_basis_semantics():
    b = E(0)
    assert isinstance(b, Basis) and b.value == 1 and b.modes == [0]
    assert E() == 1
    assert E(0, 1).modes == [0, 1] and E([0, 1]).modes == [0, 1] and E((0, 1)).modes == [0, 1]
    assert E(0) * 2 == Basis(2, [0]) and 3 * E(0) == Basis(3, [0])
    assert (Basis(2, [0, 1]) * 5).modes == [0, 1]
    assert repr(Basis(2, [0])) == "2E0" and repr(E(0)) == "1E0" and repr(Basis(1, [0, 1])) == "1E0E1"
    assert hash(E(0)) == hash(Basis(1, [0])) and len({Basis(1, [0]), Basis(1, [0])}) == 1
    assert 2 * E(0) + 3 * E(1) == (2, 3)
    assert E(1, 0).to_tuple() == (0, (1,))
    assert int_tuple_div((Basis(2, [0]), Basis(8, [1])), (2, 4)) == (Basis(1, [0]), Basis(2, [1]))
    assert 0 * E(0) == 0


# ---------------------------------------------------------------------------------------------
# IntTuple helpers
# ---------------------------------------------------------------------------------------------


def test_int_tuple_helpers():
    t = (4, (2, 3))
    assert flatten(t) == (4, 2, 3) and flatten(7) == 7
    assert unflatten((1, 2, 3), t) == (1, (2, 3))
    assert rank(t) == 2 and rank(8) == 1 and depth(8) == 0 and depth(t) == 2
    assert int_tuple_product(t) == 24 and int_tuple_product_each(((2, 3), 4)) == (6, 4)
    assert int_tuple_product_like(((2, 3), (4, 5)), (0, (0, 0))) == (6, (4, 5))
    assert prefix_product(t) == (1, (4, 8))
    assert shape_div((6, 2), 3) == (2, 2) and shape_div((3, 6, 2, 8), 72) == (1, 1, 1, 4)
    assert shape_div((6, 2), 12) == (1, 1)
    assert ceil_div((4, 2, 3), 8) == (1, 1, 3) and ceil_div(10, 4) == 3
    assert int_tuple_add((1, (2, 3)), (1, (1, 1))) == (2, (3, 4))
    assert int_tuple_sub((4, 4), 1) == (3, 3)
    assert int_tuple_mul((2, 3), (4, 5)) == (8, 15)
    assert int_tuple_mod((7, 9), 4) == (3, 1)
    assert elem_less((1, 2), (2, 3)) is True and elem_less((1, 3), (2, 3)) is False
    assert get_scalar((5,)) == 5 and get_scalar(5) == 5
    assert get_leaves((1, (E(0), 3))) == (1, E(0), 3)


def test_shape_div_rejects_non_divisible_static_values():
    with pytest.raises(ValueError, match=r"shape_div\(6, 4\): neither value divides the other"):
        shape_div(6, 4)


# ---------------------------------------------------------------------------------------------
# Queries and structure
# ---------------------------------------------------------------------------------------------


def test_size_cosize_rank_depth():
    layout = L((9, (4, 8)), (59, (13, 1)))
    assert size(layout) == 288 and rank(layout) == 2 and depth(layout) == 2
    assert size(layout, 1) == 32 and rank(layout, 1) == 2
    assert cosize(L((4, 8), (1, 4))) == 32 and cosize(L((4, 8), (1, 5))) == 39
    assert cosize(L((3, 4), (0, 1))) == 4
    assert cosize(layout) == max(table(layout)) + 1
    assert coshape(make_identity_layout((4, 8))) == (4, 8)
    assert coprofile(make_identity_layout((4, 8))) == (0, 0) and coprofile(layout) == 0


def test_select_group_take_flydsl_goldens():
    layout = L((128, 64), (1, 128))
    assert str(get_(layout, 0)) == "128:1"
    assert str(layout[0]) == "128:1"
    assert str(select(layout, [1, 0])) == "(64,128):(128,1)"
    assert str(take(layout, 0, 1)) == "128:1"
    assert str(group(layout, 0, 2)) == "((128,64)):((1,128))"
    assert str(coalesce(layout)) == "8192:1"
    assert take((1, 2, 3, 4), 1, 3) == (2, 3)
    assert group((1, 2, 3, 4), 1, 3) == (1, (2, 3), 4)
    assert get(L((2, (3, 4)), (1, (2, 6))), 1, 0) == L(3, 2)
    assert get(L((2, (3, 4)), (1, (2, 6))), (1, 1)) == L(4, 6)


def test_append_prepend():
    assert append(L(4, 1), n=3) == L((4, 1, 1), (1, 0, 0))
    assert prepend(L((4, 8), (1, 4)), L(2, 32)) == L((2, 4, 8), (32, 1, 4))
    assert append((1, 2), 3) == (1, 2, 3)
    assert append(L(4, 1), n=1) == L(4, 1)


def test_slice_and_dice():
    assert slice((4, 8, 16), (None, 3, None)) == (4, 16)
    assert dice((4, 8, 16), (None, 3, None)) == (8,)
    layout = L((4, 8), (1, 4))
    sub, off = slice_and_offset((None, 3), layout)
    assert sub == L((4,), (1,)) and off == 12
    assert layout(None, 3) == sub  # a None in the coordinate slices
    assert slice(layout, (2, None)) == L((8,), (4,))  # FlyDSL's (src, coord) order
    assert dice((2, None), layout) == L((4,), (1,))
    nested = L((2, (3, 4)), (1, (2, 6)))
    sub, off = slice_and_offset((1, (None, 2)), nested)
    assert sub == L((3,), (2,)) and off == 13
    for i in range(3):
        assert nested((1, (i, 2))) == off + sub(i)


def test_composed_layout_slicing_folds_offset():
    composed = make_composed_layout(Swizzle(1, 0, 1), L((4, 4), (4, 1)))
    sub, off = slice_and_offset((1, None), composed)  # offset 4: one period of the swizzle (2**2)
    assert off == 4 and isinstance(sub, ComposedLayout) and sub.offset == 0
    sub, off = slice_and_offset((None, 1), composed)  # offset 1: inside the period, folded
    assert off == 0 and sub.offset == 1
    composed = make_composed_layout(Swizzle(2, 1, 2), L((8, 16), (16, 1)))  # period 32
    for i in range(8):
        sub, off = slice_and_offset((i, None), composed)
        assert off % 32 == 0 and sub.offset == 16 * i - off
        for j in range(16):
            assert off + sub(j) == composed(i, j)  # a swizzle passes multiples of its period through


# ---------------------------------------------------------------------------------------------
# Coordinate mapping
# ---------------------------------------------------------------------------------------------


def test_crd2idx_goldens():
    assert crd2idx((2, 3), L((4, 8), (1, 4))) == 14
    assert crd2idx((0, 0), L((4, 8), (1, 4))) == 0
    assert crd2idx((2, 3), L((4, 8), (8, 1))) == 19
    assert crd2idx(7, L((4, 8), (1, 4))) == 7
    assert crd2idx((1, 2), L((4, 8), (1, 4))) == 9
    assert crd2idx((1, 2), (4, 8), (1, 4)) == 9
    assert crd2idx((1, 2), (4, 8)) == 9  # compact column-major
    # an int coordinate into a nested shape splits colexicographically
    nested = L((2, (3, 4)), (100, (1, 10)))
    assert nested(7) == nested((1, (0, 1))) == 110
    # the last mode takes the remainder (out of range extends the last mode)
    assert L((4, 8), (1, 4))(40) == 40


def test_idx2crd_stride_and_shape_rules():
    assert idx2crd(14, L((4, 8), (1, 4))) == (2, 3)
    assert idx2crd(9, L((4, 8), (1, 4))) == (1, 2)
    assert idx2crd(5, L((4, 8), (8, 1))) == (0, 5)  # FlyDSL: stride-based
    assert idx2crd(5, (4, 8), (8, 1)) == (0, 5)
    assert idx2crd(5, (4, 8)) == (1, 1)  # CuTe's shape-based colexicographic split
    assert idx2crd(40, (4, 8)) == (0, 10)  # last mode unbounded
    assert idx2crd(3, L((1, 4), (7, 1))) == (0, 3)  # shape-1 mode -> 0
    assert idx2crd(17, ((2, 3), 4)) == ((1, 2), 2)


def test_flat_and_1d_coords():
    layout = L(((2, 4), 8), ((1, 2), 8))
    assert get_flat_coord(5, layout) == (5, 0)
    assert get_1d_coord(5, layout) == 5
    assert get_1d_coord(9, L((4, 8), (1, 4))) == 9
    assert get_1d_coord(5, L((4, 8), (8, 1))) == 20
    assert layout.get_hier_coord(5) == ((1, 2), 0)
    row = L((4, 8), (8, 1))
    for i in range(32):
        assert row(idx2crd(row(i), row)) == row(i)
        assert get_1d_coord(row(i), row) == i


# ---------------------------------------------------------------------------------------------
# Coalesce / composition / complement / inverses
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "layout, expected",
    [
        (L((4, 8), (1, 4)), L(32, 1)),
        (L((128, 64), (1, 128)), L(8192, 1)),
        (L((2, (1, 6)), (1, (6, 2))), L(12, 1)),
        (L((3, 1, 9), (1, 9, 3)), L(27, 1)),
        (L((4, 8), (1, 8)), L((4, 8), (1, 8))),
        (L((1, 1), (3, 5)), L(1, 0)),
        (L((2, 2), (0, 0)), L(4, 0)),
    ],
)
def test_coalesce_goldens(layout, expected):
    result = coalesce(layout)
    assert result == expected
    assert table(result) == table(layout)


def test_coalesce_by_mode():
    a = L((2, (1, 6)), (1, (6, 2)))
    assert coalesce(a, (1, 1)) == L((2, 6), (1, 2))
    assert coalesce(a, pattern=(1, 1)) == L((2, 6), (1, 2))


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (L((4, 8), (1, 4)), L((2, 4), (1, 2)), L((2, 4), (1, 2))),
        (L((6, 2), (8, 2)), L((4, 3), (3, 1)), L(((2, 2), 3), ((24, 2), 8))),
        (L(20, 2), L((5, 4), (4, 1)), L((5, 4), (8, 2))),
        (L((10, 2), (16, 4)), L((5, 4), (1, 5)), L((5, (2, 2)), (16, (80, 4)))),
        (L((6, 9), (19, 69)), L((6, 3), (3, 1)), L(((2, 3), 3), ((57, 69), 19))),
        (L((4,), (1,)), L((2,), (1,)), L((2,), (1,))),
        (L((3, 6, 2, 8), (1, 5, 100, 1000)), L(16, 9), L((2, 2, 4), (15, 100, 1000))),
    ],
)
def test_composition_goldens(a, b, expected):
    r = composition(a, b)
    assert r == expected
    assert table(r) == [a(b(i)) for i in range(size(b))]


def test_composition_by_mode_tilers():
    a = L((12, (4, 8)), (59, (13, 1)))
    r = composition(a, make_tile(L(3, 4), L(8, 2)))
    assert r == L((3, (2, 4)), (236, (26, 1)))
    assert composition(a, (3, 8)) == L((3, (4, 2)), (59, (13, 1)))
    assert composition(a, (None, 8)) == L((12, (4, 2)), (59, (13, 1)))
    for i, j in itertools.product(range(3), range(8)):
        assert r(i, j) == a(4 * i, 2 * j)


def test_composition_weak_divisibility_like_cute_and_flydsl():
    # CuTe's and FlyDSL's weak shape divisibility: a tiler that ends inside a layout mode is accepted
    # as long as what is left of it is a multiple of what the mode takes (issue 13)
    a = L((5, 15), (19, 51))
    assert composition(a, L(3, 1)) == L(3, 19)
    r = composition(a, L((3, 5), (1, 5)))
    assert r == L((3, 5), (19, 51))
    b = L((3, 5), (1, 5))
    assert table(r) == [a(b(i)) for i in range(size(b))]
    # a multi-mode tiler composes mode by mode (CuTe, FlyDSL): each mode is exact on its own, and the
    # whole equals function composition only where the modes' images do not straddle a layout mode
    c = composition(L((4, 3), (1, 10)), L((2, 3), (2, 1)))
    assert c == L((2, 3), (2, 1))
    assert [c(i, 0) for i in range(2)] == [L((4, 3), (1, 10))(2 * i) for i in range(2)]
    assert [c(0, j) for j in range(3)] == [L((4, 3), (1, 10))(j) for j in range(3)]
    # a leftover that is not a multiple of the mode is still rejected: 7 = 5 + 2 does not tile (5,15)
    with pytest.raises(ValueError, match="shape divisibility condition violated"):
        composition(a, L(7, 1))


def test_composition_errors_are_user_readable():
    with pytest.raises(ValueError, match="stride divisibility condition violated: stride 2"):
        composition(L((3, 4), (1, 5)), L(4, 2))
    with pytest.raises(ValueError, match="shape divisibility condition violated"):
        composition(L((4, 8), (1, 10)), L(6, 1))
    with pytest.raises(ValueError, match="the tiler has 3 modes but the layout"):
        composition(L((4, 8)), (2, 2, 2))


def test_composition_with_swizzle_and_composed():
    sw = Swizzle(2, 0, 2)
    c = composition(sw, L((4, 4), (4, 1)))
    assert isinstance(c, ComposedLayout) and str(c) == "Sw<2,0,2> o 0 o (4,4):(4,1)"
    c2 = composition(c, (2, 2))
    for i, j in itertools.product(range(2), range(2)):
        assert c2(i, j) == sw(L((4, 4), (4, 1))(i, j))


@pytest.mark.parametrize(
    "layout, cotarget, expected",
    [
        (L(4, 1), 32, L(8, 4)),
        (L(4, 1), 24, L(6, 4)),
        (L(6, 4), 24, L(4, 1)),
        (L((4, 6), (1, 4)), 24, L(1, 0)),
        (L(4, 2), 24, L((2, 3), (1, 8))),
        (L((2, 4), (1, 6)), 24, L(3, 2)),
        (L((2, 2), (1, 6)), 24, L((3, 2), (2, 12))),
        (L(3, 1), 12, L(4, 3)),
        (L((3, 2), (2, 1)), 12, L(2, 6)),
        (L(3, 0), 12, L(12, 1)),
    ],
)
def test_complement_goldens(layout, cotarget, expected):
    c = complement(layout, cotarget)
    assert c == expected
    image = set(table(layout))
    assert all(v not in image for v in table(c)[1:])


def test_complement_default_cotarget_and_errors():
    assert complement(L(4, 1)) == L(1, 0)
    assert complement(L((4,), (2,)), codomain_size=16) == L((2, 2), (1, 8))
    with pytest.raises(ValueError, match=r"complement: \(3,2\):\(1,2\) is not injective"):
        complement(L((3, 2), (1, 2)), 12)


@pytest.mark.parametrize(
    "layout, expected",
    [
        (L((4, 8), (1, 4)), L(32, 1)),
        (L((2, 4), (4, 1)), L((4, 2), (2, 1))),
        (L((4, 8), (8, 1)), L((8, 4), (4, 1))),
        (L((4, 2), (2, 16)), L(1, 0)),
        (L((2, 4), (1, 4)), L(2, 1)),
    ],
)
def test_right_inverse_goldens(layout, expected):
    r = right_inverse(layout)
    assert r == expected
    assert [layout(r(i)) for i in range(size(r))] == list(range(size(r)))


def test_left_inverse():
    for layout in (L((4, 8), (8, 1)), L((4, 2), (2, 16)), L((2, 3), (3, 1))):
        li = left_inverse(layout)
        assert [li(layout(i)) for i in range(size(layout))] == list(range(size(layout)))


# ---------------------------------------------------------------------------------------------
# Divide and product
# ---------------------------------------------------------------------------------------------


def test_logical_divide_cute_docs():
    a = L((4, 2, 3), (2, 1, 8))
    r = logical_divide(a, L(4, 2))
    assert r == L(((2, 2), (2, 3)), ((4, 1), (2, 8)))
    tiles = make_layout(L(4, 2), complement(L(4, 2), 24))
    assert table(r) == [a(tiles(i)) for i in range(24)]
    assert logical_divide(L(16, 1), L(4, 1)) == L((4, 4), (1, 4))
    assert logical_divide(L(12, 1), L(3, 1)) == L((3, 4), (1, 3))
    assert logical_divide(L((4, 8), (1, 4)), L((2, 4), (1, 2))) == L(((2, 4), 4), ((1, 2), 8))


def test_divide_by_mode_cute_docs():
    a = L((9, (4, 8)), (59, (13, 1)))
    tiler = make_tile(L(3, 3), L((2, 4), (1, 8)))
    ld = logical_divide(a, tiler)
    assert ld == L(((3, 3), ((2, 4), (2, 2))), ((177, 59), ((13, 2), (26, 1))))
    zd = zipped_divide(a, tiler)
    assert size(zd, 0) == 24 and size(zd, 1) == 12
    assert get(zd, 0) == composition(a, tiler)  # mode 0 of zipped_divide is the tile
    assert size(logical_divide(a, tiler)) == 288


FLYDSL_BYMODE_DIVIDE = [
    ((64, 1), 32, "(32,2):(1,32)", "(32,2):(1,32)", "(32,2):(1,32)", "(32,2):(1,32)"),
    (
        ((64, 50), (100, 1)),
        32,
        "(32,(2,50)):(100,(3200,1))",
        "(32,(2,50)):(100,(3200,1))",
        "(32,2,50):(100,3200,1)",
        "(32,2,50):(100,3200,1)",
    ),
    (
        ((64, 50), (100, 1)),
        (32,),
        "((32,2),50):((100,3200),1)",
        "((32),(2,50)):((100),(3200,1))",
        "((32),2,50):((100),3200,1)",
        "(32,2,50):(100,3200,1)",
    ),
    (
        ((64, 50), (100, 1)),
        (32, None),
        "((32,2),50):((100,3200),1)",
        "((32,1),(2,50)):((100,0),(3200,1))",
        "((32,1),2,50):((100,0),3200,1)",
        "(32,1,2,50):(100,0,3200,1)",
    ),
    (
        ((64, 50), (100, 1)),
        (None, 25),
        "(64,(25,2)):(100,(1,25))",
        "((1,25),(64,2)):((0,1),(100,25))",
        "((1,25),64,2):((0,1),100,25)",
        "(1,25,64,2):(0,1,100,25)",
    ),
    (
        ((64, 50, 80), (16000, 160, 1)),
        (32, None, 40),
        "((32,2),50,(40,2)):((16000,512000),160,(1,40))",
        "((32,1,40),(2,50,2)):((16000,0,1),(512000,160,40))",
        "((32,1,40),2,50,2):((16000,0,1),512000,160,40)",
        "(32,1,40,2,50,2):(16000,0,1,512000,160,40)",
    ),
    (
        ((64, 50, 80), (16000, 160, 1)),
        32,
        "(32,(2,50,80)):(16000,(512000,160,1))",
        "(32,(2,50,80)):(16000,(512000,160,1))",
        "(32,2,50,80):(16000,512000,160,1)",
        "(32,2,50,80):(16000,512000,160,1)",
    ),
]


@pytest.mark.parametrize("args, tiler, logical, zipped, tiled, flat", FLYDSL_BYMODE_DIVIDE)
def test_divide_flavours_flydsl_goldens(args, tiler, logical, zipped, tiled, flat):
    a = L(*args)
    assert str(logical_divide(a, tiler)) == logical
    assert str(zipped_divide(a, tiler)) == zipped
    assert str(tiled_divide(a, tiler)) == tiled
    assert str(flat_divide(a, tiler)) == flat


def test_divide_identity_layout_flydsl_golden():
    r = logical_divide(make_identity_layout((4, 8)), L((2, 4), (1, 2)))
    assert str(r) == "((2,(2,2)),4):((1E0,(2E0,1E1)),2E1)"
    seen = {r(i) for i in range(32)}
    assert seen == set(itertools.product(range(4), range(8)))


def test_logical_product_goldens():
    assert logical_product(L((2, 2), (4, 1)), L(6, 1)) == L(((2, 2), (2, 3)), ((4, 1), (2, 8)))
    assert logical_product(L((4, 8), (1, 4)), L((2, 2), (1, 2))) == L(((4, 8), (2, 2)), ((1, 4), (32, 64)))
    assert logical_product(L(8, 1), L(4, 1)) == L((8, 4), (1, 8))
    r = logical_product(L((6, 9), (9, 1)), L((9,), (1,)))
    assert r == L(((6, 9), (9,)), ((9, 1), (54,)))  # FlyDSL prints the (9) wrapper unwrapped
    assert sorted(table(r)) == list(range(486))


def test_product_flavours():
    a, b = L((4, 8), (1, 4)), L((2, 2), (1, 2))
    assert zipped_product(a, b) == logical_product(a, b)
    assert tiled_product(a, b) == L(((4, 8), 2, 2), ((1, 4), 32, 64))
    assert flat_product(a, b) == L((4, 8, 2, 2), (1, 4, 32, 64))
    tiler = (L(2, 1), L(3, 1))
    assert zipped_product(a, tiler) == L(((4, 8), (2, 3)), ((1, 4), (4, 1)))


def test_blocked_and_raked_products():
    blocked = blocked_product(L((3, 6), (6, 1)), L((4, 5), (1, 4)))
    assert blocked == L(((3, 4), (6, 5)), ((6, 18), (1, 72)))
    raked = raked_product(L((4, 8), (1, 4)), L((2, 2), (1, 2)))
    assert raked == L(((2, 4), (2, 8)), ((32, 1), (64, 4)))
    assert sorted(table(blocked)) == list(range(360)) and sorted(table(raked)) == list(range(128))
    # a 2x5 row-major block tiled 3x4 column-major: block (i, j) of tile (p, q)
    block, tiles = L((2, 5), (5, 1)), L((3, 4))
    bp = blocked_product(block, tiles)
    for i, j, p, q in itertools.product(range(2), range(5), range(3), range(4)):
        assert bp((i, p), (j, q)) == block(i, j) + 10 * tiles(p, q)
    # one-dimensional operands: CuTe keeps the rank-1 zip
    assert raked_product(L((8,), (1,)), L((4,), (1,))) == L(((4, 8),), ((8, 1),))


def test_tile_to_shape():
    r = tile_to_shape(L((8, 8), (8, 1)), (32, 64))
    assert r == L((32, (8, 8)), (8, (1, 256)))
    assert size(r) == 2048 and sorted(table(r)) == list(range(2048))
    for i, j in itertools.product(range(8), range(8)):
        assert r(i, j) == L((8, 8), (8, 1))(i, j)
    r2 = tile_to_shape(L((2, 2)), (4, 6), (1, 0))
    assert r2 == L(((2, 2), 6), ((1, 12), 2))  # repetitions row-major, then coalesced by mode
    assert sorted(table(r2)) == list(range(24))
    with pytest.raises(ValueError, match="does not divide the target shape"):
        tile_to_shape(L((8, 8)), (12, 64))


def test_tile_to_shape_swizzled_atom():
    atom = composition(Swizzle(3, 3, 3), L((8, 64), (64, 1)))
    r = tile_to_shape(atom, (64, 128))
    assert isinstance(r, ComposedLayout) and r.inner == Swizzle(3, 3, 3)
    assert size(r) == 64 * 128 and sorted(r(i) for i in range(size(r))) == list(range(64 * 128))


# ---------------------------------------------------------------------------------------------
# Recast, thread-value layouts, swizzle
# ---------------------------------------------------------------------------------------------


def test_recast_layout_flydsl_goldens():
    a = L((2, 3, 4), (1, 2, 4))
    assert recast_layout(a, 16, 32) == L((1, 3, 4), (1, 1, 2))
    assert recast_layout(a, 32, 16) == L((4, 3, 4), (1, 4, 8))
    assert recast_layout(L(4, 5), 24, 40) == L(12, 1)
    assert recast_layout(a, 16, 16) == a
    assert upcast(L((4, 8), (8, 1)), 4) == L((4, 2), (2, 1))
    assert downcast(L((4, 8), (8, 1)), 2) == L((4, 16), (16, 1))
    with pytest.raises(TypeError, match="old_bits must be a positive Python int"):
        recast_layout(a, 0, 16)


def test_recast_swizzled_layout():
    c = make_composed_layout(Swizzle(3, 4, 3), L((8, 64), (64, 1)))
    up = upcast(c, 8)  # e.g. 16-bit elements viewed as 128-bit vectors
    assert str(up) == "Sw<3,1,3> o 0 o (8,8):(8,1)"
    assert str(downcast(c, 2)) == "Sw<3,5,3> o 0 o (8,128):(128,1)"


def test_make_layout_tv():
    thr, val = L((4, 8), (8, 1)), L((1, 4), (4, 1))
    tiler, tv = make_layout_tv(thr, val)
    assert tiler == (4, 32)
    mn = raked_product(thr, val)
    for t, v in itertools.product(range(32), range(4)):
        assert mn(tv(t, v)) == t + 32 * v


def test_swizzle_values():
    sw = Swizzle(3, 4, 3)
    assert sw.yyy_mask == 0b1110000000 and sw.zzz_mask == 0b0001110000
    assert sw.mask == 3 and sw.bits == 3 and sw.base == 4 and sw.shift == 3
    assert sw(0b0010000000) == 0b0010010000
    assert sw(0b1010101111) == 0b1010101111 ^ 0b0001010000
    assert Swizzle(2, 0, -2)(0b0011) == 0b1111
    with pytest.raises(ValueError, match=r"\|shift\| must be >= bits"):
        Swizzle(3, 0, 2)


def test_max_common_vector():
    assert max_common_vector(L((4, 8), (1, 4)), L((4, 8), (1, 4))) == 32
    assert max_common_vector(L((4, 8), (1, 4)), L((4, 8), (8, 1))) == 1
    assert max_common_vector(L((8, 4), (1, 16)), L((8, 4), (1, 8))) == 8


# ---------------------------------------------------------------------------------------------
# User-facing errors
# ---------------------------------------------------------------------------------------------


def test_construction_errors():
    with pytest.raises(ValueError, match=r"shape \(4,8\) and stride \(1,\(4,2\)\) must have the same nesting"):
        L((4, 8), (1, (4, 2)))
    with pytest.raises(TypeError, match="is a bool, not an integer"):
        L((4, True))
    with pytest.raises(TypeError, match="leaf 2.5 of type float is not an integer"):
        L((4, 2.5))
    with pytest.raises(ValueError, match="shape entries must be >= 0"):
        L((4, -1))
    with pytest.raises(TypeError, match="a shape cannot contain the basis element 1E0"):
        L((E(0), 4))
    with pytest.raises(TypeError, match="stride cannot contain None"):
        L((4, 8), (1, None))


def test_mapping_and_structure_errors():
    layout = L((4, 8), (1, 4))
    with pytest.raises(ValueError, match=r"crd2idx: coordinate \(1,2,3\) does not match shape \(4,8\)"):
        layout((1, 2, 3))
    with pytest.raises(IndexError, match="mode 2 out of range for layout"):
        get(layout, 2)
    with pytest.raises(IndexError, match=r"take: range \[1, 5\) is not within the 2 modes"):
        take(layout, 1, 5)
    with pytest.raises(TypeError, match="a ComposedLayout has no stride"):
        _ = make_composed_layout(Swizzle(1, 0, 1), layout).stride
    with pytest.raises(ValueError, match="get_scalar: .* has 2 leaves"):
        get_scalar((1, 2))
    with pytest.raises(TypeError, match="layout .* is not hashable"):
        hash(L((4, object.__new__(_Opaque))))


class _Opaque:
    """A stand-in traced integer (only needs the arithmetic protocol)."""

    __add__ = __mul__ = __floordiv__ = __mod__ = lambda self, other: self
