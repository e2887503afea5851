"""Kernels run end to end through ``@flyc.jit``: one body per case, run on a given device.

``tests/unit/test_jit_kernels.py`` runs them on the CPU interpreter against numpy; ``tests/gpu/`` runs
the same bodies on the GPU and compares with the interpreter bit for bit. Every case is integer or
exact float arithmetic (no contraction into FMA, no transcendental functions), so results must agree
exactly on every device.

Each case is ``case(device) -> (got: dict[str, np.ndarray], want: dict[str, np.ndarray])`` where
``device`` is ``"cpu"`` (numpy arrays) or ``"cuda"`` (torch CUDA tensors).
"""

from __future__ import annotations

import numpy as np
from _arrays import to_device, to_numpy
from compiler_util import Constexpr, Tensor, flyc, fx

__all__ = ["CASES"]


# -- vector add ---------------------------------------------------------------------------------------


@flyc.kernel
def vadd_kernel(a: Tensor, b: Tensor, c: Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        c[i] = a[i] + b[i]


@flyc.jit
def vadd(a, b, c, n: fx.Int32):
    vadd_kernel(a, b, c, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def case_vector_add(device):
    rng = np.random.default_rng(0)
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = to_device(np.zeros(n, np.float32), device)
    vadd(to_device(a, device), to_device(b, device), c, n)
    return {"c": to_numpy(c)}, {"c": a + b}


# -- warp reduction with shuffles -------------------------------------------------------------------------


@flyc.kernel
def warp_sum_kernel(x: Tensor, out: Tensor):
    tid = fx.thread_idx.x
    gid = fx.block_idx.x * fx.block_dim.x + tid
    v = x[gid]
    for k in fx.range_constexpr(5):
        v = v + fx.shuffle_xor(v, 16 >> k)
    if tid % 32 == 0:
        out[gid // 32] = v


@flyc.jit
def warp_sum(x, out, blocks: fx.Int32):
    warp_sum_kernel(x, out).launch(grid=blocks, block=64)


def case_warp_reduction(device):
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, size=4 * 64).astype(np.int32)
    out = to_device(np.zeros(8, np.int32), device)
    warp_sum(to_device(x, device), out, 4)
    return {"out": to_numpy(out)}, {"out": x.reshape(8, 32).sum(axis=1).astype(np.int32)}


# -- divergent loops ----------------------------------------------------------------------------------------


@flyc.kernel
def divergent_kernel(out: Tensor, seeds: Tensor):
    tid = fx.thread_idx.x
    s = seeds[tid]
    acc = fx.Int32(0)
    for i in range(tid % 7):
        if (s + i) % 3 == 0:
            acc = acc + s * i
        else:
            acc = acc ^ (s + i)
    steps = fx.Int32(0)
    while s > 1:  # Collatz steps: a different trip count in every lane
        s = s // 2 if s % 2 == 0 else 3 * s + 1
        steps = steps + 1
    out[tid, 0] = acc
    out[tid, 1] = steps


@flyc.jit
def divergent(out, seeds):
    divergent_kernel(out, seeds).launch(grid=1, block=64)


def _divergent_ref(seeds):
    out = np.zeros((64, 2), np.int64)
    for t, s in enumerate(seeds.tolist()):
        acc = 0
        for i in range(t % 7):
            acc = acc + s * i if (s + i) % 3 == 0 else acc ^ (s + i)
        steps, v = 0, s
        while v > 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            steps += 1
        out[t] = acc, steps
    return out.astype(np.int32)


def case_divergent_loops(device):
    seeds = np.arange(1, 65, dtype=np.int32) * 7 % 61 + 1
    out = to_device(np.zeros((64, 2), np.int32), device)
    divergent(out, to_device(seeds, device))
    return {"out": to_numpy(out)}, {"out": _divergent_ref(seeds)}


# -- strided 2-D views and static layouts -----------------------------------------------------------------


@flyc.kernel
def transpose_kernel(src: Tensor, dst: Tensor, SCALE: Constexpr[int]):
    i, j = fx.block_idx.x, fx.thread_idx.x
    dst[j, i] = src[i, j] * SCALE


@flyc.jit
def transpose(src, dst, SCALE: Constexpr[int]):
    m, n = src.shape.unpack()
    transpose_kernel(src, dst, SCALE).launch(grid=m, block=n)


def case_strided_views(device):
    base = np.arange(12 * 10, dtype=np.int32).reshape(12, 10)
    src = to_device(base, device)[::2, 1:9]  # a non-contiguous view: strides (20, 1), offset 1 element
    dst = to_device(np.zeros((8, 6), np.int32), device)
    transpose(src, dst, 3)
    static_dst = to_device(np.zeros((8, 6), np.int32), device)
    transpose(flyc.from_dlpack(src), flyc.from_dlpack(static_dst), 3)
    want = (base[::2, 1:9] * 3).T
    return {"dst": to_numpy(dst), "static": to_numpy(static_dst)}, {"dst": want, "static": want}


CASES = {
    "vector_add": case_vector_add,
    "warp_reduction": case_warp_reduction,
    "divergent_loops": case_divergent_loops,
    "strided_views": case_strided_views,
}
