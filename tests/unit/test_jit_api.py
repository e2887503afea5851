"""The flyc surface: @kernel / @jit / launch, kernel naming and known_block_size, Constexpr, the implicit
stream, flyc.compile, COMPILE_ONLY, cache_info, and the errors of each."""

from __future__ import annotations

import typing

import numpy as np
import pytest
from compiler_util import Constexpr, Stream, Tensor, count_ops, cpu_device, flyc, fx, traced  # noqa: F401

from flydsl.compiler import DSLTypeError, DSLValueError, FlyDSLError

pytestmark = pytest.mark.usefixtures("cpu_device")


@flyc.kernel
def fill(out: Tensor, value: fx.Int32):
    out[fx.thread_idx.x] = value


@flyc.jit
def launch_fill(out, value: fx.Int32):
    fill(out, value).launch(grid=1, block=4)


def test_kernel_called_outside_a_jit_function():
    with pytest.raises(DSLTypeError) as ei:
        fill(np.zeros(4, np.int32), 1)
    assert "error[FLY201]: @flyc.kernel 'fill' can only be called inside a @flyc.jit function" in str(ei.value)


def test_launch_and_values_not_in_the_key():
    out = np.zeros(4, np.int32)
    launch_fill(out, 5)
    assert out.tolist() == [5] * 4
    launch_fill(out, 7)  # a new value, same specialization
    assert out.tolist() == [7] * 4
    info = launch_fill.cache_info()
    assert (info.hits, info.misses, info.currsize, info.disk_size) == (1, 1, 1, None)


def test_host_signature_and_implicit_stream():
    text = traced(launch_fill, np.zeros(4, np.int32), 3)
    assert "func.func @launch_fill(%arg0: !fly.ptr<i32, global>, %arg1: i32, %arg2: i32, %arg3: i64)" in text
    assert "gpu.func @fill_0(%arg0: !fly.ptr<i32, global>, %arg1: i32, %arg2: i32) attributes {kernel = true, " in text

    @flyc.jit
    def with_stream(out, value: fx.Int32, stream: Stream = None):
        fill(out, value).launch(grid=1, block=4, stream=stream)

    text = traced(with_stream, np.zeros(4, np.int32), 3, None)
    assert "func.func @with_stream(%arg0: !fly.ptr<i32, global>, %arg1: i32, %arg2: i32, %arg3: i64)" in text
    out = np.zeros(4, np.int32)
    with_stream(out, 9, Stream(None))
    with_stream(out, 9, 0)
    assert out.tolist() == [9] * 4


def test_kernel_names_known_block_size_and_specializations():
    @flyc.kernel
    def k(out: Tensor):
        out[fx.thread_idx.x] = fx.block_dim.x

    @flyc.kernel(name="named", known_block_size=(4, 1, 1))
    def k2(out: Tensor):
        out[fx.thread_idx.x] = 1

    @flyc.jit
    def launch(out, nb: fx.Int32):
        k(out).launch(grid=1, block=(4, 1, 1))
        k(out).launch(grid=1, block=4)  # same specialization: same kernel
        k(out).launch(grid=1, block=2)  # another block size: another kernel
        k(out).launch(grid=1, block=nb)  # a run-time block: no known size
        k2(out).launch(grid=1, block=4)

    text = traced(launch, np.zeros(4, np.int32), 4)
    assert "gpu.func @k_0(" in text and "known_block_size = array<i32: 4, 1, 1>" in text
    assert "gpu.func @k_1(" in text and "known_block_size = array<i32: 2, 1, 1>" in text
    assert "gpu.func @k_2(%arg0: !fly.ptr<i32, global>, %arg1: i32) attributes {kernel = true} {" in text
    assert "gpu.func @named(" in text
    assert count_ops(text, "gpu.launch_func") == 5
    assert text.count("@kernels::@k_0 ") == 2
    out = np.zeros(4, np.int32)
    launch(out, 4)
    assert out.tolist() == [1, 1, 1, 1]

    @flyc.jit
    def bad(out):
        k2(out).launch(grid=1, block=8)

    with pytest.raises(DSLValueError) as ei:
        bad(out)
    assert "error[FLY209]: kernel 'k2': the launch block=[8, 1, 1] differs from known_block_size=[4, 1, 1]" in (
        str(ei.value)
    )


@pytest.mark.parametrize(
    "size, cls, message",
    [
        (512, DSLTypeError, r"known_block_size must be a sequence of 3 positive integers, got 512"),
        ([256, 1], DSLValueError, r"known_block_size must have exactly 3 elements, got 2"),
        ([64.0, 1, 1], DSLTypeError, r"known_block_size\[0\] must be an int, got 64.0"),
        ([64, 0, 1], DSLValueError, r"known_block_size\[1\] must be positive, got 0"),
    ],
)
def test_known_block_size_is_checked_where_the_kernel_is_declared(size, cls, message):
    with pytest.raises(cls, match=message) as ei:

        @flyc.kernel(known_block_size=size)
        def bad(out: Tensor):
            out[0] = 1

    assert ei.value.diag_id in ("FLY225", "FLY226")


