"""Shapes and tolerances shared by the softmax, RMSNorm and LayerNorm tests."""

from __future__ import annotations

import numpy as np
from _arrays import rand, randn, to_device, to_numpy

ATOL = {"f32": 1e-5, "f16": 1e-2, "bf16": 2e-2}  # FlyDSL's tolerances
# GPU vs interpreter: the GPU's approximate ex2/rsqrt and fused multiply-adds move f32 results by a few ulp,
# which can flip the rounding of an f16/bf16 output by one ulp (at most 2**-10 / 2**-7 of its magnitude)
PARITY_RTOL = {"f32": 1e-5, "f16": 2**-10, "bf16": 2**-7}

# onchip chunks of one warp, 8 values each, 2 kept in registers: 2500 f32 makes 5 chunks, the last ragged
SMALL_CHUNKS = {"register_limit": 0, "onchip_threads": 64, "elems_per_thread": 8, "kept_values": 16}
# (M, N, dtype, plan options): the interpreter runs every block of the grid, so rows stay few.
CPU_CASES = [
    (3, 1, "f32", {}),  # one element per row
    (4, 3, "f16", {}),  # odd N: scalar accesses
    (5, 127, "bf16", {}),
    (2, 1000, "f32", {}),  # 128-bit accesses, ragged last vector slot
    (7, 1000, "bf16", {}),
    (3, 1002, "f16", {}),  # N % 8 == 2: 32-bit accesses
    (37, 64, "bf16", {}),  # 128 rows share a block; 37 rows leave most of it idle
    (9, 2000, "f32", {"block_threads": 512}),  # rows of 2-4 warps, several rows to a block
    (2, 4096, "bf16", {}),
    (2, 20000, "f32", {}),  # longer than the register path: onchip (one read), ragged last chunk
    (3, 3000, "f32", {"register_limit": 0, "chunk_threads": 32, "long_rows": "two_pass"}),  # 3 chunks of a warp
    (2, 16392, "bf16", {"long_rows": "two_pass"}),  # the last chunk holds one vector: most threads have none
    (2, 16392, "bf16", {}),  # onchip: both chunks in registers, the second holding one valid vector
    # onchip with small chunks: 2 kept in registers, 3 staged in shared memory, the last one ragged
    (3, 2500, "f32", {"register_limit": 0, "onchip_threads": 64, "elems_per_thread": 8, "kept_values": 16}),
    # balanced chunks: 625 accesses of 64 threads in 5 chunks of 2 each (640 slots), not 3 of 4 (768)
    (3, 2500, "f32", {**SMALL_CHUNKS, "elems_per_thread": 16, "balance_chunks": True}),
    (45, 96, "bf16", {"row_iters": 3}),  # several row groups per block, the last block partly empty
    (3, 8192, "bf16", {"row_iters": 2}),  # groups of one row, two per block: the last group is past the end
    # a row over a thread block cluster, partials through distributed shared memory: 4 blocks of one warp
    (3, 2048, "f32", {"long_rows": "cluster", "cluster_cols": 512}),
    (2, 20000, "bf16", {"long_rows": "cluster"}),  # 2 blocks of 16 warps, the second slice ragged
    (2, 3001, "f32", {"long_rows": "cluster", "cluster_cols": 1024}),  # scalar accesses, 4 blocks, ragged
    (2, 65536, "f32", {"long_rows": "cluster", "cluster_cols": 8192}),  # 8 x 16 warps: 4 partials per lane
    # persistent grids (blocks looping over rows, the next row prefetched into shared memory by cp.async),
    # sized for fewer SMs than rows so that every block loops: a ragged in-register row, 2 blocks for 7 rows;
    # onchip, 2 kept and 3 staged chunks all prefetched (two alternating slot sets), 2 blocks for 5 rows;
    # 64K f32: only the first chunk prefetched (shared memory), one block for 3 rows
    (7, 1000, "bf16", {"persist": 2, "sms": 1, "block_threads": 64}),
    (5, 2500, "f32", {**SMALL_CHUNKS, "persist": 1, "sms": 2}),
    (3, 65536, "f32", {"persist": 1, "sms": 1}),
    # early prefetch: every slot in two sets, the next row's copies started before this row's stats
    (6, 2500, "f32", {**SMALL_CHUNKS, "persist": 1, "sms": 2, "prefetch_early": True}),
    # the weights (RMSNorm's W, LayerNorm's W and B) held in shared memory by each persistent block
    (7, 1000, "bf16", {"persist": 2, "sms": 1, "block_threads": 64, "weights_smem": True}),
]
CPU_IDS = [f"{m}x{n}-{d}" + ("-" + "-".join(map(str, p.values())) if p else "") for m, n, d, p in CPU_CASES]
# GPU against the interpreter: the short cases, the onchip plan with staged chunks, the row groups, the
# cluster plans and the persistent ones
PARITY_CASES = CPU_CASES[:9] + CPU_CASES[-11:]
PARITY_IDS = CPU_IDS[:9] + CPU_IDS[-11:]

