"""Never a hang, never a crash: runaway traces stop within seconds, endless interpreter loops are reported
at once, deep recursion cannot overflow the C stack, memory misuse in shared memory is caught per
allocation, and unusable folders or bad environment values are reported, not fatal (docs/reliability.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401

from flydsl.compiler import FlyDSLError
from flydsl.interp import InterpError

pytestmark = pytest.mark.usefixtures("cpu_device")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def launch_one(kfn, *args, block=4):
    @flyc.jit
    def launch(out):
        kfn(out, *args).launch(grid=1, block=block)

    out = np.zeros(4, np.int32)
    launch(out)
    return out


# -- runaway traces ---------------------------------------------------------------------------------


@flyc.kernel
def runaway_unroll(out: Tensor):
    tid = fx.thread_idx.x
    for i in fx.range_constexpr(1000):
        for j in fx.range_constexpr(1000):
            out[tid] = out[tid] + i * j


def spin(n):
    x = 0
    for i in range(n): x += i  # noqa: E701  # fmt: skip
    return x


@flyc.kernel
def runaway_python(out: Tensor):
    out[0] = spin(10**12)


@flyc.kernel
def static_while_stuck(out: Tensor):
    x = 0
    while x < 10:
        x = x * 1
    out[0] = x


def test_runaway_unroll_stops_within_seconds_by_default(monkeypatch):
    # NOTE: only the op budget is under test: on a loaded machine the time budget (30 s) could fire first
    monkeypatch.setenv("FLYDSL_TRACE_MAX_SECONDS", "600")
    t0 = time.perf_counter()
    with pytest.raises(FlyDSLError) as ei:
        launch_one(runaway_unroll)
    assert ei.value.diag_id == "FLY301" and "FLYDSL_TRACE_MAX_OPS=1000000" in ei.value.fix
    assert time.perf_counter() - t0 < 120  # ~3-6 s on an idle 2-core machine (it was ~60 s and 2.4 GB)


def test_trace_time_budget_interrupts_a_python_loop(monkeypatch):
    monkeypatch.setenv("FLYDSL_TRACE_MAX_SECONDS", "1")
    t0 = time.perf_counter()
    with pytest.raises(FlyDSLError) as ei:
        launch_one(runaway_python)
    e = ei.value
    assert e.diag_id == "FLY303" and isinstance(e, RuntimeError)
    assert e.loc[0] == __file__ and "for i in range(n): x += i" in str(e) and "FLYDSL_TRACE_MAX_SECONDS=4" in e.fix
    assert time.perf_counter() - t0 < 10


def test_trace_time_budget_leaves_later_code_alone(monkeypatch):
    monkeypatch.setenv("FLYDSL_TRACE_MAX_SECONDS", "1")
    out = launch_one(fill_kernel)  # a trace that ends in time: the watchdog is withdrawn
    time.sleep(1.3)  # no stray interruption arrives afterwards
    assert out.tolist() == [7, 7, 7, 7]


@flyc.kernel
def fill_kernel(out: Tensor):
    out[fx.thread_idx.x] = 7


def test_compile_time_while_that_never_advances_stops_quickly():
    t0 = time.perf_counter()
    with pytest.raises(FlyDSLError) as ei:
        launch_one(static_while_stuck)
    assert ei.value.diag_id == "FLY120" and time.perf_counter() - t0 < 10


# -- deep recursion ---------------------------------------------------------------------------------

DEEP = """
import numpy as np
import flydsl.compiler as flyc
import flydsl.expr as fx

@flyc.jit
def down(x, d: fx.Constexpr[int]):
    return down(x + 1, d - 1)  # no stop: recursion through the jit's __call__ (C frames)

@flyc.kernel
def k(out: fx.Tensor):
    out[0] = down(fx.thread_idx.x, 10)

@flyc.jit
def launch(out):
    k(out).launch(grid=1, block=4)

try:
    launch(np.zeros(4, np.int32))
except Exception as e:
    print(getattr(e, "diag_id", type(e).__name__))
