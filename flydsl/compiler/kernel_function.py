"""``flydsl.compiler.kernel_function``: FlyDSL's module of the same name — the kernel decorator and
``CompilationContext``, the state of the jit compilation in progress.

``CompilationContext.get_current()`` is the context of the innermost trace (None outside one): its
``gpu_module_body`` is the block of ``gpu.module @kernels`` (ops built there — e.g. by a helper inside
``ir.InsertionPoint(ctx.gpu_module_body)`` — go into the module next to the kernels), ``stream_arg`` the
host stream, ``kernel_counter`` the kernels traced so far. ``CompilationContext.compile_hints({...})``
sets compile hints for the jit calls made in the ``with`` block (nested blocks merge; ``None`` values
are dropped); they override the function's own ``compile_hints`` and enter the cache key.
"""

from __future__ import annotations

import contextlib
import threading

from ..dialects import func as _dfunc
from ..dialects import gpu as _dgpu
from ..ir import FunctionType, Op, current_block
from . import trace as _trace
from .kernel import KernelFunction, KernelLauncher, kernel

__all__ = [
    "CompilationContext", "KernelFunction", "KernelLauncher", "kernel", "merge_compile_hints", "ambient_hints",
    "create_gpu_module", "create_gpu_func", "get_gpu_module_body", "effective_fastmath_hint", "scoped_hints",
    "set_process_hints",
]  # fmt: skip


class _Ambient(threading.local):
    # the innermost CompilationContext.compile_hints of this thread (read by the jit per call); the class
    # attribute, seen by every thread outside its own blocks, is the process-wide layer (set_process_hints)
    hints: dict | None = None
    ctx = None  # the innermost CompilationContext.create()


_tls = _Ambient()
# one entry per ``compile_hints`` block open on any thread: its truthiness is a lock-free "are ambient hints
# set anywhere?" that the jit's cached-call entries test before reading the thread-local hints
ANY_HINTS: list = []


def merge_compile_hints(*layers) -> dict:
    """Merge hint dicts left to right; ``None`` values do not override."""
    merged: dict = {}
    for layer in layers:
        if layer:
            merged.update((k, v) for k, v in layer.items() if v is not None)
    return merged


def ambient_hints() -> dict | None:
    """The hints of the innermost ``CompilationContext.compile_hints`` block, else the process-wide ones
    (:func:`set_process_hints`), else None."""
    return _tls.hints


def scoped_hints() -> dict | None:
    """The hints of this thread's innermost ``compile_hints`` block (None outside any; the process-wide
    layer does not count)."""
    return _tls.__dict__.get("hints")


_PROCESS_LOCK = threading.Lock()


def set_process_hints(hints: dict | None) -> None:
    """Make ``hints`` the hints every jit call of the process compiles under (None or ``{}``: none), below
    any ``compile_hints`` block: FlyDSL's process-wide LLVM options are kept here. Like a block's hints
    they enter the cache key (a jit function is compiled again under other ones)."""
    new = dict(hints) if hints else None
    with _PROCESS_LOCK:
        old = _Ambient.hints
        _Ambient.hints = new
        if new is not None:
            ANY_HINTS.append(new)
        if old is not None:
            ANY_HINTS.remove(old)


def effective_fastmath_hint(hints: dict):
    """The ambient fast-math flags a hint dict asks for (``fastmath``, else ``"fast"`` for ``fast_fp_math``)."""
    if "fastmath" in hints:
        return hints["fastmath"]
    return "fast" if hints.get("fast_fp_math") else None


