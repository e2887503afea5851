"""The GEMM's fused f32 epilogue, shared by every path: dequantization scales, bias, activation, and the
guarded store of C.

For one accumulator pair ``(v0, v1)`` at row ``m`` and columns ``n, n + 1``:

``out = act(v · scale_a[m] · scale_b[n] + bias[n])`` in float32 (scales only for 8-bit inputs; int8
accumulators are converted from i32 first), rounded once to the output type and stored as one 4-byte
access — only when ``m < M``: rows past M are never written.
"""

from __future__ import annotations

import math

import flydsl.expr as fx

__all__ = ["Epilogue", "activate"]

_GELU_C = math.sqrt(2.0 / math.pi)
OUT_TYPES = {"bf16": fx.BFloat16, "fp16": fx.Float16}


def activate(v, kind: str):
    """``v`` (a float32 Vector) after the activation of epilogue ``kind``."""
    if kind in ("none", "bias"):
        return v
    if kind == "bias_relu":
        return fx.max(v, 0.0)
    if kind == "bias_silu":
        return v / (1.0 + fx.exp(-v))
    if kind == "bias_gelu":  # tanh approximation (torch's approximate="tanh")
        return 0.5 * v * (1.0 + fx.math.tanh(_GELU_C * (v + 0.044715 * v * v * v)))
    raise ValueError(f"unknown epilogue {kind!r}")


class Epilogue:
    """Per-kernel epilogue state: the tensors and the row bound.

    Args:
        cfg: the :class:`~kernels.gemm.gemm_config.GemmConfig`.
        C, SA, SB, BIAS: the kernel's tensors (``SA``/``SB`` read only for 8-bit inputs, ``BIAS`` only for
            ``bias*`` epilogues).
        M: the run-time row count.
    """

    def __init__(self, cfg, C, SA, SB, BIAS, M):
        self.cfg = cfg
        self.scaled = cfg.in_dtype in ("fp8", "int8")
        self.biased = cfg.epilogue != "none"
        self.out = OUT_TYPES[cfg.out_dtype]
        if C.dtype is not self.out:
            raise TypeError(f"arg_c holds {C.dtype.__name__}, but out_dtype={cfg.out_dtype!r} was compiled")
        self.pc = C.iterator
        self.psa = SA.iterator.recast(fx.Float32) if self.scaled else None
        self.psb = SB.iterator.recast(fx.Float32) if self.scaled else None
        self.pbias = BIAS.iterator if self.biased else None
        self.M = M
        self.last_row = M - 1

    def row_scale(self, row):
        """``scale_a`` of ``row`` (clamped into [0, M): a row past M reads row M-1, never out of bounds)."""
        return (self.psa + fx.min(row, self.last_row)).load()

    def col_operands(self, col):
        """``(scale_b[col:col+2], bias[col:col+2])`` as float32 Vectors (None where not used)."""
        sb = (self.psb + col).load(vec_width=2, align=8) if self.scaled else None
        bias = (self.pbias + col).load(vec_width=2).to(fx.Float32) if self.biased else None
        return sb, bias

    def finish(self, v, sa=None, sb=None, bias=None):
        """The float32 pair ``v`` (a 2-lane Vector of one row, columns ``col, col+1``) scaled (``sa`` the
        row's scale, ``sb``/``bias`` the columns'), biased, activated and rounded to the output type."""
        if self.scaled:
            v = v * sa * sb
        if self.biased:
            v = v + bias
        return activate(v, self.cfg.epilogue).to(self.out)

    def store_pair(self, v, row, col, sa=None, sb=None, bias=None) -> None:
        """:meth:`finish` the pair and store it at ``(row, col)`` when ``row < M``."""
        out = self.finish(v, sa, sb, bias)
        (self.pc + (row * self.cfg.N + col)).store(out, align=4, mask=row < self.M)
