"""FlyDSL's value types of the layout layer: ``Tile`` (what ``fx.make_tile`` returns, ``TiledCopy.tile_mn``,
``fx.static(TileType)``) and the shape/stride views (``layout.shape`` is an ``IntTuple``, a static leaf a
``StaticInt``), with FlyDSL's ``unpack()`` — and that both still go everywhere a tuple went before."""

from __future__ import annotations

import re

import numpy as np
import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl import ir
from flydsl import layout as L
from flydsl.compiler import GlobalChangedError
from flydsl.compiler.cache import canonical
from flydsl.expr.typing import Constexpr
from flydsl.ir import i32
from flydsl.layout import ComposedLayout, IntTuple, Layout, StaticInt, Swizzle, Tile
from flydsl.testing import trace_kernel

# ---------------------------------------------------------------------------------------------------
# layout.shape / layout.stride
# ---------------------------------------------------------------------------------------------------


def test_layout_shape_is_an_int_tuple_view_that_reads_like_the_tuple():
    lay = fx.make_layout((4, (2, 8)), (16, (1, 2)))
    s, d = lay.shape, lay.stride
    assert type(s) is IntTuple and type(d) is IntTuple and type(s[1]) is IntTuple
    assert s == (4, (2, 8)) and d == (16, (1, 2)) and hash(s) == hash((4, (2, 8)))
    assert len(s) == 2 and s[0] == 4 and type(s[0]) is int and s[-1] == (2, 8) and s[1:] == ((2, 8),)
    m, (a, b) = s
    assert (m, a, b) == (4, 2, 8) and list(s) == [4, (2, 8)]
    assert s.rank == 2 and s.depth == 2 and s.is_static and not s.is_leaf
    assert str(s) == "(4,(2,8))" and repr(s) == "IntTuple(4,(2,8))" and f"{d}" == "(16,(1,2))"
    assert str(s.type) == "!fly.int_tuple<(4,(2,8))>"


def test_unpack_is_the_plain_nested_value():
    lay = fx.make_layout((4, (2, 8)), (16, (1, 2)))
    u = lay.shape.unpack()
    assert u == (4, (2, 8)) and type(u) is tuple and type(u[1]) is tuple
    assert lay.shape.to_py_value() == u and lay.stride.unpack() == (16, (1, 2))
    ident = fx.make_identity_layout((4, 8))
    assert ident.stride.unpack() == (fx.E(0), fx.E(1))


def test_leaf_shape_is_a_static_int():
    lay = fx.make_layout(16, 1)
    assert type(lay.shape) is StaticInt and lay.shape == 16 and lay.shape.unpack() == 16
    assert type(lay.shape.unpack()) is int and lay.stride.unpack() == 1 and lay.shape + 1 == 17
    assert lay.shape.is_leaf and lay.shape.rank == 1 and str(lay.shape.type) == "!fly.int_tuple<16>"


def test_run_time_leaves_stay_the_values_they_are():
    with trace_kernel([i32]) as t:
        n = fx.Int32(t.args[0])
        lay = fx.make_layout((8, n), (n, 1))
        m, nn = lay.shape.unpack()
        assert m == 8 and nn is n and lay.stride.unpack()[0] is n and lay.shape[1] is n
        assert not lay.shape.is_static and str(lay.shape) == "(8,?)"
        assert fx.make_layout(n).shape is n and fx.make_layout(n).shape.unpack() is n  # a run-time leaf: itself
        size = fx.size(lay.shape)
        assert type(size) is fx.Int32 and size.unpack() is size  # a run-time size, FlyDSL's leaf unpack