def test_known_block_size_accepts_static_fx_integers_and_the_accessor_needs_a_static_block():
    @flyc.kernel(known_block_size=[fx.Int32(64), fx.Int64(1), 1])
    def ok(out: Tensor):
        out[0] = 1

    assert ok.known_block_size == (64, 1, 1) and ok._known_block_size == [64, 1, 1]
    seen = []

    @flyc.kernel
    def probe(out: Tensor, n: fx.Int32):
        seen.append(fx.known_block_size())

    @flyc.jit
    def static_block(out, n: fx.Int32):
        probe(out, n).launch(grid=1, block=(32, 2))

    @flyc.jit
    def dynamic_block(out, n: fx.Int32):
        probe(out, n).launch(grid=1, block=n)

    static_block(np.zeros(4, np.int32), 1)
    assert seen == [(32, 2, 1)]
    with pytest.raises(
        RuntimeError, match="no compile-time block size .the kernel is launched with a block size computed"
    ):
        dynamic_block(np.zeros(4, np.int32), 8)


@pytest.mark.parametrize("grid", [(1, 2, 3, 4), 0, (2, -1), 1.5])
def test_launch_dimensions_are_checked(grid):
    @flyc.jit
    def launch(out):
        fill(out, 1).launch(grid=grid, block=4)

    with pytest.raises(DSLValueError) as ei:
        launch(np.zeros(4, np.int32))
    assert f"error[FLY208]: launch grid must be 1 to 3 integers, got {grid}" in str(ei.value)


def test_constexpr_parameters_are_exact_and_specialize():
    seen = []

    @flyc.kernel
    def k(out: Tensor, N: Constexpr[int], F: Constexpr[float], S: Constexpr[str], T: Constexpr[tuple], A: Constexpr):
        seen.append((N, F, S, T, A))
        out[0] = N

    @flyc.jit
    def launch(out, N: Constexpr[int], F: Constexpr[float], S: Constexpr[str], T: Constexpr[tuple], A: Constexpr):
        k(out, N, F, S, T, A).launch(grid=1, block=1)

    out = np.zeros(1, np.int32)
    launch(out, 3, 1.5, "x", (1, 2), None)
    launch(out, 3, 1.5, "x", (1, 2), None)
    launch(out, 4, 1.5, "x", (1, 2), None)
    assert seen == [(3, 1.5, "x", (1, 2), None), (4, 1.5, "x", (1, 2), None)]
    assert launch.cache_info().misses == 2 and out[0] == 4
    with pytest.raises(DSLTypeError) as ei:
        launch(out, True, 1.5, "x", (1, 2), None)
    assert "error[FLY202]: argument 'N' is declared fx.Constexpr[int] but got bool True" in str(ei.value)
    with pytest.raises(DSLTypeError):
        launch(out, 3, 1, "x", (1, 2), None)  # an int is not a float here
    with pytest.raises(TypeError, match="use one of int, bool, float, str, tuple, Callable"):
        Constexpr[list]


def test_constexpr_callable_is_keyed_by_its_code():
    @flyc.kernel
    def k(out: Tensor, op: Constexpr[typing.Callable]):
        out[fx.thread_idx.x] = op(fx.thread_idx.x)

    @flyc.jit
    def launch(out, op: Constexpr[typing.Callable]):
        k(out, op).launch(grid=1, block=4)

    out = np.zeros(4, np.int32)
    launch(out, lambda x: x * 2)
    launch(out, lambda x: x * 2)  # a new lambda object with the same code: a hit
    assert out.tolist() == [0, 2, 4, 6] and launch.cache_info().misses == 1
    launch(out, lambda x: x + 1)
    assert out.tolist() == [1, 2, 3, 4] and launch.cache_info().misses == 2


def test_jit_inside_jit_calls_its_body():
    @flyc.jit
    def inner(out, v: fx.Int32):
        fill(out, v + 1).launch(grid=1, block=4)

    @flyc.jit
    def outer(out, v: fx.Int32):
        inner(out, v)

    out = np.zeros(4, np.int32)
    outer(out, 41)
    assert out.tolist() == [42] * 4
    assert inner.cache_info().misses == 0  # never compiled on its own


def test_kernel_and_jit_must_not_return_values():
    @flyc.kernel
    def k(out: Tensor):
        out[0] = 1
        return 5

    @flyc.jit
    def launch(out):
        k(out).launch(grid=1, block=1)

    with pytest.raises(DSLTypeError, match=r"error\[FLY210\]: a @flyc.kernel returns nothing, but 'k_0' returned"):
        launch(np.zeros(1, np.int32))

    @flyc.jit
    def launch2(out):
        fill(out, 1).launch(grid=1, block=1)
        return 3

    with pytest.raises(DSLTypeError, match=r"error\[FLY211\]: a @flyc.jit launcher returns nothing"):
        launch2(np.zeros(1, np.int32))


def test_argument_binding_errors():
    with pytest.raises(DSLTypeError) as ei:
        launch_fill(np.zeros(4, np.int32))
    assert "error[FLY212]: launch_fill(): missing a required argument: 'value'" in str(ei.value)
    with pytest.raises(DSLTypeError) as ei:
        launch_fill(np.zeros(4, np.int32), {"a": 1})
    assert "error[FLY204]: argument 'value': cannot pass dict {'a': 1} (declared Int32) to a @flyc.jit function" in str(
        ei.value
    )


