"""Running a jit trace: the guards every trace runs under, and the choice of its architecture.

The state of a trace is one :class:`~flydsl.expr._sem.context.TraceContext` (module, host function,
kernels, target, fast-math scopes, known block size, shared memory, IR builder state). :func:`tracing`
enters it on the calling thread and adds, for the duration: the source-location provider (every op
gets the user's file:line:col), the op budget (``FLYDSL_TRACE_MAX_OPS``: past it tracing stops with
:data:`~flydsl.compiler.errors.TRACE_BUDGET` at the line of the last op), the target check (an op whose
definition ``requires`` a capability the target lacks stops tracing with
:data:`~flydsl.compiler.errors.TARGET_FEATURE` at the op's line, so it never reaches the interpreter or
LLVM) and, if ``FLYDSL_TRACE_MAX_DEPTH`` is set, Python's recursion limit. :func:`current` is the
innermost trace of the calling thread (None outside a trace); kernels ask it for the enclosing jit
trace, the jit asks it to know whether it was called from inside another trace.
"""

from __future__ import annotations

import contextlib
import ctypes
import linecache
import sys
import threading

from .. import ir
from ..dialects.capabilities import capability_gap, requirements
from ..expr._sem.context import (
    ANY_TRACE,
    KernelScope,
    TraceContext,
    current,
    current_kernel,
    current_target,
    entered,
)
from ..ir import Op
from ..runtime.arch import hardware_arch
from ..utils.env import env
from ..utils.target import DEFAULT_ARCH, ArchInfo, get_arch
from .errors import TARGET_FEATURE, TRACE_BUDGET, TRACE_TIME, error
from .frames import current_location, traceback_location

__all__ = [
    "ANY_TRACE",
    "TraceContext", "KernelScope", "current", "current_kernel", "tracing", "select_target", "TraceTimeout",
    "timeout_error", "run_traced",
]  # fmt: skip


def _on_budget(op: Op) -> None:
    limit = env.trace_max_ops
    raise error(TRACE_BUDGET, op.loc, count=limit + 1, limit=limit, suggest=limit * 4)


def _check_target(op: Op) -> None:
    arch = current_target().arch
    for feature in requirements(op):
        gap = capability_gap(feature, arch)
        if gap is not None:
            raise error(TARGET_FEATURE, op.loc, what=gap.what, need=gap.need, arch=gap.arch, fix=gap.fix)


class _RecursionLimit:
    """``FLYDSL_TRACE_MAX_DEPTH`` while any trace that asked for it runs (the limit is per process, so
    concurrent traces share one setting: the first sets it, the last restores the original)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.users = 0
        self.saved = 0

    @contextlib.contextmanager
    def __call__(self, depth: int):
        if not depth:
            yield
            return
        with self.lock:
            if self.users == 0:
                self.saved = sys.getrecursionlimit()
                sys.setrecursionlimit(depth)
            self.users += 1
        try:
            yield
        finally:
            with self.lock:
                self.users -= 1
                if self.users == 0:
                    sys.setrecursionlimit(self.saved)


_recursion_limit = _RecursionLimit()


@contextlib.contextmanager
def tracing(ctx: TraceContext):
    """Run a trace of ``ctx`` on this thread under the location provider, target check, op budget, time
    budget and depth limit.

    Past ``FLYDSL_TRACE_MAX_SECONDS`` a :class:`TraceTimeout` is raised in the tracing thread wherever it
    is (a Python loop that builds no op included); the caller turns it into FLY303 (:func:`timeout_error`).
    """
    seconds = env.trace_max_seconds
    with entered(ctx), _recursion_limit(env.trace_max_depth):
        # ctx's own builder state: nothing to restore
        ir.set_location_provider(current_location)
        ir.set_requirement_check(_check_target)
        dog = _Watchdog(seconds) if seconds else None
        try:
            with ir.TraceBudget(env.trace_max_ops, _on_budget) as budget:
                try:
                    yield ctx
                finally:
                    ctx.ops_traced = budget.count
        finally:
            if dog is not None:
                dog.stop()


class TraceTimeout(BaseException):
    """Raised asynchronously in the tracing thread when ``FLYDSL_TRACE_MAX_SECONDS`` have passed (a
    ``BaseException``, so that no ``except Exception`` in the user's code swallows it)."""


def timeout_error(e: TraceTimeout, ctx: TraceContext):
    """FLY303 for an interrupted trace, at the user's line the trace was executing."""
    seconds = env.trace_max_seconds
    loc = traceback_location(e.__traceback__)
    if loc is not None:  # the statement, not the instruction the interruption happened to land on
        text = linecache.getline(loc[0], loc[1])
        loc = (loc[0], loc[1], len(text) - len(text.lstrip()) + 1)
    return error(TRACE_TIME, loc, seconds=seconds, count=ctx.ops_traced, suggest=max(1, seconds) * 4)


class _Watchdog:
    """A timer that interrupts the current thread's trace after ``seconds`` (``PyThreadState_SetAsyncExc``:
    the exception surfaces at the next bytecode the thread runs, in whatever code it is running)."""

    __slots__ = ("tid", "lock", "active", "fired", "timer")

    def __init__(self, seconds: float):
        self.tid = threading.get_ident()
        self.lock = threading.Lock()
        self.active = True
        self.fired = False
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True
        self.timer.start()

    def _fire(self) -> None:
        with self.lock:
            if self.active:
                self.fired = True
                _set_async_exc(self.tid, TraceTimeout)

    def stop(self) -> None:
        self.timer.cancel()
        with self.lock:
            self.active = False
            if self.fired:  # not raised yet (the trace just ended): withdraw it
                _set_async_exc(self.tid, None)


def _set_async_exc(tid: int, exc) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(exc) if exc else None)


_STACK_PER_LEVEL = 2048  # bytes of C stack per Python recursion level (measured ~330; generous for C-heavy paths)


def run_traced(fn, *args):
    """``fn(*args)``, on a thread with a C stack to match when ``FLYDSL_TRACE_MAX_DEPTH`` raises Python's
    recursion limit (deep recursion through C code would overflow the main thread's stack: a segfault)."""
    depth = env.trace_max_depth
    if depth <= sys.getrecursionlimit():
        return fn(*args)
    out: list = []

    def target():
        try:
            out.append((True, fn(*args)))
        except BaseException as e:  # re-raised in the calling thread
            out.append((False, e))

    old = threading.stack_size()
    threading.stack_size(max(64 << 20, depth * _STACK_PER_LEVEL))
    try:
        t = threading.Thread(target=target, name="flydsl-trace")
        t.start()
    finally:
        threading.stack_size(old)
    t.join()
    ok, value = out[0]
    if not ok:
        raise value
    return value


def select_target() -> ArchInfo:
    """``ARCH`` / ``FLYDSL_GPU_ARCH``, else the CUDA device's arch, else ``sm_90a``."""
    arch = env.arch or env.gpu_arch
    if not arch:
        arch = _device_arch() or DEFAULT_ARCH
    return get_arch(arch)


def _device_arch() -> str | None:
    return hardware_arch()
