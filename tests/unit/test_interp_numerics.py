"""Interpreter arithmetic against explicit references, bit for bit (hypothesis property tests).

Every case runs a real kernel (load operands per lane, compute, store) and, for integers, the host
function fast path too; the references are written from the definitions (Python ints, explicit
rounding), not from numpy's own casts.
"""

from __future__ import annotations

import functools
import math
import struct

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flydsl import ir
from flydsl.dialects import arith, func, ptr
from flydsl.interp import compile_host
from flydsl.ir import PointerType, bf16, f8E4M3FN, f8E5M2, f16, f32, f64, i8, i16, i32, i64, index
from flydsl.testing import KernelBuilder, launch

INT_TYPES = {8: (i8, np.int8), 16: (i16, np.int16), 32: (i32, np.int32), 64: (i64, np.int64)}


def _wrap(x, w):
    x &= (1 << w) - 1
    return x - (1 << w) if x >= 1 << (w - 1) else x


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _ref_int(name, a, b, w):
    """Reference semantics of integer ops on signed Python ints (GPU choices for div by 0, shifts)."""
    u = (1 << w) - 1
    ua, ub = a & u, b & u
    r = {
        "addi": lambda: a + b,
        "subi": lambda: a - b,
        "muli": lambda: a * b,
        "divsi": lambda: -1 if b == 0 else _tdiv(a, b),
        "remsi": lambda: a if b == 0 else a - b * _tdiv(a, b),
        "divui": lambda: u if ub == 0 else ua // ub,
        "remui": lambda: a if ub == 0 else ua % ub,
        "floordivsi": lambda: -1 if b == 0 else a // b,
        "ceildivsi": lambda: -1 if b == 0 else -(-a // b),
        "ceildivui": lambda: u if ub == 0 else -(-ua // ub),
        "shli": lambda: 0 if ub >= w else ua << ub,
        "shrui": lambda: 0 if ub >= w else ua >> ub,
        "shrsi": lambda: a >> min(ub, w - 1),
        "maxui": lambda: max(ua, ub),
        "minui": lambda: min(ua, ub),
        "maxsi": lambda: max(a, b),
        "andi": lambda: a & b,
        "xori": lambda: a ^ b,
        "mulhisi": lambda: (a * b) >> w,
        "mulhiui": lambda: (ua * ub) >> w,
    }[name]()
    return _wrap(r, w)


INT_OPS = [
    "addi", "subi", "muli", "divsi", "remsi", "divui", "remui", "floordivsi", "ceildivsi", "ceildivui",
    "shli", "shrui", "shrsi", "maxui", "minui", "maxsi", "andi", "xori", "mulhisi", "mulhiui",
]  # fmt: skip


@functools.cache
def _int_kernel(w):
    t, _ = INT_TYPES[w]
    p = PointerType(t)
    with KernelBuilder(f"int{w}", [p, p, p]) as kb:
        a, b, out = kb.args
        i = kb.global_id()
        x = ptr.load(ptr.add(a, i), result_types=[t])
        y = ptr.load(ptr.add(b, i), result_types=[t])
        n = arith.const(len(INT_OPS), i32)
        for j, name in enumerate(INT_OPS):
            r = getattr(arith, name)(x, y)
            ptr.store(r, ptr.add(out, arith.addi(arith.muli(i, n), arith.const(j, i32))))
    return kb.op


@functools.cache
def _int_host(w):
    t, _ = INT_TYPES[w]
    f = func.build_func(func.func, f"host{w}", [t, t], [t] * len(INT_OPS))
    blk = f.regions[0].blocks[0]
    with ir.InsertionPoint(blk):
        x, y = blk.args
        func.return_(*[getattr(arith, name)(x, y) for name in INT_OPS])
    return compile_host(f)


def _ints(w):
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    edge = st.sampled_from([0, 1, -1, 2, lo, hi, lo + 1, w - 1, w, w + 1, 7])
    return st.one_of(edge, st.integers(lo, hi))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), w=st.sampled_from([8, 16, 32, 64]))
