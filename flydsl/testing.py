"""Kernels built by hand or traced without the compiler: for tests, benchmarks and experiments.

Three ways in, one module:

* :class:`KernelBuilder` — build a ``gpu.func`` with the IR builders (``flydsl.dialects``) and run it on the
  interpreter with :func:`launch`::

      with KernelBuilder("vadd", [ptr_f32, ptr_f32, i32]) as kb:
          a, b, n = kb.args
          i = kb.global_id()
          with kb.if_(arith.cmpi(i, n, predicate="slt")):
              ptr.store(ptr.load(ptr.add(a, i), result_types=[f32]), ptr.add(b, i))
      launch(kb.op, 4, 128, x, y, np.int32(500))

* :func:`build_kernel` / :func:`kernel_module` — a whole module (``gpu.module`` holding the kernel) for the
  code generator (``flydsl.codegen.compile_module``).
* :func:`trace_kernel` — trace ``fx`` code into a kernel in a trace context of its own::

      with trace_kernel([PointerType(f32), i32]) as t:
          p, n = fx.Pointer(t.args[0]), fx.Int32(t.args[1])
          p[n] = p[0] + 1.0
      print(t.text)            # the verified module, MLIR text

Also :func:`use_target` (trace for another architecture), :func:`evaluate` (run a trace's straight-line
ops through their semantics) and the synthetic kernels of a chosen size that docs/codegen.md measures
compile time with (:func:`branchy_kernel`, :func:`gemm_like_kernel`).
"""

from __future__ import annotations

import contextlib

import numpy as np

from . import ir, passes
from .dialects import arith, func, gpu, ptr, scf
from .dialects import math as fmath
from .expr._sem.context import TraceContext, context, entered, use_target
from .interp import Memory, run_kernel
from .ir import InsertionPoint, Op, PointerType, f32, i32, location

__all__ = [
    "KernelBuilder", "launch", "const", "kernel_module", "build_kernel", "trace_kernel", "Trace", "evaluate",
    "use_target", "branchy_kernel", "gemm_like_kernel",
]  # fmt: skip


def _kernel_func(name: str, arg_types, attrs: dict) -> Op:
    return func.build_func(gpu.func, name, list(arg_types), kernel=True, **attrs)


# -- building kernels with the IR builders -------------------------------------------------------------


def const(value, t=i32):
    """``arith.constant`` of type ``t``."""
    return arith.const(value, t)


class KernelBuilder:
    """Builds a ``gpu.func`` kernel; ``with`` makes its entry block the insertion point (and returns it)."""

    def __init__(self, name: str, arg_types, **attrs):
        self.op: Op = _kernel_func(name, arg_types, attrs)
        self.block = self.op.regions[0].blocks[0]
        self.args = list(self.block.args)
        self._ip = InsertionPoint(self.block)

    def __enter__(self) -> KernelBuilder:
        self._ip.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            gpu.return_()
        self._ip.__exit__(*exc)

    @staticmethod
    def global_id(dim: str = "x"):
        """``block_id * block_dim + thread_id`` (i32)."""
        return arith.addi(
            arith.muli(gpu.block_id(dimension=dim), gpu.block_dim(dimension=dim)), gpu.thread_id(dimension=dim)
        )

    @staticmethod
    @contextlib.contextmanager
    def if_(cond, results=(), with_else=False):
        """``scf.if`` without results: the body is the ``with`` block (an empty yield closes it)."""
        op = scf.build_if(cond, list(results), with_else=with_else)
        with InsertionPoint(op.regions[0].blocks[0]):
            yield op
            scf.yield_()
        if op.regions[1].blocks and not op.regions[1].blocks[0].ops:
            with InsertionPoint(op.regions[1].blocks[0]):
                scf.yield_()

    @staticmethod
    @contextlib.contextmanager
    def at(loc):
        """Stamp ops built inside with ``loc`` = (file, line, col)."""
        with location(loc):
            yield


