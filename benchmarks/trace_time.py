"""Trace time of layout-heavy programs: the examples' launchers traced (``jit.trace``: Python → IR, no pass,
no LLVM, no device) again and again in this process.

``python -m benchmarks.trace_time [reps]`` prints one line per program — the best and the median milliseconds
of ``reps`` traces (default 15) — and then the sum of the medians. It is the number to compare before and
after a change to the layout layer or the ``fx`` surface (tracing is where layouts are computed; compiled
kernels never see them). Timings on the shared 2-core development machine vary by a few percent: compare
runs made one after the other.
"""

from __future__ import annotations

import importlib.util
import pathlib
import statistics
import sys
import time

import ml_dtypes
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _programs():
    """``(name, traced function, arguments)`` of each program."""
    f32 = np.float32
    ex1, ex2, ex5, ex6 = (_example(n) for n in ("01_vector_add", "02_tiled_copy", "05_gemm_mma_sync", "06_gemm_wgmma"))
    a, b, c = (np.zeros(4096, f32) for _ in range(3))
    yield "01_vector_add", ex1.vector_add, (a, b, c, 4096)
    yield "02_tiled_copy", ex2.tiled_copy, (np.zeros((128, 256), f32), np.zeros((128, 256), f32))
    bf = ml_dtypes.bfloat16
    ga, gb, gc = np.zeros((256, 128), bf), np.zeros((256, 128), bf), np.zeros((256, 256), bf)
    yield "05_gemm_mma_sync", ex5.gemm_launch, ex5.gemm_args(ga, gb, gc, "nk", None)
    yield "06_gemm_wgmma", ex6.gemm_launch, (ga, gb, gc, 132, "bf16")


def main(reps: int = 15) -> list[dict]:
    rows = []
    for name, fn, args in _programs():
        fn.trace(*args)  # warm: imports, first-use caches
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn.trace(*args)
            times.append((time.perf_counter() - t0) * 1e3)
        rows.append({"program": name, "best_ms": min(times), "median_ms": statistics.median(times)})
    for r in rows:
        print(f"{r['program']:<20} best {r['best_ms']:7.2f} ms   median {r['median_ms']:7.2f} ms")
    print(f"{'sum of medians':<20} {sum(r['median_ms'] for r in rows):7.2f} ms")
    return rows


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
