"""A tiled, vectorized, predicated copy: ``B = A`` for an (M, N) float32 matrix of any size.

* ``make_tiled_copy_tv(atom, thr_layout, val_layout)``: 8 x 16 threads (row-major), each moving a 1 x 4
  block of values, cover an 8 x 64 tile; every thread's 4 values are one ``UniversalCopy128b`` call —
  one 128-bit load and one 128-bit store (``ld.global.v4`` / ``st.global.v4`` in the PTX).
* ``flat_divide(A, tile)[None, None, bx, by]`` is block (bx, by)'s tile; ``partition_S/partition_D`` give
  each thread its ``((atom values, rest), rest_m, rest_n)`` view.
* M x N need not be a multiple of the tile: an identity tensor gives every atom call its coordinate,
  ``fx.elem_less(coord, (M, N))`` its predicate, and predicated-off calls neither read nor write.

Runs on the GPU when one is present, else on the CPU interpreter: ``python examples/02_tiled_copy.py``.
"""

from __future__ import annotations

import numpy as np

import flydsl.compiler as flyc
import flydsl.expr as fx

THREADS = (8, 16)  # threads per block: 8 rows x 16 columns
VALUES = (1, 4)  # values per thread: 4 consecutive floats of a row (128 bits)


@flyc.kernel
def copy_kernel(A: fx.Tensor, B: fx.Tensor, tiled: fx.TiledCopy):
    tid = fx.thread_idx.x
    bx, by = fx.block_idx.x, fx.block_idx.y
    M, N = A.shape.unpack()
    tile = tiled.tile_mn

    gA = fx.flat_divide(A, tile)[None, None, bx, by]
    gB = fx.flat_divide(B, tile)[None, None, bx, by]
    cA = fx.flat_divide(fx.make_identity_tensor((M, N)), tile)[None, None, bx, by]

    thr = tiled.get_slice(tid)
    src, dst = thr.partition_S(gA), thr.partition_D(gB)
    crd = thr.partition_S(cA)[(0, None), None, None]  # the first coordinate of each atom call

    pred = fx.make_fragment_like(crd, dtype=fx.Boolean)
    for i in fx.range_constexpr(fx.size(pred)):
        pred[i] = fx.elem_less(crd[i], (M, N))

    regs = fx.make_fragment_like(src)
    fx.copy(tiled, src, regs, pred=pred)
    fx.copy(tiled, regs, dst, pred=pred)


@flyc.jit
def tiled_copy(A: fx.Tensor, B: fx.Tensor):
    atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
    tiled = fx.make_tiled_copy_tv(atom, fx.make_ordered_layout(THREADS, (1, 0)), fx.make_layout(VALUES))
    tm, tn = tiled.tile_mn.unpack()
    M, N = A.shape.unpack()
    copy_kernel(A, B, tiled).launch(grid=((M + tm - 1) // tm, (N + tn - 1) // tn, 1), block=(tiled.num_threads, 1, 1))


def describe() -> None:
    """Print the thread-value layout and thread 0's partition of one tile (layout algebra only)."""
    atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
    tiled = fx.make_tiled_copy_tv(atom, fx.make_ordered_layout(THREADS, (1, 0)), fx.make_layout(VALUES))
    print(f"tile_mn = {tiled.tile_mn.unpack()}, layout_tv = {tiled.layout_tv}")
    coords = fx.make_identity_tensor(tuple(tiled.tile_mn))
    part = tiled.get_slice(17).partition_S(coords)
    print(f"thread 17 moves {part.layout} of the tile: {[tuple(part[v]) for v in range(4)]}")


def main() -> bool:
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    describe()
    M, N = 100, 1000
    a = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    if gpu:
        A, B = torch.from_numpy(a).cuda(), torch.zeros(M, N, dtype=torch.float32, device="cuda")
        tiled_copy(A, B)
        torch.cuda.synchronize()
        got = B.cpu().numpy()
    else:
        got = np.zeros_like(a)
        tiled_copy(a, got)
    ok = np.array_equal(got, a)
    print(f"tiled copy {M}x{N} on the {'GPU' if gpu else 'CPU interpreter'}: {'PASS' if ok else 'FAIL'}")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