def launch(kernel: Op, grid, block, *args, memory: Memory | None = None, names=None, **kw) -> Memory:
    """Run ``kernel`` on the interpreter; numpy-array arguments are registered (named ``names[i]`` or
    ``argI``) and updated in place; other arguments pass through. Returns the memory used."""
    mem = memory if memory is not None else Memory()
    passes.get_pass("fly-layout-lowering")(kernel)  # the fly dialect's records never reach the interpreter
    vals, arg_names = [], []
    for i, a in enumerate(args):
        nm = names[i] if names is not None else f"arg{i}"
        arg_names.append(nm)
        if isinstance(a, np.ndarray) and a.ndim > 0:
            vals.append(mem.register(a, nm))
        else:
            vals.append(a)
    run_kernel(kernel, grid=grid, block=block, args=vals, memory=mem, arg_names=arg_names, **kw)
    return mem


def kernel_module(name: str, arg_types, **attrs) -> tuple[Op, Op]:
    """A ``builtin.module`` holding one ``gpu.module`` with an empty kernel ``name``.

    Returns (module, kernel); build the body inside ``InsertionPoint(kernel.regions[0].blocks[0])``
    and end it with ``gpu.return_()``.
    """
    mod = ir.new_module()
    gm = gpu.build_gpu_module("kernels")
    mod.regions[0].blocks[0].append(gm)
    k = _kernel_func(name, arg_types, attrs)
    gm.regions[0].blocks[0].append(k)
    return mod, k


def build_kernel(arg_types, body, name: str = "k", **attrs) -> Op:
    """A verified module with one kernel whose body is built by ``body(*args)`` (``gpu.return`` is
    appended)."""
    mod, k = kernel_module(name, arg_types, **attrs)
    blk = k.regions[0].blocks[0]
    with InsertionPoint(blk):
        body(*blk.args)
        gpu.return_()
    ir.verify(mod)
    return mod


# -- tracing fx code ---------------------------------------------------------------------------------------


class Trace:
    """The result of :func:`trace_kernel`: ``module``, ``kernel`` (the gpu.func op), ``args`` (its block
    arguments) and, after the block, ``text`` (printed module)."""

    def __init__(self, module: ir.Op, kernel: ir.Op):
        self.module = module
        self.kernel = kernel
        self.args = list(kernel.regions[0].blocks[0].args)
        self.text = ""

    def ops(self) -> list[ir.Op]:
        """Every op of the kernel body, in order (nested regions included)."""
        return [o for o in self.kernel.walk() if o is not self.kernel]

    def count(self, name: str) -> int:
        """How many ops named ``name`` the kernel holds."""
        return sum(1 for o in self.ops() if o.defn.name == name)


@contextlib.contextmanager
def trace_kernel(arg_types, name: str = "kernel", **attrs):
    """Build a kernel taking ``arg_types``; the ``with`` body runs at its entry block, in a trace context of
    its own (for the enclosing context's target), so shared-memory counts and fast-math blocks start empty.
    Leaving the block appends ``gpu.return``, sets ``text`` to the IR as traced (with the ``fly`` dialect's
    records of layouts and prints), folds those records as the compiler does (``fly-layout-lowering``) and
    verifies the module.

    Raises:
        flydsl.ir.VerifyError: the traced IR is invalid.
    """
    module = ir.new_module()
    kernel = _kernel_func(name, arg_types, attrs)
    module.regions[0].block.append(kernel)
    t = Trace(module, kernel)
    with entered(TraceContext(context().target, name)), ir.InsertionPoint(kernel.regions[0].blocks[0]):
        yield t
        gpu.return_()
    t.text = ir.print_op(module)
    passes.get_pass("fly-layout-lowering")(module)
    ir.verify(module)


