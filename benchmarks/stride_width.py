"""What 64-bit dynamic strides (FlyDSL's default for adapted tensors) cost against 32-bit ones (H200; torch
CUDA events): a row-wise scale ``out[i, j] = a[i, j] * 3`` over M x N float32 / bfloat16 tensors at a
run-time row stride (``flyc.from_torch_tensor(t, use_32bit_stride=...).mark_layout_dynamic()``), and the
same with raw tensors (always 32-bit). Prints ``case  µs  GB/s`` per line.

    python -m benchmarks.stride_width
"""

from __future__ import annotations

import statistics

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Tensor


@flyc.kernel
def scale_rows(a: Tensor, out: Tensor, n: fx.Int32):
    i = fx.block_idx.x
    for j in range(fx.thread_idx.x, n, 256):
        out[i, j] = a[i, j] * 3


@flyc.jit
def launch(a, out, m: fx.Int32, n: fx.Int32):
    scale_rows(a, out, n).launch(grid=(m, 1, 1), block=(256, 1, 1))


def main() -> None:
    import torch

    from benchmarks.harness import time_thunks

    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        m, n = 8192, 8192
        a = torch.randn((m, n + 64), device="cuda", dtype=dtype)[:, :n]  # a run-time row stride
        out = torch.empty((m, n), device="cuda", dtype=dtype)
        nbytes = 2 * m * n * a.element_size()
        cases = {
            "raw tensors (i32 strides)": (a, out),
            "adapted, use_32bit_stride=True": tuple(
                flyc.from_torch_tensor(t, use_32bit_stride=True).mark_layout_dynamic() for t in (a, out)
            ),
            "adapted, 64-bit strides (default)": tuple(
                flyc.from_torch_tensor(t).mark_layout_dynamic() for t in (a, out)
            ),
        }
        for name, (x, y) in cases.items():
            launch(x, y, m, n)
            torch.cuda.synchronize()
            assert torch.equal(out, a * 3), name
            us = statistics.median(time_thunks([lambda x=x, y=y, m=m, n=n: launch(x, y, m, n)], warmup=5, reps=30))
            rows.append((f"{str(dtype).split('.')[-1]:8s} {name}", us, nbytes / us / 1e3))
    for name, us, gbs in rows:
        print(f"{name:48s} {us:9.1f} us {gbs:8.0f} GB/s")


if __name__ == "__main__":
    main()
