"""Layouts with traced-integer leaves: dynamic values flow through operators, static parts fold.

``Sym`` is a tiny fake traced integer: every operator call records an op and builds an expression
that can be evaluated later, so results can be compared with the static computation.
"""

import operator

import pytest

from flydsl.layout import (
    E,
    Layout,
    Swizzle,
    coalesce,
    complement,
    composition,
    cosize,
    crd2idx,
    elem_less,
    flat_divide,
    get_flat_coord,
    idx2crd,
    is_static,
    logical_divide,
    logical_product,
    make_composed_layout,
    make_identity_layout,
    make_layout,
    make_ordered_layout,
    right_inverse,
    size,
    slice_and_offset,
    upcast,
    zipped_divide,
)
from flydsl.layout.inttuple import iadd, iceil_div, idiv, imin, imod, imul, isub

OPS = []


class Sym:
    """A fake traced integer: records every operation and can be evaluated."""

    def __init__(self, name=None, op=None, args=()):
        self.name, self.op, self.args = name, op, args

    def _bin(self, fn, other, rev=False):
        args = (other, self) if rev else (self, other)
        OPS.append(fn.__name__)
        return type(self)(op=fn, args=args)

    __add__ = lambda s, o: s._bin(operator.add, o)
    __radd__ = lambda s, o: s._bin(operator.add, o, True)
    __sub__ = lambda s, o: s._bin(operator.sub, o)
    __rsub__ = lambda s, o: s._bin(operator.sub, o, True)
    __mul__ = lambda s, o: s._bin(operator.mul, o)
    __rmul__ = lambda s, o: s._bin(operator.mul, o, True)
    __floordiv__ = lambda s, o: s._bin(operator.floordiv, o)
    __rfloordiv__ = lambda s, o: s._bin(operator.floordiv, o, True)
    __mod__ = lambda s, o: s._bin(operator.mod, o)
    __rmod__ = lambda s, o: s._bin(operator.mod, o, True)
    __and__ = lambda s, o: s._bin(operator.and_, o)
    __rand__ = lambda s, o: s._bin(operator.and_, o, True)
    __xor__ = lambda s, o: s._bin(operator.xor, o)
    __rshift__ = lambda s, o: s._bin(operator.rshift, o)
    __lshift__ = lambda s, o: s._bin(operator.lshift, o)
    __lt__ = lambda s, o: s._cmp(operator.lt, o)
    __gt__ = lambda s, o: s._cmp(operator.gt, o)

    def _cmp(self, fn, other):
        OPS.append(fn.__name__)
        return SymBool(op=lambda a, b: int(fn(a, b)), args=(self, other))

    def __bool__(self):
        raise TypeError("a traced value has no truth value at trace time")

    def __index__(self):
        raise TypeError("a traced value is not a Python int")

    __hash__ = object.__hash__

    def __eq__(self, other):
        raise TypeError("== on a traced value must not be used by the layout algebra")

    def eval(self, env):
        if self.op is None:
            return env[self.name]
        vals = [a.eval(env) if isinstance(a, Sym) else a for a in self.args]
        return self.op(*vals)


class SymBool(Sym):
    """A traced boolean with FlyDSL's ``select``."""

    def select(self, a, b):
        OPS.append("select")
        return Sym(op=lambda c, x, y: x if c else y, args=(self, a, b))


class PlainSym(Sym):
    """A traced integer whose comparisons return plain traced 0/1 integers (no ``select``)."""

    def _cmp(self, fn, other):
        OPS.append(fn.__name__)
        return PlainSym(op=lambda a, b: int(fn(a, b)), args=(self, other))


def table(layout):
    return [layout(i) for i in range(size(layout))]


def ev(x, env):
    """Evaluate a (nested) result against concrete values."""
    if isinstance(x, tuple):
        return tuple(ev(e, env) for e in x)
    if isinstance(x, Layout):
        return Layout(ev(x.shape, env), ev(x.stride, env))
    return x.eval(env) if isinstance(x, Sym) else x


@pytest.fixture(autouse=True)
def _clear_ops():
    OPS.clear()


M, N, I, J, T = Sym("M"), Sym("N"), Sym("i"), Sym("j"), Sym("t")


def test_leaf_helpers_short_circuit_static_identities():
    x = Sym("x")
    assert imul(0, x) == 0 and imul(x, 0) == 0
    assert imul(x, 1) is x and imul(1, x) is x
    assert iadd(x, 0) is x and iadd(0, x) is x and isub(x, 0) is x
    assert idiv(x, 1) is x and imod(x, 1) == 0 and iceil_div(x, 1) is x
    assert imin(x, x) is x
    assert OPS == []
    assert imul(3, 4) == 12 and iadd(3, 4) == 7 and iceil_div(7, 2) == 4


