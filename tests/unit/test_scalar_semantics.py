"""One integer semantics: every integer op's scalar hook (``OpDef.scalar``: what the host executor and
compile-time folding compute with) equals its ``evaluate`` (what the interpreter computes with), on every
width, every value, and shift amounts past the width; the host executor and the fold of ``fx`` values
give the same. (tests/gpu/test_scalar_semantics_gpu.py holds the GPU to the same hooks.)"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flydsl.expr as fx
from flydsl import ir
from flydsl.dialects import arith, func, int_source
from flydsl.dialects import math as dmath
from flydsl.dialects._base import INT_HELPERS
from flydsl.expr._sem.fold import _FoldOp, fold
from flydsl.interp import compile_host
from flydsl.ir import IntegerType, from_array, index, to_array

BINARY = [ir.OPS[n] for n in arith.INT_SCALAR_EXPR]
UNARY = [ir.OPS[n] for n in dmath.INT_SCALAR_EXPR]
SHIFTS = (arith.shli, arith.shrui, arith.shrsi)
TYPES = [IntegerType(1), IntegerType(8), IntegerType(16), IntegerType(32), IntegerType(64), index]
CASTS = [arith.extsi, arith.extui, arith.trunci, arith.index_cast, arith.index_castui]


def _values(t):
    """Host values of integer type ``t``: signed ints wrapped to the width (bools for i1), edges first."""
    w = t.bitwidth
    if w == 1:
        return st.booleans()
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    edge = st.sampled_from([0, 1, -1, 2, -2, lo, hi, lo + 1, hi - 1, w - 1, w, w + 1, 2 * w, 7])
    return st.one_of(edge, st.integers(lo, hi))


def _amounts(t):
    """Shift amounts: in range, at and past the width, and negative (huge when read unsigned)."""
    w = t.bitwidth
    if w == 1:
        return st.booleans()
    return st.one_of(st.integers(0, 2 * w + 3), _values(t))


def _hook(defn, in_types, out_type, **attrs):
    fop = _FoldOp(attrs, in_types, out_type)
    f = defn.scalar(fop)
    assert f is not None, f"{defn.name} has no scalar hook for {in_types}"
    return f, fop


def _evaluate(defn, fop, in_types, out_type, lanes):
    """``evaluate`` on the whole batch at once (lanes as the interpreter holds them: one array per operand)."""
    arrays = [np.stack([to_array(t, v) for v in col]) for t, col in zip(in_types, zip(*lanes))]
    with np.errstate(all="ignore"):
        out = np.asarray(defn.evaluate(fop, *arrays))
    return [from_array(out_type, out[k]) for k in range(len(lanes))]


@settings(max_examples=40, deadline=None)
@given(data=st.data(), t=st.sampled_from(TYPES))
def test_binary_ops_hook_equals_evaluate(data, t):
    for defn in BINARY:
        second = _amounts(t) if defn in SHIFTS else _values(t)
        lanes = data.draw(st.lists(st.tuples(_values(t), second), min_size=1, max_size=24), label=defn.name)
        f, fop = _hook(defn, [t, t], t)
        want = _evaluate(defn, fop, [t, t], t, lanes)
        got = [f(a, b) for a, b in lanes]
        assert got == want, f"{defn.name} on {t}: {[(p, g, w) for p, g, w in zip(lanes, got, want) if g != w]}"


@settings(max_examples=30, deadline=None)
@given(data=st.data(), t=st.sampled_from(TYPES))
def test_unary_compare_and_select_hook_equals_evaluate(data, t):
    lanes = data.draw(st.lists(st.tuples(_values(t), _values(t)), min_size=1, max_size=24))
    for defn in UNARY:
        f, fop = _hook(defn, [t], t)
        assert [f(a) for a, _ in lanes] == _evaluate(defn, fop, [t], t, [(a,) for a, _ in lanes]), defn.name
    for p in arith.CMPI_PREDICATES:
        f, fop = _hook(arith.cmpi, [t, t], ir.i1, predicate=p)
        assert [f(a, b) for a, b in lanes] == _evaluate(arith.cmpi, fop, [t, t], ir.i1, lanes), p
    f, fop = _hook(arith.select, [ir.i1, t, t], t)
    picks = [(a == b or bool(a), a, b) for a, b in lanes]
    assert [f(*x) for x in picks] == _evaluate(arith.select, fop, [ir.i1, t, t], t, picks)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), src=st.sampled_from(TYPES), dst=st.sampled_from(TYPES))
def test_integer_casts_hook_equals_evaluate(data, src, dst):
    lanes = data.draw(st.lists(_values(src), min_size=1, max_size=24))
    for defn in CASTS:
        if defn.verify(_CastProbe(defn, src, dst)) is not None:
            continue  # not a valid cast between these types
        f, fop = _hook(defn, [src], dst)
        assert [f(a) for a in lanes] == _evaluate(defn, fop, [src], dst, [(a,) for a in lanes]), defn.name


class _CastProbe:
    """Just enough of an op for a cast's verifier."""

    def __init__(self, defn, src, dst):
        self.defn = defn
        self.attrs = {}
        self.operands = [ir.Value(src, None, 0)]
        self.results = [ir.Value(dst, None, 0)]


