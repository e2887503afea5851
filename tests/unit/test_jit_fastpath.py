"""The cached call's fast path without a GPU: the CUDA launch path runs to the driver's ctypes boundary,
where a ctypes callback decodes the packed ``CUlaunchConfig`` and parameter values that
``cuLaunchKernelEx`` would receive (``StandInCudaDevice``). Fast hits must launch exactly what the full
path launches, and anything that changes the specialization must leave the fast path."""

from __future__ import annotations

import ctypes
import struct

import pytest
from compiler_util import Constexpr, Tensor, flyc, fx
from test_jit_cuda_path import FakeCudaTensor as DevBuf  # a 1-D float32 'device' buffer at a fixed address
from test_jit_cuda_path import _fake_tensor as _devbuf  # its converter (the full path's)

import flydsl.runtime.device as device_mod
from flydsl.compiler import DSLTypeError, GlobalChangedError
from flydsl.compiler.specialize import CONVERTERS
from flydsl.runtime._cuda_launch import CONFIG_FORMAT, make_launch
from flydsl.runtime.cuda import CudaKernel

_FMT = {"ptr": "<Q", "i32": "<i", "i64": "<q", "f32": "<f", "f64": "<d", "f16": "<e", "bf16": "<H", "i1": "<?",
        "i8": "<b", "i16": "<h", "rsrc": "<QQ"}  # fmt: skip
_PROTO = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class Driver:
    """A stand-in ``cuLaunchKernelEx``: decodes and records each launch (grid, block, smem, stream, the
    parameter values as ``kinds`` says, the function handle) when it is called."""

    def __init__(self, kinds=()):
        self.kinds = list(kinds)
        self.launches = []
        self.result = 0
        self.call = _PROTO(self._call)

    def _call(self, cfg, fn, params, extra):
        g = struct.unpack("<" + CONFIG_FORMAT, ctypes.string_at(cfg, struct.calcsize("<" + CONFIG_FORMAT)))
        pp = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        fmts = [_FMT[k] for k in self.kinds]
        vals = [struct.unpack(f, ctypes.string_at(pp[j], struct.calcsize(f)))[0] for j, f in enumerate(fmts)]
        self.launches.append(((g[0:3], g[3:6], g[6], g[7], vals), fn))
        return self.result

    def decoded(self, i=-1):
        return self.launches[i][0]


@pytest.fixture
def driver(monkeypatch):
    """A stand-in driver on a fresh device (specializations launched before belong to other devices)."""
    for jf in (launch, launch_fill, launch_scaled):
        jf.clear_cache()
    d = Driver()
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setattr(device_mod, "_DEVICES", {"cuda": device_mod.StandInCudaDevice(d.call)})
    return d


