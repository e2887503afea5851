"""Dense GEMM ``C (M×N, bf16) = A (M×K) · B (N×K)ᵀ``: flydsl's tensor-core GEMMs against cuBLAS in one run.

References: ``torch.matmul`` (bf16, f16) and ``torch._scaled_mm`` (fp8 e4m3, row-wise scales of 1, bf16 out).
Shapes (M, N, K): 8192³, 4096³, 2048×7168×2048, 2048×4096×512 and 16×4096×4096; B is K-major (N×K, the
layout of nn.Linear weights and of TMA/wgmma), plus the (K, N) row-major B of ``torch.matmul(a, b)`` at 4096³
(``dtype`` "bf16-kn": ``ldmatrix.trans``).

Implementations are plug-ins: :data:`IMPLS` maps a name to ``make(inputs, dtype) -> thunk`` (or None where
it does not apply); ``flydsl-wgmma`` is the Hopper GEMM of ``examples/06``. The rate
that matters is TFLOP/s (``2·M·N·K`` per call); ``nbytes`` counts A, B and C once.
"""

from __future__ import annotations

from ..harness import Case
from ._common import load_example

SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 7168, 2048), (2048, 4096, 512), (16, 4096, 4096)]
QUICK = [(4096, 4096, 4096), (2048, 4096, 512)]
DTYPES = ("bf16", "f16", "fp8")


def _torch_dtype(dtype: str):
    import torch

    return {"bf16": torch.bfloat16, "bf16-kn": torch.bfloat16, "f16": torch.float16, "fp8": torch.float8_e4m3fn}[dtype]


def make_inputs(M: int, N: int, K: int, dtype: str) -> tuple:
    """Fresh ``(a, b, c)`` on the GPU: a (M, K), b (N, K) — or (K, N) for "bf16-kn" — and c (M, N) bf16."""
    import torch

    t = _torch_dtype(dtype)
    a = torch.randn(M, K, device="cuda").to(t)
    b = torch.randn((K, N) if dtype.endswith("-kn") else (N, K), device="cuda").to(t)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    return a, b, c


def torch_gemm(inputs, dtype: str):
    """cuBLAS: ``a @ b.t()`` (``a @ b`` for "kn"), ``_scaled_mm`` for fp8; writes nothing (returns a thunk)."""
    ex = load_example("05_gemm_mma_sync")
    a, b, _ = inputs
    return ex.torch_reference(a, b, "kn" if dtype.endswith("-kn") else "nk")


def mma_sync_gemm(inputs, dtype: str):
    """flydsl's warp-level GEMM (examples/05_gemm_mma_sync.py), specialized to the shape."""
    import flydsl.compiler as flyc

    ex = load_example("05_gemm_mma_sync")
    a, b, c = inputs
    args = ex.gemm_args(a, b, c, "kn" if dtype.endswith("-kn") else "nk")
    compiled = flyc.compile(ex.gemm_launch, *args)
    return lambda: compiled(*args)


def wgmma_gemm(inputs, dtype: str):
    """flydsl's Hopper GEMM (examples/06_gemm_wgmma.py: TMA, warp-specialized wgmma, persistent). B must be
    N×K (K-major, as wgmma reads fp8): the "kn" rows report "not applicable"."""
    import torch

    import flydsl.compiler as flyc

    if dtype.endswith("-kn"):
        raise NotImplementedError("the wgmma GEMM reads B as N x K (K-major)")
    ex = load_example("06_gemm_wgmma")
    a, b, c = inputs
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    ab = {"bf16": "bf16", "f16": "f16", "fp8": "e4m3"}[dtype]
    compiled = flyc.compile(ex.gemm_launch, a, b, c, sms, ab)
    return lambda: compiled(a, b, c, sms, ab)


# name -> make(inputs, dtype) -> thunk; "flydsl" is the row the others are compared with
IMPLS = {"flydsl": mma_sync_gemm, "flydsl-wgmma": wgmma_gemm, "torch": torch_gemm}


def _check(inputs, dtype: str) -> None:
    """flydsl's C against cuBLAS's (relative to the largest |C|)."""
    ref = torch_gemm(inputs, dtype)().float()
    got = inputs[2].float()
    err = ((got - ref).abs().max() / ref.abs().max().clamp(min=1)).item()
    if not err < 2e-2:
        raise AssertionError(f"flydsl GEMM differs from cuBLAS: max relative error {err:.2e}")


def cases(quick: bool) -> list[Case]:
    out = []
    for M, N, K in QUICK if quick else SHAPES:
        dtypes = list(DTYPES) + (["bf16-kn"] if (M, N, K) == (4096, 4096, 4096) else [])
        for dtype in dtypes:
            esize = 1 if dtype == "fp8" else 2
            out.append(
                Case(
                    kernel="gemm",
                    shape=(M, N, K),
                    dtype=dtype,
                    nbytes=(M * K + N * K) * esize + M * N * 2,
                    flops=2 * M * N * K,
                    make_inputs=lambda M=M, N=N, K=K, dtype=dtype: make_inputs(M, N, K, dtype),
                    impls={
                        name: (lambda inp, make=make, dtype=dtype: make(inp, dtype)) for name, make in IMPLS.items()
                    },
                    check=lambda inp, dtype=dtype: _check(inp, dtype),
                )
            )
    return out