class CompilationContext:
    """The jit compilation in progress (see the module docstring)."""

    def __init__(self, trace_ctx=None):
        self._trace = trace_ctx
        self._counter = 0
        self._names: set = set()
        self.stream_arg = trace_ctx.stream if trace_ctx is not None else None
        self.link_libs: list = []
        self.post_load_processors: list = []

    # -- current -----------------------------------------------------------------------------------
    @classmethod
    def get_current(cls) -> CompilationContext | None:
        explicit = _tls.ctx
        if explicit is not None:
            return explicit
        t = _trace.current()
        if t is None:
            return None
        ctx = getattr(t, "_flydsl_compilation_context", None)
        if ctx is None:
            ctx = cls(t)
            t._flydsl_compilation_context = ctx
        return ctx

    @classmethod
    @contextlib.contextmanager
    def create(cls):
        prev = _tls.ctx
        ctx = _tls.ctx = cls()
        try:
            yield ctx
        finally:
            _tls.ctx = prev

    # -- hints -------------------------------------------------------------------------------------
    @classmethod
    @contextlib.contextmanager
    def compile_hints(cls, hints: dict):
        prev = scoped_hints()  # this thread's own block (outside one: the process-wide layer is the base)
        _tls.hints = merged = merge_compile_hints(_tls.hints, hints)
        ANY_HINTS.append(merged)
        try:
            yield
        finally:
            if prev is None:
                del _tls.hints  # the process-wide layer again, as it is then
            else:
                _tls.hints = prev
            ANY_HINTS.remove(merged)  # this block's entry (list.remove compares by identity first)

    @classmethod
    def get_compile_hints(cls) -> dict:
        return dict(_tls.hints or {})

    # -- the module being built ----------------------------------------------------------------------
    @property
    def gpu_module_op(self):
        return self._trace.gpu_module if self._trace is not None else None

    @property
    def gpu_module_body(self):
        return self._trace.gpu_module.regions[0].blocks[0] if self._trace is not None else None

    @property
    def kernel_counter(self) -> int:
        return self._trace.kernel_counter if self._trace is not None else self._counter

    def next_kernel_id(self) -> int:
        if self._trace is not None:
            k = self._trace.kernel_counter
            self._trace.kernel_counter += 1
            return k
        self._counter += 1
        return self._counter - 1

    def unique_kernel_name(self, base_name: str, kernel_id: int) -> str:
        if self._trace is not None:
            return self._trace.unique_kernel_name(base_name, explicit=True)
        name, suffix = base_name, kernel_id
        while name in self._names:
            name, suffix = f"{base_name}_{suffix}", suffix + 1
        self._names.add(name)
        return name

    def add_link_lib(self, path: str) -> None:
        if path not in self.link_libs:
            self.link_libs.append(path)


def _insert(op: Op) -> Op:
    blk = current_block()
    if blk is None:
        raise ValueError("no insertion point: build inside `with ir.InsertionPoint(block):`")
    op.parent = blk
    blk.ops.append(op)
    return op


def create_gpu_module(name: str = "kernels", targets=None):
    """A ``gpu.module`` at the insertion point (returned as an op view)."""
    from .._mlir.ir import OpView  # cycle: flydsl._mlir (the MLIR-bindings facade) is built on the compiler

    return OpView(_insert(_dgpu.build_gpu_module(name)))


def get_gpu_module_body(gpu_module):
    """The block of a ``gpu.module`` (an op or op view)."""
    op = getattr(gpu_module, "_op", gpu_module)
    return op.regions[0].blocks[0]


def create_gpu_func(name: str, function_type: FunctionType, *, kernel: bool = True):
    """A ``gpu.func`` kernel at the insertion point, without a body: as FlyDSL's, ``add_entry_block()`` makes the
    entry block (returned as an op view whose ``entry_block``/``arguments`` work as ``func.FuncOp``'s)."""
    from .._mlir.dialects.func import FuncOp  # cycle: flydsl._mlir is built on the compiler

    op = _dfunc.build_func(_dgpu.func, name, list(function_type.inputs), list(function_type.results))
    op.regions[0].blocks.clear()  # FlyDSL's GPUFuncOp builder leaves the region empty
    if kernel:
        op.attrs["kernel"] = True
    view = FuncOp.__new__(FuncOp)
    view._op = _insert(op)
    return view
