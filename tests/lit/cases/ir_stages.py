"""Programs whose IR after every compile stage is golden (tests/lit/golden/<program>/NN_<stage>.mlir)."""

from __future__ import annotations

import numpy as np

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Constexpr, Tensor


@flyc.kernel
def vadd(a: Tensor, b: Tensor, c: Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        c[i] = a[i] + b[i]


@flyc.jit
def launch_vadd(a, b, c, n: fx.Int32):
    vadd(a, b, c, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def program_vadd():
    a = np.zeros(256, np.float32)
    launch_vadd(a, a, a, 256)


@flyc.kernel
def control(out: Tensor, x: Tensor, STEPS: Constexpr[int]):
    tid = fx.thread_idx.x
    acc = fx.Int32(0)
    for i in range(STEPS):
        if (tid + i) % 2 == 0:
            acc = acc + x[i]
        else:
            acc = acc - 1
    k = fx.Int32(0)
    while k * k < tid:
        k = k + 1
    out[tid] = acc if tid > 3 and k < 3 else k


@flyc.jit
def launch_control(out, x, STEPS: Constexpr[int]):
    control(out, x, STEPS).launch(grid=1, block=32)


def program_control():
    launch_control(np.zeros(32, np.int32), np.arange(8, dtype=np.int32), 4)
