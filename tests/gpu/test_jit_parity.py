"""The end-to-end kernels of tests/unit/e2e_cases.py on the GPU: equal to numpy and bit for bit equal to
the CPU interpreter running the same body."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unit"))

from e2e_cases import CASES  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture
def no_disk_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH"):
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_equals_interpreter_bit_for_bit(name, no_disk_cache):
    no_disk_cache.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    got_gpu, want = CASES[name]("cuda")
    no_disk_cache.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    got_cpu, _ = CASES[name]("cpu")
    for k in want:
        np.testing.assert_array_equal(got_gpu[k], want[k], err_msg=f"{name}: {k} (GPU vs numpy)")
        assert got_gpu[k].dtype == got_cpu[k].dtype
        assert got_gpu[k].tobytes() == got_cpu[k].tobytes(), f"{name}: {k} differs between GPU and interpreter"
