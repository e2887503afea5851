"""The cached call's entry (the dispatcher installed as the jit function's ``__call__``) and the native launch
helper, without a GPU: the stand-in driver of test_jit_fastpath decodes what ``cuLaunchKernelEx`` would
receive. Every way of calling must launch what the full path launches, and every malformed call must get
the full path's errors."""

from __future__ import annotations

import ctypes
import struct

import pytest
from compiler_util import Tensor, flyc, fx
from test_jit_cuda_path import FakeCudaTensor as DevBuf
from test_jit_cuda_path import _fake_tensor as _devbuf
from test_jit_fastpath import Driver

import flydsl.runtime.device as device_mod
from flydsl.compiler import DSLTypeError
from flydsl.compiler.specialize import CONVERTERS
from flydsl.runtime import native
from flydsl.runtime._cuda_launch import make_launch
from flydsl.runtime.cuda import CudaKernel


@pytest.fixture
def driver(monkeypatch):
    d = Driver(["ptr", "i32", "ptr", "i32", "i32", "i32"])  # run_axpy's kernel (other tests set theirs)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setattr(device_mod, "_DEVICES", {"cuda": device_mod.StandInCudaDevice(d.call)})
    monkeypatch.setitem(CONVERTERS, DevBuf, _devbuf)
    return d


