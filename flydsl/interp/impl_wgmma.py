"""``wgmma.mma_async`` on the interpreter: operands read through their shared-memory matrix descriptors
exactly as the PTX ISA defines them, and fragments owned per lane as the hardware does.

Descriptor (64 bits): start address >> 4 in bits 0-13, leading-dimension byte offset (LBO) >> 4 in
16-29, stride-dimension byte offset (SBO) >> 4 in 32-45, base offset in 49-51, layout in 62-63
(0 interleave, 1: 128-byte, 2: 64-byte, 3: 32-byte swizzle). With ``e`` the element size, ``T = 16/e``
elements per 16-byte unit and ``W`` units per swizzle row (1, 2, 4, 8), element (row ``r`` of the
M or N extent, ``k``) of an operand lives at (bytes, before the swizzle):

=========================  =====================================================================
K-major, interleave        ``start + (r%8)·16 + (r/8)·SBO + ⌊k/T⌋·LBO + (k%T)·e``
K-major, swizzled          ``start + (r%8)·16W + (r/8)·SBO + k·e``
MN-major, interleave       ``start + (r%T)·e + ⌊r/T⌋·SBO + (k%8)·16 + ⌊k/8⌋·LBO``
MN-major, swizzled         ``start + (r%T)·e + ⌊r/T⌋%W·16 + ⌊r/(TW)⌋·LBO + (k%8)·16W + ⌊k/8⌋·SBO``
=========================  =====================================================================

and the swizzle xors bits [4, 4+B) of the absolute shared address with bits [7, 7+B) (W = 2^B) —
the pattern TMA writes. A descriptor whose base-offset field is not 0 is rejected (not modelled).

Fragments (PTX ISA "wgmma register fragments"): warp ``w`` of the warpgroup owns rows 16(w%4)…+15;
lane ``l`` (group ``g = l/4``, ``t = l%4``) holds accumulator element ``i`` at row ``g + 8·(⌊i/2⌋%2)``,
column ``8·⌊i/4⌋ + 2t + i%2``; an A fragment in registers holds, for 16-bit types, element ``j`` (of 8)
at row ``g + 8·(⌊j/2⌋%2)``, column ``2t + j%2 + 8·⌊j/4⌋``, and for 8-bit types byte ``j`` (of 16) at
row ``g + 8·(⌊j/4⌋%2)``, column ``4t + j%4 + 16·⌊j/8⌋``.

Arithmetic: products are exact. fp8 (e4m3/e5m2) accumulates as the Hopper fp8 tensor core does — the K
products and the accumulator aligned to the largest exponent, each cut towards zero to 13 fraction bits
below it, added, and the sum cut to 13 fraction bits (:mod:`flydsl.interp.tc_numerics`; bit for bit the
H200's results in every value round 1 printed). bf16/f16: the sum of the K products and the accumulator
is formed in float64 and rounded once to f32 (the tensor core's internal order and truncation differ:
compare with the tolerance docs/interpreter.md gives); s8 accumulates exactly and wraps to 32 bits.
"""

from __future__ import annotations

import numpy as np

from ..ir import Op, numpy_dtype
from ..ir.types import FloatType, IntegerType
from .impl_tma import swizzle_bytes
from .machine import Compiler, impl
from .tc_numerics import HOPPER_FP8, block_fma

__all__ = ["decode_desc", "operand_addresses", "read_operand", "acc_rows_cols", "a_frag_rows_cols"]

_SWIZZLE_OF_LAYOUT = {0: 0, 1: 128, 2: 64, 3: 32}


def decode_desc(desc: int) -> tuple[int, int, int, int, int]:
    """``(start, lbo, sbo, base_offset, swizzle bytes)`` of a 64-bit wgmma matrix descriptor."""
    d = int(desc) & ((1 << 64) - 1)
    start = (d & 0x3FFF) << 4
    lbo = ((d >> 16) & 0x3FFF) << 4
    sbo = ((d >> 32) & 0x3FFF) << 4
    base = (d >> 49) & 0x7
    return start, lbo, sbo, base, _SWIZZLE_OF_LAYOUT[(d >> 62) & 0x3]


