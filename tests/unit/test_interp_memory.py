"""Atomics with collisions, buffer ops (AMD bounds semantics), shared / dynamic / generic memory."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from flydsl.dialects import arith, gpu, ptr
from flydsl.interp import InterpError
from flydsl.ir import PointerType, VectorType, bf16, f32, i8, i32, i64
from flydsl.testing import KernelBuilder, const, launch

I32P = PointerType(i32)
F32P = PointerType(f32)


def _serial(kind, mem, addrs, vals, cmp=None):
    """Apply atomics one lane after the other (linear thread order); returns old values."""
    mem = mem.copy()
    olds = np.zeros(len(addrs), mem.dtype)
    u = mem.view(f"u{mem.itemsize}") if mem.dtype.kind == "i" else None
    with np.errstate(all="ignore"):
        for j, (a, v) in enumerate(zip(addrs, vals)):
            old = mem[a]
            olds[j] = old
            if kind == "add":
                mem[a] = old + v
            elif kind == "max":
                mem[a] = np.fmax(old, v) if mem.dtype.kind == "f" else max(old, v)
            elif kind == "min":
                mem[a] = np.fmin(old, v) if mem.dtype.kind == "f" else min(old, v)
            elif kind in ("umax", "umin"):
                uv = np.asarray(v).astype(mem.dtype).view(u.dtype)
                u[a] = max(u[a], uv) if kind == "umax" else min(u[a], uv)
            elif kind == "and":
                mem[a] = old & v
            elif kind == "or":
                mem[a] = old | v
            elif kind == "xor":
                mem[a] = old ^ v
            elif kind == "xchg":
                mem[a] = v
            elif kind == "cas":
                if old == cmp[j]:
                    mem[a] = v
    return mem, olds


def _atomic_kernel(t, kind, nbins_expr):
    p = PointerType(t)
    with KernelBuilder("atom", [p, p, p]) as kb:
        mem, vals, olds = kb.args
        i = kb.global_id()
        v = ptr.load(ptr.add(vals, i), result_types=[t])
        old = ptr.atomic_rmw(ptr.add(mem, nbins_expr(i)), v, kind=kind)
        ptr.store(old, ptr.add(olds, i))
    return kb.op


BINS = {
    "few_addresses": (lambda i: arith.remui(i, const(5)), lambda i: i % 5),  # many rounds: per-address scan
    "pairs": (lambda i: arith.divui(i, const(2)), lambda i: i // 2),  # two rounds
    "distinct": (lambda i: i, lambda i: i),
}


@pytest.mark.parametrize("bins", list(BINS))
@pytest.mark.parametrize("kind", ["add", "max", "min", "umax", "umin", "and", "or", "xor", "xchg"])
def test_integer_atomics_with_collisions(kind, bins):
    ir_bins, np_bins = BINS[bins]
    n = 256
    rng = np.random.default_rng(7)
    vals = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    mem = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    ref_mem, ref_old = _serial(kind, mem, np_bins(np.arange(n)), vals)
    olds = np.zeros(n, np.int32)
    launch(_atomic_kernel(i32, kind, ir_bins), 2, 128, mem, vals, olds, check=True)
    assert np.array_equal(mem, ref_mem) and np.array_equal(olds, ref_old)


@pytest.mark.parametrize("t,dt", [(f32, np.float32), (bf16, ml_dtypes.bfloat16)])
@pytest.mark.parametrize("kind", ["add", "max", "min"])
def test_float_atomics_are_sequential_in_thread_order(kind, t, dt):
    n = 256
    rng = np.random.default_rng(8)
    vals = rng.standard_normal(n).astype(dt)
    mem = rng.standard_normal(n).astype(dt)
    for bins in ("few_addresses", "pairs"):
        ir_bins, np_bins = BINS[bins]
        m = mem.copy()
        ref_mem, ref_old = _serial(kind, m, np_bins(np.arange(n)), vals)
        olds = np.zeros(n, dt)
        launch(_atomic_kernel(t, kind, ir_bins), 2, 128, m, vals, olds, check=True)
        assert np.array_equal(m.view(np.uint8), ref_mem.view(np.uint8))
        assert np.array_equal(olds.view(np.uint8), ref_old.view(np.uint8))


def test_atomic_add_one_counter_from_every_lane_and_masked_lanes():
    counter = np.zeros(1, np.int64)
    olds = np.full(1000, -1, np.int64)
    with KernelBuilder("count", [PointerType(i64), PointerType(i64)]) as kb:
        c, o = kb.args
        i = kb.global_id()
        with kb.if_(arith.cmpi(arith.remui(i, const(3)), const(0), predicate="ne")):
            old = ptr.atomic_rmw(c, arith.const(1, i64), kind="add")
            ptr.store(old, ptr.add(o, i))
    launch(kb.op, 8, 125, counter, olds, check=True, max_lanes=250)  # several batches share the counter
    active = np.arange(1000) % 3 != 0
    assert counter[0] == active.sum()
    assert np.array_equal(olds[active], np.arange(active.sum())) and (olds[~active] == -1).all()


def test_atomic_cas_serial_semantics():
    n = 64
    mem = np.zeros(4, np.int32)
    olds = np.zeros(n, np.int32)
    with KernelBuilder("cas", [I32P, I32P]) as kb:
        m, o = kb.args
        i = kb.global_id()
        addr = ptr.add(m, arith.remui(i, const(4)))
        expect = arith.divui(i, const(8))  # lanes 0..7 expect 0, 8..15 expect 1, ...
        old = ptr.atomic_cas(addr, expect, arith.addi(expect, const(1)))
        ptr.store(old, ptr.add(o, i))
    launch(kb.op, 1, n, mem, olds, check=True)
    t = np.arange(n)
    ref_mem, ref_old = _serial("cas", np.zeros(4, np.int32), t % 4, t // 8 + 1, cmp=t // 8)
    assert np.array_equal(mem, ref_mem) and np.array_equal(olds, ref_old)


def test_shared_memory_atomics_and_poison():
    sp = PointerType(i32, "shared")
    sfp = PointerType(f32, "shared")
    out = np.zeros((4, 2), np.int32)
    unwritten = np.zeros(4, np.float32)
    with KernelBuilder("smem_atomic", [I32P, F32P]) as kb:
        o, u = kb.args
        tid = gpu.thread_id(dimension="x")
        bid = gpu.block_id(dimension="x")
        cnt = ptr.shared_alloc(result_types=[sp], count=2)
        junk = ptr.shared_alloc(result_types=[sfp], count=1)
        with kb.if_(arith.cmpi(tid, const(0), predicate="eq")):
            ptr.store(const(0), cnt)
            ptr.store(const(0), ptr.add(cnt, const(1)))
        gpu.barrier()
        ptr.atomic_rmw(cnt, const(1), kind="add")
        ptr.atomic_rmw(ptr.add(cnt, const(1)), tid, kind="max")
        gpu.barrier()
        with kb.if_(arith.cmpi(tid, const(0), predicate="eq")):
            base = ptr.add(o, arith.muli(bid, const(2)))
            ptr.store(ptr.load(cnt, result_types=[i32]), base)
            ptr.store(ptr.load(ptr.add(cnt, const(1)), result_types=[i32]), ptr.add(base, const(1)))
            ptr.store(ptr.load(junk, result_types=[f32]), ptr.add(u, bid))
    launch(kb.op, 4, 96, out, unwritten, check=True)
    assert (out == [[96, 95]] * 4).all()
    assert np.isnan(unwritten).all()  # shared memory starts as 0xFF bytes


def test_dynamic_shared_memory_and_generic_pointers():
    dyn_f = PointerType(f32, "shared")
    gen_f = PointerType(f32, "generic")
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    addrs = np.zeros(64, np.int64)
    with KernelBuilder("dyn", [F32P, F32P, PointerType(i64)]) as kb:
        xp, yp, ap = kb.args
        tid = gpu.thread_id(dimension="x")
        static = ptr.shared_alloc(result_types=[PointerType(i8, "shared")], count=3)
        base = ptr.cast(ptr.dynamic_shared(), result_types=[dyn_f])
        gx = ptr.cast(ptr.add(xp, kb.global_id()), result_types=[gen_f])  # global through generic
        ptr.store(ptr.load(gx, result_types=[f32]), ptr.add(base, tid))
        gpu.barrier()
        rev = arith.subi(const(31), tid)
        gen = ptr.cast(ptr.add(base, rev), result_types=[gen_f])  # shared through generic
        ptr.store(ptr.load(gen, result_types=[f32]), ptr.add(yp, kb.global_id()))
        ptr.store(ptr.to_int(ptr.add(base, tid)), ptr.add(ap, kb.global_id()))
        ptr.store(arith.const(0, i8), ptr.add(static, const(2)))
    launch(kb.op, 2, 32, x, y, addrs, smem_bytes=128, check=True)
    assert np.array_equal(y, x.reshape(2, 32)[:, ::-1].reshape(-1))
    assert np.array_equal(addrs, 16 + 4 * (np.arange(64) % 32))  # dynamic shared follows the static bytes


def _buffer_kernel(n_vec):
    vt = VectorType(n_vec, i32) if n_vec else i32
    with KernelBuilder("buf", [I32P, I32P, i64, i64]) as kb:
        src, dst, nsrc, ndst = kb.args
        tid = gpu.thread_id(dimension="x")
        off = arith.muli(tid, const(4 * max(n_vec, 1)))  # byte offset
        rs = ptr.buffer_rsrc(src, nsrc)
        rd = ptr.buffer_rsrc(dst, ndst)
        on = arith.cmpi(tid, const(2), predicate="ne")  # lane 2 masked off
        v = ptr.buffer_load(rs, off, on, result_types=[vt])
        ptr.buffer_store(v, rd, off, on)
    return kb.op


@pytest.mark.parametrize("n_vec", [0, 4])
def test_buffer_ops_out_of_range_reads_zero_and_drops_writes(n_vec):
    per = max(n_vec, 1)
    src = np.arange(1, 64 * per + 1, dtype=np.int32)
    dst = np.full(64 * per + 8, -7, np.int32)  # the tail is a guard that must stay untouched
    nsrc_bytes = 4 * (10 * per + 1)  # element 10*per is the last readable one
    ndst_bytes = 4 * (20 * per + 2)
    launch(_buffer_kernel(n_vec), 1, 64, src, dst, nsrc_bytes, ndst_bytes, check=True)
    idx = np.arange(dst.shape[0])
    lane = idx // per
    readable = (idx < nsrc_bytes // 4) & (lane != 2) & (lane < 64)
    writable = (idx < ndst_bytes // 4) & (lane != 2)
    expect = np.where(writable, np.where(readable, idx + 1, 0), -7)
    assert np.array_equal(dst, expect)


def test_buffer_negative_offset_is_out_of_range_and_unbounded_records_still_fault():
    out = np.full(4, -1, np.int32)
    with KernelBuilder("bufneg", [I32P, I32P, i64]) as kb:
        src, o, nrec = kb.args
        rs = ptr.buffer_rsrc(src, nrec)
        v = ptr.buffer_load(rs, const(-4), result_types=[i32])  # 0xFFFFFFFC as an unsigned offset
        ptr.store(v, o)
    launch(kb.op, 1, 1, np.arange(4, dtype=np.int32), out, 16, check=True)
    assert out[0] == 0
    with KernelBuilder("bufbig", [I32P, I32P, i64]) as kb2:
        src, o, nrec = kb2.args
        rs = ptr.buffer_rsrc(src, nrec)
        ptr.store(ptr.buffer_load(rs, const(400), result_types=[i32]), o)
    with pytest.raises(InterpError, match=r"element 100 of buffer 'arg0'.*which has 4 elements"):
        launch(kb2.op, 1, 1, np.arange(4, dtype=np.int32), out, 0xFFFFFFFF)


def test_pointer_int_round_trip_and_bitcast_access():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.int32)
    with KernelBuilder("p2i", [F32P, I32P]) as kb:
        xp, yp = kb.args
        tid = gpu.thread_id(dimension="x")
        a = ptr.to_int(ptr.add(xp, tid))
        back = ptr.from_int(arith.addi(a, arith.const(0, i64)), result_types=[I32P])
        ptr.store(ptr.load(back, result_types=[i32]), ptr.add(yp, tid))
    launch(kb.op, 1, 8, x, y, check=True)
    assert np.array_equal(y, x.view(np.int32))