def test_integer_ops_wrap_shift_div_bit_exact(data, w):
    pairs = data.draw(st.lists(st.tuples(_ints(w), _ints(w)), min_size=1, max_size=40))
    _, dt = INT_TYPES[w]
    a = np.array([p[0] for p in pairs], dt)
    b = np.array([p[1] for p in pairs], dt)
    out = np.zeros((len(pairs), len(INT_OPS)), dt)
    launch(_int_kernel(w), 1, len(pairs), a, b, out, check=True)
    host = _int_host(w)
    for k, (x, y) in enumerate(pairs):
        ref = [_ref_int(name, x, y, w) for name in INT_OPS]
        assert out[k].tolist() == ref, (x, y)
        assert host([x, y]) == ref, (x, y)


def _cast_kernel(src_t, dst_ts, op_names):
    with KernelBuilder("cast", [PointerType(src_t)] + [PointerType(d) for d in dst_ts]) as kb:
        i = kb.global_id()
        x = ptr.load(ptr.add(kb.args[0], i), result_types=[src_t])
        for d, name, o in zip(dst_ts, op_names, kb.args[1:]):
            ptr.store(getattr(arith, name)(x, result_types=[d]), ptr.add(o, i))
    return kb.op


def _ref_fptoi(x, w, signed):
    if math.isnan(x):
        return 0
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    if math.isinf(x):
        v = hi if x > 0 else lo
    else:
        v = min(max(math.trunc(x), lo), hi)
    return _wrap(v, w)


@functools.cache
def _fptoi_kernel(src):
    dsts = [i8, i16, i32, i64, i8, i32, i64]
    names = ["fptosi"] * 4 + ["fptoui"] * 3
    return _cast_kernel(src, dsts, names), dsts, names


@settings(max_examples=25, deadline=None)
@given(xs=st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=40))
def test_float_to_int_saturates_and_maps_nan_to_zero(xs):
    for src, dt in ((f32, np.float32), (f64, np.float64)):
        k, dsts, names = _fptoi_kernel(src)
        x = np.array(xs, dt)
        outs = [np.zeros(len(xs), INT_TYPES[d.bitwidth][1]) for d in dsts]
        launch(k, 1, len(xs), x, *outs, check=True)
        for o, d, name in zip(outs, dsts, names):
            ref = [_ref_fptoi(float(v), d.bitwidth, name == "fptosi") for v in x]
            assert o.tolist() == ref, (name, d)


def _fp8_table(dt):
    """All finite values of an fp8 format with their codes."""
    codes = np.arange(256, dtype=np.uint8)
    vals = codes.view(dt).astype(np.float64)
    fin = np.isfinite(vals)
    return vals[fin], codes[fin]


def _ref_fp8_satfinite(x, dt, maxval):
    """Round to nearest, ties to the even code, after clamping to ±max (cvt.rn.satfinite)."""
    if math.isnan(x):
        return None
    x = min(max(x, -maxval), maxval)
    vals, codes = _fp8_table(dt)
    d = np.abs(vals - x)
    best = np.flatnonzero(d == d.min())
    cand = codes[best]
    if len(cand) > 1:  # a tie between two codes (or +0 / -0)
        even = cand[(cand & 1) == 0]
        cand = even if len(even) else cand
    if x == 0 or (vals[best[0]] == 0):
        return 0x80 if math.copysign(1.0, x) < 0 else 0x00
    return int(cand[0])


def _ref_bf16(x):
    """f32 → bf16, round to nearest even on the bit pattern."""
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    if math.isnan(x):
        return None
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def _ref_f16(x):
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return 0x7C00 if x > 0 else 0xFC00


@functools.cache
def _trunc_kernel(src):
    dsts = [f8E4M3FN, f8E5M2, bf16, f16]
    return _cast_kernel(src, dsts, ["truncf"] * 4), dsts


f32s = st.floats(width=32, allow_nan=True, allow_infinity=True)
near_fp8 = st.sampled_from([448.0, 449.0, 464.0, 480.0, 500.0, 57344.0, 61440.0, 1e9, 0.0009765625, 0.001, 2.0**-10])


