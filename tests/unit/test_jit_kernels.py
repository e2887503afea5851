"""Kernels end to end on the CPU interpreter, exactly equal to numpy (the same bodies run on the GPU in
tests/gpu/test_jit_parity.py)."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import cpu_device  # noqa: F401
from e2e_cases import CASES

pytestmark = pytest.mark.usefixtures("cpu_device")


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_on_the_interpreter(name):
    got, want = CASES[name]("cpu")
    assert got.keys() == want.keys()
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"{name}: {k}")
