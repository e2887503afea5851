"""The fp8 tensor-core accumulation model (flydsl/interp/tc_numerics.py): against an independent scalar
reference in exact rational arithmetic, against the H200's round-1 results, and its stated properties."""

from __future__ import annotations

import math
import os
import sys
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flydsl.interp.tc_numerics import HOPPER_FP8, BlockFma, block_fma, fp8_error_bound

sys.path.insert(0, os.path.dirname(__file__))
import hopper_cases as H  # noqa: E402

F8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
EMIN = {"e4m3": -6, "e5m2": -14}


def _exp(x: float, emin: int) -> int:
    return max(math.frexp(x)[1] - 1, emin)


def _cut(x: Fraction, q: Fraction) -> Fraction:
    return int(x / q) * q  # int() of a Fraction truncates towards zero


def qgmma_reference(c: float, a, b, a_fmt: str, b_fmt: str | None = None) -> float:
    """One output element: ``c + Σ a·b`` in passes of 32 products, written out term by term in exact
    rational arithmetic (an independent statement of the model in the module docstring)."""
    ea_min, eb_min = EMIN[a_fmt], EMIN[b_fmt or a_fmt]
    acc = Fraction(float(np.float32(c)))
    for k0 in range(0, len(a), 32):
        terms = [
            (Fraction(float(x)) * Fraction(float(y)), _exp(float(x), ea_min) + _exp(float(y), eb_min))
            for x, y in zip(a[k0 : k0 + 32], b[k0 : k0 + 32])
            if x != 0 and y != 0
        ]
        if acc != 0:
            terms.append((acc, _exp(float(acc), -126)))
        if not terms:
            acc = Fraction(0)
            continue
        q = Fraction(2) ** (max(e for _, e in terms) - 13)
        s = sum(_cut(t, q) for t, _ in terms)
        if s != 0:
            e = math.floor(math.log2(abs(s)))
            e += 1 if Fraction(2) ** (e + 1) <= abs(s) else 0  # log2 of a Fraction can be off by one
            e -= 1 if Fraction(2) ** e > abs(s) else 0
            s = _cut(s, Fraction(2) ** (e - 13))
        acc = s
    return float(acc)


def _operands(rng, shape, fmt, scale=2.0):
    return (rng.standard_normal(shape) * scale).astype(F8[fmt]).astype(np.float64)


@pytest.mark.parametrize("fmt, b_fmt", [("e4m3", None), ("e5m2", None), ("e4m3", "e5m2")])
def test_the_vectorized_model_equals_the_scalar_reference(fmt, b_fmt):
    rng = np.random.default_rng(7)
    a, b = _operands(rng, (6, 96), fmt), _operands(rng, (5, 96), b_fmt or fmt)
    c = (rng.standard_normal((6, 5)) * 20).astype(np.float32)
    c[0, 0] = 0.0
    got = block_fma(c, a[:, None, :], b[None, :, :], fmt, b_fmt)
    want = np.array([[qgmma_reference(c[i, j], a[i], b[j], fmt, b_fmt) for j in range(5)] for i in range(6)])
    np.testing.assert_array_equal(got, want.astype(np.float32))


# |H200 - f32-chained exact sum| at the elements round 1 printed in full (tests/gpu/test_hopper_gpu.py, the
# old interpreter rounded each instruction's exact sum once to f32): (case, {(row, col): difference}).
H200_ROUND1 = [
    (("e4m3", 32, (128, 128), "smem"), {(0, 0): 0.0050048828125, (0, 1): 0.0133819580078125, (0, 2): 0.0078125,
                                         (0, 4): 0.0061492919921875, (0, 6): 0.006378173828125}),
    (("e5m2", 40, (64, 32), "smem"), {(0, 0): 0.001804351806640625, (0, 1): 0.00390625, (0, 4): 0.00225830078125,
                                       (0, 5): 0.0013427734375, (0, 6): 0.002197265625}),
    (("e4m3", 16, (0, 0), "rmem"), {(0, 1): 0.0009765625, (0, 2): 0.001708984375, (0, 5): 0.00146484375,
                                     (0, 10): 0.0023956298828125, (0, 15): 0.00146484375}),
]  # fmt: skip


def _diff_to_round1_interpreter(got, a, b):
    old = np.zeros(got.shape, np.float32)  # what the round-1 interpreter computed: f32 after each k32
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for k0 in range(0, a.shape[1], 32):
        old = (a64[:, k0 : k0 + 32] @ b64[:, k0 : k0 + 32].T + old).astype(np.float32)
    return np.abs(got.astype(np.float64) - old.astype(np.float64))


# ... and the corners numpy printed to 6 decimals: rows 0-2, columns 0, 1, 2, -3, -2, -1
H200_ROUND1_PRINTED = [
    [[0.005005, 0.013382, 0.007812, 0.000732, 0.001892, 0.011475],
     [0.002533, 0.007812, 0.0, 0.00293, 0.002197, 0.001465],
     [0.002167, 0.003937, 0.004272, 0.000488, 0.000153, 0.009644]],
    [[0.001804, 0.003906, 0.000977, 0.00293, 0.001709, 0.001862],
     [0.000114, 0.004395, 0.001465, 0.00061, 0.0, 0.000488],
     [0.000212, 0.0, 0.0, 0.000977, 0.0, 0.001434]],
    [[0.0, 0.000977, 0.001709, 0.0, 0.0, 0.001465],
     [0.000244, 0.001465, 0.000977, 0.000854, 0.001465, 0.000732],
     [0.000488, 0.0, 0.0, 0.000488, 0.0, 0.0]],
]  # fmt: skip
_IDS = ["-".join(map(str, c)) for c, _ in H200_ROUND1]


