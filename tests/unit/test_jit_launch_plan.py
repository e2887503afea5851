"""Launch plans (straight-line host functions as generated Python) agree with the interpreter's host
functions on every input, and fall back to the interpreter for anything else."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

from flydsl.interp import compile_host
from flydsl.runtime.args import ArgError
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


@flyc.jit
def folded(out, n: fx.Int32, m: fx.Int32, w: fx.Int64):
    a = (n + 5 - 5) // 1  # folds to n
    b = n - 3 + 7 - 1  # n + 3, one wrap
    c = fx.ceildiv(m, 64) + fx.max(n, m) - fx.min(n, 7)
    d = (w.to(fx.Int32) + m.to(fx.Int64).to(fx.Int32)) * 3
    k(out, a + b, (m // 2 + c).to(fx.Int64) + w).launch(grid=(d, a, b), block=(c, 1, 1), smem=n * 1)


@settings(max_examples=80, deadline=None)
@given(n=i32, m=i32, w=st.integers(-(2**63), 2**63 - 1))
def test_folded_plans_and_their_inlined_lines_equal_the_interpreter(n, m, w):
    host = host_of(folded, np.zeros(1, np.int32), 5, 6, 7)
    want = record(compile_host(host), [4096, 1, n, m, w, 0])
    plan = launch_plan(host)
    assert record(plan, [4096, 1, n, m, w, 0]) == want
    # the cached call's form: kernels called directly, and the same lines pasted into a caller that
    # vouches for the ranges of n and m (no conversion, no entry wrap); a grid or block computed below 1
    # stops before the kernel (FLY222) in both
    got = []
    direct = {want[0][0]: lambda *a: got.append((a[0:3], a[3:6], a[6], a[7], list(a[8:])))}
    plan = launch_plan(host, direct)
    full = (-(2**31), 2**31 - 1)
    lines, ns = plan.inline("P_", ["x0", "x1", "x2", "x3", "x4", "x5"], {2: full, 3: full})
    exec("def caller(x0, x1, x2, x3, x4, x5):\n" + "\n".join(lines) + "\n", ns)
    bad = min(*want[0][1], *want[0][2]) < 1
    for run in (plan, ns["caller"]):
        if bad:
            with pytest.raises(ArgError, match="LAUNCH_DIMS_RUNTIME"):
                run(4096, 1, n, m, w, 0)
        else:
            run(4096, 1, n, m, w, 0)
    assert got == ([] if bad else [(want[0][1], want[0][2], want[0][3], want[0][4], want[0][5])] * 2)


@flyc.jit
def branching(out, n: fx.Int32, m: fx.Int32):
    t = n % 4
    if t > 0:  # a second kernel only for some arguments (the norm kernels' last rows)
        k(out, t, 0).launch(grid=(t, 1, 1), block=(32, 1, 1))
    if n > m and m > 0:
        u = m * 2 - n
        k(out, u, 1).launch(grid=(m, 1, 1), block=(32, 1, 1))
    else:
        k(out, m, 2).launch(grid=(1, 1, 1), block=(32, 1, 1))
    k(out, n, 3).launch(grid=(1, 1, 1), block=(32, 1, 1))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(-40, 40) | i32, m=st.integers(-40, 40) | i32)
def test_branches_without_results_get_a_plan_equal_to_the_interpreter(n, m):
    """``scf.if`` around launches (no values out of it) keeps the fast path: the plan's ``if``/``else`` launches
    what the interpreter's host function launches, in the same order, inlined or called."""
    host = host_of(branching, np.zeros(1, np.int32), 5, 2)
    plan = launch_plan(host)
    assert plan is not None and "if " in plan.source
    args = [4096, 1, n, m, 0]
    want = record(compile_host(host), args)
    assert record(plan, args) == want
    got = []
    direct = {want[0][0]: lambda *a: got.append((a[0:3], a[3:6], a[6], a[7], list(a[8:])))}
    fast = launch_plan(host, direct)
    lines, ns = fast.inline("P_", ["x0", "x1", "x2", "x3", "x4"], {2: (-(2**31), 2**31 - 1)})
    exec("def caller(x0, x1, x2, x3, x4):\n" + "\n".join(lines) + "\n", ns)
    ns["caller"](*args)
    assert got == [(w[1], w[2], w[3], w[4], w[5]) for w in want]


def test_branches_run_through_the_jit():
    out = np.zeros(1, np.int32)
    branching(out, 7, 3)  # t = 3, n > m > 0: u = -1, then n
    assert out[0] == 7