# -- the host executor and the fold of fx values compute with the same hooks ----------------------------


@functools.cache
def _host(t):
    """A host function returning every binary op of ``t`` on its two arguments."""
    f = func.build_func(func.func, f"all_{t}", [t, t], [t] * len(BINARY))
    blk = f.regions[0].blocks[0]
    with ir.InsertionPoint(blk):
        x, y = blk.args
        func.return_(*[defn(x, y) for defn in BINARY])
    return compile_host(f)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), t=st.sampled_from(TYPES[1:]))
def test_host_executor_computes_the_hooks(data, t):
    a, b = data.draw(_values(t)), data.draw(_amounts(t))
    got = _host(t)([a, b])
    want = [_hook(defn, [t, t], t)[0](a, b) for defn in BINARY]
    assert got == want


_CLS = {8: fx.Int8, 16: fx.Int16, 32: fx.Int32, 64: fx.Int64}


@settings(max_examples=60, deadline=None)
@given(data=st.data(), w=st.sampled_from([8, 16, 32, 64]))
def test_folding_fx_values_computes_the_hooks(data, w):
    t, C = IntegerType(w), _CLS[w]
    a, b = data.draw(_values(t)), data.draw(_amounts(t))
    for defn in BINARY:
        assert fold(defn, C, [C, C], [a, b]) == _hook(defn, [t, t], t)[0](a, b), defn.name
    x, y = C(a), C(b)
    assert (x << y).value == _hook(arith.shli, [t, t], t)[0](a, b)
    assert (x >> y).value == _hook(arith.shrsi, [t, t], t)[0](a, b)
    assert x.with_signedness(False).shrui(y.with_signedness(False)).value == _hook(arith.shrui, [t, t], t)[0](a, b) % (
        1 << w
    )


def _pasted(src, operands: list[str], env: dict):
    """What generated code computes with ``src`` pasted over ``operands`` (then wrapped as plans wrap)."""
    value = eval(int_source(src, operands, lambda name, fn: name), dict(INT_HELPERS), env)  # noqa: S307
    if src.wrap is None:
        return value
    half = 1 << (src.wrap - 1)
    return ((value + half) & ((1 << src.wrap) - 1)) - half


@settings(max_examples=60, deadline=None)
@given(data=st.data(), t=st.sampled_from(TYPES[1:]))
def test_pasted_sources_compute_the_hooks(data, t):
    """The launch plans' form of the semantics (the hook's source over names or literals, with what the
    literals decide folded away) equals the hook, for operands that are names and for literal ones."""
    a, b = data.draw(_values(t)), data.draw(_amounts(t))
    for defn in BINARY:
        fop = _FoldOp({}, [t, t], t)
        src, want = defn.scalar.source(fop), defn.scalar(fop)(a, b)
        assert src is not None, defn.name
        for operands in (["x", "y"], ["x", f"({b})"], [f"({a})", "y"], [repr(a), repr(b)]):
            assert _pasted(src, operands, {"x": a, "y": b}) == want, (defn.name, operands)
    for p in arith.CMPI_PREDICATES:
        fop = _FoldOp({"predicate": p}, [t, t], ir.i1)
        src = arith.cmpi.scalar.source(fop)
        assert _pasted(src, ["x", f"({b})"], {"x": a}) == arith.cmpi.scalar(fop)(a, b), p
    for defn in CASTS:
        for dst in TYPES[1:]:
            if defn.verify(_CastProbe(defn, t, dst)) is None:
                fop = _FoldOp({}, [t], dst)
                assert _pasted(defn.scalar.source(fop), ["x"], {"x": a}) == defn.scalar(fop)(a), (defn.name, dst)


def test_a_shift_past_the_width_is_zero_or_the_sign():
    f = _hook(arith.shli, [ir.i32, ir.i32], ir.i32)[0]
    assert f(1, 32) == 0 and f(1, 31) == -(1 << 31) and f(1, -1) == 0  # -1 is 2**32 - 1 unsigned
    assert _hook(arith.shrsi, [ir.i32, ir.i32], ir.i32)[0](-8, 40) == -1
    assert _hook(arith.shrui, [ir.i32, ir.i32], ir.i32)[0](-8, 40) == 0
    assert (fx.Int32(1) << 33).value == 0 and (fx.Int32(-8) >> 40).value == -1


@pytest.mark.parametrize("defn", BINARY + UNARY, ids=lambda d: d.name)
def test_every_integer_op_has_a_scalar_hook(defn):
    assert defn.scalar is not None and defn.scalar.expr  # the one expression the semantics are written in
