"""The preshuffled weight layout of the GEMM, and ``shuffle_weight`` that produces it on the host.

One layout serves every path of the kernel (see docs/gemm.md). It is made of *atoms*: 8 rows of the
weight ``B`` (N×K, K contiguous) by 128 bytes of K — one 1-KB canonical 128-byte-swizzled tile of
Hopper's shared memory (the layout wgmma reads with a ``SWIZZLE_128B`` K-major descriptor and TMA
writes with ``CU_TENSOR_MAP_SWIZZLE_128B``):

* within an atom, row ``r`` keeps its 128 bytes together, cut into eight 16-byte chunks; logical chunk
  ``c`` is stored at chunk position ``c ^ r`` (CuTe's ``Swizzle<3,4,3>`` on byte offsets);
* ``PANEL_N = 64`` rows form a panel; a panel stores its atoms K-block by K-block: all 8 atoms of the
  panel's first 128 bytes of K (8 KB, contiguous), then the next 128 bytes of K, ...;
* panels follow each other (``N / 64`` of them).

In bytes, with ``kb`` the byte offset of an element in its row, the layout algebra writes it as ::

    Sw<3,4,3> o ((8, 8, N/64), (16, 8, Kb/128)) : ((128, 1024, 64*Kb), (1, 16, 8192))

(rows ``(r, atom, panel)``, K bytes ``(byte, chunk, k-block)``, ``Kb = K * elem_bytes``) and in elements
of ``e`` bytes the same with byte strides divided by ``e`` and ``Sw<3, 4 - log2(e), 3>``
(:func:`preshuffle_layout`).

Why this layout:

* **Large M (wgmma)**: a pipeline stage of ``tile_n`` rows by ``tile_k`` is ``tile_n / 64`` contiguous
  pieces of ``64 * tile_k * e`` bytes each, already in the exact byte order wgmma expects in shared
  memory: one 1-D ``cp.async.bulk`` per piece fills it, with no tensor map and no swizzling on the way.
* **Small M (mma.sync, straight from global memory into registers)**: lane ``(g, t) = (lane / 4,
  lane % 4)`` of a warp working on rows ``n0 .. n0+7`` reads logical chunk ``c`` of row ``n0 + g`` — one
  16-byte load at chunk position ``c ^ g`` — and uses its four registers as its B fragments for two
  mma k-steps. Every lane reads 16 contiguous bytes, a warp's 32 loads fall in one 1-KB atom (16 full
  32-byte sectors), and the K order inside the chunk is matched by the A fragments (docs/gemm.md).
"""

from __future__ import annotations

import numpy as np

from flydsl.layout import Swizzle, make_composed_layout, make_layout

__all__ = [
    "PANEL_N",
    "ATOM_ROWS",
    "ATOM_BYTES",
    "CHUNK_BYTES",
    "ELEM_BYTES",
    "elem_bytes_of",
    "check_weight_shape",
    "preshuffle_layout",
    "shuffle_weight",
    "unshuffle_weight",
]

PANEL_N = 64  # rows per panel
ATOM_ROWS = 8  # rows per swizzle atom
ATOM_BYTES = 128  # bytes of K per atom row (the 128-byte swizzle width)
CHUNK_BYTES = 16  # one 128-bit access
ELEM_BYTES = {"fp8": 1, "int8": 1, "bf16": 2, "fp16": 2}


def elem_bytes_of(x) -> int:
    """Bytes per element of a numpy array or torch tensor."""
    if isinstance(x, np.ndarray):
        return x.dtype.itemsize
    return x.element_size()


def check_weight_shape(N: int, K: int, elem_bytes: int) -> None:
    """Raise ``ValueError`` unless an ``N×K`` weight of ``elem_bytes``-byte elements can be preshuffled."""
    if N <= 0 or N % PANEL_N:
        raise ValueError(f"N={N} must be a positive multiple of {PANEL_N} (the preshuffled panel height)")
    if K <= 0 or (K * elem_bytes) % ATOM_BYTES:
        per = ATOM_BYTES // elem_bytes
        raise ValueError(
            f"K={K} must be a positive multiple of {per} for {elem_bytes}-byte elements "
            f"(rows are stored in {ATOM_BYTES}-byte swizzle atoms)"
        )


