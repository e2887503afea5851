"""Hopper ops on the H200 against the interpreter running the same programs (tests/unit/hopper_cases.py):

* TMA: the raw shared-memory bytes a box load leaves (the swizzle placement) and what a TMA store writes
  back are bit for bit the interpreter's — this checks the interpreter's TMA model against the hardware;
* wgmma of every kind: integer and fp8 results bit for bit (fp8: the interpreter models the fp8 tensor
  core's 13-bit truncating accumulation, flydsl/interp/tc_numerics.py), bf16/f16 within the interpreter's
  documented tolerance (the tensor core's internal summation differs from a correctly rounded f64 sum) —
  this checks the descriptor decoding (LBO/SBO/swizzle of each major-ness) and the fragment ownership.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unit"))

import hopper_cases as H  # noqa: E402
from test_hopper_interp import TMA_CASES, WGMMA_CASES  # noqa: E402

from flydsl.interp.tc_numerics import fp8_error_bound  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture
def both(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH"):
        monkeypatch.delenv(v, raising=False)

    def on(device, fn, *args, **kw):
        monkeypatch.setenv("FLYDSL_RUNTIME_KIND", device)
        return fn(device, *args, **kw)

    return on


@pytest.mark.parametrize("case", TMA_CASES, ids=lambda c: f"{c[0]}-sw{c[3]}-{c[4]}-{c[5]}")
def test_tma_gpu_equals_interpreter(both, case):
    dt, shape, tile, swz, major, coord, transpose = case
    g_raw, g_out, a = both("cuda", H.run_tma_roundtrip, dt, shape, tile, swz, major, coord, transpose=transpose)
    c_raw, c_out, _ = both("cpu", H.run_tma_roundtrip, dt, shape, tile, swz, major, coord, transpose=transpose)
    np.testing.assert_array_equal(g_raw, c_raw, err_msg="shared-memory bytes after the TMA load")
    assert g_out.tobytes() == c_out.tobytes(), "the matrix after the TMA store"


@pytest.mark.parametrize("case", WGMMA_CASES, ids=lambda c: "-".join(map(str, c)))
def test_wgmma_gpu_equals_interpreter(both, case):
    ab, n, am, bm, swz, src = case
    kw = dict(a_major=am, b_major=bm, swizzle=swz, a_src=src)
    g, a, b = both("cuda", H.run_wgmma, ab, n, **kw)
    c, _, _ = both("cpu", H.run_wgmma, ab, n, **kw)
    if ab == "i8":
        np.testing.assert_array_equal(g, c)
    elif ab in ("e4m3", "e5m2"):
        np.testing.assert_array_equal(g, c)
        assert (np.abs(g - H.reference_mm(a, b)) <= fp8_error_bound(a[:, None, :], b[None, :, :], ab)).all()
    else:
        ref = H.reference_mm(a, b)
        scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)).T
        np.testing.assert_array_less(np.abs(g - c), 1e-5 * scale + 1e-6)
        np.testing.assert_array_less(np.abs(g - ref), 1e-5 * scale + 1e-6)