def test_views_go_where_tuples_went():
    lay = fx.make_layout((4, 8), (8, 1))
    assert fx.size(lay.shape) == 32 and fx.rank(lay.shape) == 2 and fx.depth(lay.shape) == 1
    assert fx.make_layout(lay.shape, lay.stride) == lay and L.make_layout(lay.shape, lay.stride) == lay
    assert fx.make_layout(lay.shape) == fx.make_layout((4, 8))
    assert fx.crd2idx((1, 2), fx.make_layout(lay.shape, lay.stride)) == 10 and fx.idx2crd(9, lay.shape) == (1, 2)
    assert L.make_int_tuple(lay.shape) == (4, 8) and type(L.make_int_tuple(lay.shape)) is tuple
    assert fx.make_identity_tensor(lay.shape).layout == fx.make_identity_layout((4, 8))
    assert fx.get_shape(lay) == lay.shape and type(fx.get_shape(lay)) is IntTuple
    assert fx.size(fx.make_layout(16).shape).unpack() == 16


def test_composed_layout_shape_is_the_outer_view():
    c = ComposedLayout(Swizzle(3, 4, 3), 0, fx.make_layout((8, 64), (64, 1)))
    assert type(c.shape) is IntTuple and c.shape.unpack() == (8, 64)
    with pytest.raises(TypeError, match="no stride"):
        _ = c.stride


def test_the_algebra_still_reads_plain_tuples():
    lay = fx.make_layout((4, 8), (1, 4))
    assert type(L.shape(lay)) is tuple and type(L.stride(lay)) is tuple  # the library accessors
    assert type(L.coalesce(lay).shape) is StaticInt and L.coalesce(lay).shape == 32  # results: views


_LAYOUTS = [((4, (2, 8)), (16, (1, 2))), ((3, 5), (5, 1)), (16, 1), (((2, 2), 4), ((1, 8), 2))]
_UNARY = ["flatten", "rank", "depth", "product", "product_each", "prefix_product", "suffix_product",
          "compact_col_major", "compact_row_major", "is_static", "is_tuple"]  # fmt: skip
_BINARY = ["congruent", "weakly_congruent", "compatible", "weakly_compatible", "inner_product", "elem_less",
           "int_tuple_add", "int_tuple_max", "equal", "repeat_like"]  # fmt: skip


@pytest.mark.parametrize("shape, stride", _LAYOUTS)
def test_flydsl_layout_functions_compute_on_views_as_on_the_plain_tuples(shape, stride):
    """A view handed back to ``flydsl.layout`` is the tuple it views (never a leaf): every function of the
    int-tuple algebra and the layout algebra gives the plain tuples' result."""
    lay = fx.make_layout(shape, stride)
    vs, vd = lay.shape, lay.stride
    ps, pd = L.shape(lay), L.stride(lay)
    assert type(vs) in (IntTuple, StaticInt) and type(ps) in (tuple, int)
    for name in _UNARY:
        fn = getattr(L, name)
        assert fn(vs) == fn(ps) and fn(vd) == fn(pd), name
    for name in _BINARY:
        fn = getattr(L, name, None)
        if fn is not None:
            assert fn(vs, vs) == fn(ps, ps) and fn(vs, vd) == fn(ps, pd), name
    assert L.make_layout(vs, vd) == lay and L.make_layout(vs) == L.make_layout(ps)
    assert L.equal(vs, ps) and L.is_int(vs) == L.is_int(ps)  # a view is its tuple, a tuple view is no int leaf
    assert L.unflatten(L.flatten(vs), vs) == ps
    for i in range(L.size(vs)):
        assert L.idx2crd(i, vs) == L.idx2crd(i, ps) and L.crd2idx(L.idx2crd(i, ps), vs, vd) == lay(i)
    flat = L.make_layout(L.product(vs))
    assert L.composition(flat, L.make_layout(vs, L.compact_col_major(vs))) == L.composition(
        flat, L.make_layout(ps, L.compact_col_major(ps))
    )
    first = L.flatten(vs)[0] if type(vs) is IntTuple else vs  # a tiler that always divides: the first leaf
    assert L.logical_divide(lay, L.make_layout(first)) == L.logical_divide(L.make_layout(ps, pd), L.make_layout(first))
    assert L.coalesce(L.make_layout(vs, vd)) == L.coalesce(lay)


# ---------------------------------------------------------------------------------------------------
# Tile
# ---------------------------------------------------------------------------------------------------


