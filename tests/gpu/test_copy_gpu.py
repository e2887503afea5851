"""The copy kernels of tests/kernels/test_copy_kernels.py on the GPU: equal to numpy and bit for bit equal
to the CPU interpreter running the same bodies; the PTX of the 128-bit copies uses vector instructions."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))

import test_copy_kernels as K  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture
def no_disk_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH"):
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


@pytest.mark.parametrize("name", sorted(K.CASES))
def test_gpu_equals_interpreter_bit_for_bit(name, no_disk_cache):
    no_disk_cache.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    got_gpu, want = K.CASES[name]("cuda")
    no_disk_cache.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    got_cpu, _ = K.CASES[name]("cpu")
    for k in want:
        np.testing.assert_array_equal(got_gpu[k], want[k], err_msg=f"{name}: {k} (GPU vs numpy)")
        assert got_gpu[k].tobytes() == got_cpu[k].tobytes(), f"{name}: {k} differs between GPU and interpreter"


def test_vector_add_on_ragged_shapes(no_disk_cache):
    no_disk_cache.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    for M, N in ((1, 4), (9, 68), (1000, 4092)):
        got, want = K.case_vector_add_2d("cuda", M, N)
        np.testing.assert_array_equal(got["C"], want["C"], err_msg=f"{M}x{N}")


def test_ptx_of_128bit_copies_uses_vector_loads_and_stores(no_disk_cache):
    import torch

    no_disk_cache.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    a = torch.zeros(64, 256, dtype=torch.float32, device="cuda")
    c = torch.empty_like(a)
    ptx = K.flyc.compile(K.vector_add, a, a, c).ptx
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx, ptx
    ex = K.load_example("03_transpose")
    ptx = K.flyc.compile(ex.transpose_launch, a, c.t().contiguous(), False).ptx
    assert ptx.count("ld.global.v4") == 4 and ptx.count("st.global.v4") == 4 and "st.shared.v4" in ptx, ptx
