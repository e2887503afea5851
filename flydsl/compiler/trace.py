"""The trace in progress: its module, host function, kernels, and the guards every trace runs under.

:func:`tracing` installs, for the duration of one jit trace: the target (``use_target``), the
source-location provider (every op gets the user's file:line:col), the op budget
(``FLYDSL_TRACE_MAX_OPS``: past it tracing stops with :data:`~flydsl.compiler.errors.TRACE_BUDGET`
at the line of the last op), the target check (an op whose definition ``requires`` a capability the
target lacks stops tracing with :data:`~flydsl.compiler.errors.TARGET_FEATURE` at the op's line, so
it never reaches the interpreter or LLVM) and, if ``FLYDSL_TRACE_MAX_DEPTH`` is set, Python's
recursion limit.
:func:`current` is the innermost :class:`TraceContext` (None outside a trace); kernels ask it for the
enclosing jit trace, the jit asks it to know whether it was called from inside another trace.
"""

from __future__ import annotations

import contextlib
import linecache
import sys
import threading

from .. import ir
from ..dialects.capabilities import capability_gap, requirements
from ..ir import Op, Value
from ..utils.env import env
from ..utils.target import Target, current_target, use_target
from .errors import TARGET_FEATURE, TRACE_BUDGET, TRACE_TIME, error
from .frames import current_location, traceback_location

__all__ = [
    "TraceContext", "KernelScope", "current", "current_kernel", "tracing", "select_target", "TraceTimeout",
    "timeout_error", "run_traced",
]  # fmt: skip


class KernelScope:
    """The kernel body being traced: its name and known block size (None when dynamic)."""

    __slots__ = ("name", "known_block_size", "func_op")

    def __init__(self, name: str, known_block_size, func_op: Op):
        self.name = name
        self.known_block_size = known_block_size
        self.func_op = func_op


class TraceContext:
    """One jit specialization being traced into ``module`` (host ``func.func`` + ``gpu.module``)."""

    def __init__(self, name: str, module: Op, host: Op, gpu_module: Op, target: Target):
        self.name = name
        self.module = module
        self.host = host
        self.gpu_module = gpu_module
        self.target = target
        self.stream: Value | None = None  # the host stream used when launch(stream=None)
        self.kernels: dict = {}  # specialization key -> kernel name
        self.kernel_names: set[str] = set()
        self.kernel_arg_names: dict[str, list[str]] = {}
        self.kernel_ops: dict = {}  # kernel name -> its gpu.func op
        self.kernel_counter = 0
        self.kernel_stack: list[KernelScope] = []

    def unique_kernel_name(self, base: str, explicit: bool) -> str:
        """``base_<id>`` (``base`` itself when given explicitly), never reused within the module."""
        if explicit:
            name, k = base, 0
            while name in self.kernel_names:
                k += 1
                name = f"{base}_{k}"
        else:
            name = f"{base}_{self.kernel_counter}"
            self.kernel_counter += 1
            while name in self.kernel_names:
                name = f"{base}_{self.kernel_counter}"
                self.kernel_counter += 1
        self.kernel_names.add(name)
        return name


_stack: list[TraceContext] = []


def current() -> TraceContext | None:
    return _stack[-1] if _stack else None


def current_kernel() -> KernelScope | None:
    """The kernel whose body is being traced (None in a host function or outside a trace)."""
    t = current()
    return t.kernel_stack[-1] if t is not None and t.kernel_stack else None


def _on_budget(op: Op) -> None:
    limit = env.trace_max_ops
    raise error(TRACE_BUDGET, op.loc, count=limit + 1, limit=limit, suggest=limit * 4)


def _check_target(op: Op) -> None:
    arch = current_target().arch
    for feature in requirements(op):
        gap = capability_gap(feature, arch)
        if gap is not None:
            raise error(TARGET_FEATURE, op.loc, what=gap.what, need=gap.need, arch=gap.arch, fix=gap.fix)


@contextlib.contextmanager
def tracing(ctx: TraceContext):
    """Run a trace of ``ctx`` under the target (and its check), location provider, op budget, time budget
    and depth limit.

    Past ``FLYDSL_TRACE_MAX_SECONDS`` a :class:`TraceTimeout` is raised in the tracing thread wherever it
    is (a Python loop that builds no op included); the caller turns it into FLY303 (:func:`timeout_error`).
    """
    depth = env.trace_max_depth
    old_depth = sys.getrecursionlimit()
    seconds = env.trace_max_seconds
    prev_loc = ir.set_location_provider(current_location)
    prev_check = ir.set_requirement_check(_check_target)
    _stack.append(ctx)
    dog = _Watchdog(seconds) if seconds else None
    try:
        if depth:
            sys.setrecursionlimit(depth)
        with use_target(ctx.target), ir.TraceBudget(env.trace_max_ops, _on_budget) as budget:
            try:
                yield ctx
            finally:
                ctx.ops_traced = budget.count
    finally:
        if dog is not None:
            dog.stop()
        if depth:
            sys.setrecursionlimit(old_depth)
        _stack.pop()
        ir.set_location_provider(prev_loc)
        ir.set_requirement_check(prev_check)


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
    return error(TRACE_TIME, loc, seconds=seconds, count=getattr(ctx, "ops_traced", 0), suggest=max(1, seconds) * 4)


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
    import ctypes

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


def select_target() -> Target:
    """``ARCH`` / ``FLYDSL_GPU_ARCH``, else the CUDA device's arch, else ``sm_90a``."""
    from ..utils.target import get_target

    arch = env.arch or env.gpu_arch
    if not arch:
        arch = _device_arch() or "sm_90a"
    return get_target(arch)


def _device_arch() -> str | None:
    from ..runtime.arch import hardware_arch

    return hardware_arch()
