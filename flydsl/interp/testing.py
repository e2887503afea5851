"""Small helpers to build kernels directly with the IR builders and run them on the interpreter.

For tests (and for anyone who needs a kernel before the front end exists)::

    with KernelBuilder("vadd", [ptr_f32, ptr_f32, i32]) as kb:
        a, b, n = kb.args
        i = kb.global_id()
        with kb.if_(arith.cmpi(i, n, predicate="slt")):
            ptr.store(ptr.load(ptr.add(a, i), result_types=[f32]), ptr.add(b, i))
    launch(kb.op, 4, 128, x, y, np.int32(500))
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..dialects import arith, func, gpu, scf
from ..ir import InsertionPoint, Op, i32, location
from .kernel import run_kernel
from .memory import Memory

__all__ = ["KernelBuilder", "launch", "const"]


def const(value, t=i32):
    """``arith.constant`` of type ``t``."""
    return arith.const(value, t)


class KernelBuilder:
    """Builds a ``gpu.func`` kernel; ``with`` makes its entry block the insertion point (and returns it)."""

    def __init__(self, name: str, arg_types, **attrs):
        self.op: Op = func.build_func(gpu.func, name, list(arg_types), kernel=True, **attrs)
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
    """Run ``kernel``; numpy-array arguments are registered (named ``names[i]`` or ``argI``) and
    updated in place; other arguments pass through. Returns the memory used."""
    mem = memory if memory is not None else Memory()
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
