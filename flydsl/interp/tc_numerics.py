"""How a tensor core adds one instruction's products into its f32 accumulator: the block-FMA model the
interpreter's fp8 ``wgmma`` executes, with the neighbouring variants the H200's results rule out.

The fp8 tensor core of Hopper (``QGMMA``, what ``wgmma ... .e4m3/.e5m2`` runs on) does not accumulate in
IEEE f32. Per instruction (K = 32 products per output element), it behaves as a fixed-point adder:

1. every product ``p = a·b`` is exact; its *alignment exponent* is ``ea + eb`` — the operands' exponents
   ``⌊log2|x|⌋``, clamped below to the format's smallest normal exponent (subnormals), so a product with
   significand in [2, 4) keeps the exponent of its factors; the accumulator ``c`` (f32) has exponent
   ``⌊log2|c|⌋`` (≥ -126);
2. ``E`` = the largest alignment exponent among the non-zero products and ``c``; every term (products
   and ``c``) is cut to a multiple of ``2^(E - frac_bits)`` — towards zero for sign-magnitude hardware
   (``mode="zero"``) — and the cut terms are added exactly;
3. the sum is cut to ``out_bits`` fraction bits (14 significant bits: "e8m13") and is the new f32
   accumulator.

With ``frac_bits = out_bits = 13`` (:data:`HOPPER_FP8`) this is the accumulator the public evidence
describes: DeepSeek-V3's technical report (§3.3.2: H800 FP8 GEMM "limited to retaining around 14 bits",
products right-shifted to the largest exponent and the bits beyond that range truncated); the "FP22
(e8m13) accumulator" measured for ``mma .f32.e4m3.e4m3.f32`` on Ada/Hopper by SageAttention2 and the
PyTorch FP8 blog (hardware results have the 10 low mantissa bits zero); and Khattak & Mikaitis, *Accurate
models of NVIDIA tensor cores* (2025; north-numerical-computing/MATLAB-tensor-core), whose bit-accurate
native-fp8 model is this one (32 products per block, 10 of f32's 23 fraction bits dropped, truncation).
It is bit for bit what the H200 computed in round 1: the 62 fp8 wgmma results whose values the failing
parity tests printed (15 in full, 47 to 6 decimals; 1, 2 and 4 chained instructions, e4m3 and e5m2, A from
shared memory and from registers) all equal this model's, and each neighbour (12 or 14 bits, two's
complement ``floor`` cuts, rounding to nearest, ``c`` added after the block, a 14-bit result) misses
several (tests/unit/test_tc_numerics.py). On other random data of the same kind it gives GEMM errors
of the size round 1 measured (≈1.1 vs 1.23 for 16×4096×4096 with bf16 output, ≈0.29 vs 0.32 for 512³).

Not this model: 16-bit wgmma (``HGMMA``; the interpreter sums in float64 and rounds once, within the
tolerance docs/interpreter.md gives) and ``mma.sync`` with fp8 on sm_90, which ptxas lowers to two f16
``HMMA.16816.F32`` plus an f32 add (docs/mma.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BlockFma", "HOPPER_FP8", "block_fma", "exponents", "fp8_error_bound", "EMIN"]

# smallest normal exponent of each input format (subnormals align as if they had this exponent)
EMIN = {"e4m3": -6, "e5m2": -14, "f16": -14, "bf16": -126, "f32": -126}
EMIN.update({"f8E4M3FN": -6, "f8E5M2": -14})  # the IR's names


@dataclass(frozen=True)
class BlockFma:
    """A fixed-point block adder: ``block`` products and the accumulator per pass (see the module doc).

    ``frac_bits``: terms are cut to multiples of ``2^(E - frac_bits)``; ``out_bits``: fraction bits of the
    result; ``mode``: ``"zero"`` (truncate magnitudes) or ``"floor"`` (two's complement shifts);
    ``final``: the result's rounding, ``"zero"``, ``"floor"`` or ``"rne"``; ``c_in_adder``: False adds the
    cut block sum to ``c`` afterwards in f32 (round to nearest) instead of aligning ``c`` with the products.
    """

    frac_bits: int = 13
    out_bits: int = 13
    mode: str = "zero"
    final: str = "zero"
    c_in_adder: bool = True
    block: int = 32

    def describe(self) -> str:
        c = "c in adder" if self.c_in_adder else "c added after (f32 rn)"
        return (f"block {self.block}, terms to 2^(E-{self.frac_bits}) ({self.mode}), "
                f"out e8m{self.out_bits} ({self.final}), {c}")  # fmt: skip


HOPPER_FP8 = BlockFma()


def exponents(x: np.ndarray, emin: int) -> np.ndarray:
    """``⌊log2|x|⌋`` clamped below to ``emin`` (int64; the value for 0 is ``emin`` and never used)."""
    _, e = np.frexp(np.asarray(x, np.float64))
    return np.maximum(e.astype(np.int64) - 1, emin)


def _cut(x: np.ndarray, quantum: np.ndarray, mode: str) -> np.ndarray:
    """``x`` cut to a multiple of ``quantum`` (a power of two: the division and the product are exact)."""
    q = x / quantum
    if mode == "zero":
        q = np.trunc(q)
    elif mode == "floor":
        q = np.floor(q)
    else:
        q = np.round(q)  # numpy rounds half to even
    return q * quantum


def _to_bits(s: np.ndarray, bits: int, mode: str) -> np.ndarray:
    """``s`` cut to ``bits`` fraction bits (``bits + 1`` significant), 0 staying 0."""
    _, e = np.frexp(s)
    quantum = np.ldexp(1.0, (e.astype(np.int64) - 1 - bits).clip(-1074, 1023))
    return np.where(s == 0, 0.0, _cut(s, quantum, mode))


def block_fma(
    c: np.ndarray, a: np.ndarray, b: np.ndarray, a_fmt: str, b_fmt: str | None = None, model: BlockFma = HOPPER_FP8
) -> np.ndarray:
    """``c + Σ_k a[..., k]·b[..., k]`` as the modelled tensor core computes it, one pass per ``model.block``
    products in k order (an instruction's K is one block for fp8 wgmma).

    ``c``: f32 accumulators (shape ``S``); ``a``, ``b``: the operands as float64 arrays of shape
    ``S + (K,)`` (broadcasting), values of formats ``a_fmt`` and ``b_fmt`` (default: ``a_fmt``; keys of
    :data:`EMIN`). Returns float32 of shape ``S``. NaN/Inf anywhere falls back to an IEEE sum (the
    hardware propagates them the same way).
    """
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    acc = np.asarray(c, np.float32).astype(np.float64)
    emin = (EMIN[a_fmt], EMIN[b_fmt or a_fmt])
    K = max(a.shape[-1], b.shape[-1])
    for k0 in range(0, K, model.block):
        ab, bb = a[..., k0 : k0 + model.block], b[..., k0 : k0 + model.block]
        acc = _one_block(acc, ab, bb, emin, model)
    return acc.astype(np.float32)


def _one_block(c: np.ndarray, a: np.ndarray, b: np.ndarray, emin: tuple, m: BlockFma) -> np.ndarray:
    p = a * b  # exact: at most 2 × 11 significant bits
    none = np.iinfo(np.int64).min // 4
    E = np.where(p != 0, exponents(a, emin[0]) + exponents(b, emin[1]), none).max(-1)
    if m.c_in_adder:
        E = np.maximum(E, np.where(c != 0, exponents(c, -126), none))
    quantum = np.ldexp(1.0, np.where(E == none, 0, E - m.frac_bits).clip(-1074, 1023))
    with np.errstate(invalid="ignore", over="ignore"):
        s = _cut(p, quantum[..., None], m.mode).sum(-1)  # exact: < 2^21 quanta
        if m.c_in_adder:
            out = _to_bits(s + _cut(c, quantum, m.mode), m.out_bits, m.final)
        else:
            out = _to_bits(s, m.out_bits, m.final).astype(np.float32) + c.astype(np.float32)
        bad = ~np.isfinite(p).all(-1) | ~np.isfinite(c)
        if bad.any():
            out = np.where(bad, (p.sum(-1) + c).astype(np.float32), out)
    return np.asarray(out, np.float64).astype(np.float32).astype(np.float64)


def fp8_error_bound(
    a: np.ndarray, b: np.ndarray, a_fmt: str, b_fmt: str | None = None, block: int = 32, frac_bits: int = 12
) -> np.ndarray:
    """A bound on ``|accumulated - exact|`` for ``Σ_k a[..., k]·b[..., k]`` (accumulator starting at 0)
    valid for every model of the family above with at least ``frac_bits`` fraction bits in the adder
    and at least 13 in the result, whatever the cut direction and wherever ``c`` enters.

    Per pass ``i`` the 33 terms lose less than one quantum ``2^(E_i - frac_bits)`` each, with
    ``2^E_i ≤ max(2^(ea+eb), |c_i|)``, and the result less than ``2^-13`` of itself; the hardware's ``c_i``
    is within the bound so far of the exact partial sum, which is what this recursion uses. ``frac_bits=12`` (one
    bit below the modelled 13) covers the published "around 14 bits".
    """
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    ea_min, eb_min = EMIN[a_fmt], EMIN[b_fmt or a_fmt]
    K = max(a.shape[-1], b.shape[-1])
    bound = np.zeros(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]))
    exact = np.zeros_like(bound)
    for k0 in range(0, K, block):
        ab, bb = a[..., k0 : k0 + block], b[..., k0 : k0 + block]
        p = ab * bb
        top = np.where(p != 0, np.ldexp(1.0, exponents(ab, ea_min) + exponents(bb, eb_min)), 0.0).max(-1)
        t = np.maximum(top, np.abs(exact) + bound)  # ≥ 2^E: the largest term's alignment weight
        exact = exact + p.sum(-1)
        terms = (ab.shape[-1] + 1) * t * 2.0**-frac_bits  # the products and c, each cut by < 1 quantum
        bound = bound + terms + (np.abs(exact) + bound + terms) * 2.0**-13  # and the result's cut
    return bound
