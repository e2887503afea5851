"""A copy through buffer resources (``fx.buffer_ops``), the AMD-style API FlyDSL kernels use.

``create_buffer_resource(t, num_records_bytes=n * 4)`` bounds the view at the tensor's end; every thread
moves 4 floats with one ``buffer_load(..., vec_width=4)`` and one ``buffer_store``. Elements at or past the
bound read 0 and are never written, on every target: the last, partial block needs no explicit predicate.
On NVIDIA an in-bounds access is one 16-byte ``ld.global.v4`` / ``st.global.v4``; only the boundary takes a
predicated path.

Runs on the GPU when one is present, else on the CPU interpreter: ``python examples/04_buffer_copy.py [n]``.
"""

from __future__ import annotations

import sys

import numpy as np

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr import T

THREADS = 256
VEC = 4  # floats per buffer_load: 16 bytes


@flyc.kernel
def buffer_copy_kernel(src: fx.Tensor, dst: fx.Tensor, n: fx.Int32):
    rs = fx.buffer_ops.create_buffer_resource(src, num_records_bytes=n * 4)
    rd = fx.buffer_ops.create_buffer_resource(dst, num_records_bytes=n * 4)
    offset = (fx.block_idx.x * THREADS + fx.thread_idx.x) * VEC  # in elements of f32
    v = fx.buffer_ops.buffer_load(rs, offset, vec_width=VEC, dtype=T.f32)
    fx.buffer_ops.buffer_store(v, rd, offset)


@flyc.jit
def buffer_copy(src: fx.Tensor, dst: fx.Tensor, n: fx.Int32):
    blocks = (n + THREADS * VEC - 1) // (THREADS * VEC)
    buffer_copy_kernel(src, dst, n).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1))


def main(argv: list[str]) -> bool:
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    n = int(argv[1]) if len(argv) > 1 else (1 << 24 if gpu else 10_001)
    src = np.random.default_rng(0).standard_normal(n + 8, dtype=np.float32)  # 8 guard elements past n
    dst = np.full(n + 8, -8192.0, np.float32)
    if gpu:
        s, d = torch.from_numpy(src).cuda(), torch.from_numpy(dst).cuda()
        buffer_copy(s, d, n)
        torch.cuda.synchronize()
        out = d.cpu().numpy()
    else:
        buffer_copy(src, dst, n)
        out = dst
    ok = np.array_equal(out[:n], src[:n]) and bool(np.all(out[n:] == -8192.0))
    print(
        f"buffer copy of {n} float32 (guard elements untouched) on the {'GPU' if gpu else 'CPU interpreter'}: "
        f"{'PASS' if ok else 'FAIL'}"
    )
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main(sys.argv) else 1)