def test_make_tile_modes_and_unpack():
    t = fx.make_tile(8, 64)
    assert type(t) is Tile and not t.is_leaf and t.rank == 2 and t.unpack() == (8, 64)
    leaf = fx.make_tile(256)
    assert leaf.is_leaf and leaf.rank == 1 and leaf.unpack() == 256 and leaf.tiler == 256
    nested = fx.make_tile(128, (8, 4))
    assert nested.unpack() == (128, (8, 4)) and type(nested.unpack()[1]) is tuple
    lay = fx.make_layout(16, 1)
    mixed = fx.make_tile(32, lay, None)
    assert mixed.unpack() == (32, lay, None) and mixed.unpack()[1] is lay
    assert fx.make_tile([lay, lay]) == fx.make_tile(lay, lay) == fx.make_tile((lay, lay))
    assert fx.make_tile(fx.Int32(4), 8).unpack() == (4, 8)  # compile-time fx integers fold


def test_tile_reads_like_the_tuple_of_its_modes():
    t = fx.make_tile(8, 64)
    assert len(t) == 2 and list(t) == [8, 64] and t[1] == 64 and tuple(t) == (8, 64)
    tm, tn = t
    assert (tm, tn) == (8, 64)
    assert t == (8, 64) and t == fx.make_tile(8, 64) and t != fx.make_tile(8, 32) and t != (8, 32)
    assert hash(t) == hash((8, 64)) and {t: 1}[(8, 64)] == 1
    leaf = fx.make_tile(256)
    assert len(leaf) == 1 and leaf[0] == 256 and list(leaf) == [256]
    assert leaf != fx.make_tile((256,)) and leaf != (256,)  # a leaf tile is not a one-mode tuple tiler
    assert hash(leaf) == hash(fx.make_tile(256))


def test_a_tile_of_integer_modes_is_an_int_tuple():
    assert fx.size(fx.make_tile(4, 8)) == 32 and fx.size(fx.make_tile(256)) == 256
    assert fx.make_layout(fx.make_tile(4, (2, 8))) == fx.make_layout((4, (2, 8)))
    with pytest.raises(TypeError, match="Layout.* is not an integer"):
        fx.size(fx.make_tile(4, fx.make_layout(8, 1)))


def test_tile_printing_and_type():
    t = fx.make_tile(4, fx.make_layout(8, 2), None)
    assert str(t) == "[4|8:2|_]" and repr(t) == "Tile([4|8:2|_])"
    assert t.type == L.TileType.get([4, fx.make_layout(8, 2), None]) and str(t.type) == "!fly.tile<[4|8:2|_]>"
    assert str(fx.make_tile(256)) == "256" and t.is_static


def test_make_tile_records_fly_static_in_a_trace():
    with trace_kernel([i32]) as tr:
        n = fx.Int32(tr.args[0])
        fx.make_tile(4, fx.make_layout(8, 1))
        fx.make_tile(n, 8)  # run-time modes: no type of its own in FlyDSL, not recorded
    statics = [line for line in tr.text.splitlines() if "fly.static" in line]
    assert len(statics) == 1 and "!fly.tile<[4|8:1]>" in statics[0]
    assert "fly." not in ir.print_op(tr.module)  # the lowering erases the record


def test_run_time_tile_modes_are_not_hashable():
    with trace_kernel([i32]) as tr:
        n = fx.Int32(tr.args[0])
        t = fx.make_tile(n, 8)
        assert t.unpack()[0] is n and not t.is_static and str(t) == "[?|8]"
        with pytest.raises(TypeError, match="not hashable"):
            hash(t)


@pytest.mark.parametrize(
    "fn",
    [
        fx.composition,
        fx.logical_divide,
        fx.zipped_divide,
        fx.tiled_divide,
        fx.flat_divide,
        fx.logical_product,
        fx.zipped_product,
        fx.tiled_product,
        fx.flat_product,
    ],
)
def test_a_tile_is_the_tiler_it_holds(fn):
    lay = fx.make_layout((8, 16), (16, 1))
    modes = (fx.make_layout(2, 1), fx.make_layout(4, 2))
    assert fn(lay, fx.make_tile(*modes)) == fn(lay, modes)
    lib = getattr(L, fn.__name__)
    assert lib(lay, fx.make_tile(*modes)) == lib(lay, modes)  # flydsl.layout takes tiles too


