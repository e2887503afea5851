"""Build + verify + print a 40k-op function and time each step (budget: < 0.5 s total on 2 cores).

Run: python -m benchmarks.ir_build [n_ops]
"""

from __future__ import annotations

import sys
import time

from flydsl import ir
from flydsl.dialects import arith, func, gpu


def build(n_ops: int) -> ir.Op:
    m = ir.new_module()
    gm = gpu.build_gpu_module()
    m.regions[0].block.append(gm)
    k = func.build_func(gpu.func, "big", [ir.i32, ir.f32], kernel=True)
    gm.regions[0].block.append(k)
    blk = k.regions[0].blocks[0]
    x, y = blk.args
    with ir.InsertionPoint(blk):
        for i in range(n_ops // 8):
            c1 = arith.const(i, ir.i32)
            c2 = arith.const(float(i), ir.f32)
            a = arith.addi(x, c1)
            x = arith.muli(a, x)
            f = arith.addf(y, c2)
            g = arith.mulf(f, y)
            c = arith.cmpf(g, f, predicate="olt")
            y = arith.select(c, g, f)
        gpu.return_()
    return m


def main(n_ops: int = 40_000) -> dict:
    t0 = time.perf_counter()
    m = build(n_ops)
    t1 = time.perf_counter()
    ir.verify(m)
    t2 = time.perf_counter()
    text = ir.print_op(m)
    t3 = time.perf_counter()
    r = {
        "ops": n_ops,
        "build_s": t1 - t0,
        "verify_s": t2 - t1,
        "print_s": t3 - t2,
        "total_s": t3 - t0,
        "text_mb": len(text) / 1e6,
    }
    return r


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40_000
    best = min((main(n) for _ in range(3)), key=lambda r: r["total_s"])
    print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in best.items()))