def evaluate(t: Trace, inputs, outputs) -> list:
    """Run the kernel's straight-line pure ops on numpy data through each op's ``evaluate`` (the
    semantics the interpreter and the constant folder share).

    Args:
        t: a finished trace. inputs: one numpy array per kernel argument (scalars: shape ``(T,)``;
            vectors: ``(T, N)``). outputs: the IR values (or DSL values with ``ir_value()``) wanted.

    Returns:
        One numpy array per output.

    Raises:
        NotImplementedError: an op without ``evaluate`` (memory, control flow) on the way.
    """
    env = {a: np.asarray(x) for a, x in zip(t.args, inputs)}
    with np.errstate(all="ignore"):
        for op in t.kernel.regions[0].blocks[0].ops:
            if not op.results or op.defn.dialect == "fly":  # layout records: nothing to compute
                continue
            if op.defn.evaluate is None:
                raise NotImplementedError(f"{op.defn.name} has no evaluate semantics")
            r = op.defn.evaluate(op, *[env[v] for v in op.operands])
            env[op.results[0]] = np.asarray(r)
    return [env[o if isinstance(o, ir.Value) else o.ir_value()] for o in outputs]


# -- synthetic kernels of a chosen size (compile-time measurements) -------------------------------------


def branchy_kernel(chunks: int) -> Op:
    """Per chunk: four (index math, two loads, fma), a warp shuffle, a compare/select and a guarded
    store in an ``scf.if``; chunks are chained through a running value (~30 LLVM instructions each)."""
    P = PointerType(f32, "global")
    mod, k = kernel_module("branchy", [P, P, P, i32], known_block_size=[256, 1, 1])
    a, b, out, n = k.regions[0].blocks[0].args
    with InsertionPoint(k.regions[0].blocks[0]):
        tid = gpu.thread_id(dimension="x")
        acc = arith.const(0.0, f32)
        for c in range(chunks):
            for j in range(4):
                idx = arith.addi(arith.muli(tid, arith.const(4 * chunks, i32)), arith.const(4 * c + j, i32))
                x = ptr.load(ptr.add(a, idx), result_types=[f32])
                y = ptr.load(ptr.add(b, idx), result_types=[f32])
                acc = fmath.fma(x, y, acc)
            s = gpu.shuffle(acc, arith.const(1, i32), arith.const(32, i32), mode="xor")
            big = arith.cmpf(s, acc, predicate="ogt")
            acc = arith.select(big, s, acc)
            cond = arith.cmpi(tid, n, predicate="slt")
            ifop = scf.build_if(cond, with_else=False)
            with InsertionPoint(ifop.regions[0].blocks[0]):
                ptr.store(acc, ptr.add(out, arith.addi(tid, arith.const(c, i32))))
                scf.yield_()
        gpu.return_()
    return mod


def gemm_like_kernel(steps: int) -> Op:
    """One basic block: per step 8 + 8 loads and an 8x8 outer product of fmas into 64 accumulators."""
    P = PointerType(f32, "global")
    mod, k = kernel_module("gemm_like", [P, P, P], known_block_size=[128, 1, 1])
    a, b, out = k.regions[0].blocks[0].args
    with InsertionPoint(k.regions[0].blocks[0]):
        tid = gpu.thread_id(dimension="x")
        base = arith.muli(tid, arith.const(8 * steps, i32))
        accs = [arith.const(0.0, f32) for _ in range(64)]
        for s in range(steps):
            xs, ys = [], []
            for i in range(8):
                off = arith.addi(base, arith.const(8 * s + i, i32))
                xs.append(ptr.load(ptr.add(a, off), result_types=[f32]))
                ys.append(ptr.load(ptr.add(b, off), result_types=[f32]))
            accs = [fmath.fma(xs[i], ys[j], accs[8 * i + j]) for i in range(8) for j in range(8)]
        for i, v in enumerate(accs):
            ptr.store(v, ptr.add(out, arith.addi(arith.muli(tid, arith.const(64, i32)), arith.const(i, i32))))
        gpu.return_()
    return mod
