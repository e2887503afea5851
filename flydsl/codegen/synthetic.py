"""Hand-built IR kernels: a small builder for kernel modules, and synthetic kernels of a chosen size
for measuring compile time (the numbers in docs/codegen.md come from :func:`branchy_kernel` and
:func:`gemm_like_kernel`, shaped like the DSL's output).
"""

from __future__ import annotations

from ..dialects import arith, func, gpu, ptr, scf
from ..dialects import math as fmath
from ..ir import InsertionPoint, Op, PointerType, f32, i32, new_module

__all__ = ["kernel_module", "build_kernel", "branchy_kernel", "gemm_like_kernel"]


def kernel_module(name: str, arg_types, **attrs) -> tuple[Op, Op]:
    """A ``builtin.module`` holding one ``gpu.module`` with an empty kernel ``name``.

    Returns (module, kernel); build the body inside ``InsertionPoint(kernel.regions[0].blocks[0])``
    and end it with ``gpu.return_()``.
    """
    mod = new_module()
    gm = gpu.build_gpu_module("kernels")
    mod.regions[0].blocks[0].append(gm)
    k = func.build_func(gpu.func, name, list(arg_types), kernel=True, **attrs)
    gm.regions[0].blocks[0].append(k)
    return mod, k


def build_kernel(arg_types, body, name: str = "k", **attrs) -> Op:
    """A verified module with one kernel whose body is built by ``body(*args)`` (``gpu.return`` is
    appended)."""
    from ..ir import verify

    mod, k = kernel_module(name, arg_types, **attrs)
    blk = k.regions[0].blocks[0]
    with InsertionPoint(blk):
        body(*blk.args)
        gpu.return_()
    verify(mod)
    return mod


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
