"""Tiled matrix transpose through swizzled shared memory: ``B = A.T`` for an (M, N) float32 matrix.

Each block moves one 64 x 64 tile with 256 threads:

1. global -> registers -> shared: a tiled copy of 16 x 16 threads, each reading 4 consecutive floats of
   a row with ONE 128-bit load (``UniversalCopy128b`` -> ``ld.global.v4``) and writing them with one
   128-bit shared store;
2. shared -> registers -> global: a second tiled copy over the transposed view of the same shared
   memory (32 x 8 threads), each gathering 4 consecutive elements of a column (4 scalar shared loads)
   and writing them as one 128-bit store of a row of B (``st.global.v4``).

The shared tile is laid out ``Swizzle(3, 2, 6) o (64,64):(64,1)``: 4-float groups stay contiguous (the
128-bit stores of phase 1), and bits 2-4 of the row index are xor-ed into the group index so that the
column reads of phase 2 hit 32 different banks. Shapes that are not multiples of 64 are handled with
per-atom predicates from an identity (coordinate) tensor.

Runs on the GPU when one is present, else on the CPU interpreter: ``python examples/03_transpose.py``.
"""

from __future__ import annotations

import numpy as np

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Constexpr

TILE = 64
THREADS = 256
SWIZZLE = fx.Swizzle(3, 2, 6)


def _predicate(thr_copy, coords, bound):
    """One Boolean per atom call: is the call's first coordinate inside ``bound``?"""
    crd = thr_copy.partition_S(coords)[(0, None), None, None]
    pred = fx.make_fragment_like(crd, dtype=fx.Boolean)
    for i in fx.range_constexpr(fx.size(pred)):
        pred[i] = fx.elem_less(crd[i], bound)
    return pred


@flyc.kernel
def transpose_kernel(A: fx.Tensor, B: fx.Tensor, ragged: Constexpr[bool]):
    tid = fx.thread_idx.x
    bm, bn = fx.block_idx.x, fx.block_idx.y
    M, N = A.shape.unpack()
    gA = fx.flat_divide(A, (TILE, TILE))[None, None, bm, bn]  # (m, n) tile of A
    gB = fx.flat_divide(B, (TILE, TILE))[None, None, bn, bm]  # (n, m) tile of B

    smem = fx.SharedAllocator().allocate(fx.Array[fx.Float32, TILE * TILE, 16]).peek()
    sA = smem.view(fx.make_composed_layout(SWIZZLE, 0, fx.make_layout((TILE, TILE), (TILE, 1))))  # (m, n)
    sB = smem.view(fx.make_composed_layout(SWIZZLE, 0, fx.make_layout((TILE, TILE), (1, TILE))))  # (n, m)

    vec = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
    scalar = fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32)

    # phase 1: rows of A -> shared memory
    load = fx.make_tiled_copy_tv(vec, fx.make_ordered_layout((16, 16), (1, 0)), fx.make_layout((1, 4)))
    t1 = load.get_slice(tid)
    src, dst = t1.partition_S(gA), t1.partition_D(sA)
    regs = fx.make_fragment_like(src)
    if fx.const_expr(ragged):
        cA = fx.flat_divide(fx.make_identity_tensor((M, N)), (TILE, TILE))[None, None, bm, bn]
        fx.copy(vec, src, regs, pred=_predicate(t1, cA, (M, N)))
    else:
        fx.copy(vec, src, regs)
    fx.copy(vec, regs, dst)
    fx.barrier()

    # phase 2: columns of the tile (rows of B) -> global memory
    store = fx.make_tiled_copy_tv(vec, fx.make_ordered_layout((32, 8), (1, 0)), fx.make_layout((1, 4)))
    t2 = store.get_slice(tid)
    src, dst = t2.partition_S(sB), t2.partition_D(gB)
    regs = fx.make_fragment_like(dst)
    fx.copy(scalar, src, regs)
    if fx.const_expr(ragged):
        cB = fx.flat_divide(fx.make_identity_tensor((N, M)), (TILE, TILE))[None, None, bn, bm]
        fx.copy(vec, regs, dst, pred=_predicate(t2, cB, (N, M)))
    else:
        fx.copy(vec, regs, dst)


@flyc.jit
def transpose_launch(A: fx.Tensor, B: fx.Tensor, ragged: Constexpr[bool]):
    M, N = A.shape.unpack()
    grid = ((M + TILE - 1) // TILE, (N + TILE - 1) // TILE, 1)
    transpose_kernel(A, B, ragged).launch(grid=grid, block=(THREADS, 1, 1))


def transpose(A, B) -> None:
    """``B[:] = A.T`` for row-major float32 matrices (torch tensors or numpy arrays); rows of A and B must
    start 16-byte aligned (N and M multiples of 4)."""
    M, N = A.shape
    if M % 4 or N % 4:
        raise ValueError(f"transpose: M and N must be multiples of 4 (128-bit rows), got {M} x {N}")
    transpose_launch(A, B, bool(M % TILE or N % TILE))


def main() -> bool:
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    ok = True
    for M, N in ((256, 192), (100, 132)):
        a = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
        if gpu:
            A = torch.from_numpy(a).cuda()
            B = torch.zeros(N, M, dtype=torch.float32, device="cuda")
            transpose(A, B)
            torch.cuda.synchronize()
            got = B.cpu().numpy()
        else:
            got = np.zeros((N, M), np.float32)
            transpose(a, got)
        good = np.array_equal(got, a.T)
        ok &= good
        print(f"transpose {M}x{N} on the {'GPU' if gpu else 'CPU interpreter'}: {'PASS' if good else 'FAIL'}")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