def test_static_layout_math_creates_no_ops_even_with_traced_values_around():
    layout = make_layout((4, 8), (1, 4))
    coalesce(layout), composition(layout, (2, 4)), logical_divide(layout, 4)
    logical_product(layout, make_layout(2)), complement(make_layout(4, 2), 24)
    assert OPS == []
    # a traced coordinate only creates the ops the index needs
    assert ev(layout((I, J)), {"i": 3, "j": 5}) == 23
    assert sorted(OPS) == ["add", "mul"]


def test_crd2idx_with_traced_coordinates_and_strides():
    layout = make_layout((M, N), (N, 1))
    r = layout(I, J)
    assert ev(r, {"i": 2, "j": 5, "N": 10}) == 25
    assert OPS == ["mul", "add"]  # i*N + j: the stride-1 multiply folded away
    OPS.clear()
    # an int coordinate into a traced shape splits colexicographically with run-time % and //
    r = crd2idx(T, make_layout((M, N), (1, M)))
    for t in range(12):
        assert ev(r, {"t": t, "M": 3, "N": 4}) == t
    # static shape and traced coordinate
    r = crd2idx(T, (4, 8), (8, 1))
    assert [ev(r, {"t": t}) for t in range(32)] == [make_layout((4, 8), (8, 1))(t) for t in range(32)]


def test_idx2crd_traced_index_both_rules():
    env = {"t": 0}
    stride_rule = idx2crd(T, make_layout((4, 8), (8, 1)))
    shape_rule = idx2crd(T, (4, 8))
    for t in range(32):
        env["t"] = t
        assert ev(stride_rule, env) == idx2crd(t, make_layout((4, 8), (8, 1)))
        assert ev(shape_rule, env) == idx2crd(t, (4, 8))
    # static shape-1 modes give 0 without any op
    OPS.clear()
    assert idx2crd(T, make_layout((1, 4), (9, 1)))[0] == 0
    assert OPS == ["mod"]


def test_size_cosize_with_traced_shape():
    layout = make_layout((M, 8))
    assert layout.stride == (1, M)
    assert not layout.is_static and is_static(layout.stride[0])
    assert ev(size(layout), {"M": 5}) == 40
    assert ev(cosize(make_layout((M, N), (N, 1))), {"M": 3, "N": 7}) == 21
    assert str(layout) == "(?,8):(1,?)"
    with pytest.raises(TypeError, match="has run-time leaves and is not hashable"):
        hash(layout)


def test_flat_divide_of_traced_matrix_by_static_tile():
    layout = make_layout((M, N), (N, 1))
    r = flat_divide(layout, (64, 64))
    assert r.shape[:2] == (64, 64) and r.stride[1] == 1 and r.stride[0] is N
    env = {"M": 256, "N": 192}
    assert ev(r, env) == flat_divide(make_layout((256, 192), (192, 1)), (64, 64))
    # only ceil-divs of M and N and one stride product are emitted
    assert len(OPS) == 5
    z = zipped_divide(layout, (64, 64))
    assert ev(z, env) == zipped_divide(make_layout((256, 192), (192, 1)), (64, 64))


def test_logical_divide_traced_shape_keeps_static_factors():
    r = logical_divide(make_layout((4, M)), 2)
    static = logical_divide(make_layout((4, 6)), 2)
    assert static == make_layout((2, 12), (1, 2))
    # the traced rest mode (2, M) cannot be merged, but the function is the same
    assert r.shape[0] == 2 and r.shape[1][0] == 2 and r.shape[1][1] is M
    assert table(ev(r, {"M": 6})) == table(static)
    assert OPS == []  # ceil_div((4, M), 2) == (2, M): no run-time op


@pytest.mark.parametrize("sym", [Sym, PlainSym], ids=["select", "arithmetic-min"])
def test_composition_with_traced_shape_uses_run_time_min(sym):
    m = sym("M")
    r = composition(make_layout((m, 8), (1, 100)), make_layout(16, 1))
    assert ("select" in OPS) == (sym is Sym)
    for mv in (2, 4, 8, 16):
        expected = composition(make_layout((mv, 8), (1, 100)), make_layout(16, 1))
        got = ev(r, {"M": mv})
        assert [got(i) for i in range(16)] == [expected(i) for i in range(16)]


