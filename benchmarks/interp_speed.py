"""Interpreter throughput: lanes·ops per second on two kernels (not a test; numbers go to docs/interpreter.md).

1. straight-line: a 1000-op kernel (integer and float arithmetic, compares, selects) over
   64 blocks × 128 threads.
2. softmax: one row of 1024 f32 per block of 128 threads (vector<8xf32> loads, max-reduce through
   xor shuffles and shared memory, exp, sum-reduce, scale, store), 64 rows.

Run: PYTHONPATH=. python -m benchmarks.interp_speed [repeats]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from flydsl.dialects import arith, gpu, math, ptr, vector
from flydsl.interp import Memory, run_kernel
from flydsl.ir import PointerType, VectorType, f32
from flydsl.testing import KernelBuilder, const


def straight_line(n_ops: int = 1000):
    """A kernel of ``n_ops`` executed ops (plus a load and a store)."""
    with KernelBuilder("straight", [PointerType(f32), PointerType(f32)]) as kb:
        x, out = kb.args
        i = kb.global_id()
        y = ptr.load(ptr.add(x, i), result_types=[f32])
        k = i
        c1, c2, c3 = const(3), arith.const(0.5, f32), arith.const(1.25, f32)
        count = 4  # global_id (3 ops incl. ids) + load
        while count < n_ops - 2:
            k = arith.addi(arith.muli(k, c1), i)
            f = arith.sitofp(k, result_types=[f32])
            y = arith.addf(arith.mulf(y, c2), c3)
            lt = arith.cmpf(y, f, predicate="olt")
            y = arith.select(lt, y, arith.subf(y, f))
            k = arith.xori(k, arith.shrui(k, const(7)))
            count += 8
        ptr.store(y, ptr.add(out, i))
    return kb.op, count + 2


def softmax(row: int = 1024, threads: int = 128):
    """Row softmax: one block per row, ``row // threads`` elements per thread as one vector."""
    per = row // threads
    vt = VectorType(per, f32)
    sp = PointerType(f32, "shared")
    with KernelBuilder("softmax", [PointerType(f32), PointerType(f32)]) as kb:
        x, out = kb.args
        tid = gpu.thread_id(dimension="x")
        base = arith.muli(gpu.block_id(dimension="x"), const(row))
        off = arith.addi(base, arith.muli(tid, const(per)))
        v = ptr.load(ptr.add(x, off), result_types=[vt], align=16)
        smem = ptr.shared_alloc(result_types=[sp], count=threads // 32)
        lane = gpu.lane_id()
        warp = arith.divui(tid, const(32))
        is0 = arith.cmpi(lane, const(0), predicate="eq")

        def block_reduce(s, combine):
            for o in (16, 8, 4, 2, 1):
                s = combine(s, gpu.shuffle(s, const(o), const(32), mode="xor"))
            with kb.if_(is0):
                ptr.store(s, ptr.add(smem, warp))
            gpu.barrier()
            t = ptr.load(smem, result_types=[f32])
            for w in range(1, threads // 32):
                t = combine(t, ptr.load(ptr.add(smem, const(w)), result_types=[f32]))
            gpu.barrier()
            return t

        m = block_reduce(vector.reduction(v, kind="maxnumf"), arith.maxnumf)
        e = math.exp(arith.subf(v, vector.broadcast(m, result_types=[vt])))
        s = block_reduce(vector.reduction(e, kind="add"), arith.addf)
        y = arith.mulf(e, vector.broadcast(arith.divf(arith.const(1.0, f32), s), result_types=[vt]))
        ptr.store(y, ptr.add(out, off), align=16)
    n_ops = sum(1 for o in kb.op.walk() if o.defn.name not in ("arith.constant", "gpu.func", "scf.yield"))
    return kb.op, n_ops


def _time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(repeats: int = 3) -> dict:
    rng = np.random.default_rng(0)
    res = {}
    blocks, threads = 64, 128
    k, n_ops = straight_line()
    mem = Memory()
    X = rng.random(blocks * threads, dtype=np.float32)
    Y = np.zeros_like(X)
    args = [mem.register(X, "x"), mem.register(Y, "y")]
    run = lambda: run_kernel(k, grid=blocks, block=threads, args=args, memory=mem)  # noqa: E731
    run()
    t = _time(run, repeats)
    res["straight_line"] = {
        "ops": n_ops,
        "lanes": blocks * threads,
        "s": t,
        "lane_ops_per_s": blocks * threads * n_ops / t,
    }
    row = 1024
    k, n_ops = softmax(row, threads)
    X = rng.standard_normal(blocks * row, dtype=np.float32)
    Y = np.zeros_like(X)
    mem = Memory()
    args = [mem.register(X, "x"), mem.register(Y, "y")]
    run = lambda: run_kernel(k, grid=blocks, block=threads, args=args, memory=mem)  # noqa: E731
    run()
    ref = np.exp(X.reshape(blocks, row) - X.reshape(blocks, row).max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    err = float(np.abs(Y.reshape(blocks, row) - ref).max())
    t = _time(run, repeats)
    res["softmax"] = {
        "ops": n_ops,
        "lanes": blocks * threads,
        "s": t,
        "lane_ops_per_s": blocks * threads * n_ops / t,
        "rows_per_s": blocks / t,
        "max_abs_err": err,
    }
    for name, r in res.items():
        print(
            f"{name:14s} {r['ops']:5d} ops x {r['lanes']} lanes: {r['s'] * 1e3:8.2f} ms "
            f"= {r['lane_ops_per_s'] / 1e6:8.1f} M lane-ops/s"
        )
    return res


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
