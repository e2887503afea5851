"""The host executor (one generated Python function per host function) computes what the ops' ``evaluate``
computes, on every input; loops, branches, calls and printf run in it too; a failing op is named."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st
from test_jit_launch_plan import arithmetic, host_of, k, record  # the launcher both executors run

from flydsl.interp import InterpError, compile_host
from flydsl.ir import from_array, to_array

pytestmark = pytest.mark.usefixtures("cpu_device")


def reference(fop, args):
    """The launches of a straight-line host function, each op through its ``evaluate`` (the interpreter's
    semantics) on 0-d arrays."""
    entry = fop.regions[0].blocks[0]
    env = {a: v for a, v in zip(entry.args, args)}
    calls = []
    for op in entry.ops:
        if op.defn.name == "gpu.launch_func":
            v = [int(env[x]) for x in op.operands]
            calls.append((str(op.attrs["kernel"]), tuple(v[0:3]), tuple(v[3:6]), v[6], v[7], v[8:]))
        elif op.results:
            arrays = [to_array(x.type, env[x]) for x in op.operands]
            with np.errstate(all="ignore"):
                env[op.results[0]] = from_array(op.results[0].type, op.defn.evaluate(op, *arrays))
    return calls


i32 = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=60, deadline=None)
@given(n=i32, m=i32, w=st.integers(-(2**63), 2**63 - 1))
def test_host_function_equals_evaluate(n, m, w):
    host = host_of(arithmetic, np.zeros(1, np.int32), 5, 6, 7)
    args = [4096, 1, n, m, w, 0]
    assert record(compile_host(host), args) == reference(host, args)


def test_loops_run_in_the_same_executor():
    @flyc.jit
    def looping(out, n: fx.Int32):
        for i in range(n):
            k(out, i, 0).launch(grid=1, block=1)

    host = host_of(looping, np.zeros(1, np.int32), 2)
    assert "for v" in compile_host(host).source
    out = np.zeros(1, np.int32)
    looping(out, 3)
    assert out[0] == 2


def test_a_failing_op_is_named():
    @flyc.jit
    def bad_step(out, n: fx.Int32):
        for i in range(0, 4, n):
            k(out, i, 0).launch(grid=1, block=1)

    host = host_of(bad_step, np.zeros(1, np.int32), 1)
    with pytest.raises(InterpError, match="scf.for step must be positive, got 0") as e:
        compile_host(host)([0, 1, 0, 0], lambda *a: None)
    assert e.value.op is not None and e.value.op.defn.name == "scf.for"


def test_what_the_launcher_raises_passes_through():
    host = host_of(arithmetic, np.zeros(1, np.int32), 5, 6, 7)

    class Refused(Exception):
        pass

    def launch(*a):
        raise Refused("no device")

    with pytest.raises(Refused) as e:
        compile_host(host)([4096, 1, 5, 6, 7, 0], launch)
    assert e.value.loc is not None  # located at the launch's line