@settings(max_examples=25, deadline=None)
@given(xs=st.lists(st.one_of(f32s, near_fp8, near_fp8.map(lambda v: -v)), min_size=1, max_size=40))
def test_float_narrowing_fp8_satfinite_bf16_f16(xs):
    k, dsts = _trunc_kernel(f32)
    x = np.array(xs, np.float32)
    e4 = np.zeros(len(xs), ml_dtypes.float8_e4m3fn)
    e5 = np.zeros(len(xs), ml_dtypes.float8_e5m2)
    b16 = np.zeros(len(xs), ml_dtypes.bfloat16)
    h16 = np.zeros(len(xs), np.float16)
    launch(k, 1, len(xs), x, e4, e5, b16, h16, check=True)
    for j, v in enumerate(x.tolist()):
        r4 = _ref_fp8_satfinite(v, ml_dtypes.float8_e4m3fn, 448.0)
        r5 = _ref_fp8_satfinite(v, ml_dtypes.float8_e5m2, 57344.0)
        if r4 is None:
            assert np.isnan(e4[j]) and np.isnan(e5[j]) and np.isnan(b16[j]) and np.isnan(h16[j])
            continue
        assert int(e4.view(np.uint8)[j]) == r4, v
        assert int(e5.view(np.uint8)[j]) == r5, v
        assert int(b16.view(np.uint16)[j]) == _ref_bf16(v), v
        assert int(h16.view(np.uint16)[j]) == _ref_f16(v), v


def _ref_int_to_f32(v):
    """Correctly rounded (RNE) int → f32, from the integer itself."""
    if v == 0:
        return 0.0
    m = abs(v)
    n = m.bit_length()
    if n > 24:
        shift = n - 24
        q, r = divmod(m, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        m = q << shift
    return math.copysign(float(m), v)


@settings(max_examples=25, deadline=None)
@given(
    vs=st.lists(
        st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([2**60 + 2**36 + 1, 2**53 + 1])),
        min_size=1,
        max_size=40,
    )
)
def test_int64_to_f32_and_bf16_round_once(vs):
    k = _cast_kernel(i64, [f32, bf16, f64], ["sitofp"] * 3)
    x = np.array(vs, np.int64)
    o32, ob, o64 = np.zeros(len(vs), np.float32), np.zeros(len(vs), ml_dtypes.bfloat16), np.zeros(len(vs), np.float64)
    launch(k, 1, len(vs), x, o32, ob, o64, check=True)
    for j, v in enumerate(vs):
        assert o32[j] == np.float32(_ref_int_to_f32(v)), v
        assert o64[j] == float(v), v
        # bf16: correctly rounded from the integer (8 significant bits)
        m, n = abs(v), abs(v).bit_length()
        if n > 8:
            q, r = divmod(m, 1 << (n - 8))
            half = 1 << (n - 9)
            q += r > half or (r == half and q & 1)
            m = q << (n - 8)
        assert float(ob[j]) == math.copysign(float(m), v) or (v == 0 and ob[j] == 0), v


def _positive_table(dt, n_codes, extra=None):
    """Values (float64) and codes of the positive finite codes ``0..n_codes-1`` (plus an overflow code)."""
    codes = np.arange(n_codes, dtype=np.uint16 if np.dtype(dt).itemsize == 2 else np.uint8)
    vals = codes.view(dt).astype(np.float64)
    if extra is not None:
        vals = np.append(vals, extra[0])
        codes = np.append(codes, extra[1])
    return vals, codes


def _ref_round_exact(x, table, sign_bit, maxval=None):
    """Round a double exactly (Fractions) to the nearest table value, ties to the even code."""
    from fractions import Fraction

    if math.isnan(x):
        return None
    vals, codes = table
    neg = math.copysign(1.0, x) < 0
    ax = abs(x)
    if maxval is not None:
        ax = min(ax, maxval)
    if math.isinf(ax):
        return int(codes[-1]) | (sign_bit if neg else 0)
    i = int(np.searchsorted(vals, ax))
    cands = [j for j in (i - 1, i) if 0 <= j < len(vals)]
    fx = Fraction(ax)
    dists = [abs(Fraction(float(vals[j])) - fx) for j in cands]
    best = [c for c, d in zip(cands, dists) if d == min(dists)]
    j = best[0] if len(best) == 1 else next(c for c in best if int(codes[c]) % 2 == 0)
    return int(codes[j]) | (sign_bit if neg else 0)


