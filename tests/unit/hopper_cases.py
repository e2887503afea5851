"""Hopper test programs (TMA, mbarriers, wgmma) written once and run on either device.

Each ``run_*`` function takes ``device`` ("cpu": numpy arrays on the interpreter; "cuda": torch tensors on
the GPU), runs one jit launcher and returns numpy results. tests/unit/test_hopper_*.py compare the CPU
results with numpy; tests/gpu/test_hopper_gpu.py compares the GPU with the CPU bit for bit (TMA, integer
wgmma) or within the documented f32 tolerance (float wgmma).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr import nvvm
from flydsl.expr.typing import Constexpr, Tensor

NP = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
      "i8": np.int8, "f32": np.float32, "i32": np.int32}  # fmt: skip
FX = {"bf16": fx.BFloat16, "f16": fx.Float16, "e4m3": fx.Float8E4M3FN, "e5m2": fx.Float8E5M2, "i8": fx.Int8,
      "f32": fx.Float32, "i32": fx.Int32}  # fmt: skip


def to_device(a: np.ndarray, device: str):
    """``a`` on ``device`` (numpy stays numpy on the CPU; torch CUDA tensor of the same dtype otherwise)."""
    if device == "cpu":
        return a
    import torch

    tdt = {
        np.dtype(ml_dtypes.bfloat16): torch.bfloat16, np.dtype(np.float16): torch.float16,
        np.dtype(ml_dtypes.float8_e4m3fn): torch.float8_e4m3fn, np.dtype(ml_dtypes.float8_e5m2): torch.float8_e5m2,
        np.dtype(np.int8): torch.int8, np.dtype(np.float32): torch.float32, np.dtype(np.int32): torch.int32,
        np.dtype(np.uint8): torch.uint8,
    }[a.dtype]  # fmt: skip
    carrier = {1: (np.uint8, torch.uint8), 2: (np.int16, torch.int16), 4: (np.int32, torch.int32)}
    npc, tc = carrier[a.dtype.itemsize]
    t = torch.from_numpy(np.ascontiguousarray(a).view(npc))
    assert t.dtype == tc
    return t.cuda().view(tdt)


def to_numpy(t, like: np.dtype) -> np.ndarray:
    if isinstance(t, np.ndarray):
        return t
    import torch

    carrier = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[np.dtype(like).itemsize]
    return t.detach().view(carrier).cpu().numpy().view(like)


# -- TMA: load a box (zero-filled outside), dump the raw shared bytes, store it back with TMA --------------


@flyc.kernel
def tma_roundtrip_kernel(
    tin: nvvm.TmaAtom, tout: nvvm.TmaAtom, raw: Tensor, c0: fx.Int32, c1: fx.Int32, s0: fx.Int32, s1: fx.Int32,
    nbytes: Constexpr[int], layout_key: Constexpr[tuple],
):  # fmt: skip
    tid = fx.thread_idx.x
    dt = tin.dtype
    buf = nvvm.align_shared(fx.SharedAllocator(static=False).allocate(nbytes + 16 + 1024).ptr, 1024)
    bar = (buf + nbytes).recast(fx.Int64)
    s = fx.make_tensor(buf.recast(dt), tin.smem_layout)
    if tid == 0:
        nvvm.mbarrier_init(bar, 1)
        nvvm.fence_mbarrier_init()
    fx.barrier()
    if tid == 0:
        nvvm.mbarrier_arrive_expect_tx(bar, tin.tile_bytes)
        fx.copy(tin, tin.at(c0, c1), s, mbar=bar)
    nvvm.mbarrier_wait(bar, 0)
    for i in range(tid, nbytes // 4, fx.block_dim.x):
        raw[i] = buf.recast(fx.Int32)[i]  # the bytes relative to the 1024-aligned buffer
    nvvm.fence_proxy_async()
    fx.barrier()
    if tid == 0:
        nvvm.tma_store(tout, s, (s0, s1))
        nvvm.bulk_commit_group()
        nvvm.bulk_wait_group(0)


@flyc.jit
def tma_roundtrip_launch(
    src: Tensor, dst: Tensor, raw: Tensor, c0: fx.Int32, c1: fx.Int32, s0: fx.Int32, s1: fx.Int32,
    tile: Constexpr[tuple], swizzle: Constexpr[int], major: Constexpr[str],
):  # fmt: skip
    lay = nvvm.make_smem_layout_gmma(src.dtype, tile, major=major, swizzle=swizzle)
    tin = nvvm.make_tma_atom(src, lay)
    tout = nvvm.make_tma_atom(dst, lay, store=True)
    nbytes = tile[0] * tile[1] * src.dtype.width // 8
    tma_roundtrip_kernel(tin, tout, raw, c0, c1, s0, s1, nbytes, (tile, swizzle, major)).launch(grid=1, block=128)


def store_coords(coord) -> tuple:
    """Where :func:`run_tma_roundtrip` stores the tile loaded at ``coord`` by default: the same place, moved
    to 0 in the modes where ``coord`` is negative (a TMA load may start before the tensor, a store not)."""
    return tuple(max(int(c), 0) for c in coord)


def run_tma_roundtrip(device, dtype, shape, tile, swizzle, major, coord, *, transpose=False, store_at=None):
    """Load the tile at ``coord`` of an ``shape`` matrix, store it at ``store_at`` (default
    :func:`store_coords`) into a copy filled with -1; return (raw shared bytes after the load, that copy,
    the matrix). ``transpose``: the matrix is the transposed view of a row-major array (its mode 0 has
    unit stride)."""
    store_at = store_coords(coord) if store_at is None else store_at
    rng = np.random.default_rng(1)
    base_shape = shape[::-1] if transpose else shape
    a = (rng.integers(1, 120, size=base_shape)).astype(NP[dtype])
    out = np.full(base_shape, -1, NP[dtype])
    nbytes = tile[0] * tile[1] * np.dtype(NP[dtype]).itemsize
    raw = np.zeros(nbytes // 4, np.int32)
    da, do, dr = to_device(a, device), to_device(out, device), to_device(raw, device)
    va, vo = (da.T, do.T) if transpose else (da, do)
    crd = (int(coord[0]), int(coord[1]), int(store_at[0]), int(store_at[1]))
    tma_roundtrip_launch(va, vo, dr, *crd, tuple(tile), swizzle, major)
    _sync(device)
    return to_numpy(dr, np.int32), to_numpy(do, NP[dtype]), a


def _sync(device):
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


# -- wgmma: one 64 x N x K tile, operands loaded by TMA --------------------------------------------------


@flyc.kernel
def wgmma_kernel(
    ta: nvvm.TmaAtom, tb: nvvm.TmaAtom, A: Tensor, C: Tensor, cfg: Constexpr[tuple],
):  # fmt: skip
    ab, n, k_tile, a_major, b_major, a_src, nk = cfg
    dt = FX[ab]
    acc_t = fx.Int32 if ab == "i8" else fx.Float32
    tid = fx.thread_idx.x
    esz = dt.width // 8
    a_bytes = (64 * k_tile * esz + 1023) // 1024 * 1024
    b_bytes = n * k_tile * esz
    base = nvvm.align_shared(fx.SharedAllocator(static=False).allocate(a_bytes + b_bytes + 16 + 1024).ptr, 1024)
    sA = fx.make_tensor(base.recast(dt), ta.smem_layout)
    sB = fx.make_tensor((base + a_bytes).recast(dt), tb.smem_layout)
    bar = (base + a_bytes + b_bytes + (-b_bytes) % 8).recast(fx.Int64)
    if tid == 0:
        nvvm.mbarrier_init(bar, 1)
        nvvm.fence_mbarrier_init()
    fx.barrier()
    if tid == 0:
        nvvm.mbarrier_arrive_expect_tx(bar, ta.tile_bytes + tb.tile_bytes)
        nvvm.tma_load(ta, sA, bar, (0, 0))
        nvvm.tma_load(tb, sB, bar, (0, 0))
    nvvm.mbarrier_wait(bar, 0)
    op = nvvm.WgmmaOp(dt, acc_t, n, a_major=a_major, b_major=b_major, a_src=a_src)
    kin = op.shape_mnk[2]
    mma = fx.make_tiled_mma(fx.make_mma_atom(op))
    thr = mma.get_slice(tid)
    acc = fx.full(n // 2, 0, acc_t)
    a_k = fx.zipped_divide(sA, (64, kin))
    b_k = fx.zipped_divide(sB, (n, kin))
    nvvm.wgmma_fence()
    for kk in fx.range_constexpr(nk):
        if fx.const_expr(a_src == "rmem"):
            frag = thr.partition_A(fx.zipped_divide(A, (64, kin))[None, (0, kk)])
            a_op = fx.Vector.from_elements([frag[i] for i in range(fx.size(frag))], dt)
        else:
            a_op = a_k[None, (0, kk)]
        acc = nvvm.wgmma(acc, a_op, b_k[None, (0, kk)], op=op, accumulate=kk > 0)
    nvvm.wgmma_commit_group()
    acc = nvvm.wgmma_wait_group(0, acc)
    dst = thr.partition_C(C)
    for i in fx.range_constexpr(n // 2):
        dst[i] = acc[i]


@flyc.jit
def wgmma_launch(A: Tensor, B: Tensor, C: Tensor, cfg: Constexpr[tuple], swz: Constexpr[tuple]):
    ab, n, k_tile, a_major, b_major, a_src, nk = cfg
    dt = A.dtype
    ta = nvvm.make_tma_atom(A, nvvm.make_smem_layout_gmma(dt, (64, k_tile), major=a_major, swizzle=swz[0]))
    tb = nvvm.make_tma_atom(B, nvvm.make_smem_layout_gmma(dt, (n, k_tile), major=b_major, swizzle=swz[1]))
    wgmma_kernel(ta, tb, A, C, cfg).launch(grid=1, block=128)


def wgmma_k(ab: str) -> int:
    return 16 if ab in ("bf16", "f16") else 32


def wgmma_inputs(ab, n, swizzle=(128, 128), k_tile=None):
    """The operands :func:`run_wgmma` multiplies: A (64 × k_tile) and B (n × k_tile), k_tile one swizzle
    row by default (at least one instruction's K)."""
    e = np.dtype(NP[ab]).itemsize
    kin = wgmma_k(ab)
    if k_tile is None:
        k_tile = max(kin, *(s // e for s in swizzle if s), 16 // e * 2)
        k_tile = max(k_tile, kin)
    rng = np.random.default_rng(n + k_tile)
    if ab == "i8":
        a = rng.integers(-128, 128, (64, k_tile)).astype(np.int8)
        b = rng.integers(-128, 128, (n, k_tile)).astype(np.int8)
    else:
        a = (rng.standard_normal((64, k_tile)) * 2).astype(NP[ab])
        b = (rng.standard_normal((n, k_tile)) * 2).astype(NP[ab])
    return a, b


def run_wgmma(device, ab, n, *, a_major="K", b_major="K", swizzle=(128, 128), a_src="smem", k_tile=None):
    """``C = A · Bᵀ`` for a 64 x n x k_tile tile (:func:`wgmma_inputs`); returns (C, A, B)."""
    a, b = wgmma_inputs(ab, n, swizzle, k_tile)
    k_tile = a.shape[1]
    kin = wgmma_k(ab)
    c = np.full((64, n), -7, np.int32 if ab == "i8" else np.float32)
    da = to_device(np.ascontiguousarray(a.T) if a_major == "MN" else a, device)
    db = to_device(np.ascontiguousarray(b.T) if b_major == "MN" else b, device)
    dc = to_device(c, device)
    cfg = (ab, n, k_tile, a_major, b_major, a_src, k_tile // kin)
    wgmma_launch(da.T if a_major == "MN" else da, db.T if b_major == "MN" else db, dc, cfg, tuple(swizzle))
    _sync(device)
    return to_numpy(dc, c.dtype), a, b


def fp8_mm(a: np.ndarray, b: np.ndarray, ab: str) -> np.ndarray:
    """``A · Bᵀ`` accumulated in f32 by chained k32 fp8 wgmmas as the H200 does it (the interpreter's model)."""
    from flydsl.interp.tc_numerics import block_fma

    a64, b64 = a.astype(np.float64)[:, None, :], b.astype(np.float64)[None, :, :]
    return block_fma(np.zeros((a.shape[0], b.shape[0]), np.float32), a64, b64, ab)


def reference_mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == np.int8:
        return (a.astype(np.int64) @ b.astype(np.int64).T).astype(np.int32)
    return a.astype(np.float64) @ b.astype(np.float64).T