@flyc.kernel
def vadd(a: Tensor, b: Tensor, c: Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        c[i] = a[i] + b[i]


@flyc.jit
def launch(a, b, c, n: fx.Int32):
    vadd(a, b, c, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


KINDS = ["ptr", "i32", "ptr", "i32", "ptr", "i32", "i32"]


def test_packed_config_and_parameters_reach_the_driver(driver, monkeypatch):
    monkeypatch.setitem(CONVERTERS, DevBuf, _devbuf)
    driver.kinds = KINDS
    a, b, c = DevBuf(0x10000, 1000), DevBuf(0x20000, 1000), DevBuf(0x30040, 1000)
    hits = launch.hits
    launch(a, b, c, 1000)  # full path: compiles, launches, registers the fast key
    launch(a, b, c, 300)  # fast path
    assert launch.hits == hits + 1 and launch.cache_info().misses >= 1
    assert driver.decoded(0) == ((8, 1, 1), (128, 1, 1), 0, 0, [0x10000, 1000, 0x20000, 1000, 0x30040, 1000, 1000])
    assert driver.decoded(1) == ((3, 1, 1), (128, 1, 1), 0, 0, [0x10000, 1000, 0x20000, 1000, 0x30040, 1000, 300])
    launch(a, b, DevBuf(0x30044, 7), 5)  # another alignment class: another specialization, same answer shape
    assert driver.decoded() == ((1, 1, 1), (128, 1, 1), 0, 0, [0x10000, 1000, 0x20000, 1000, 0x30044, 7, 5])


def test_driver_errors_name_the_kernel(driver, monkeypatch):
    monkeypatch.setitem(CONVERTERS, DevBuf, _devbuf)
    driver.kinds = KINDS
    t = DevBuf(0x40000, 8)
    launch(t, t, t, 8)
    driver.result = 1  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(Exception, match=r"cuLaunchKernel \(kernel vadd_0\)[\s\S]*grid=\(1, 1, 1\)"):
        launch(t, t, t, 8)


def test_launch_function_packs_every_kind():
    kinds = ["ptr", "i32", "i64", "f32", "f64", "f16", "bf16", "i1"]
    d = Driver(kinds)
    k = CudaKernel(None, "k", kinds, driver_call=d.call, func_handle=0xABC)
    k.launch((3, 2), 64, 128, 77, (0x1000, 2**32 - 5, -1, 1.5, -2.25, 0.5, 2.0, True))
    grid, block, smem, stream, vals = d.decoded()
    assert (grid, block, smem, stream) == ((3, 2, 1), (64, 1, 1), 128, 77)
    assert vals == [0x1000, -5, -1, 1.5, -2.25, 0.5, 0x4000, True]  # u32 values wrap like the kernel's i32
    assert d.launches[-1][1] == 0xABC
    with pytest.raises(TypeError, match="kernel k takes 8 arguments"):
        k.launch(1, 1, 0, None, (0,))


def test_launch_function_raises_the_shared_memory_limit_first():
    seen = []

    def on_error(err, grid, block, smem, stream, params):
        seen.append((err, smem))
        limit[0] = smem

    d, limit = Driver(["ptr"]), [48 * 1024]
    fn = make_launch("k", 1, ["ptr"], d.call, on_error, limit)
    fn(1, 1, 1, 32, 1, 1, 1024, 0, 5)
    fn(1, 1, 1, 32, 1, 1, 96 * 1024, 0, 5)
    assert seen == [(None, 96 * 1024)] and len(d.launches) == 2


def test_the_dynamic_shared_memory_limit_starts_below_48kb_by_the_static_size(monkeypatch):
    """A block may hold 48 KB of shared memory in all before its kernel's limit is raised: a kernel with 512 bytes of
    static shared memory (a reduction's partials) raises it for any launch above 48 KB - 512 of dynamic memory (it
    started at 48 KB, so a launch of exactly 48 KB failed with CUDA_ERROR_INVALID_VALUE on the H200)."""
    import flydsl.runtime.cuda as cuda

    class Module(cuda.CudaModule):
        def __init__(self):  # a loaded module's stand-in: one function, no driver
            self.device = 0

        def function(self, name, kernel=None):
            return object()

    raised = []
    monkeypatch.setattr(cuda, "_handle_value", lambda f: 0xABC)
    monkeypatch.setattr(cuda.CudaKernel, "attribute", lambda self, a: 512 if a == "SHARED_SIZE_BYTES" else 0)
    monkeypatch.setattr(
        cuda.CudaKernel, "_allow_smem", lambda self, smem: (raised.append(smem), self._smem_limit.__setitem__(0, smem))
    )
    d = Driver(["ptr"])
    k = CudaKernel(Module(), "k", ["ptr"], driver_call=d.call)
    assert k._smem_limit == [48 * 1024 - 512]
    k.launch(1, 32, 48 * 1024 - 512, 0, (5,))
    assert raised == []
    k.launch(1, 32, 48 * 1024, 0, (5,))
    assert raised == [48 * 1024] and len(d.launches) == 2


@flyc.kernel
def fill(out: Tensor, value: fx.Int32):
    out[fx.thread_idx.x] = value


@flyc.jit
def launch_fill(out, value: fx.Int32, bump: Constexpr[int] = 0, stream: fx.Stream = fx.Stream(None)):
    fill(out, value + bump).launch(grid=1, block=4, stream=stream)


def test_keywords_defaults_constexpr_and_streams(driver, monkeypatch):
    monkeypatch.setitem(CONVERTERS, DevBuf, _devbuf)
    out = DevBuf(0x50000, 4)
    driver.kinds = ["ptr", "i32", "i32"]
    launch_fill(out, 1)
    launch_fill(out, 2)  # fast
    launch_fill(out, value=3, stream=0x77)  # keywords: bound by the generated binder
    launch_fill(out, 4, 10)  # another Constexpr value: another kernel
    launch_fill(out, 5, stream=fx.Stream(0x99))
    got = [(driver.decoded(i)[3], driver.decoded(i)[4][2]) for i in range(5)]
    assert got == [(0, 1), (0, 2), (0x77, 3), (0, 14), (0x99, 5)]
    with pytest.raises(DSLTypeError, match=r"FLY212\]: launch_fill\(\): missing a required argument: 'value'"):
        launch_fill(out)


GAIN = 2


@flyc.kernel
def scaled(out: Tensor, v: fx.Int32):
    out[0] = v * GAIN


@flyc.jit
def launch_scaled(out, v: fx.Int32):
    scaled(out, v).launch(grid=1, block=1)


@pytest.mark.parametrize("retrace", [False, True], ids=["default-raises", "opt-in-retrace"])
def test_rebinding_a_compile_time_global_leaves_the_fast_path(driver, monkeypatch, retrace):
    global GAIN
    monkeypatch.setitem(CONVERTERS, DevBuf, _devbuf)
    if retrace:
        monkeypatch.setenv("FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE", "1")
    driver.kinds = ["ptr", "i32"]
    out = DevBuf(0x60000, 1)
    launch_scaled(out, 1)
    launch_scaled(out, 1)
    compiles, launches = launch_scaled.compiles, len(driver.launches)
    GAIN = 3
    try:
        if retrace:
            launch_scaled(out, 1)
            assert launch_scaled.compiles == compiles + 1  # the fast path did not run the stale kernel
        else:  # FlyDSL's rule: the call raises, nothing runs
            with pytest.raises(GlobalChangedError, match="global 'GAIN'.*2 -> 3"):
                launch_scaled(out, 1)
            assert launch_scaled.compiles == compiles and len(driver.launches) == launches
    finally:
        GAIN = 2
    launch_scaled(out, 1)  # the value it was compiled with again: runs


def test_watcher_sees_rebinding_and_edits():
    from flydsl.compiler.deps import collect

    table = {"a": [1, 2]}
    limit = 5

    def f():
        return table["a"], limit

    deps = collect(f)
    watch = deps.watcher()
    assert watch()
    table["a"].append(3)  # an edit inside a watched container
    assert not watch()
    table["a"].pop()
    assert watch()
    limit = 6  # noqa: F841 (a closure cell rebound)
    assert not watch()


def test_torch_tensors_fast_and_full_paths_agree(driver):
    torch = pytest.importorskip("torch")

    @flyc.kernel
    def k2(x: Tensor, y: Tensor):
        y[0, 0] = x[0, 0]

    @flyc.jit
    def copy2(x, y):
        k2(x, y).launch(grid=1, block=1)

    driver.kinds = ["ptr", "i32", "i32", "i32", "ptr", "i32", "i32", "i32"]
    x, y = torch.ones(6, 10), torch.ones(6, 10)
    copy2(x, y)
    hits = copy2.hits
    for xx, yy in ((x, y), (x[2:], y[:4]), (x[:, 4:], y[:, :6])):  # other shapes and row strides, 16-byte aligned
        copy2(xx, yy)
        p = [xx.data_ptr(), *xx.shape, xx.stride(0), yy.data_ptr(), *yy.shape, yy.stride(0)]
        assert driver.decoded()[4] == p
    assert copy2.hits == hits + 3
    xt = x.t()  # unit stride not last: the full path, every call, with the right values
    copy2(xt, y)
    assert driver.decoded()[4] == [x.data_ptr(), 10, 6, 10, y.data_ptr(), 6, 10, 10]
    copy2(x.double(), y.double())  # another dtype: another specialization
    assert copy2.cache_info().misses >= 3


SIZES = {"unroll": 2}


@flyc.kernel
def table_kernel(out: Tensor, v: fx.Int64):
    out[0] = v * SIZES["unroll"]


@flyc.jit
def launch_table(out, v):
    table_kernel(out, v).launch(grid=1, block=1)


def test_fast_path_leaves_for_edits_env_and_wide_ints(driver, monkeypatch):
    monkeypatch.setitem(CONVERTERS, DevBuf, _devbuf)
    monkeypatch.setenv("FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE", "1")  # an edit recompiles (default: FLY229)
    launch_table.clear_cache()
    driver.kinds = ["ptr", "i32", "i32"]  # out (pointer, extent), v (an Int32)
    out = DevBuf(0x70000, 1)
    launch_table(out, 1)
    launch_table(out, 2)
    assert launch_table.hits >= 1
    compiles = launch_table.compiles
    SIZES["unroll"] = 3  # an in-place edit of a compile-time container the kernel reads
    try:
        launch_table(out, 3)
        assert launch_table.compiles == compiles + 1
    finally:
        SIZES["unroll"] = 2
    n = len(driver.launches)
    monkeypatch.setenv("COMPILE_ONLY", "1")
    assert launch_table(out, 4) is None and len(driver.launches) == n  # compiled, not launched
    monkeypatch.delenv("COMPILE_ONLY")
    assert driver.decoded()[4][2] == 3
    driver.kinds = ["ptr", "i32", "i64"]  # v past 32 bits: an Int64
    launch_table(out, 1 << 40)  # an int past 32 bits: the Int64 specialization
    launch_table(out, (1 << 40) + 1)  # ... then its fast path
    assert [driver.decoded(i)[4][2] for i in (-2, -1)] == [1 << 40, (1 << 40) + 1]


def test_a_new_rank_gets_its_own_dispatcher(driver):
    torch = pytest.importorskip("torch")

    @flyc.kernel
    def first(x: Tensor, y: Tensor):
        y[0] = x[0]

    @flyc.jit
    def copy_first(x, y):
        first(x, y).launch(grid=1, block=1)

    a1, a2 = torch.ones(8), torch.ones(2, 4)
    for _ in range(2):
        copy_first(a1, a1)
        copy_first(a2, a2)
    hits = copy_first.hits
    copy_first(a1, a1)
    copy_first(a2, a2)
    assert copy_first.hits == hits + 2 and len(copy_first._dispatchers) == 2


def test_a_kernel_library_launchers_watch_is_identity_tests_only():
    """The norm launchers read a closure dict of plan options and user classes (RowPlan, RowFragments):
    the per-call watch tests those by identity, entry by entry, without freezing anything (freezing the
    classes cost ~24 us per call)."""
    import re

    from flydsl.compiler.deps import collect
    from kernels.norm.softmax_kernel import build_softmax_module

    deps = collect(build_softmax_module(0, 8192, "bf16").fn)
    watch = deps.watcher()
    assert watch() and not re.search(r"X\d+\(", watch.source), watch.source
