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


# -- Python constructs that cannot see run-time values -------------------------------------------


def _launch_one(kfn, *args):
    @flyc.jit
    def launch(out):
        kfn(out, *args).launch(grid=1, block=4)

    out = np.zeros(4, np.int32)
    launch(out)
    return out


@flyc.kernel
def raise_under_runtime_if(out: Tensor):
    tid = fx.thread_idx.x
    if tid > 100:
        raise ValueError("never happens at run time")
    out[tid] = 1


@flyc.kernel
def raise_under_static_if(out: Tensor, check: fx.Constexpr[bool]):
    tid = fx.thread_idx.x
    if tid < 100:  # run-time
        if check:  # compile-time, inside a run-time branch: a compile-time check is fine
            raise ValueError("check failed")
        out[tid] = 2


def test_raise_under_a_run_time_if_is_an_error():
    e = raises("FLY121", _launch_one, raise_under_runtime_if)
    assert 'raise ValueError("never happens at run time")' in str(e)
    assert "compile time" in e.message


def test_raise_under_a_compile_time_if_is_a_compile_time_check():
    assert _launch_one(raise_under_static_if, False).tolist() == [2] * 4
    with pytest.raises(ValueError, match="check failed") as ei:
        _launch_one(raise_under_static_if, True)
    assert getattr(ei.value, "diag_id", None) is None  # the user's own error, located at the raise
    assert ei.value.loc[0] == __file__


TABLE = {0: 10, 1: 11}


@flyc.kernel
def dict_lookup(out: Tensor):
    tid = fx.thread_idx.x
    out[tid] = TABLE[tid]


@flyc.kernel
def dict_membership(out: Tensor):
    tid = fx.thread_idx.x
    out[tid] = fx.Int32(1) if tid in TABLE else fx.Int32(0)


@flyc.kernel
def format_spec(out: Tensor):
    tid = fx.thread_idx.x
    label = f"{tid:04d}"
    out[tid] = len(label)


@pytest.mark.parametrize("kfn", [dict_lookup, dict_membership])
def test_run_time_dict_key_is_an_error(kfn):
    e = raises("FLY122", _launch_one, kfn)
    assert "a run-time Int32 cannot be a key of a Python dict" in e.message


def test_format_spec_on_a_run_time_value_is_an_error():
    e = raises("FLY123", _launch_one, format_spec)
    assert 'f"{tid:04d}"' in str(e) and "fx.printf" in e.fix


def test_static_values_still_hash_and_format():
    assert {fx.Int32(3): "a"}[fx.Int32(3)] == "a"
    assert f"{fx.Int32(7):03d}" == "007" and f"{fx.Float32(1.5):.2f}" == "1.50"


# -- atomics the front end rejects for every target ------------------------------------------------


@flyc.kernel
def atomic_on(out: Tensor, kind: fx.Constexpr[str]):
    if fx.const_expr(kind == "cas"):
        fx.atomic_cas(out.ptr, True, False)
    else:
        getattr(fx, f"atomic_{kind}")(out.ptr, 1)


@pytest.mark.parametrize("kind", ["add", "max", "or", "exchange", "cas"])
@pytest.mark.parametrize("arch", ["cpu", "sm_80", "sm_90a"])
def test_atomics_on_bool_are_rejected_for_every_target(kind, arch, monkeypatch):
    if arch != "cpu":
        monkeypatch.setenv("COMPILE_ONLY", "1")
        monkeypatch.setenv("ARCH", arch)

    @flyc.jit
    def launch(out, kind: fx.Constexpr[str]):
        atomic_on(out, kind).launch(grid=1, block=1)

    with pytest.raises(TypeError, match=r"atomics on Boolean \(i1\) values are not supported by any target") as ei:
        launch(np.zeros(4, np.bool_), kind)
    assert ei.value.loc[0] == __file__ and "generator bug" not in str(ei.value)


def test_atomics_on_int8_run_on_the_interpreter():
    @flyc.jit
    def launch(out, kind: fx.Constexpr[str]):
        atomic_on(out, kind).launch(grid=1, block=3)

    out = np.zeros(4, np.int8)
    launch(out, "add")
    assert out.tolist() == [3, 0, 0, 0]


# -- views that reach past their memory -------------------------------------------------------------


@flyc.kernel
def strided_sum(a: Tensor, out: Tensor):
    i = fx.thread_idx.x
    out[i] = a[i]


@flyc.jit
def launch_strided(a, out):
    strided_sum(a, out).launch(grid=1, block=4)


def test_numpy_view_past_its_allocation_is_refused():
    from numpy.lib.stride_tricks import as_strided

    base = np.arange(10, dtype=np.float32)
    out = np.zeros(4, np.float32)
    e = raises("FLY223", launch_strided, as_strided(base, shape=(100,), strides=(4,)), out)
    assert "spans bytes 0 to 400" in e.message and "only 40 bytes" in e.message
    e = raises("FLY223", launch_strided, as_strided(base[8:], shape=(4,), strides=(4,)), out)
    assert "spans bytes 32 to 48" in e.message
    raw = bytearray(16)
    e = raises("FLY223", launch_strided, as_strided(np.frombuffer(raw, np.float32), shape=(8,), strides=(4,)), out)
    assert "only 16 bytes" in e.message
    assert not out.any()


def test_numpy_views_inside_their_allocation_run():
    from numpy.lib.stride_tricks import as_strided

    base = np.arange(10, dtype=np.float32)
    out = np.zeros(4, np.float32)
    launch_strided(as_strided(base[2:], shape=(4,), strides=(4,)), out)
    assert out.tolist() == [2, 3, 4, 5]
    launch_strided(as_strided(base[6:], shape=(4,), strides=(4,)), out)  # ends exactly at the end
    assert out.tolist() == [6, 7, 8, 9]
    launch_strided(np.frombuffer(bytearray(base.tobytes()), np.float32)[1:5], out)
    assert out.tolist() == [1, 2, 3, 4]


def test_torch_view_past_its_storage_is_refused():
    torch = pytest.importorskip("torch")
    t = torch.arange(10, dtype=torch.float32)
    out = torch.zeros(4)
    launch_strided(t.as_strided((4,), (1,), 6), out)
    assert out.tolist() == [6, 7, 8, 9]
    v = t.as_strided((4,), (1,), 0)
    t.untyped_storage().resize_(8)  # the view now reaches past the storage torch keeps
    e = raises("FLY223", launch_strided, v, out)
    assert "spans bytes 0 to 16" in e.message and "only 8 bytes" in e.message


# -- the CUDA launch path (a stand-in driver: tests/unit/test_jit_cuda_path.py) ---------------------

from test_jit_cuda_path import FakeCudaTensor, fake_cuda  # noqa: E402, F401


@flyc.kernel
def copy_kernel(a: Tensor, b: Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        b[i] = a[i]


@flyc.jit
def launch_copy(a, b, n: fx.Int32):
    copy_kernel(a, b, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def test_cuda_path_checks_a_run_time_grid_before_the_driver(fake_cuda):  # noqa: F811
    a, b = FakeCudaTensor(0x10000, 1000), FakeCudaTensor(0x20000, 1000)
    launch_copy(a, b, 1000)  # the launch plan calls the kernel directly on this path
    e = raises("FLY222", launch_copy, a, b, 0)
    assert "copy_kernel(a, b, n).launch(" in str(e)
    assert [x[1] for x in fake_cuda["launches"]] == [(8, 1, 1)]  # the empty grid never reached the driver
    e = raises("FLY221", launch_copy, a, b, 2**31)