@pytest.mark.parametrize("fn", [fx.blocked_product, fx.raked_product, fx.logical_product, fx.composition])
def test_a_leaf_tile_of_a_layout_is_that_layout(fn):
    lay, tiler = fx.make_layout((2, 4), (4, 1)), fx.make_layout((3, 2), (2, 1))
    assert fn(lay, fx.make_tile(tiler)) == fn(lay, tiler)


def test_a_leaf_tile_divides_the_whole_layout():
    lay = fx.make_layout((8, 16), (1, 8))
    assert fx.logical_divide(lay, fx.make_tile(32)) == fx.logical_divide(lay, 32)
    assert fx.zipped_divide(lay, fx.make_tile(32)) == L.zipped_divide(lay, 32)
    assert fx.logical_divide(lay, fx.make_tile(4)) != fx.logical_divide(lay, (4,))  # CuTe's non-tuple tiler
    nested = fx.make_layout(((2, 4), 16))
    tile = fx.make_tile(fx.make_tile(2, 2), None)  # a tile as a mode is a nested tile
    assert tile.unpack() == ((2, 2), None)
    assert fx.logical_divide(nested, tile) == fx.logical_divide(nested, ((2, 2), None))


def test_tiles_divide_tensors():
    t = fx.make_identity_tensor((8, 16))
    tile = fx.make_tile(4, 8)
    assert fx.flat_divide(t, tile).layout == fx.flat_divide(t.layout, (4, 8))
    assert fx.zipped_divide(t, tile).layout == L.zipped_divide(t.layout, (4, 8))


def test_tiled_copy_tile_mn_is_a_tile():
    atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
    tiled = fx.make_tiled_copy_tv(atom, fx.make_ordered_layout((8, 16), order=(1, 0)), fx.make_ordered_layout((1, 4)))
    assert type(tiled.tile_mn) is Tile and tiled.tile_mn.unpack() == (8, 64) and tiled.tile_mn == (8, 64)
    again = fx.make_tiled_copy(atom, tiled.layout_tv, tiled.tile_mn)  # a tile goes back in
    assert again == tiled and again.tile_mn == tiled.tile_mn
    by_layouts = fx.make_tiled_copy(atom, tiled.layout_tv, fx.make_tile(fx.make_layout(8, 1), fx.make_layout(64, 1)))
    assert by_layouts == tiled


def test_tiled_mma_permutation_takes_a_tile():
    atom = fx.make_mma_atom(fx.UniversalFMA(fx.Float32))
    perm = fx.make_tile(None, None, fx.make_layout((4, 2), (2, 1)))
    a = fx.make_tiled_mma(atom, fx.make_layout((2, 2, 1)), perm)
    b = fx.make_tiled_mma(atom, fx.make_layout((2, 2, 1)), (None, None, fx.make_layout((4, 2), (2, 1))))
    assert a == b and a.tile_size_mnk.unpack() == b.tile_size_mnk.unpack()
    assert type(a.permutation_mnk) is Tile and a.permutation_mnk == perm
    assert a.permutation_mnk.unpack() == (None, None, fx.make_layout((4, 2), (2, 1)))
    assert fx.make_tiled_mma(atom, fx.make_layout((2, 2, 1))).permutation_mnk == (None, None, None)


# ---------------------------------------------------------------------------------------------------
# fx.static and the types
# ---------------------------------------------------------------------------------------------------


def test_static_of_a_tile_type_is_the_tile():
    lt = fx.LayoutType.get(8, 1)
    modes = fx.static(fx.TileType.get([32, lt])).unpack()
    assert modes[0] == 32 and isinstance(modes[1], fx.Layout) and modes[1].shape.unpack() == 8
    assert fx.static(fx.TileType.get(256)) == fx.make_tile(256)
    assert fx.static(fx.make_tile(4, 8).type) == fx.make_tile(4, 8)