@pytest.mark.parametrize("case, seen, printed", [(*c, p) for c, p in zip(H200_ROUND1, H200_ROUND1_PRINTED)], ids=_IDS)
def test_the_interpreter_reproduces_the_h200s_fp8_wgmma_results(monkeypatch, tmp_path, case, seen, printed):
    """The values the H200 produced in round 1, recovered from their differences to an f32-rounded exact
    sum, are the interpreter's bit for bit (1, 2 and 4 chained instructions; e4m3 and e5m2; A in shared
    memory and in registers)."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    ab, n, swz, src = case
    got, a, b = H.run_wgmma("cpu", ab, n, swizzle=swz, a_src=src)
    diff = _diff_to_round1_interpreter(got, a, b)
    assert {ij: float(diff[ij]) for ij in seen} == seen
    corners = diff[:3][:, [0, 1, 2, -3, -2, -1]]
    assert (np.abs(corners - np.array(printed)) <= 5.01e-7).all()


@pytest.mark.parametrize(
    "variant",
    [BlockFma(frac_bits=12), BlockFma(frac_bits=14), BlockFma(mode="floor", final="floor"), BlockFma(final="rne"),
     BlockFma(c_in_adder=False), BlockFma(out_bits=14)],
    ids=lambda m: m.describe(),
)  # fmt: skip
def test_the_h200_values_rule_out_the_neighbouring_models(variant):
    """The round-1 values discriminate: each neighbour of the model (one bit more or less, two's complement
    cuts, rounding to nearest, the accumulator added after the block, a wider result) misses some."""
    missed = 0
    for (ab, n, swz, _), seen in H200_ROUND1:
        a, b = H.wgmma_inputs(ab, n, swz)
        got = block_fma(np.zeros((64, n), np.float32), a.astype(np.float64)[:, None, :],
                        b.astype(np.float64)[None, :, :], ab, model=variant)  # fmt: skip
        diff = _diff_to_round1_interpreter(got, a, b)
        missed += sum(float(diff[ij]) != v for ij, v in seen.items())
    assert missed >= 3


def test_products_below_the_accumulators_last_13_bits_vanish_towards_zero():
    a = np.full(32, 2.0**-7)  # e4m3 subnormals: their exponent aligns as -6
    for sign in (1.0, -1.0):
        r = block_fma(np.float32(sign), a, sign * a, "e4m3")  # 32 · 2^-14 exactly, below 2^(0-13)
        assert r == np.float32(sign)  # an IEEE sum gives sign · (1 + 2^-9)
    # 2^-13 is on the grid 2^(0-13); 81·2^-14 is cut to 80·2^-14 (an IEEE sum keeps 1 + 83·2^-14)
    r = block_fma(np.float32(1.0), np.array([2.0**-6, 1.125 * 2.0**-6]), np.array([2.0**-7, 1.125 / 4]), "e4m3")
    assert r == np.float32(1 + 82 * 2.0**-14)
    # a sum that grows into the next binade is cut again to 13 fraction bits there: 2 + 2^-13 -> 2
    assert block_fma(np.float32(2 - 2.0**-13), np.array([2.0**-6]), np.array([2.0**-6]), "e4m3") == 2.0


def test_the_largest_product_sets_the_grid_even_when_the_accumulator_is_zero():
    a = np.array([16.0, 1.0])
    b = np.array([16.0, 2.0**-9])  # e4m3 subnormal b: 2^-9 is below 2^(8-13)
    assert block_fma(np.float32(0), a, b, "e4m3") == np.float32(256.0)
    assert block_fma(np.float32(0), a[1:], b[1:], "e4m3") == np.float32(2.0**-9)  # alone it is exact


def test_results_keep_14_significant_bits_and_nan_propagates():
    rng = np.random.default_rng(3)
    a, b = _operands(rng, (8, 256), "e4m3"), _operands(rng, (8, 256), "e4m3")
    r = block_fma(np.zeros((8, 8), np.float32), a[:, None, :], b[None, :, :], "e4m3")
    assert (r.view(np.uint32) & 0x3FF == 0).all()
    a[0, 5] = np.nan
    r = block_fma(np.zeros((8, 8), np.float32), a[:, None, :], b[None, :, :], "e4m3")
    assert np.isnan(r[0]).all() and not np.isnan(r[1:]).any()


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    k=st.sampled_from([32, 64, 128, 512]),
    scale=st.sampled_from([2.0**-8, 1.0, 16.0]),
    fmt=st.sampled_from(["e4m3", "e5m2"]),
    model=st.sampled_from([HOPPER_FP8, BlockFma(frac_bits=12), BlockFma(mode="floor", final="floor"),
                           BlockFma(c_in_adder=False), BlockFma(frac_bits=14, final="rne")]),
)  # fmt: skip
def test_the_error_bound_holds_for_every_model_of_the_family(seed, k, scale, fmt, model):
    rng = np.random.default_rng(seed)
    a, b = _operands(rng, (4, k), fmt, scale), _operands(rng, (3, k), fmt)
    exact = a @ b.T
    got = block_fma(np.zeros((4, 3), np.float32), a[:, None, :], b[None, :, :], fmt, model=model)
    bound = fp8_error_bound(a[:, None, :], b[None, :, :], fmt)
    assert (np.abs(got - exact) <= bound).all()
