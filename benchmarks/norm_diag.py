"""What LayerNorm's long rows lose to their weights: LayerNorm at the long-row shapes timed (CUDA-graph replays)
beside the same kernel compiled with its W and B loads replaced by constants (not a LayerNorm: a measurement of
what the weights' reads cost), RMSNorm (one weight) and torch's copy of the same bytes.

``python -m benchmarks.norm_diag`` (GPU; ~20 s). Prints one line per shape: µs and copy time / time.
``python -m benchmarks.norm_diag VARIANT ...`` (names of ``norm_sweep.VARIANTS``, e.g. ``pair_p``) adds LayerNorm
with each variant's plan, with and without its weights' reads, to every line; ``--rows128k``: only the shapes of
128 KB rows (512 x 64K bf16, 512 x 32K f32); ``--rows64k``: only the 64K rows (f32 first).
"""

from __future__ import annotations

import statistics
import sys

import torch

import flydsl.compiler as flyc
import flydsl.expr as fx
from kernels.norm import norm_common
from kernels.norm.layernorm_kernel import build_layernorm_module
from kernels.norm.rmsnorm_kernel import build_rmsnorm_module

from .cases._graph import graphed
from .cases.norm_sweep import VARIANTS
from .harness import time_thunks

SHAPES = [(512, 65536, "bf16"), (1024, 32768, "bf16"), (512, 32768, "f32"), (256, 65536, "f32"), (1024, 16384, "f32")]


def _no_weights(compile_fn):
    """Run ``compile_fn()`` with every broadcast (weight) load of the row kernels replaced by constants."""
    orig = norm_common.RowFragments.load

    def load(self, t, c=0, fill=None, broadcast=False, **kw):
        if not broadcast:
            return orig(self, t, c, fill, **kw)
        n = self.plan.vecs * self.plan.vec
        return fx.Vector.from_elements([self.dtype(1.0)] * n, dtype=self.dtype)

    norm_common.RowFragments.load = load
    try:
        return compile_fn()
    finally:
        norm_common.RowFragments.load = orig


def _row(M: int, N: int, dt: str, variants=()) -> str:
    t = {"f32": torch.float32, "bf16": torch.bfloat16}[dt]
    x = torch.randn(M, N, device="cuda", dtype=t)
    w, b = torch.rand(N, device="cuda", dtype=t), torch.randn(N, device="cuda", dtype=t)
    y = torch.empty_like(x)
    ln = flyc.compile(build_layernorm_module(N, dt), x, w, b, y, M)
    ln_nw = _no_weights(lambda: flyc.compile(build_layernorm_module(N, dt), x, w, b, y, M))
    rms = flyc.compile(build_rmsnorm_module(N, dt), x, w, y, M)
    rows = {
        "copy": graphed(lambda: y.copy_(x)),
        "layernorm": graphed(lambda: ln(x, w, b, y, M)),
        "ln-no-wb": graphed(lambda: ln_nw(x, w, b, y, M)),
        "rmsnorm": graphed(lambda: rms(x, w, y, M)),
    }
    for v in variants:
        build = lambda v=v: flyc.compile(build_layernorm_module(N, dt, **VARIANTS[v]), x, w, b, y, M)  # noqa: E731
        lv, lv_nw = build(), _no_weights(build)
        rows[v] = graphed(lambda lv=lv: lv(x, w, b, y, M))
        rows[f"{v}-no-wb"] = graphed(lambda lv_nw=lv_nw: lv_nw(x, w, b, y, M))
    us = {k: statistics.median(time_thunks([f], warmup=20, reps=200)) for k, f in rows.items()}
    return " | ".join(f"{k} {v:5.1f} ({us['copy'] / v * 100:3.0f}%)" for k, v in us.items())


def main() -> None:
    variants = [a for a in sys.argv[1:] if not a.startswith("--")]
    shapes = SHAPES
    if "--rows128k" in sys.argv[1:]:
        shapes = [(M, N, dt) for M, N, dt in SHAPES if N * (4 if dt == "f32" else 2) == 131072]
    if "--rows64k" in sys.argv[1:]:  # 256 x 64K f32, 512 x 64K bf16
        shapes = sorted([s for s in SHAPES if s[1] == 65536], key=lambda s: s[2] != "f32")
    for M, N, dt in shapes:
        print(f"diag {M}x{N} {dt:4s} {_row(M, N, dt, variants)}", flush=True)


if __name__ == "__main__":
    main()