def test_static_of_int_tuple_and_layout_types():
    t = fx.static(fx.IntTupleType.get((4, (2, 8))))
    assert type(t) is IntTuple and t.unpack() == (4, (2, 8))
    assert type(fx.static(fx.IntTupleType.get(16))) is StaticInt
    lay = fx.make_layout((4, 8), (8, 1))
    assert fx.static(lay.type) == lay and fx.static(lay) is lay  # a value comes back as it is
    with trace_kernel([i32]) as tr:
        n = fx.Int32(tr.args[0])
        with pytest.raises(ValueError, match=r"^fx\.static: .* has run-time leaves; its value is not in its type$"):
            fx.static(fx.make_layout((n, 8)).type)


def test_types_of_views_and_tiles_match_their_values():
    lay = fx.make_layout((4, 8), (8, 1))
    assert lay.shape.type == lay.type.shape and lay.stride.type == lay.type.stride
    assert isinstance(fx.make_tile(4).type, L.TileType) and Layout(4).shape.type == L.IntTupleType.get(4)


# ---------------------------------------------------------------------------------------------------
# compile-time globals: a tile or layout a kernel reads is part of its key
# ---------------------------------------------------------------------------------------------------

TILE = fx.make_tile(4, 8)
SMEM = fx.make_layout((4, 8))


@flyc.kernel
def _tile_size_kernel(out: fx.Tensor):
    if fx.thread_idx.x == 0:
        out[0] = fx.size(fx.zipped_divide(out, TILE).layout[0]) * 100 + fx.size(SMEM)


@flyc.jit
def _tile_size(out: fx.Tensor):
    _tile_size_kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1))


@pytest.mark.parametrize(
    "name, new, shown",
    [("TILE", fx.make_tile(2, 8), "Tile([4|8]) -> Tile([2|8])"), ("SMEM", fx.make_layout(16), "(4,8):(1,4)) -> ")],
)
def test_a_changed_global_tile_or_layout_is_fly229_or_a_retrace(name, new, shown, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    out = np.zeros((8, 16), np.int32)
    _tile_size(out)
    assert out[0, 0] == 3232
    old = globals()[name]
    monkeypatch.setitem(globals(), name, new)
    with pytest.raises(GlobalChangedError, match=re.escape(shown)):
        _tile_size(out)
    monkeypatch.setenv("FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE", "1")
    _tile_size(out)
    assert out[0, 0] == (1632 if name == "TILE" else 3216)
    monkeypatch.setitem(globals(), name, old)
    _tile_size(out)
    assert out[0, 0] == 3232


@flyc.kernel
def _divided_tile_kernel(out: fx.Tensor, tile: Constexpr):
    if fx.thread_idx.x == 0:
        out[0] = fx.size(fx.zipped_divide(out, tile).layout[0])


@flyc.jit
def _divided_tile(out: fx.Tensor, tile: Constexpr):
    _divided_tile_kernel(out, tile).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_a_tile_is_a_compile_time_argument(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_CACHE_DIR", str(tmp_path))  # the disk key takes it too
    out = np.zeros((8, 16), np.int32)
    for tile, want in [
        (fx.make_tile(4, 8), 32),
        (fx.make_tile(2, 8), 16),
        (fx.make_tile(fx.make_layout(4, 2), 8), 32),
        ((fx.make_layout(2, 4), 8), 16),
        (fx.make_tile(16), 16),
    ]:
        _divided_tile(out, tile)
        assert out[0, 0] == want, tile


def test_canonical_forms_of_layout_values():
    forms = [
        canonical(x)
        for x in (fx.make_tile(4, 8), fx.make_tile((4, 8)), fx.make_tile(4), fx.make_layout(4), Swizzle(3, 4, 3))
    ]
    assert forms[0] == ["layout", "flydsl.layout.tile.Tile", "Tile([4|8])"] and forms[0] == forms[1]
    assert len({str(f) for f in forms[1:]}) == 4  # a leaf tile is not a layout, nor a one-mode tile
    with trace_kernel([i32]) as tr:
        with pytest.raises(TypeError, match="no canonical form"):
            canonical(fx.make_tile(fx.Int32(tr.args[0]), 8))
