"""Host functions: scalar launch arithmetic and gpu.launch_func, precompiled into closures."""

from __future__ import annotations

import numpy as np
import pytest

from flydsl import ir
from flydsl.dialects import arith, func, gpu, ptr, scf
from flydsl.interp import InterpError, Memory, compile_host, run_host, run_kernel
from flydsl.ir import PointerType, SymbolRef, f32, i32, i64, index
from flydsl.testing import KernelBuilder

F32P = PointerType(f32)


def _module():
    """module { gpu.module @kernels { vadd }, func.func @host(a, b, c, n) }"""
    m = ir.new_module()
    gm = gpu.build_gpu_module("kernels")
    m.regions[0].block.append(gm)
    with KernelBuilder("vadd", [F32P, F32P, F32P, i32]) as kb:
        a, b, c, n = kb.args
        i = kb.global_id()
        with kb.if_(arith.cmpi(i, n, predicate="slt")):
            s = arith.addf(ptr.load(ptr.add(a, i), result_types=[f32]), ptr.load(ptr.add(b, i), result_types=[f32]))
            ptr.store(s, ptr.add(c, i))
    gm.regions[0].block.append(kb.op)
    host = func.build_func(func.func, "host", [F32P, F32P, F32P, i32], [i32])
    m.regions[0].block.append(host)
    blk = host.regions[0].blocks[0]
    with ir.InsertionPoint(blk):
        a, b, c, n = blk.args
        threads = arith.const(128, i32)
        grid = arith.ceildivsi(n, threads)
        one = arith.const(1, i32)
        big = arith.cmpi(n, arith.const(0, i32), predicate="sgt")
        op = scf.build_if(big, [])
        with ir.InsertionPoint(op.regions[0].blocks[0]):
            gpu.launch_func(
                grid, one, one, threads, one, one, arith.const(0, i32), arith.const(0, i64), a, b, c, n,
                kernel=SymbolRef("kernels::vadd"),
            )  # fmt: skip
            scf.yield_()
        with ir.InsertionPoint(op.regions[1].blocks[0]):
            scf.yield_()
        func.return_(grid)
    return m, kb.op, host


def _launcher(kernels, mem, calls):
    def launch(sym, grid, block, smem, stream, args):
        calls.append((str(sym), grid, block, smem, stream))
        run_kernel(kernels[str(sym).split("::")[-1]], grid=grid, block=block, args=args, memory=mem, smem_bytes=smem)

    return launch


def test_host_function_launches_kernel():
    _, kernel, host = _module()
    mem = Memory()
    n = 1000
    rng = np.random.default_rng(0)
    a, b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32)
    args = [mem.register(a, "a"), mem.register(b, "b"), mem.register(c, "c"), n]
    calls = []
    res = run_host(host, args, _launcher({"vadd": kernel}, mem, calls))
    assert res == [8]
    assert calls == [("kernels::vadd", (8, 1, 1), (128, 1, 1), 0, 0)]
    assert np.array_equal(c, a + b)
    calls.clear()
    assert run_host(host, args[:3] + [0], _launcher({"vadd": kernel}, mem, calls)) == [0] and calls == []


def test_host_function_is_precompiled_once():
    # speed is measured by benchmarks/launch_overhead.py, not asserted here
    _, _, host = _module()
    hf = compile_host(host)
    assert compile_host(host) is hf  # cached
    calls = []
    launch = lambda *a: calls.append(a)  # noqa: E731
    args = [0x1000, 0x2000, 0x3000, 5000]
    for _ in range(3):
        hf(args, launch)
    assert len(calls) == 3 and calls[-1][1] == (40, 1, 1)


def test_host_loops_calls_and_fallback_ops():
    m = ir.new_module()
    sq = func.build_func(func.func, "sq", [index], [index])
    m.regions[0].block.append(sq)
    with ir.InsertionPoint(sq.regions[0].blocks[0]):
        x = sq.regions[0].blocks[0].args[0]
        func.return_(arith.muli(x, x))
    main = func.build_func(func.func, "main", [index, f32], [index, f32])
    m.regions[0].block.append(main)
    blk = main.regions[0].blocks[0]
    with ir.InsertionPoint(blk):
        n, f = blk.args
        zero, one = arith.const(0, index), arith.const(1, index)
        loop = scf.build_for(zero, n, one, [zero])
        body = loop.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            iv, acc = body.args
            scf.yield_(arith.addi(acc, func.call(iv, callee=SymbolRef("sq"), result_types=[index])))
        w = scf.build_while([f], [f32])
        before, after = w.regions[0].blocks[0], w.regions[1].blocks[0]
        with ir.InsertionPoint(before):
            (v,) = before.args
            scf.condition(arith.cmpf(v, arith.const(100.0, f32), predicate="olt"), v)
        with ir.InsertionPoint(after):
            (v,) = after.args
            scf.yield_(arith.mulf(v, arith.const(3.0, f32)))  # float ops go through `evaluate`
        func.return_(loop.results[0], w.results[0])
    res = run_host(main, [10, 1.5], launch=None)
    assert res[0] == sum(i * i for i in range(10))
    assert res[1] == np.float32(121.5) and isinstance(res[1], np.float32)


def test_host_launch_without_launcher_and_bad_args():
    _, _, host = _module()
    with pytest.raises(InterpError, match="gpu.launch_func needs a launcher"):
        compile_host(host)([1, 2, 3, 4], None)
    with pytest.raises(InterpError, match="takes 4 arguments, got 1"):
        run_host(host, [1], lambda *a: None)


def test_host_buffer_resource_is_passed_to_the_kernel():
    m = ir.new_module()
    gm = gpu.build_gpu_module("kernels")
    m.regions[0].block.append(gm)
    with KernelBuilder("bcopy", [ir.BufferRsrcType(), F32P]) as kb:
        rs, out = kb.args
        tid = gpu.thread_id(dimension="x")
        v = ptr.buffer_load(rs, arith.muli(tid, arith.const(4, i32)), result_types=[f32])
        ptr.store(v, ptr.add(out, tid))
    gm.regions[0].block.append(kb.op)
    host = func.build_func(func.func, "h", [F32P, F32P, i64])
    m.regions[0].block.append(host)
    blk = host.regions[0].blocks[0]
    with ir.InsertionPoint(blk):
        src, dst, nbytes = blk.args
        one = arith.const(1, i32)
        rsrc = ptr.buffer_rsrc(src, nbytes)
        gpu.launch_func(
            one, one, one, arith.const(8, i32), one, one, arith.const(0, i32), arith.const(0, i64), rsrc, dst,
            kernel=SymbolRef("kernels::bcopy"),
        )  # fmt: skip
        func.return_()
    mem = Memory()
    x, y = np.arange(8, dtype=np.float32) + 1, np.zeros(8, np.float32)
    run_host(host, [mem.register(x, "x"), mem.register(y, "y"), 12], _launcher({"bcopy": kb.op}, mem, []))
    assert y.tolist() == [1, 2, 3, 0, 0, 0, 0, 0]
