"""Where the host time of one cached CUDA launch goes: ``python -m benchmarks.launch_profile`` (GPU only).

Each line is the best of several repeats of N back-to-back calls (wall time per call, µs). The GPU work is a
tiny vector add, so the numbers are host cost.
"""

from __future__ import annotations

import timeit

import torch

import flydsl.compiler as flyc
import flydsl.expr as fx


@flyc.kernel
def _vadd(a: fx.Tensor, b: fx.Tensor, c: fx.Tensor, n: fx.Int32):
    i = fx.block_idx.x * 128 + fx.thread_idx.x
    if i < n:
        c[i] = a[i] + b[i]


@flyc.jit
def vadd(a: fx.Tensor, b: fx.Tensor, c: fx.Tensor, n: fx.Int32, stream: fx.Stream = fx.Stream(None)):
    _vadd(a, b, c, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)


def per_call(fn, n=2000, repeat=5) -> float:
    fn()
    torch.cuda.synchronize()
    best = min(timeit.repeat(fn, number=n, repeat=repeat)) / n
    torch.cuda.synchronize()
    return best * 1e6


def main() -> None:
    n = 1024
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    vadd(a, b, c, n)
    jf = vadd
    entry = jf._last[1]
    launcher = entry.launcher
    kname, kernel = next(iter(launcher.kernels.items()))
    s = torch.cuda.current_stream()
    raw = s.cuda_stream
    args = [a.data_ptr(), n, b.data_ptr(), n, c.data_ptr(), n, n]  # each tensor: pointer, dynamic extent
    rows = [
        ("torch.add (reference)", lambda: torch.add(a, b, out=c)),
        ("torch.cuda.current_stream().cuda_stream", lambda: torch.cuda.current_stream().cuda_stream),
        ("torch._C._cuda_getCurrentRawStream", lambda: torch._C._cuda_getCurrentRawStream(0)),
        ("a.data_ptr()", lambda: a.data_ptr()),
        ("CudaKernel.launch (raw args)", lambda: kernel.launch((8, 1, 1), (128, 1, 1), 0, raw, args)),
        ("jit call, default stream", lambda: vadd(a, b, c, n)),
        ("jit call, explicit stream", lambda: vadd(a, b, c, n, stream=s)),
    ]
    print(f"{'what':44s} us/call")
    for name, fn in rows:
        print(f"{name:44s} {per_call(fn):7.2f}")


if __name__ == "__main__":
    main()
