"""Time the kernels whose vector accesses depend on proven alignment (H200; torch CUDA events).

Run once per flydsl tree (``PYTHONPATH=<tree>:<FlyDSL checkout>``) to compare a change of the alignment
claims: FlyDSL's RMSNorm (tensor arguments: rows at a run-time stride) and LayerNorm (raw pointers, N = 8192
fast path) and this repository's transpose example (versioned universal copies). ``--offset``
adds the storage-offset cases (one element into the allocation; they fault on a tree that over-claims, so
leave it off for such a baseline). Prints one line per case: ``name  microseconds``.

    python benchmarks/bench_alignment_claims.py --flydsl-src .flydsl_src [--offset]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys


def _time_us(fn, iters: int) -> float:
    """Median device time of one call in µs (the shared harness's CUDA-event timing)."""
    from benchmarks.harness import time_thunks

    return statistics.median(time_thunks([fn], warmup=5, reps=iters))


def _offset(shape, dtype, shift):
    import torch

    n = 1
    for d in shape:
        n *= d
    return torch.randn(n + shift, device="cuda", dtype=dtype)[shift:].view(shape)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flydsl-src", required=True)
    ap.add_argument("--offset", action="store_true")
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.flydsl_src))
    sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
    import torch

    import flydsl.compiler as flyc
    import flydsl.expr as fx

    shifts = (0, 1, 4) if args.offset else (0,)
    rows = []
    M, N = args.rows, 8192
    from kernels.norm.rmsnorm_kernel import build_rmsnorm_module

    launch = build_rmsnorm_module(N, "bf16")
    for s in shifts:
        x, g = _offset((M, N), torch.bfloat16, s), _offset((N,), torch.bfloat16, s)
        y = _offset((M, N), torch.bfloat16, s)
        rows.append(
            (f"flydsl rmsnorm {M}x{N} bf16 shift{s}", _time_us(lambda x=x, g=g, y=y: launch(x, g, y, M), args.iters))
        )
    from kernels.norm.layernorm_kernel import build_layernorm_module

    ln = build_layernorm_module(N, "bf16")
    for s in shifts:
        x, g, b = _offset((M, N), torch.bfloat16, s), _offset((N,), torch.bfloat16, s), _offset((N,), torch.bfloat16, s)
        y = _offset((M, N), torch.bfloat16, s)
        ptrs = [flyc.from_c_void_p(fx.BFloat16, t.data_ptr()) for t in (x, g, b, y)]
        stream = torch.cuda.current_stream()
        compiled = flyc.compile(ln, *ptrs, M, stream)
        addr = [t.data_ptr() for t in (x, g, b, y)]
        rows.append(
            (
                f"flydsl layernorm {M}x{N} bf16 shift{s}",
                _time_us(lambda c=compiled, a=addr, st=stream: c(*a, M, st), args.iters),
            )
        )
    import importlib

    tr = importlib.import_module("03_transpose")
    a = torch.randn(min(M, 8192), 8192, device="cuda")
    bt = torch.empty_like(a)
    bt = bt.view(8192, -1)
    rows.append((f"transpose {a.shape[0]}x8192 f32", _time_us(lambda: tr.transpose_launch(a, bt, False), args.iters)))
    for name, us in rows:
        print(f"BENCH {name:<40} {us:9.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