def test_composition_traced_stride_in_tiler():
    d = Sym("d")
    r = composition(make_layout(64, 2), make_layout(8, d))
    assert ev(r, {"d": 3}) == make_layout(8, 6)


def test_complement_rank1_traced_stride_and_static_errors():
    c = complement(make_layout(4, Sym("d")), 64)
    assert ev(c, {"d": 2}) == complement(make_layout(4, 2), 64)
    with pytest.raises(TypeError, match="strides of .* must be static when it has more than one mode"):
        complement(make_layout((4, 2), (1, Sym("d"))), 64)
    c = complement(make_layout(4, 1), M)
    assert ev(c, {"M": 32}) == make_layout(8, 4)


def test_coalesce_never_merges_traced_modes():
    layout = make_layout((2, M, 4, 8), (1, 2, 64, 256))
    c = coalesce(layout)
    assert c.shape == (2, M, 32) and c.stride == (1, 2, 64)
    d = Sym("d")
    c = coalesce(make_layout((2, 4, 1, 8), (d, 8, d, 32)))
    assert c.shape == (2, 32) and c.stride[0] is d and c.stride[1] == 8
    assert OPS == []


def test_right_inverse_stops_at_traced_stride():
    r = right_inverse(make_layout((4, 8), (1, Sym("d"))))
    assert r == make_layout(4, 1)
    r = right_inverse(make_layout((4, M), (1, 4)))
    assert r.shape == (4, M) and r.stride == (1, 4)


def test_slicing_with_traced_coordinate():
    layout = make_layout((4, 8), (8, 1))
    sub, off = slice_and_offset((None, J), layout)
    assert sub == make_layout((4,), (8,)) and ev(off, {"j": 5}) == 5
    assert OPS == []  # j * 1 folded
    sub, off = slice_and_offset((I, None), layout)
    assert ev(off, {"i": 3}) == 24


def test_identity_layout_with_traced_coordinate():
    ident = make_identity_layout((4, 8))
    crd = ident(T)
    for t in range(32):
        assert ev(crd, {"t": t}) == (t % 4, t // 4)
    assert ev(ident((I, J)), {"i": 1, "j": 2}) == (1, 2)
    assert E(0).scale(Sym("k")).modes == [0]


def test_flat_coord_traced_index():
    layout = make_layout(((2, 4), 8), ((1, 2), 8))
    r = get_flat_coord(T, layout)
    for t in range(64):
        assert ev(r, {"t": t}) == get_flat_coord(t, layout)


def test_swizzle_on_traced_offset():
    sw = Swizzle(3, 4, 3)
    r = sw(T)
    assert [r.eval({"t": t}) for t in range(1024)] == [sw(t) for t in range(1024)]
    composed = make_composed_layout(sw, make_layout((8, 64), (64, 1)))
    r = composed(I, J)
    assert r.eval({"i": 5, "j": 17}) == composed(5, 17)


def test_elem_less_combines_traced_comparisons():
    assert elem_less((1, 2), (2, 3)) is True
    assert elem_less((I, 2), (4, 2)) is False
    r = elem_less((I, J), (4, N))
    assert r.eval({"i": 3, "j": 1, "N": 2}) == 1 and r.eval({"i": 3, "j": 2, "N": 2}) == 0


def test_upcast_traced_stride():
    r = upcast(make_layout((8, M), (1, N)), 2)
    assert r.shape == (4, M) and ev(r.stride[1], {"N": 64}) == 32


def test_ordered_layout_traced_shape():
    r = make_ordered_layout((M, N), (1, 0))
    assert r.stride[1] == 1 and r.stride[0] is N


def test_traced_values_are_not_memoized_across_calls():
    a = composition(make_layout((M, 8), (1, 100)), make_layout(16, 1))
    b = composition(make_layout((N, 8), (1, 100)), make_layout(16, 1))
    assert (
        table(ev(a, {"M": 4}))
        == table(ev(b, {"N": 4}))
        == [0, 1, 2, 3] + [100 + k for k in range(4)] + [200 + k for k in range(4)] + [300 + k for k in range(4)]
    )
    with pytest.raises(KeyError):
        ev(b, {"M": 4})  # b was computed from N, not served from a cache keyed on M


def test_traced_bool_and_float_leaves_are_rejected():
    with pytest.raises(TypeError, match="is a bool, not an integer"):
        make_layout((4, False))
    with pytest.raises(TypeError, match="is not an integer"):
        make_layout((4, "8"))
