"""Interpreter basics: memory, ids, loads/stores, vectors, local memory, calls, printf, batching."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from flydsl import ir
from flydsl.dialects import arith, func, gpu, ptr, vector
from flydsl.interp import InterpError, Memory, run_kernel
from flydsl.ir import PointerType, VectorType, bf16, f32, i32, i64
from flydsl.testing import KernelBuilder, const, launch

F32P = PointerType(f32)
I32P = PointerType(i32)


def vadd_kernel(t=f32):
    p = PointerType(t)
    with KernelBuilder("vadd", [p, p, p, i32]) as kb:
        a, b, c, n = kb.args
        i = kb.global_id()
        with kb.if_(arith.cmpi(i, n, predicate="slt")):
            x = ptr.load(ptr.add(a, i), result_types=[t])
            y = ptr.load(ptr.add(b, i), result_types=[t])
            ptr.store(arith.addf(x, y), ptr.add(c, i))
    return kb.op


def test_memory_register_addresses():
    mem = Memory()
    a = np.zeros(10, np.float32)
    b = np.zeros((3, 5), ml_dtypes.bfloat16)
    pa, pb = mem.register(a, "a"), mem.register(b, "b")
    assert pa > 0 and pa % 256 == 0 and pb % 256 == 0
    assert pb >= pa + a.nbytes + 4096  # a gap: a stray index faults instead of hitting b
    assert mem.find(pa + 39).name == "a" and mem.find(pa + 40) is None
    assert mem.base_of(b) == pb
    mem.unregister(pa)
    assert mem.find(pa) is None
    assert mem.register(np.zeros(1), "c") > pb  # addresses are never reused
    with pytest.raises(ValueError, match="C-contiguous"):
        mem.register(np.zeros((4, 4))[:, 1], "strided")


def test_vector_add_with_tail_guard():
    rng = np.random.default_rng(1)
    n = 1000
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    launch(vadd_kernel(), 8, 128, a, b, c, n, check=True)
    assert np.array_equal(c, a + b)


def test_vector_add_bf16_rounds_like_the_gpu():
    rng = np.random.default_rng(2)
    n = 300
    a = rng.standard_normal(n).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal(n).astype(ml_dtypes.bfloat16)
    c = np.zeros(n, ml_dtypes.bfloat16)
    launch(vadd_kernel(bf16), 3, 128, a, b, c, n, check=True)
    ref = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(c.view(np.uint16), ref.view(np.uint16))


def test_thread_and_block_ids_3d():
    block, grid = (4, 2, 3), (2, 3, 2)
    nthreads = np.prod(block) * np.prod(grid)
    out = np.full((nthreads, 6), -1, np.int32)
    with KernelBuilder("ids", [I32P]) as kb:
        (o,) = kb.args
        ids = [gpu.thread_id(dimension=d) for d in "xyz"] + [gpu.block_id(dimension=d) for d in "xyz"]
        bdim = [gpu.block_dim(dimension=d) for d in "xyz"]
        gdim = [gpu.grid_dim(dimension=d) for d in "xyz"]
        tlin = arith.addi(ids[0], arith.muli(bdim[0], arith.addi(ids[1], arith.muli(bdim[1], ids[2]))))
        blin = arith.addi(ids[3], arith.muli(gdim[0], arith.addi(ids[4], arith.muli(gdim[1], ids[5]))))
        row = arith.addi(arith.muli(blin, const(int(np.prod(block)))), tlin)
        base = ptr.add(o, arith.muli(row, const(6)))
        for j, v in enumerate(ids):
            ptr.store(v, ptr.add(base, const(j)))
    launch(kb.op, grid, block, out, check=True, max_lanes=48)  # several batches
    r = np.arange(nthreads)
    t, b = r % 24, r // 24
    ref = np.stack([t % 4, t // 4 % 2, t // 8, b % 2, b // 2 % 3, b // 6], axis=1)
    assert np.array_equal(out, ref)


def test_uniform_scalar_load_and_broadcast_store():
    cfg = np.array([7, 3], np.int32)
    out = np.zeros(64, np.int32)
    with KernelBuilder("uni", [I32P, I32P]) as kb:
        c, o = kb.args
        s = arith.addi(ptr.load(c, result_types=[i32]), ptr.load(ptr.add(c, const(1)), result_types=[i32]))
        ptr.store(arith.addi(s, gpu.thread_id(dimension="x")), ptr.add(o, gpu.thread_id(dimension="x")))
        ptr.store(s, ptr.add(o, const(63)))  # every lane stores the same value to one address
    launch(kb.op, 1, 63, cfg, out, check=True)
    assert np.array_equal(out[:63], 10 + np.arange(63)) and out[63] == 10


def test_vector_loads_stores_and_vector_ops():
    v4 = VectorType(4, f32)
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    s = np.zeros(16, np.float32)
    with KernelBuilder("vec", [F32P, F32P, F32P]) as kb:
        xp, yp, sp = kb.args
        tid = gpu.thread_id(dimension="x")
        off = arith.muli(tid, const(4))
        v = ptr.load(ptr.add(xp, off), result_types=[v4], align=16)
        rev = vector.shuffle(v, v, mask=[3, 2, 1, 0])
        e0 = vector.extract(rev, position=0)
        w = vector.insert(arith.negf(e0), rev, position=0)
        w = arith.addf(w, vector.broadcast(arith.const(0.5, f32), result_types=[v4]))
        ptr.store(w, ptr.add(yp, off), align=16)
        dyn = vector.extractelement(v, arith.remui(tid, const(4)))
        tot = vector.reduction(v, kind="add")
        fe = vector.from_elements(dyn, tot)
        ptr.store(arith.addf(vector.extract(fe, position=0), vector.extract(fe, position=1)), ptr.add(sp, tid))
    launch(kb.op, 1, 16, x, y, s, check=True)
    xr = x.reshape(16, 4)
    ref = xr[:, ::-1].copy()
    ref[:, 0] = -ref[:, 0]
    assert np.array_equal(y.reshape(16, 4), ref + 0.5)
    assert np.array_equal(s, xr[np.arange(16), np.arange(16) % 4] + xr.sum(1))


def test_masked_load_and_store():
    v4 = VectorType(4, i32)
    x = np.arange(32, dtype=np.int32)
    y = np.full(32, -1, np.int32)
    with KernelBuilder("masked", [I32P, I32P]) as kb:
        xp, yp = kb.args
        tid = gpu.thread_id(dimension="x")
        off = arith.muli(tid, const(4))
        lane_on = arith.cmpi(tid, const(5), predicate="ult")
        elem_on = arith.cmpi(
            vector.from_elements(const(0), const(1), const(2), const(3)),
            vector.broadcast(arith.remui(tid, const(4)), result_types=[v4]),
            predicate="sle",
        )
        other = vector.broadcast(const(100), result_types=[v4])
        v = ptr.masked_load(ptr.add(xp, off), elem_on, other)
        ptr.masked_store(v, ptr.add(yp, off), lane_on)
    launch(kb.op, 1, 8, x, y, check=True)
    xr = x.reshape(8, 4)
    ref = np.where(np.arange(4)[None, :] <= (np.arange(8) % 4)[:, None], xr, 100)
    ref[5:] = -1
    assert np.array_equal(y.reshape(8, 4), ref)


def test_local_memory_alloca_is_per_thread():
    lp = PointerType(i32, "local")
    out = np.zeros(64, np.int32)
    with KernelBuilder("local", [I32P]) as kb:
        (o,) = kb.args
        tid = gpu.thread_id(dimension="x")
        buf = ptr.alloca(result_types=[lp], count=4)
        for j in range(4):
            ptr.store(arith.addi(tid, const(j)), ptr.add(buf, const(j)))
        s = ptr.load(buf, result_types=[i32])
        for j in range(1, 4):
            s = arith.addi(s, ptr.load(ptr.add(buf, const(j)), result_types=[i32]))
        ptr.store(s, ptr.add(o, kb.global_id()))
    launch(kb.op, 2, 32, out, check=True)
    assert np.array_equal(out, 4 * (np.arange(64) % 32) + 6)


def test_device_function_call():
    mod = gpu.build_gpu_module("kernels")
    helper = func.build_func(gpu.func, "axpb", [i32, i32], [i32])
    hb = helper.regions[0].blocks[0]
    with ir.InsertionPoint(hb):
        gpu.return_(arith.addi(arith.muli(hb.args[0], const(3)), hb.args[1]))
    kb = KernelBuilder("caller", [I32P])
    mod.regions[0].block.append(helper)
    mod.regions[0].block.append(kb.op)
    with kb:
        tid = gpu.thread_id(dimension="x")
        r = func.call(tid, const(5), callee=ir.SymbolRef("axpb"), result_types=[i32])
        ptr.store(r, ptr.add(kb.args[0], tid))
    out = np.zeros(32, np.int32)
    launch(kb.op, 1, 32, out, check=True)
    assert np.array_equal(out, 3 * np.arange(32) + 5)


def test_printf_prints_active_lanes_in_thread_order():
    lines = []
    with KernelBuilder("pr", [i64]) as kb:
        tid = gpu.thread_id(dimension="x")
        with kb.if_(arith.cmpi(arith.remui(tid, const(3)), const(0), predicate="eq")):
            f = arith.sitofp(tid, result_types=[f32])
            v = vector.from_elements(tid, const(-1))
            gpu.printf(tid, f, kb.args[0], v, tid, format="t={} f={} big={} v={} hex={:x} {{lit}} 100%\n")
    launch(kb.op, 2, 4, 1 << 40, printer=lines.append, check=True)
    line = "t={0} f={0}.000000 big=1099511627776 v=[{0}, -1] hex={0} {{lit}} 100%\n"
    assert lines == [line.format(t) for t in (0, 3, 0, 3)]


def test_printf_conversions_follow_c_printf():
    lines = []
    with KernelBuilder("pr2", [PointerType(f32)]) as kb:
        m1, f = const(-1), arith.const(2.5, f32)
        b = arith.trunci(m1, result_types=[ir.i8])
        gpu.printf(m1, b, f, f, m1, f, kb.args[0], format="{:x} {:x} {:.2f} {:>8.1e}|{:<5d}|{:+} {:x}")
    launch(kb.op, 1, 1, 0x1234, printer=lines.append)
    assert lines == ["ffffffff ffffffff 2.50  2.5e+00|-1   |+2.500000 1234"]
    with KernelBuilder("pr3", []) as kb3:
        gpu.printf(const(1), format="{:s}")
    with pytest.raises(InterpError, match="has no C printf equivalent"):
        launch(kb3.op, 1, 1, printer=lines.append)


def test_kernel_arguments_wrap_and_round():
    out = np.zeros(3, np.int32)
    fo = np.zeros(1, np.float32)
    with KernelBuilder("args", [i32, f32, I32P, F32P]) as kb:
        a, b, o, fp = kb.args
        ptr.store(a, o)
        ptr.store(b, fp)
    mem = Memory()
    run_kernel(
        kb.op, grid=1, block=1, args=[0xFFFFFFFF, 1 / 3, mem.register(out, "o"), mem.register(fo, "f")], memory=mem
    )
    assert out[0] == -1 and fo[0] == np.float32(1 / 3)


def test_batches_give_the_same_result_as_one_batch():
    rng = np.random.default_rng(3)
    n = 5000
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c1, c2 = np.zeros(n, np.float32), np.zeros(n, np.float32)
    k = vadd_kernel()
    launch(k, 40, 128, a, b, c1, n, max_lanes=128)
    launch(k, 40, 128, a, b, c2, n, max_lanes=1 << 20)
    assert np.array_equal(c1, c2) and np.array_equal(c1, a + b)
