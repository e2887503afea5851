"""Never silent: a bad input gets a FLY error at the user's line (or, where it is meaningful, the right
result) — never a silently changed value, an internal message or a crash (docs/reliability.md)."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401

from flydsl.compiler import FlyDSLError

pytestmark = pytest.mark.usefixtures("cpu_device")


def raises(diag: str, fn, *args):
    """Run ``fn(*args)``, expect the FLY error ``diag`` located in this file; return it."""
    with pytest.raises(FlyDSLError) as ei:
        fn(*args)
    e = ei.value
    assert e.diag_id == diag, str(e)
    assert e.loc is not None and e.loc[0] == __file__, str(e)
    return e


@flyc.kernel
def fill(out: Tensor, v: fx.Int32):
    out[fx.thread_idx.x] = v


@flyc.jit
def fill_i32(out, v: fx.Int32):
    fill(out, v).launch(grid=1, block=4)


@flyc.jit
def fill_u8(out, v: fx.Uint8):
    fill(out, v.to(fx.Int32)).launch(grid=1, block=4)


# -- scalars that do not fit their parameter ------------------------------------------------------


@pytest.mark.parametrize(
    "fn, value, why",
    [
        (fill_i32, 2**32 + 8, "range -2147483648 to 2147483647"),
        (fill_i32, 2**31, "range"),
        (fill_i32, -(2**31) - 1, "range"),
        (fill_i32, 3.5, "not an integer"),
        (fill_i32, np.int64(2**40), "range"),
        (fill_u8, -1, "range 0 to 255"),
        (fill_u8, 256, "range 0 to 255"),
    ],
)
def test_scalar_that_does_not_fit_is_an_error(fn, value, why):
    out = np.zeros(4, np.int32)
    e = raises("FLY221", fn, out, value)
    assert why in e.message and "argument 'v'" in e.message
    assert not out.any()  # nothing ran


@pytest.mark.parametrize("value", [2**31 - 1, -(2**31), 7.0, np.int16(-3), True])
def test_scalar_that_fits_runs(value):
    out = np.zeros(4, np.int32)
    fill_i32(out, value)
    assert out.tolist() == [int(value)] * 4


def test_explicit_conversion_wraps_on_purpose():
    out = np.zeros(4, np.int32)
    fill_i32(out, fx.Int32(2**32 + 8))
    assert out.tolist() == [8] * 4


# -- launch dimensions ------------------------------------------------------------------------------


@flyc.jit
def float_grid(out, f: fx.Float32):
    fill(out, 1).launch(grid=(f, 1, 1), block=4)


@flyc.jit
def computed_grid(out, n: fx.Int32):
    fill(out, 1).launch(grid=(n - 4, 1, 1), block=4)


@flyc.jit
def computed_grid_branchy(out, n: fx.Int32):
    g = n - 4
    if n > 100:  # a run-time branch: the host function runs on the interpreter, not as a launch plan
        g = n - 5
    fill(out, 1).launch(grid=(g, 1, 1), block=4)


def test_run_time_float_grid_is_an_error():
    e = raises("FLY208", float_grid, np.zeros(4, np.int32), 1.5)
    assert "fill(out, 1).launch(grid=(f, 1, 1), block=4)" in str(e)


@pytest.mark.parametrize("launcher", [computed_grid, computed_grid_branchy])
def test_empty_grid_computed_at_run_time_is_reported_at_the_launch(launcher):
    e = raises("FLY222", launcher, np.zeros(4, np.int32), 4)
    assert "(0, 1, 1)" in e.message and ".launch(grid=(" in str(e)
    out = np.zeros(4, np.int32)
    launcher(out, 5)  # and the same specialization runs with a valid grid
    assert out.tolist() == [1, 1, 1, 1]


# -- wrong kinds of arguments -----------------------------------------------------------------------


@flyc.jit
def declared(A: Tensor):
    fill(A, 1).launch(grid=1, block=4)


@flyc.jit
def undeclared(A):
    fill(A, 1).launch(grid=1, block=4)


@pytest.mark.parametrize("value, got", [([1, 2, 3, 4], "a list"), (None, "None"), (3, "a int")])
def test_non_tensor_for_a_tensor_parameter(value, got):
    e = raises("FLY220", declared, value)
    assert e.message == f"argument 'A' is declared fx.Tensor but got {got}"


@pytest.mark.parametrize("value", [[1, 2, 3, 4], None])
def test_non_tensor_reaching_a_kernel_tensor_parameter(value):
    e = raises("FLY214", undeclared, value)
    assert "kernel argument 'out'" in e.message and "fill(A, 1).launch" in str(e)


def test_list_as_compile_time_argument_is_keyed_by_content():
    @flyc.kernel
    def k(out: Tensor, offs):
        out[0] = offs[0] + offs[1]

    @flyc.jit
    def launch(out, offs):
        k(out, offs).launch(grid=1, block=1)

    out = np.zeros(1, np.int32)
    offs = [1, 2]
    launch(out, offs)
    assert out[0] == 3
    offs[1] = 5
    launch(out, offs)
    assert out[0] == 6 and launch.cache_info().misses == 2


@flyc.kernel
def guarded(out: Tensor, n: fx.Int32):
    i = fx.thread_idx.x
    if i < n:
        out[i] = i + 1


@flyc.jit
def launch_guarded(out, n: fx.Int32):
    guarded(out, n).launch(grid=1, block=4)


@pytest.mark.parametrize("shape", [(0,), (0, 4), (4, 0), (0, 0, 3)])
def test_empty_numpy_arrays_work_like_empty_torch_tensors(shape):
    a = np.zeros(shape, np.int32)
    launch_guarded(a, 0)
    assert a.shape == shape


def test_empty_torch_tensors_work():
    torch = pytest.importorskip("torch")
    launch_guarded(torch.zeros(0, dtype=torch.int32), 0)
    launch_guarded(torch.zeros((0, 4), dtype=torch.int32), 0)


# -- recursion through a jit helper ---------------------------------------------------------------


@flyc.jit
def tree(x, depth: fx.Constexpr[int]):
    if fx.const_expr(depth == 0):
        return x
    return tree(x, depth - 1) + tree(x, depth - 1)


@flyc.kernel
def sums(out: Tensor):
    tid = fx.thread_idx.x
    out[tid] = tree(tid, 3)


@flyc.jit
def launch_sums(out):
    sums(out).launch(grid=1, block=4)


def test_self_recursive_jit_helper_with_a_compile_time_stop():
    out = np.zeros(4, np.int32)
    launch_sums(out)
    assert out.tolist() == [0, 8, 16, 24]
