"""Launch plans (straight-line host functions as generated Python) agree with the interpreter's host
functions on every input, and fall back to the interpreter for anything else."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

from flydsl.interp import compile_host
from flydsl.runtime.launch_plan import launch_plan

pytestmark = pytest.mark.usefixtures("cpu_device")


@flyc.kernel
def k(out: Tensor, a: fx.Int32, b: fx.Int64):
    out[0] = a


@flyc.jit
def arithmetic(out, n: fx.Int32, m: fx.Int32, w: fx.Int64):
    blocks = (n + 127) // 128
    g2 = (n * m - 3) % 7
    g3 = (m > n).select(fx.Int32(2), fx.Int32(1))
    k(out, (m >> 2) ^ n, w // 3 + n).launch(grid=(blocks, g2, g3), block=(128, 1, 1), smem=64)


def host_of(jit_fn, *args):
    return flyc.compile(jit_fn, *args)._entry.artifact.host_op()


def record(fn, args):
    calls = []
    fn(args, lambda *a: calls.append((a[0], tuple(a[1]), tuple(a[2]), a[3], a[4], [int(x) for x in a[5]])))
    return calls


i32 = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=60, deadline=None)
@given(n=i32, m=i32, w=st.integers(-(2**63), 2**63 - 1))
def test_plan_equals_interpreter(n, m, w):
    host = host_of(arithmetic, np.zeros(1, np.int32), 5, 6, 7)
    plan = launch_plan(host)
    assert plan is not None
    args = [4096, 1, n, m, w, 0]
    assert record(plan, args) == record(compile_host(host), args)


def test_loops_fall_back_to_the_interpreter():
    @flyc.jit
    def looping(out, n: fx.Int32):
        for i in range(n):
            k(out, i, 0).launch(grid=1, block=1)

    assert launch_plan(host_of(looping, np.zeros(1, np.int32), 2)) is None
    out = np.zeros(1, np.int32)
    looping(out, 3)
    assert out[0] == 2