GPU_CASES = [
    (5, 1, "f32"),
    (7, 3, "bf16"),
    (129, 127, "f16"),
    (1000, 1000, "bf16"),
    (3, 1001, "f32"),
    (4096, 8192, "bf16"),
    (300, 8192, "f32"),
    (1024, 4096, "f16"),
    (64, 16384, "bf16"),
    (16, 32768, "bf16"),  # onchip: both chunks in registers
    (7, 65536, "f32"),
    (20000, 512, "bf16"),  # many rows, many rows per block
    (3, 100003, "f16"),  # long odd rows
]
GPU_IDS = [f"{m}x{n}-{d}" for m, n, d in GPU_CASES]


def check_close(got: np.ndarray, want: np.ndarray, atol: float) -> None:
    """Every element written (no NaN poison left) and within ``atol`` of the float64 reference."""
    got = got.astype(np.float64)
    assert not np.isnan(got).any(), "output elements left unwritten (NaN poison) or NaN results"
    err = np.abs(got - want).max()
    assert err <= atol, f"max abs error {err:.3e} > {atol}"


def check_parity(gpu: np.ndarray, cpu: np.ndarray, dtype: str) -> None:
    np.testing.assert_allclose(gpu.astype(np.float64), cpu.astype(np.float64), rtol=PARITY_RTOL[dtype], atol=1e-6)


def reference(kernel: str, x, r, w, b) -> np.ndarray:
    """``kernel``'s rows in float64 (``benchmarks.cases.norm_sweep.KERNELS`` names; the fused add: ``r`` is the
    rounded residual sum it normalizes)."""
    x = x.astype(np.float64)
    if kernel == "softmax":
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    w = w.astype(np.float64)
    if kernel == "layernorm":
        mean = x.mean(1, keepdims=True)
        return (x - mean) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * w + b.astype(np.float64)
    if kernel == "rmsnorm+add":
        x = r.astype(np.float64)
    return x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * w


def kernel_args(kernel: str, M: int, n: int, dtype: str, device: str = "cpu"):
    """``((x, r, w, b), Y, R_out, args)``: seeded inputs (numpy), NaN-filled outputs and the launcher's arguments of
    ``kernel`` (``benchmarks.cases.norm_sweep.KERNELS`` names) on ``device``."""
    x, r = randn((M, n), dtype, seed=1, scale=2.0), randn((M, n), dtype, seed=2)
    w, b = rand((n,), dtype, seed=3) + x.dtype.type(0.5), randn((n,), dtype, seed=4)
    X, R, W, B, Y, RO = (to_device(a, device) for a in (x, r, w, b, np.full_like(x, np.nan), np.full_like(x, np.nan)))
    args = {"softmax": (X, Y, M), "rmsnorm": (X, W, Y, M), "rmsnorm+add": (X, R, W, Y, RO, M),
            "layernorm": (X, W, B, Y, M)}[kernel]  # fmt: skip
    return (x, r, w, b), Y, RO, args


def check_rows(kernel: str, inputs, y, ro, tol: float) -> None:
    """``y`` (and the fused add's ``ro``: exactly the rounded sum) against :func:`reference`, relative to its
    largest value."""
    x, r, w, b = inputs
    if kernel == "rmsnorm+add":
        r = (x.astype(np.float32) + r.astype(np.float32)).astype(x.dtype)
        np.testing.assert_array_equal(to_numpy(ro), r)
    want = reference(kernel, x, r, w, b)
    err = np.abs(to_numpy(y).astype(np.float64) - want).max() / np.abs(want).max()
    assert err < tol, (kernel, err)
