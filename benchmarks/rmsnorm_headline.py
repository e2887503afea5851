"""The headline RMSNorm (32768 x 8192 bf16) and its fused add beside the same kernels with streaming hints
(``cache_hint="cs"``) and torch.compile's kernels, one process, CUDA-graph replays of one call, median of 60.
``python -m benchmarks.rmsnorm_headline`` (GPU, ~40 s with torch.compile). The flydsl graphs are captured before
torch.compile runs and replayed after it (the order that crashed before the runtime stopped unloading modules).
Results: ``benchmarks/results/2026-12-01-NVIDIA-H200-rmsnorm-headline-s19.md``."""

from __future__ import annotations

import statistics

import torch

import flydsl.compiler as flyc
from kernels.norm.rmsnorm_kernel import build_fused_add_rmsnorm_module, build_rmsnorm_module

from .cases._graph import graphed
from .harness import time_thunks

M, N = 32768, 8192


def _rms(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def _add_rms(x, r, w):
    s = x.float() + r.float()
    return (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype), s.to(x.dtype)


def main() -> None:
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(N, device="cuda", dtype=torch.bfloat16)
    r, y, ro = torch.randn_like(x), torch.empty_like(x), torch.empty_like(x)
    rows = {}
    for name, opts in {"flydsl": {}, "flydsl cs": {"cache_hint": "cs"}}.items():
        k = flyc.compile(build_rmsnorm_module(N, "bf16", **opts), x, w, y, M)
        rows[f"rmsnorm {name}"] = graphed(lambda k=k: k(x, w, y, M))
        f = flyc.compile(build_fused_add_rmsnorm_module(N, "bf16", **opts), x, r, w, y, ro, M)
        rows[f"fused add {name}"] = graphed(lambda f=f: f(x, r, w, y, ro, M))
    cr, ca = torch.compile(_rms), torch.compile(_add_rms)
    rows["rmsnorm torch.compile"] = graphed(lambda: cr(x, w))
    rows["fused add torch.compile"] = graphed(lambda: ca(x, r, w))
    for name, replay in rows.items():
        print(f"{name:26s} {statistics.median(time_thunks([replay], warmup=10, reps=60)):7.1f} us", flush=True)


if __name__ == "__main__":
    main()