def operand_addresses(desc: int, rows: int, k: int, esize: int, mn_major: bool) -> np.ndarray:
    """Absolute shared byte address of each element ``(r, kk)`` of a ``rows × k`` operand (int64)."""
    start, lbo, sbo, _, swz = decode_desc(desc)
    T = 16 // esize
    W = max(1, swz // 16)
    r = np.arange(rows, dtype=np.int64)[:, None]
    kk = np.arange(k, dtype=np.int64)[None, :]
    if not mn_major:
        if swz == 0:
            a = start + (r % 8) * 16 + (r // 8) * sbo + (kk // T) * lbo + (kk % T) * esize
        else:
            a = start + (r % 8) * 16 * W + (r // 8) * sbo + kk * esize
    elif swz == 0:
        a = start + (r % T) * esize + (r // T) * sbo + (kk % 8) * 16 + (kk // 8) * lbo
    else:
        a = start + (r % T) * esize + (r // T) % W * 16 + r // (T * W) * lbo + (kk % 8) * 16 * W + (kk // 8) * sbo
    return swizzle_bytes(a, swz)


def read_operand(smem: np.ndarray, addrs: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The elements at ``addrs`` (their first bytes) of the block's shared bytes, as ``dtype``."""
    e = dtype.itemsize
    raw = smem[addrs[..., None] + np.arange(e, dtype=np.int64)]
    return np.ascontiguousarray(raw).view(dtype).reshape(addrs.shape)


def acc_rows_cols(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row (0-15 within the warp's 16) and column of accumulator element ``i`` of lane ``l``: ``(32, n/2)``."""
    lane = np.arange(32)[:, None]
    i = np.arange(n // 2)[None, :]
    g, t = lane // 4, lane % 4
    return g + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * t + i % 2


def a_frag_rows_cols(esize: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of the elements an A register fragment holds: ``(32, 8)`` (16-bit) or ``(32, 16)`` (8-bit)."""
    lane = np.arange(32)[:, None]
    g, t = lane // 4, lane % 4
    if esize == 2:
        j = np.arange(8)[None, :]
        return g + 8 * ((j // 2) % 2), 2 * t + j % 2 + 8 * (j // 4)
    j = np.arange(16)[None, :]
    return g + 8 * ((j // 4) % 2), 4 * t + j % 4 + 16 * (j // 8)


def _dtype(name: str) -> np.dtype:
    return numpy_dtype(IntegerType(8) if name == "i8" else FloatType(name))


@impl("nvvm.wgmma")
def wgmma(op: Op, cc: Compiler):
    """``D = A·Bᵀ (+ D)`` for each active warp's 16 rows of the warpgroup's 64 (see the module docstring)."""
    acc_s, a_s, b_s, sd_s = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])
    at = op.attrs
    n, k = at["n"], at["k"]
    adt, bdt = _dtype(at["a_type"]), _dtype(at["b_type"])
    is_int = at["a_type"] == "i8"
    fp8 = at["a_type"] in ("f8E4M3FN", "f8E5M2")
    a_regs = op.operands[1].type.is_vector
    trans_a, trans_b = bool(at.get("trans_a", 0)), bool(at.get("trans_b", 0))
    sa, sb = at.get("scale_a", 1), at.get("scale_b", 1)
    rows, cols = acc_rows_cols(n)
    fr, fc = a_frag_rows_cols(adt.itemsize)

    def step(env, lanes):
        T, tpb, ws = lanes.T, lanes.tpb, lanes.warp_size
        if ws != 32:
            raise lanes.fault(op, "wgmma needs 32-lane warps", None)
        m = lanes.mask
        act = lanes.arange() if m is None else np.flatnonzero(m)
        acc = np.asarray(env[acc_s])
        out = np.array(np.broadcast_to(acc, (T, n // 2)))
        warps = np.unique(act // 32)  # batch-wide warp numbers (blocks are whole warps apart when tpb % 32 == 0)
        if tpb % 32:
            raise lanes.fault(op, "wgmma needs blocks of whole warps", None)
        for wglob in warps.tolist():
            lo = wglob * 32
            if m is not None and not m[lo : lo + 32].all():
                raise lanes.fault(op, "wgmma must be executed by every thread of the warp (it is .sync.aligned)", lo)
            blk = lo // tpb
            wq = (lo % tpb) // 32 % 4
            smem = lanes.shared.u8[blk * lanes.S : (blk + 1) * lanes.S] if lanes.shared is not None else None
            a16 = _a_rows(env[a_s], lanes, op, lo, wq, smem, n, k, adt, trans_a, a_regs, fr, fc)
            b = _smem_operand(env[b_s], lanes, op, lo, smem, n, k, bdt, trans_b)
            if sa == -1:
                a16 = -a16
            if sb == -1:
                b = -b
            scale = np.broadcast_to(np.asarray(env[sd_s]).reshape(-1), (T,))[lo]
            d_old = np.zeros((16, n), np.int64 if is_int else np.float64)
            if scale:
                d_old[rows, cols] = out[lo : lo + 32]
            if is_int:
                d = (a16.astype(np.int64) @ b.astype(np.int64).T + d_old) & 0xFFFFFFFF
                res = d.astype(np.uint32).view(np.int32)
            elif fp8:
                a64, b64 = a16.astype(np.float64)[:, None, :], b.astype(np.float64)[None, :, :]
                res = block_fma(d_old.astype(np.float32), a64, b64, at["a_type"], at["b_type"], HOPPER_FP8)
            else:
                res = (a16.astype(np.float64) @ b.astype(np.float64).T + d_old).astype(np.float32)
            out[lo : lo + 32] = res[rows, cols]
        env[r] = out

    return step


def _uniform_desc(v, lanes, op, lo: int, what: str) -> int:
    x = np.asarray(v).reshape(-1)
    if x.shape[0] == 1:
        return int(x[0])
    w = x[lo : lo + 32]
    if not (w == w[0]).all():
        raise lanes.fault(op, f"the {what} descriptor differs between the threads of a warp", lo)
    return int(w[0])


def _smem_operand(v, lanes, op, lo, smem, rows, k, dt, mn_major, what: str = "B") -> np.ndarray:
    desc = _uniform_desc(v, lanes, op, lo, what)
    if smem is None:
        raise lanes.fault(op, "wgmma reads shared memory, but the kernel has none", lo)
    if decode_desc(desc)[3]:
        raise lanes.fault(op, "wgmma descriptors with a non-zero base offset are not supported by the interpreter", lo)
    addrs = operand_addresses(desc, rows, k, dt.itemsize, mn_major)
    if addrs.min() < 0 or addrs.max() + dt.itemsize > smem.shape[0]:
        raise lanes.fault(
            op,
            f"a wgmma descriptor (0x{desc & ((1 << 64) - 1):016x}) reaches shared bytes "
            f"[{int(addrs.min())}, {int(addrs.max()) + dt.itemsize}) outside the block's {smem.shape[0]}",
            lo,
        )
    return read_operand(smem, addrs, dt)


def _a_rows(v, lanes, op, lo, wq, smem, n, k, dt, trans, in_regs, fr, fc) -> np.ndarray:
    """This warp's 16 rows of A (16 × k)."""
    if not in_regs:
        return _smem_operand(v, lanes, op, lo, smem, 64, k, dt, trans, "A")[16 * wq : 16 * wq + 16]
    regs = np.ascontiguousarray(np.broadcast_to(np.asarray(v), (lanes.T, 4))[lo : lo + 32])
    vals = regs.view(dt).reshape(32, -1)
    a = np.zeros((16, k), dt)
    a[fr, fc] = vals
    return a


@impl("nvvm.wgmma_wait")
def wgmma_wait(op: Op, cc: Compiler):
    """``wgmma.wait_group``: every wgmma completed when it was issued; the accumulators pass through."""
    ins = cc.slots_of(op.operands)
    outs = cc.slots_of(op.results)

    def step(env, lanes):
        for i, o in zip(ins, outs):
            env[o] = env[i]

    return step