@flyc.kernel
def axpy(x: Tensor, y: Tensor, a: fx.Int32, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        y[i] = y[i] + x[i] * a


@flyc.jit
def run_axpy(x, y, a: fx.Int32, n: fx.Int32, stream: fx.Stream = fx.Stream(None)):
    axpy(x, y, a, n).launch(grid=((n + 63) // 64, 1, 1), block=(64, 1, 1), stream=stream)


def _fresh(jf):
    jf.clear_cache()
    return jf


def test_positional_keyword_and_default_calls_take_the_inlined_entry(driver):
    jf = _fresh(run_axpy)
    x, y = DevBuf(0x10000, 100), DevBuf(0x20000, 100)
    jf(x, y, 3, 100)  # the full path: compiles, registers, inlines
    assert type(jf).__call__ is jf._dispatch.entry and jf._dispatch.inlined
    hits = jf.hits
    jf(x, y, 4, 100)
    jf(x, y, a=5, n=65)  # keywords bind to the entry's own parameter names
    jf(x=x, y=y, a=6, n=1, stream=fx.Stream(0x77))
    jf(x, y, 7, 64, None)
    assert jf.hits == hits + 4 and jf.compiles == 1
    got = [(driver.decoded(i)[0], driver.decoded(i)[3], driver.decoded(i)[4][4]) for i in range(-4, 0)]
    assert got == [((2, 1, 1), 0, 4), ((2, 1, 1), 0, 5), ((1, 1, 1), 0x77, 6), ((1, 1, 1), 0, 7)]


def test_malformed_calls_get_the_binders_errors(driver):
    jf = _fresh(run_axpy)
    x, y = DevBuf(0x10000, 8), DevBuf(0x20000, 8)
    jf(x, y, 1, 8)
    with pytest.raises(DSLTypeError, match=r"FLY212\]: run_axpy\(\): missing a required argument: 'n'"):
        jf(x, y, 1)
    with pytest.raises(DSLTypeError, match=r"FLY212\]: run_axpy\(\): too many positional arguments"):
        jf(x, y, 1, 8, None, 5)
    with pytest.raises(DSLTypeError, match=r"FLY212\]: run_axpy\(\): got an unexpected keyword argument 'm'"):
        jf(x, y, 1, 8, m=8)
    with pytest.raises(DSLTypeError, match=r"FLY212\]: run_axpy\(\): multiple values for argument 'a'"):
        jf(x, y, 1, 8, a=2)
    jf(x, y, 2, 8)  # and the entry still launches
    assert driver.decoded()[4][4] == 2


def test_compiled_functions_share_the_entry_and_follow_its_changes(driver):
    jf = _fresh(run_axpy)
    x, y = DevBuf(0x10000, 8), DevBuf(0x20000, 8)
    f = flyc.compile(jf, x, y, 1, 8)
    f(x, y, 1, 8)
    f(x, y, 2, 8)
    assert type(f).__call__ is jf._dispatch.entry
    hits = jf.hits
    f(x, y, 3, 8)
    assert jf.hits == hits + 1
    jf.clear_cache()  # the dispatchers go: the compiled function falls back to the jit function's call
    assert "__call__" not in type(f).__dict__
    f(x, y, 4, 8)
    f(x, y, 5, 8)
    assert type(f).__call__ is jf._dispatch.entry and driver.decoded()[4][4] == 5


def test_ambient_hints_leave_the_inlined_specialization(driver):
    """The inlined entry reads the function's own hints (no property call) and the lock-free "ambient hints
    anywhere" flag: a call inside ``CompilationContext.compile_hints`` goes to the copy compiled under them,
    and the plain calls around it stay on the inlined one."""
    from flydsl.compiler.kernel_function import ANY_HINTS, CompilationContext

    jf = _fresh(run_axpy)
    x, y = DevBuf(0x10000, 8), DevBuf(0x20000, 8)
    compiles = jf.compiles
    jf(x, y, 1, 8)
    assert jf._dispatch.inlined and "_f_JF._own_hints" in jf._dispatch.source
    with CompilationContext.compile_hints({"maxnreg": 64}):
        assert ANY_HINTS
        jf(x, y, 2, 8)
        jf(x, y, 3, 8)
    assert not ANY_HINTS
    hinted = list(jf._hint_copies.values())[0]
    assert hinted.compile_hints == {"maxnreg": 64} and hinted.compiles == 1 and jf.compiles == compiles + 1
    hits = jf.hits
    jf(x, y, 4, 8)
    assert jf.hits == hits + 1 and [driver.decoded(i)[4][4] for i in range(-3, 0)] == [2, 3, 4]


class TorchLikeStream:
    """A stream object as torch's: a fixed ``cuda_stream`` handle (the reads counted)."""

    reads = 0

    def __init__(self, handle: int):
        self._h = handle

    @property
    def cuda_stream(self) -> int:
        TorchLikeStream.reads += 1
        return self._h


def test_a_torch_streams_handle_is_read_once_per_object(driver):
    jf = _fresh(run_axpy)
    x, y = DevBuf(0x10000, 8), DevBuf(0x20000, 8)
    s1, s2 = TorchLikeStream(0x51), TorchLikeStream(0x52)
    jf(x, y, 1, 8, s1)  # the full path, then the inlined entry
    reads = TorchLikeStream.reads
    for s in (s1, s1, s2, s2, s1):
        jf(x, y, 2, 8, stream=s)
    assert [driver.decoded(i)[3] for i in range(-5, 0)] == [0x51, 0x51, 0x52, 0x52, 0x51]
    assert TorchLikeStream.reads == reads + 3  # once per change of object


@pytest.mark.parametrize("use_native", [False, True])
def test_the_environment_check_follows_the_live_environment(driver, monkeypatch, use_native):
    """The inlined entry's environment check (one native ``same_items`` call, or a read per variable without
    the helper): an equal value set again is still a hit, a changed one is not."""
    if use_native:
        _native_or_skip()
    else:
        monkeypatch.setattr(native, "_STATE", {})
        monkeypatch.setenv("FLYDSL_RUNTIME_NATIVE_LAUNCH", "0")
    jf = _fresh(run_axpy)
    x, y = DevBuf(0x10000, 8), DevBuf(0x20000, 8)
    jf(x, y, 1, 8)
    assert ("_f_SAME(" in jf._dispatch.source) is use_native and jf._dispatch.inlined
    hits, n = jf.hits, len(driver.launches)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "".join(["cu", "da"]))  # an equal value, another object
    jf(x, y, 2, 8)
    assert jf.hits == hits + 1 and driver.decoded()[4][4] == 2
    monkeypatch.setenv("COMPILE_ONLY", "1")
    assert jf(x, y, 3, 8) is None and len(driver.launches) == n + 1  # the full path: compiled, not launched
    monkeypatch.delenv("COMPILE_ONLY")
    jf(x, y, 4, 8)
    assert driver.decoded()[4][4] == 4


def test_same_items_compares_like_dict_get():
    _native_or_skip()
    same = native.same_items()
    d = {b"A": b"1", b"B": "x"}
    assert same(d, (b"A", b"B", b"C"), (b"1", "".join(["", "x"]), None))
    assert not same(d, (b"A",), (b"2",)) and not same(d, (b"C",), (b"1",)) and not same(d, (b"A",), (None,))
    assert same(d, (), ())
    with pytest.raises(TypeError, match="two tuples of one length"):
        same(d, (b"A",), ())


@flyc.kernel
def put(out: Tensor, v: fx.Int32):
    out[0] = v


@flyc.jit
def shadowing(type, len: fx.Int32, int: fx.Int32 = 1):  # noqa: A002 - the generated code must not care
    put(type, len * int).launch(grid=1, block=1)


@flyc.jit
def generated_looking(_f_s0, _f_T0: fx.Int32, _f_k: fx.Int32 = 1):
    put(_f_s0, _f_T0 + _f_k).launch(grid=1, block=1)


@pytest.mark.parametrize("jf", [shadowing, generated_looking])
def test_parameter_names_that_shadow_builtins_or_generated_names(driver, jf):
    driver.kinds = ["ptr", "i32", "i32"]
    out = DevBuf(0x30000, 1)
    for v in (1, 2, 3):
        jf(out, v)
    hits = jf.hits
    jf(out, 4, 10)
    jf(out, 5)
    assert jf.hits == hits + 2
    combine = (lambda a, b: a * b) if jf is shadowing else (lambda a, b: a + b)
    assert [driver.decoded(i)[4][2] for i in range(-5, 0)] == [
        combine(v, k) for v, k in zip((1, 2, 3, 4, 5), (1, 1, 1, 10, 1))
    ]


def test_a_jit_function_called_while_tracing_is_a_helper(driver):
    @flyc.jit
    def inner(out, v: fx.Int32):
        put(out, v * 2).launch(grid=1, block=1)

    @flyc.jit
    def outer(out, v: fx.Int32):
        inner(out, v + 1)

    driver.kinds = ["ptr", "i32", "i32"]
    out = DevBuf(0x40000, 1)
    inner(out, 1)  # inner's entry is installed...
    inner(out, 2)
    outer(out, 3)  # ... and while outer traces, calling inner traces its body into outer
    outer(out, 4)
    assert [driver.decoded(i)[4][2] for i in range(-4, 0)] == [2, 4, 8, 10]


# -- the native launch helper ------------------------------------------------------------------------


def _native_or_skip():
    if native.launch_type() is None:
        pytest.skip(f"the native launch helper is unavailable here: {native.status()}")


KINDS = ["ptr", "i32", "i64", "f32", "f64", "f16", "i1", "i8", "i16"]
VALUES = (0x1000, 2**32 - 5, -1, 1.5, -2.25, 0.5, True, 300, -2)
DECODED = [0x1000, -5, -1, 1.5, -2.25, 0.5, True, 44, -2]  # u32 values wrap like the kernel's i32


@pytest.mark.parametrize("use_native", [False, True])
def test_native_and_ctypes_launches_pack_alike(use_native):
    if use_native:
        _native_or_skip()
    d = Driver(KINDS)
    fn = make_launch("k", 0xABC, KINDS, d.call, None, [48 * 1024], native=use_native)
    assert fn.native is use_native
    fn(3, 2, 1, 64, 1, 1, 128, 77, *VALUES)
    grid, block, smem, stream, vals = d.decoded()
    assert (grid, block, smem, stream) == ((3, 2, 1), (64, 1, 1), 128, 77) and d.launches[-1][1] == 0xABC
    assert vals == DECODED


@pytest.mark.parametrize("use_native", [False, True])
def test_values_that_do_not_fit_raise_before_the_driver(use_native):
    if use_native:
        _native_or_skip()
    d = Driver(["ptr", "i32"])
    fn = make_launch("k", 1, ["ptr", "i32"], d.call, None, [48 * 1024], native=use_native)
    bad_grid, bad_pointer, bad_int = (-1, 0x1000, 1), (1, -8, 1), (1, 8, 1.5)
    for gx, p, v in (bad_grid, bad_pointer, bad_int):
        with pytest.raises((struct.error, OverflowError, TypeError)):  # struct's errors, or the helper's
            fn(gx, 1, 1, 32, 1, 1, 0, 0, p, v)
    assert d.launches == []
    k = CudaKernel(None, "k", ["ptr", "i32"], driver_call=d.call, func_handle=1)
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        k.launch(1, 32, 0, None, (0x1000, 1.5))
    assert d.launches == []


def test_the_native_helper_takes_kernels_of_many_parameters():
    _native_or_skip()
    kinds = ["i32"] * 300 + ["f64"] * 600  # 6 KB of parameters: past the helper's stack buffer
    d = Driver(kinds)
    fn = make_launch("k", 1, kinds, d.call, None, [48 * 1024], native=True)
    vals = list(range(300)) + [i / 4 for i in range(600)]
    fn(1, 1, 1, 1, 1, 1, 0, 0, *vals)
    assert d.decoded()[4] == vals


def test_the_native_helper_raises_the_shared_memory_limit_first():
    _native_or_skip()
    seen, limit = [], [48 * 1024]

    def on_error(err, grid, block, smem, stream, params):
        seen.append((err, smem))
        limit[0] = smem

    d = Driver(["ptr"])
    fn = make_launch("k", 1, ["ptr"], d.call, on_error, limit, native=True)
    fn(1, 1, 1, 32, 1, 1, 1024, 0, 5)
    fn(1, 1, 1, 32, 1, 1, 96 * 1024, 0, 5)
    d.result = 700  # a driver error reaches on_error with the launch's values
    fn(1, 1, 1, 32, 1, 1, 0, 0, 5)
    assert seen == [(None, 96 * 1024), (700, 0)] and len(d.launches) == 3


def test_kinds_the_helper_does_not_pack_take_the_ctypes_path():
    d = Driver(["ptr", "rsrc"])
    fn = make_launch("k", 1, ["ptr", "rsrc"], d.call, None, [48 * 1024])
    assert fn.native is False
    fn(1, 1, 1, 1, 1, 1, 0, 0, 0x1000, (0x2000, 64))
    assert d.decoded()[4] == [0x1000, 0x2000]
    with pytest.raises(RuntimeError, match=r"kernel k: no native launch \(parameter kinds it does not pack: rsrc\)"):
        make_launch("k", 1, ["ptr", "rsrc"], d.call, None, [48 * 1024], native=True)


# bf16 parameters: ties after the f32 rounding, subnormals, the overflow threshold, infinities, NaNs
BF16_VALUES = [2.0, -0.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-30, 3.3961e38, 3.4e38, 1e39, -1e39,
               float("inf"), float("-inf"), float("nan"), -float("nan"), 2**-133, 2**-134 * 3, 2**-149, 1e-46,
               0.1, -123.456, 65504.0]  # fmt: skip


def test_bf16_parameters_pack_alike_on_both_paths():
    _native_or_skip()
    out = []
    for use_native in (False, True):
        d = Driver(["bf16"] * len(BF16_VALUES))
        fn = make_launch("k", 1, ["bf16"] * len(BF16_VALUES), d.call, None, [48 * 1024], native=use_native)
        assert fn.native is use_native
        fn(1, 1, 1, 1, 1, 1, 0, 0, *BF16_VALUES)
        out.append(d.decoded()[4])
    assert out[0] == out[1]
    assert out[1][:5] == [0x4000, 0x8000, 0x3F80, 0x3F82, 0x3F80]  # ties to even (the last one after the f32 step)
    assert out[1][9:13] == [0x7F80, 0xFF80, 0x7FC0, 0xFFC0]


def test_the_native_helper_calls_either_driver_entry():
    """Flag 1: the entry has cuLaunchKernel's eleven arguments (grid, block, smem and stream by value), not
    cuLaunchKernelEx's config struct; flag 2 keeps the GIL across the call. Both pack alike."""
    _native_or_skip()
    got = []
    u = ctypes.c_uint
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)  # fmt: skip

    def legacy(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        p0, p1 = ctypes.c_uint64.from_address(params[0]).value, ctypes.c_uint32.from_address(params[1]).value
        got.append((f, (gx, gy, gz), (bx, by, bz), smem, stream, p0, p1, extra))
        return 0

    cb = proto(legacy)
    addr = ctypes.cast(cb, ctypes.c_void_p).value
    for flags in (1, 3):
        launch = native.launch_type()(addr, 0xABC, "QI", (0, 8), 12, 0, 0, flags)
        assert launch(3, 2, 1, 64, 1, 1, 128, 77, 0x1000, 7) == 0
    # make_launch's native_entry (what CudaKernel passes: libcuda's entry and the flags it is called with)
    fn = make_launch("k", 0xABC, ["ptr", "i32"], Driver(["ptr", "i32"]).call, None, [48 * 1024], native_entry=(addr, 1))
    assert fn.native and fn(3, 2, 1, 64, 1, 1, 128, 77, 0x1000, 7) is None
    assert got == [(0xABC, (3, 2, 1), (64, 1, 1), 128, 77, 0x1000, 7, None)] * 3


def test_status_names_the_path(monkeypatch):
    assert native.status().startswith(("on (", "off ("))
    monkeypatch.setattr(native, "_STATE", {})
    monkeypatch.setenv("FLYDSL_RUNTIME_NATIVE_LAUNCH", "0")
    assert native.launch_type() is None and native.status() == "off (FLYDSL_RUNTIME_NATIVE_LAUNCH=0)"
    d = Driver(["ptr"])
    assert make_launch("k", 1, ["ptr"], d.call, None, [48 * 1024]).native is False
