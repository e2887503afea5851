"""The trace context: every piece of state a trace has, in one object per trace, found per thread.

A :class:`TraceContext` holds what building a kernel needs to know beyond the IR itself:

=====================  ==========================================================================
``target``             the architecture's front-end facts (warp size, shared-memory limits, fp8)
``builder``            the IR builder state (insertion point, source locations, op budget)
``fastmath_scopes``    the ``with fx.fastmath(...)`` blocks open now, innermost last
``fastmath_default``   the compilation's default flags (compile hints), below the scopes
``known_block``        the block size of the kernel being traced when static (``block_dim`` folds)
``smem_used``          bytes of static shared memory the kernel being traced has allocated
``module`` …           the jit trace's module, host function, kernels traced so far and the kernel
                       whose body is being traced (``kernel_stack``); filled by flydsl.compiler
=====================  ==========================================================================

:func:`entered` makes a context the current one of the calling thread (and installs its builder
state) for a block; :func:`current` is the innermost entered context (None outside any trace).
Contexts nest — a trace started while another runs (``flyc.compile`` inside a kernel, say) builds
exactly what it would alone, and the outer one resumes untouched — and threads never see each other's.

Outside any trace, :func:`context` is the thread's *ambient* context (target ``sm_90a``), so that
``fx.fastmath`` blocks, ``use_target`` and the shared-memory counter work for code that builds IR
directly (tests, :mod:`flydsl.testing`).
"""

from __future__ import annotations

import contextlib
import threading

from ... import ir
from ...utils.target import DEFAULT_ARCH, ArchInfo, get_arch

__all__ = [
    "TraceContext",
    "KernelScope",
    "current",
    "context",
    "entered",
    "current_target",
    "use_target",
    "current_kernel",
    "ANY_TRACE",
]


class KernelScope:
    """The kernel body being traced: its name, known block size (None when dynamic) and ``gpu.func``."""

    __slots__ = ("name", "known_block_size", "func_op")

    def __init__(self, name: str, known_block_size, func_op: ir.Op | None):
        self.name = name
        self.known_block_size = known_block_size
        self.func_op = func_op


class TraceContext:
    """All the state of one trace (see the module docstring for the fields).

    Args:
        target: the architecture traced for (an :class:`ArchInfo` or its name).
        name: the traced function's name (for messages).
        module, host, gpu_module: the jit trace's module, host ``func.func`` and ``gpu.module``.
    """

    def __init__(self, target: ArchInfo | str, name: str = "", *, module=None, host=None, gpu_module=None):
        self.target = get_arch(target) if isinstance(target, str) else target
        self.name = name
        self.builder = ir.BuilderState()
        self.fastmath_scopes: list = []
        self.fastmath_default = None
        self.known_block: tuple | None = None
        self.smem_used = 0
        self.module = module
        self.host = host
        self.gpu_module = gpu_module
        self.stream: ir.Value | None = None  # the host stream used when launch(stream=None)
        self.kernels: dict = {}  # specialization key -> kernel name
        self.kernel_names: set[str] = set()
        self.kernel_arg_names: dict[str, list[str]] = {}
        self.kernel_ops: dict = {}  # kernel name -> its gpu.func op
        self.kernel_counter = 0
        self.kernel_stack: list[KernelScope] = []
        self.ops_traced = 0  # ops built, set when the jit trace ends (for the time-budget message)

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

    def __repr__(self) -> str:
        return f"<TraceContext {self.name or '?'} for {self.target.arch}>"


class _ThreadState(threading.local):
    """Per thread: the stack of entered contexts and the ambient context."""

    def __init__(self):
        self.stack: list[TraceContext] = []
        self.ambient = TraceContext(DEFAULT_ARCH, "<ambient>")


_tls = _ThreadState()


def current() -> TraceContext | None:
    """The innermost trace of the calling thread, or None outside any trace."""
    stack = _tls.stack
    return stack[-1] if stack else None


def context() -> TraceContext:
    """The innermost trace of the calling thread, or the thread's ambient context."""
    t = _tls
    return t.stack[-1] if t.stack else t.ambient


def current_kernel() -> KernelScope | None:
    """The kernel whose body is being traced (None in a host function or outside a trace)."""
    t = current()
    return t.kernel_stack[-1] if t is not None and t.kernel_stack else None


@contextlib.contextmanager
def entered(ctx: TraceContext):
    """Make ``ctx`` the calling thread's current context (and its builder state the thread's) for a block."""
    stack = _tls.stack
    stack.append(ctx)
    ANY_TRACE.append(ctx)
    try:
        with ir.use_builder(ctx.builder):
            yield ctx
    finally:
        stack.pop()
        ANY_TRACE.remove(ctx)  # this entry (list.remove compares by identity first)


# every context entered on any thread: its truthiness is a lock-free "is anything tracing?" that generated
# code tests before asking the thread-local :func:`current` (the jit's cached-call entries)
ANY_TRACE: list[TraceContext] = []


def current_target() -> ArchInfo:
    """The architecture of the trace in progress (the ambient ``sm_90a`` outside any trace)."""
    return context().target


@contextlib.contextmanager
def use_target(t: ArchInfo | str):
    """``with use_target("gfx942"):`` the current context traces for another architecture in the block."""
    ctx = context()
    prev = ctx.target
    ctx.target = get_arch(t) if isinstance(t, str) else t
    try:
        yield ctx.target
    finally:
        ctx.target = prev