def preshuffle_layout(N: int, K: int, elem_bytes: int):
    """The preshuffled layout as a function of element coordinates ``(n, k)`` → element offset.

    A :class:`flydsl.layout.ComposedLayout` (``Swizzle o Layout``); its coordinates may be ints,
    traced integers or numpy integer arrays (vectorized evaluation).
    """
    check_weight_shape(N, K, elem_bytes)
    e = elem_bytes
    kb = K * e
    chunk = CHUNK_BYTES // e  # elements per 16-byte chunk
    outer = make_layout(
        ((ATOM_ROWS, PANEL_N // ATOM_ROWS, N // PANEL_N), (chunk, ATOM_BYTES // CHUNK_BYTES, kb // ATOM_BYTES)),
        stride=(
            (ATOM_BYTES // e, ATOM_ROWS * ATOM_BYTES // e, PANEL_N * K),
            (1, chunk, PANEL_N * ATOM_BYTES // e),
        ),
    )
    # xor the 3 bits of the row within the atom (offset bits 7..9 in bytes) into the chunk index (bits 4..6)
    return make_composed_layout(Swizzle(3, (chunk - 1).bit_length(), 3), 0, outer)


def _chunk_perm(r: int) -> np.ndarray:
    return np.arange(ATOM_BYTES // CHUNK_BYTES) ^ r


def _as_bytes(b):
    """``(module, bytes view (N, Kb), restore)`` for a numpy array or torch tensor."""
    if isinstance(b, np.ndarray):
        a = np.ascontiguousarray(b)
        return np, a.view(np.uint8).reshape(a.shape[0], -1), lambda y: y.reshape(-1).view(a.dtype).reshape(a.shape)
    import torch

    t = b.contiguous()
    return torch, t.view(torch.uint8).reshape(t.shape[0], -1), lambda y: y.reshape(-1).view(t.dtype).reshape(t.shape)


def _permute(mod, x, axes):
    return x.transpose(axes) if mod is np else x.permute(*axes)


def _index(mod, x, perm):
    return x[..., perm, :] if mod is np else x[..., mod.as_tensor(perm, device=x.device), :]


def shuffle_weight(b):
    """``B`` (N×K, row-major, any 1- or 2-byte dtype; numpy array or torch tensor) rearranged into the
    preshuffled layout. Returns the same type, dtype and shape (``N×K``), on the same device.

    Raises:
        ValueError: ``N`` not a multiple of 64, or ``K`` not a multiple of 128 bytes.
    """
    if b.ndim != 2:
        raise ValueError(f"shuffle_weight takes a 2-D (N, K) weight, got shape {tuple(b.shape)}")
    N, K = b.shape
    check_weight_shape(N, K, elem_bytes_of(b))
    mod, x, restore = _as_bytes(b)
    kb = x.shape[1]
    # [panel, atom, r, kblock, chunk, byte]
    x = x.reshape(N // PANEL_N, PANEL_N // ATOM_ROWS, ATOM_ROWS, kb // ATOM_BYTES, 8, CHUNK_BYTES)
    # position q of row r holds logical chunk q ^ r (the xor is an involution)
    rows = [_index(mod, x[:, :, r], _chunk_perm(r)) for r in range(ATOM_ROWS)]
    x = mod.stack(rows, 2)
    # -> [panel, kblock, atom, r, chunk, byte]
    y = _permute(mod, x, (0, 3, 1, 2, 4, 5))
    y = np.ascontiguousarray(y) if mod is np else y.contiguous()
    return restore(y)


def unshuffle_weight(bs):
    """The inverse of :func:`shuffle_weight` (for debugging and tests)."""
    N, K = bs.shape
    check_weight_shape(N, K, elem_bytes_of(bs))
    mod, x, restore = _as_bytes(bs)
    kb = x.shape[1]
    x = x.reshape(N // PANEL_N, kb // ATOM_BYTES, PANEL_N // ATOM_ROWS, ATOM_ROWS, 8, CHUNK_BYTES)
    x = _permute(mod, x, (0, 2, 3, 1, 4, 5))  # [panel, atom, r, kblock, chunk, byte]
    rows = [_index(mod, x[:, :, r], _chunk_perm(r)) for r in range(ATOM_ROWS)]
    y = mod.stack(rows, 2)
    y = np.ascontiguousarray(y) if mod is np else y.contiguous()
    return restore(y)
