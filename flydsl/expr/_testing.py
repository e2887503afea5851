"""Trace ``fx`` code into a kernel without the compiler: for tests and experiments.

::

    with trace_kernel([PointerType(f32), i32]) as t:
        p, n = fx.Pointer(t.args[0]), fx.Int32(t.args[1])
        p[n] = p[0] + 1.0
    print(t.text)            # the verified module, MLIR text
    t.count("ptr.store")     # 1

The kernel is a ``gpu.func`` (``kernel = true``) in a fresh module; leaving the block appends
``gpu.return`` and verifies the module. The kernel is traced in a context of its own (for the target
of the enclosing one), so its shared-memory count and fast-math blocks start empty.
"""

from __future__ import annotations

import contextlib

from .. import ir
from ..dialects import func, gpu
from ._sem.context import TraceContext, context, entered

__all__ = ["trace_kernel", "Trace", "evaluate"]


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
    """Build a kernel taking ``arg_types``; the ``with`` body runs at its entry block.

    Raises:
        flydsl.ir.VerifyError: the traced IR is invalid.
    """
    module = ir.new_module()
    kernel = func.build_func(gpu.func, name, list(arg_types), kernel=True, **attrs)
    module.regions[0].block.append(kernel)
    t = Trace(module, kernel)
    with entered(TraceContext(context().target, name)), ir.InsertionPoint(kernel.regions[0].blocks[0]):
        yield t
        gpu.return_()
    ir.verify(module)
    t.text = ir.print_op(module)


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
    import numpy as np

    env = {a: np.asarray(x) for a, x in zip(t.args, inputs)}
    with np.errstate(all="ignore"):
        for op in t.kernel.regions[0].blocks[0].ops:
            if not op.results:
                continue
            if op.defn.evaluate is None:
                raise NotImplementedError(f"{op.defn.name} has no evaluate semantics")
            r = op.defn.evaluate(op, *[env[v] for v in op.operands])
            env[op.results[0]] = np.asarray(r)
    return [env[o if isinstance(o, ir.Value) else o.ir_value()] for o in outputs]