_BF16 = _positive_table(ml_dtypes.bfloat16, 0x7F80, (2.0**128, 0x7F80))
_E4M3 = _positive_table(ml_dtypes.float8_e4m3fn, 0x7F)
_E5M2 = _positive_table(ml_dtypes.float8_e5m2, 0x7C)
f64s = st.floats(allow_nan=True, allow_infinity=True)
f64_near = st.builds(lambda m, e: math.ldexp(m, e), st.integers(-(2**53), 2**53), st.integers(-1100, 80))
# just above a bf16 / e4m3 midpoint: rounding through f32 first would land on the midpoint (a tie)
f64_traps = st.sampled_from([1.0625 + 2.0**-40, -(1.0625 + 2.0**-40), 1.00390625 + 2.0**-45, 1.0 - 2.0**-60])


@settings(max_examples=25, deadline=None)
@given(xs=st.lists(st.one_of(f64s, f64_near, f64_traps), min_size=1, max_size=40))
def test_f64_narrowing_rounds_once(xs):
    k, _ = _trunc_kernel(f64)
    x = np.array(xs, np.float64)
    e4 = np.zeros(len(xs), ml_dtypes.float8_e4m3fn)
    e5 = np.zeros(len(xs), ml_dtypes.float8_e5m2)
    b16 = np.zeros(len(xs), ml_dtypes.bfloat16)
    h16 = np.zeros(len(xs), np.float16)
    launch(k, 1, len(xs), x, e4, e5, b16, h16, check=True)
    for j, v in enumerate(x.tolist()):
        rb = _ref_round_exact(v, _BF16, 0x8000)
        if rb is None:
            assert np.isnan(b16[j]) and np.isnan(e4[j]) and np.isnan(e5[j])
            continue
        assert int(b16.view(np.uint16)[j]) == rb, v
        assert int(e4.view(np.uint8)[j]) == _ref_round_exact(v, _E4M3, 0x80, 448.0), v
        assert int(e5.view(np.uint8)[j]) == _ref_round_exact(v, _E5M2, 0x80, 57344.0), v


@functools.cache
def _host_casts():
    """A host function of casts, compares and select on (i8 a, i32 b, index c): the fast Python-int paths."""
    f = func.build_func(func.func, "casts", [i8, i32, index], [])
    blk = f.regions[0].blocks[0]
    outs = []
    with ir.InsertionPoint(blk):
        a, b, c = blk.args
        outs += [
            arith.extsi(a, result_types=[i32]),
            arith.extui(a, result_types=[i64]),
            arith.trunci(b, result_types=[i8]),
        ]
        outs += [arith.trunci(b, result_types=[ir.i1]), arith.index_cast(b, result_types=[index])]
        outs += [arith.index_castui(b, result_types=[index]), arith.index_cast(c, result_types=[i32])]
        bit = arith.trunci(b, result_types=[ir.i1])
        outs += [arith.extsi(bit, result_types=[i32]), arith.extui(bit, result_types=[i32])]
        outs += [arith.cmpi(b, arith.extsi(a, result_types=[i32]), predicate=p) for p in arith.CMPI_PREDICATES]
        outs += [
            arith.select(outs[-1], b, arith.const(7, i32)),
            ptr.to_int(ptr.add(ptr.from_int(c, result_types=[PointerType(f32)]), b)),
        ]
        func.return_(*outs)
    f.attrs["function_type"] = ir.FunctionType([i8, i32, index], [v.type for v in outs])
    return f, outs


@settings(max_examples=25, deadline=None)
@given(a=_ints(8), b=_ints(32), c=_ints(64))
def test_host_casts_and_compares_match_evaluate(a, b, c):
    f, outs = _host_casts()
    got = compile_host(f)([a, b, c])
    env = {
        f.regions[0].blocks[0].args[k]: np.asarray(v, dt)
        for k, (v, dt) in enumerate(((a, np.int8), (b, np.int32), (c, np.int64)))
    }
    for op in f.regions[0].blocks[0].ops[:-1]:
        if op.defn.evaluate is not None:
            env[op.results[0]] = op.defn.evaluate(op, *[env[v] for v in op.operands])
        elif op.defn.name == "ptr.add":
            env[op.results[0]] = env[op.operands[0]] + env[op.operands[1]].astype(np.int64) * 4
        else:  # ptr.from_int / ptr.to_int
            env[op.results[0]] = env[op.operands[0]].astype(np.int64)
    want = [env[v].item() for v in outs]
    assert got == want, (a, b, c)
