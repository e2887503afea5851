"""LayerNorm bf16 at ragged long rows (lengths other than 32768 / 65536, where the 64-register plans spill):
the default beside ``pair_512cs`` (and ``o512e8`` over 48K), torch's copy of the same bytes, and the fused add at
one ragged length; CUDA-graph replays of one call, median of 150. ``python -m benchmarks.layernorm_ragged`` (GPU,
~20 s). Results: ``benchmarks/results/2026-12-01-NVIDIA-H200-layernorm-ragged-s19.md``."""

from __future__ import annotations

import statistics

import torch

import flydsl.compiler as flyc
from kernels.norm.layernorm_kernel import build_layernorm_module
from kernels.norm.rmsnorm_kernel import build_fused_add_rmsnorm_module

from .cases._graph import graphed
from .cases.norm_sweep import VARIANTS
from .harness import time_thunks

SHAPES = [(1024, 30000), (1024, 40000), (1024, 32768), (512, 49160), (512, 57000), (512, 65528), (512, 65536)]


def _us(fn) -> float:
    return statistics.median(time_thunks([graphed(fn)], warmup=20, reps=150))


def _row(M: int, N: int) -> str:
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    ref = torch.nn.functional.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5)
    us = {"copy": _us(lambda: y.copy_(x))}
    for name in ("default", "pair_512cs") + (("o512e8",) if N > 49152 else ()):
        plan = {} if name == "default" else VARIANTS[name]
        k = flyc.compile(build_layernorm_module(N, "bf16", **plan), x, w, b, y, M)
        err = (y.float() - ref).abs().max().item()
        assert err < 0.05, (name, N, err)
        us[name] = _us(lambda k=k: k(x, w, b, y, M))
    cells = " | ".join(f"{k} {v:.1f} ({us['copy'] / v * 100:.0f}%)" for k, v in us.items())
    return f"LN {M}x{N} bf16 {cells}"


def main() -> None:
    for M, N in SHAPES:
        print(_row(M, N), flush=True)
    M, N = 512, 57000
    x, r = (torch.randn(M, N, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    w = torch.rand(N, device="cuda", dtype=torch.bfloat16)
    y, ro = torch.empty_like(x), torch.empty_like(x)
    x2 = torch.empty((M, 2 * N), device="cuda", dtype=torch.bfloat16)
    y2 = torch.empty_like(x2)
    f = flyc.compile(build_fused_add_rmsnorm_module(N, "bf16"), x, r, w, y, ro, M)
    copy2, add = _us(lambda: y2.copy_(x2)), _us(lambda: f(x, r, w, y, ro, M))
    print(f"ADD {M}x{N} bf16 copy(2x bytes) {copy2:.1f} | default {add:.1f} ({copy2 / add * 100:.0f}%)", flush=True)


if __name__ == "__main__":
    main()
