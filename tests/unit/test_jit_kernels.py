"""Kernels end to end on the CPU interpreter, exactly equal to numpy (the same bodies run on the GPU in
tests/gpu/test_jit_parity.py)."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import cpu_device  # noqa: F401
from e2e_cases import CASES

import flydsl.compiler as flyc
import flydsl.expr as fx

pytestmark = pytest.mark.usefixtures("cpu_device")


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_on_the_interpreter(name):
    got, want = CASES[name]("cpu")
    assert got.keys() == want.keys()
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"{name}: {k}")


@flyc.kernel
def _printing_kernel(a: fx.Tensor, n: fx.Int32):
    t = fx.thread_idx.x
    if t < n:
        a[t] = t
    fx.printf("[kernel] bid={}, tid={}", fx.block_idx.x, t)


@flyc.jit
def _printing_launcher(a: fx.Tensor, n: fx.Int32):
    g = (n + 1) // 2
    fx.printf("> launcher: n={}, grid_x={}", n, g)
    _printing_kernel(a, n).launch(grid=1, block=2)


def test_printf_in_the_launcher_prints_on_the_host_each_call(capsys):
    a = np.zeros(4, np.int32)
    _printing_launcher(a, 3)
    _printing_launcher(a, 5)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "> launcher: n=3, grid_x=2",
        "[kernel] bid=0, tid=0",
        "[kernel] bid=0, tid=1",
        "> launcher: n=5, grid_x=3",
        "[kernel] bid=0, tid=0",
        "[kernel] bid=0, tid=1",
    ]
    assert a.tolist() == [0, 1, 0, 0]


@flyc.kernel
def _spinning_kernel(out: fx.Tensor):
    i = fx.thread_idx.x
    while i >= 0:  # false only after 2**30 iterations (wrap-around): the iteration limit reports it
        i = i + 2
    out[0] = i


@flyc.jit
def _spinning(out: fx.Tensor):
    _spinning_kernel(out).launch(grid=1, block=2)


def test_an_infinite_while_loop_is_reported_not_hung(monkeypatch):
    monkeypatch.setenv("FLYDSL_INTERP_MAX_WHILE_ITERATIONS", "1000")
    with pytest.raises(Exception) as e:
        _spinning(np.zeros(1, np.int32))
    msg = str(e.value)
    assert "scf.while ran 1000 iterations without its condition becoming false" in msg
    assert "test_jit_kernels.py" in msg and "FLYDSL_INTERP_MAX_WHILE_ITERATIONS" in msg
