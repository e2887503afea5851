"""One TraceContext per trace: nested traces and traces on other threads build exactly what they would alone,
and threads making first calls at once all succeed and compile each specialization once."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest
from compiler_util import Constexpr, Tensor, cpu_device, flyc, fx, traced  # noqa: F401

from flydsl.expr._sem import context as tc
from flydsl.ir import print_op

pytestmark = pytest.mark.usefixtures("cpu_device")

# ---------------------------------------------------------------------------------------------------
# nested traces
# ---------------------------------------------------------------------------------------------------


@flyc.kernel
def inner_kernel(out: Tensor, n: fx.Int32):
    i = fx.thread_idx.x
    fx.alloc_shared(fx.Float32, 8192)  # 32 KB: over the limit if the outer kernel's 40 KB leaked in
    x = i.to(fx.Float32) * 2.0 + 1.0  # float ops: fastmath flags if the outer block leaked in
    out[i] = x + fx.block_dim.x.to(fx.Float32)  # block_dim folds if the outer known block size leaked in


@flyc.jit
def inner(out: Tensor, n: fx.Int32):
    inner_kernel(out, n).launch(grid=(1, 1, 1), block=(n, 1, 1))


_NESTED: list[str] = []


def _trace_inner_here():
    """Called while the outer kernel is being traced: a whole trace of another jit function."""
    _NESTED.append(print_op(inner.trace(np.zeros(64, np.float32), 64)))


@flyc.kernel
def outer_kernel(out: Tensor, nested: Constexpr[bool]):
    fx.alloc_shared(fx.Float32, 10000)
    with fx.fastmath("fast"):
        y = fx.thread_idx.x.to(fx.Float32) * 3.0
        if fx.const_expr(nested):
            _trace_inner_here()
        y = y + fx.block_dim.x.to(fx.Float32)
    out[fx.thread_idx.x] = y


@flyc.jit
def outer(out: Tensor, nested: Constexpr[bool]):
    outer_kernel(out, nested).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_a_trace_inside_another_builds_what_it_builds_alone():
    out = np.zeros(128, np.float32)
    alone = traced(inner, out[:64], 64)
    assert "fastmath<fast>" not in alone and "gpu.block_dim" in alone
    _NESTED.clear()
    with_nested = traced(outer, out, True)
    assert _NESTED == [alone]  # the inner trace saw none of the outer's state
    assert with_nested == traced(outer, out, False)  # and the outer one resumed untouched
    assert with_nested.count("fastmath<fast>") == 2 and "gpu.block_dim" not in with_nested
    assert tc.current() is None and tc.context().fastmath_scopes == [] and tc.context().smem_used == 0


def test_each_trace_has_its_own_target_and_scopes():
    with tc.use_target("gfx942"):
        outer_ctx = tc.TraceContext(tc.current_target(), "outer")
        with tc.entered(outer_ctx), fx.fastmath("nnan"):
            assert tc.current() is outer_ctx and fx.gpu.warp_size() == 64
            inner_ctx = tc.TraceContext("sm_80", "inner")
            with tc.entered(inner_ctx):
                assert tc.current() is inner_ctx and fx.gpu.warp_size() == 32
                assert inner_ctx.fastmath_scopes == []
            assert outer_ctx.fastmath_scopes and tc.current() is outer_ctx
    assert tc.current() is None and tc.current_target().arch == "sm_90a"


# ---------------------------------------------------------------------------------------------------
# two threads tracing at once
# ---------------------------------------------------------------------------------------------------


@flyc.kernel
def sum_kernel(out: Tensor, x: Tensor, k: Constexpr[int]):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    acc = x[i]
    for j in fx.range_constexpr(k):  # enough ops that the two threads interleave many times
        acc = acc * 0.5 + x[i] * float(j)
    out[i] = acc


@flyc.jit
def sums(out: Tensor, x: Tensor, k: Constexpr[int]):
    sum_kernel(out, x, k).launch(grid=(2, 1, 1), block=(32, 1, 1))


@flyc.kernel
def shuffle_kernel(out: Tensor, n: fx.Int32):
    v = fx.thread_idx.x.to(fx.Float32)
    with fx.fastmath("contract"):
        for off in fx.range_constexpr(40):
            v = v + fx.shuffle_xor(v, off % 16 + 1)
    fx.alloc_shared(fx.Int8, 40000)
    out[fx.thread_idx.x] = v


@flyc.jit
def shuffles(out: Tensor, n: fx.Int32):
    shuffle_kernel(out, n).launch(grid=(1, 1, 1), block=(32, 1, 1), smem=n)


def test_two_threads_tracing_at_once_build_what_they_build_alone():
    x = np.zeros(64, np.float32)
    alone = {"sums": traced(sums, x, x, 60), "shuffles": traced(shuffles, x, 16)}
    got: dict[str, list[str]] = {"sums": [], "shuffles": []}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def work(name, fn):
        try:
            start.wait()
            for _ in range(6):
                got[name].append(fn())
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [
        threading.Thread(target=work, args=("sums", lambda: traced(sums, x, x, 60))),
        threading.Thread(target=work, args=("shuffles", lambda: traced(shuffles, x, 16))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert got["sums"] == [alone["sums"]] * 6 and got["shuffles"] == [alone["shuffles"]] * 6


# ---------------------------------------------------------------------------------------------------
# first calls from many threads (issue 8)
# ---------------------------------------------------------------------------------------------------


@flyc.kernel
def axpy_kernel(y: Tensor, x: Tensor, a: fx.Float32, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        y[i] = a * x[i] + y[i]


@flyc.kernel
def scale_kernel(y: Tensor, x: Tensor, a: fx.Float32, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        y[i] = x[i] * a


def _axpy(y: Tensor, x: Tensor, a: fx.Float32, n: fx.Int32):
    axpy_kernel(y, x, a, n).launch(grid=((n + 31) // 32, 1, 1), block=(32, 1, 1))


def _scale(y: Tensor, x: Tensor, a: fx.Float32, n: fx.Int32):
    scale_kernel(y, x, a, n).launch(grid=((n + 31) // 32, 1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("round_", range(3))
def test_first_calls_from_eight_threads_all_succeed_and_compile_once(round_):
    jits = {"axpy": flyc.jit(_axpy), "scale": flyc.jit(_scale)}  # fresh caches every round
    # 2 functions x 2 dtypes = 4 specializations, each called by every thread
    cases = [(name, dt) for name in jits for dt in (np.float32, np.float64)]
    n = 50
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(seed):
        rng = random.Random(seed)
        order = cases[:]
        rng.shuffle(order)
        try:
            start.wait()
            for name, dt in order:
                x = np.arange(n, dtype=dt)
                y = np.ones(n, dtype=dt)
                jits[name](y, x, 2.0, n)
                want = 2.0 * x + 1.0 if name == "axpy" else 2.0 * x
                np.testing.assert_array_equal(y, want)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(round_ * 8 + k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for jf in jits.values():
        info = jf.cache_info()
        assert jf.compiles == 2 and info.misses == 2 and info.currsize == 2  # once per specialization
        assert info.hits == 8 * 2 - 2


def test_cached_calls_while_another_thread_traces():
    """A call runs as a helper only inside its own thread's trace: cached calls on one thread keep
    launching (through the dispatcher entries' way out) while another thread compiles."""
    axpy, scale = flyc.jit(_axpy), flyc.jit(_scale)
    n = 40
    x, y = np.arange(n, dtype=np.float32), np.ones(n, dtype=np.float32)
    axpy(y, x, 1.0, n)  # compiled and cached
    stop = threading.Event()
    errors: list[BaseException] = []

    def compile_many():
        try:
            for k in range(6):  # new specializations: traces on this thread
                dt = (np.float32, np.float64, np.int32)[k % 3]
                flyc.compile(scale, np.ones(n + k, dt), np.ones(n + k, dt), 2.0, n + k)
                scale.clear_cache()
        except BaseException as e:
            errors.append(e)
        finally:
            stop.set()

    t = threading.Thread(target=compile_many)
    t.start()
    calls = 0
    while not stop.is_set() or calls < 20:
        yy = np.ones(n, dtype=np.float32)
        axpy(yy, x, 3.0, n)
        np.testing.assert_array_equal(yy, 3.0 * x + 1.0)
        calls += 1
    t.join()
    assert not errors, errors
    assert axpy.compiles == 1 and scale.compiles == 6  # six traces ran beside the calls