def test_compile_returns_a_compiled_function(monkeypatch):
    out = np.zeros(4, np.int32)
    compiled = flyc.compile(launch_fill, out, 1)
    assert isinstance(compiled, flyc.CompiledFunction)
    assert out.tolist() == [1] * 4  # compile runs the function once with its arguments, as FlyDSL
    compiled(out, 6)
    assert out.tolist() == [6] * 4
    assert "gpu.func @fill_0" in compiled.ir
    assert "gpu.func @fill_0" in compiled._keepalive.source_ir  # FlyDSL's name of the artifact
    fast = flyc.compile[{"fast_fp_math": True}](launch_fill)
    assert fast is not launch_fill and fast.compile_hints == {"fast_fp_math": True}
    assert launch_fill.compile_hints == {}  # the original keeps its hints
    fast(out, 7)
    assert out.tolist() == [7] * 4


def test_compile_only_returns_none_without_launching(monkeypatch):
    monkeypatch.setenv("COMPILE_ONLY", "1")
    out = np.zeros(4, np.int32)

    @flyc.jit
    def launch(out, value: fx.Int32):
        fill(out, value).launch(grid=1, block=4)

    assert launch(out, 3) is None
    assert flyc.compile(launch, out, 3) is None
    assert out.tolist() == [0] * 4
    art = launch._last[1].artifact
    assert art.ptx is not None and ".entry fill_0" in art.ptx  # device code was produced anyway
    monkeypatch.delenv("COMPILE_ONLY")
    launch(out, 3)
    assert out.tolist() == [3] * 4


def test_compile_only_for_an_amd_arch_traces_and_optimizes_without_device_code(monkeypatch):
    monkeypatch.setenv("COMPILE_ONLY", "1")
    monkeypatch.setenv("ARCH", "gfx942")  # no code generator for AMD yet: FlyDSL's frontend-only compile
    out = np.zeros(4, np.int32)

    @flyc.jit
    def launch(out, value: fx.Int32):
        fill(out, value).launch(grid=1, block=4)

    assert launch(out, 3) is None and out.tolist() == [0] * 4
    art = launch._last[1].artifact
    assert art.ptx is None and art.target == "gfx942"
    assert "gpu.func @fill_0" in art.source_ir and "gpu.launch_func" in art.source_ir


def test_errors_are_flydsl_errors_with_the_callers_line():
    with pytest.raises(FlyDSLError) as ei:
        launch_fill(np.zeros(4, np.int32), "text")
    assert str(ei.value).startswith(f"{__file__}:")


class Scaler:
    def __init__(self, scale):
        self.scale = scale

    @flyc.kernel
    def kern(self, out: Tensor):
        def clamp(v):  # a nested helper is rewritten too: its `if` is an scf.if
            if v > 5:
                v = fx.Int32(5)
            return v

        out[fx.thread_idx.x] = clamp(fx.thread_idx.x * self.scale)

    @flyc.jit
    def launch(self, out):
        self.kern(out).launch(grid=1, block=4)


def test_method_launchers_specialize_on_compile_time_attributes():
    out = np.zeros(4, np.int32)
    Scaler(2).launch(out)
    assert out.tolist() == [0, 2, 4, 5]
    Scaler(1).launch(out)
    assert out.tolist() == [0, 1, 2, 3]
    Scaler(2).launch(out)
    assert out.tolist() == [0, 2, 4, 5]
    assert Scaler.launch.cache_info().misses == 2


def test_compile_hints_are_part_of_the_specialization():
    @flyc.jit
    def launch(out, value: fx.Int32):
        fill(out, value).launch(grid=1, block=4)

    out = np.zeros(4, np.int32)
    base = launch.cache_key(out, 1)
    launch(out, 1)
    launch.compile_hints["fast_fp_math"] = True
    assert launch.cache_key(out, 1) != base
    launch(out, 2)
    assert launch.cache_info().misses == 2 and out.tolist() == [2] * 4


@flyc.kernel
def _exp_kernel(a: fx.Tensor, b: fx.Tensor):
    t = fx.thread_idx.x
    b[t] = fx.exp(a[t]) * 2.0


@flyc.jit
def _exp_launch(a: fx.Tensor, b: fx.Tensor):
    _exp_kernel(a, b).launch(grid=1, block=4)


def test_fastmath_compile_hint_is_the_ambient_default():
    a, b = np.ones(4, np.float32), np.zeros(4, np.float32)
    plain = str(_exp_launch.trace(a, b))
    fast = str(flyc.compile[{"fastmath": "fast"}](_exp_launch).trace(a, b))
    contract = str(flyc.compile[{"fast_fp_math": True}](_exp_launch).trace(a, b))
    assert "fastmath" not in plain
    assert "math.exp %2 fastmath<fast>" in fast and "arith.mulf %3, %4 fastmath<fast>" in fast
    assert "fastmath<fast>" in contract