"""


def test_raising_the_depth_limit_cannot_segfault(tmp_path):
    path = tmp_path / "deep.py"
    path.write_text(textwrap.dedent(DEEP))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLYDSL_")}
    env.update(PYTHONPATH=ROOT, FLYDSL_RUNTIME_KIND="cpu", FLYDSL_RUNTIME_ENABLE_CACHE="0")
    env["FLYDSL_TRACE_MAX_DEPTH"] = "100000"  # segfaulted on the main thread's 8 MB stack
    p = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "FLY302"


# -- the interpreter: endless loops, shared memory ------------------------------------------------


@flyc.kernel
def while_no_progress(out: Tensor, n: fx.Int32):
    tid = fx.thread_idx.x
    i = fx.Int32(0)
    while i < n:
        i = i + 0 * tid
    out[tid] = i


@flyc.kernel
def while_cycles(out: Tensor, n: fx.Int32):
    tid = fx.thread_idx.x
    i = tid
    while i < n:
        i = (i + 1) % 3  # 0, 1, 2, 0 ... never reaches n = 5
    out[tid] = i


@flyc.kernel
def while_spins_on_memory(out: Tensor, n: fx.Int32):
    tid = fx.thread_idx.x
    i = fx.Int32(0)
    while out[0] < n:  # no loop-carried value changes: progress is through memory
        out[0] = out[0] + 1
    out[tid] = out[0] + i


@pytest.mark.parametrize("kfn", [while_no_progress, while_cycles])
def test_run_time_while_without_progress_is_reported_at_once(kfn):
    t0 = time.perf_counter()
    with pytest.raises(InterpError) as ei:
        launch_one(kfn, 5)
    assert "makes no progress" in str(ei.value) and ei.value.loc[0] == __file__
    assert time.perf_counter() - t0 < 2


def test_while_that_progresses_through_memory_runs():
    assert launch_one(while_spins_on_memory, 5).tolist() == [5, 5, 5, 5]
    assert launch_one(while_no_progress, 0).tolist() == [0, 0, 0, 0]


@flyc.kernel
def smem_overflow(out: Tensor, reach: fx.Constexpr[int]):
    tid = fx.thread_idx.x
    a = fx.alloc_shared(fx.Int32, 4)
    b = fx.alloc_shared(fx.Int32, 4)
    b[tid] = 7
    a[tid + reach] = 1  # reach 4: one past a's end, into b (the same block's shared memory)
    fx.barrier()
    out[tid] = b[tid] + a[tid]


def test_shared_memory_bounds_are_per_allocation():
    assert launch_one(smem_overflow, 0).tolist() == [8, 8, 8, 8]
    with pytest.raises(InterpError) as ei:
        launch_one(smem_overflow, 4)
    msg = str(ei.value)
    assert "out-of-bounds write of i32 in shared memory at byte offset 16" in msg
    assert "element 4 of shared allocation #0 (4 elements of i32" in msg
    assert "a[tid + reach] = 1" in msg


# -- folders and environment ------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["cache", "dump"])
def test_unusable_folder_warns_once_and_runs(what, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    if what == "cache":
        monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "1")
        monkeypatch.setenv("FLYDSL_RUNTIME_CACHE_DIR", str(blocker / "cache"))
    else:
        monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
        monkeypatch.setenv("FLYDSL_DUMP_DIR", str(blocker))

    @flyc.jit
    def launch(out):
        fill_kernel(out).launch(grid=1, block=4)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(2):
            out = np.zeros(4, np.int32)
            launch(out)
            launch.clear_cache()
            assert out.tolist() == [7, 7, 7, 7]
    msgs = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1 and "cannot be written" in msgs[0] and str(blocker) in msgs[0]
    assert seen[0].filename == __file__  # at the user's call


@pytest.mark.parametrize(
    "var, value, why",
    [
        ("FLYDSL_COMPILE_OPT_LEVEL", "abc", "not an integer"),
        ("FLYDSL_COMPILE_OPT_LEVEL", "7", "out of range"),
        ("COMPILE_ONLY", "maybe", "not a boolean"),
        ("FLYDSL_RUNTIME_ENABLE_CACHE", "yes please", "not a boolean"),
        ("FLYDSL_TRACE_MAX_OPS", "1e6", "not an integer"),
        ("FLYDSL_TRACE_MAX_DEPTH", "10000000", "out of range"),
        ("FLYDSL_DEBUG_LOG_LEVEL", "LOUD", "not a known value"),
        ("FLYDSL_LIBDEVICE", "/no/such/libdevice.10.bc", "no such file"),
        ("FLYDSL_LIBDEVICE", __file__, "not an LLVM bitcode file"),
    ],
)
def test_bad_environment_values_name_the_variable(var, value, why, monkeypatch):
    monkeypatch.setenv(var, value)
    with pytest.raises(FlyDSLError) as ei:
        launch_one(fill_kernel)
    e = ei.value
    assert e.diag_id == "FLY403" and e.message.startswith(f"environment variable {var}={value!r} is not valid")
    assert why in e.message and var in e.fix and e.loc[0] == __file__


def test_every_registry_variable_is_validated():
    from flydsl.utils.env import _VARS, EnvError

    for v in _VARS:
        if v.kind == "str" and not v.choices:
            continue  # free text (ARCH is checked by the target table, FLYDSL_RUNTIME_KIND by FLY402)
        bad = {"bool": "perhaps", "int": "x1", "file": "/no/such/file", "path": None, "str": "no-such-choice"}[v.kind]
        if bad is None:
            continue  # any folder name is valid; an unusable one warns when used
        old = os.environ.get(v.name)
        os.environ[v.name] = bad
        try:
            with pytest.raises(EnvError, match=v.name):
                v.read()
        finally:
            if old is None:
                del os.environ[v.name]
            else:
                os.environ[v.name] = old


def test_corrupt_libdevice_is_an_error_not_a_fallback(tmp_path):
    from flydsl.codegen import CodegenError
    from flydsl.codegen.libdevice import link_libdevice

    bad = tmp_path / "libdevice.10.bc"
    bad.write_bytes(b"BC\xc0\xde" + b"\x00" * 64)  # the magic, then garbage
    import llvmlite.binding as llvm

    mod = llvm.parse_assembly("define void @f() {\n  ret void\n}\n")
    with pytest.raises(CodegenError, match="is not valid LLVM bitcode") as ei:
        link_libdevice(mod, str(bad))
    assert "FLYDSL_LIBDEVICE" in ei.value.fix
