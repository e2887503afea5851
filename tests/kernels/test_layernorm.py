"""LayerNorm (``kernels/norm/layernorm_kernel.py``) against a float64 reference.

On the CPU interpreter (CI): tiny and odd N, N not a multiple of the vector width, rows that share a
block, a row count that does not fill the last block, rows longer than the register path (two passes),
rows with a large mean (no cancellation in the variance), and the PTX's 128-bit accesses. Marked
``gpu``: the same bodies on the GPU over a spread of shapes, against the reference and against the
interpreter. Outputs are poisoned with NaN first.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kernels.norm.layernorm_kernel import build_layernorm_module

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
ATOL = {"f32": 1e-5, "f16": 1e-2, "bf16": 2e-2}  # FlyDSL's tolerances
# GPU vs interpreter: the GPU's approximate ex2/rsqrt and fused multiply-adds move f32 results by a few ulp,
# which can flip the rounding of an f16/bf16 output by one ulp (at most 2**-10 / 2**-7 of its magnitude)
PARITY_RTOL = {"f32": 1e-5, "f16": 2**-10, "bf16": 2**-7}
EPS = 1e-5


def reference(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    x, w, b = x.double().numpy(), w.double().numpy(), b.double().numpy()
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w + b


def make_inputs(M, N, dtype, seed=0, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    t = TORCH[dtype]
    x = (torch.randn(M, N, generator=g) + offset).to(t)
    # |y| stays below 8, where half a bf16 ulp (the output's rounding) is still under the 2e-2 tolerance
    return x, torch.rand(N, generator=g).to(t), (0.1 * torch.randn(N, generator=g)).to(t)


def run(device, x, w, b, dtype, **plan):
    M, N = x.shape
    X, W, B = (t.to(device) for t in (x, w, b))
    Y = torch.full((M, N), float("nan"), dtype=x.dtype, device=device)
    build_layernorm_module(N, dtype, **plan)(X, W, B, Y, M)
    if device == "cuda":
        torch.cuda.synchronize()
    return Y.cpu()


def check(x, w, b, dtype, y, atol=None):
    assert not torch.isnan(y).any(), "output elements left unwritten (NaN poison) or NaN results"
    err = np.abs(y.double().numpy() - reference(x, w, b)).max()
    assert err <= (atol or ATOL[dtype]), f"max abs error {err:.3e} > {atol or ATOL[dtype]}"


@pytest.fixture
def interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY"):
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


CPU_CASES = [
    (3, 1, "f32", {}),
    (4, 3, "f16", {}),
    (5, 127, "bf16", {}),
    (2, 1000, "f32", {}),
    (7, 1000, "bf16", {}),
    (3, 1002, "f16", {}),
    (37, 64, "bf16", {}),
    (9, 2000, "f32", {"block_threads": 512}),  # rows of 2-4 warps, several rows to a block
    (2, 4096, "bf16", {}),
    (2, 20000, "f32", {}),
    (3, 3000, "f32", {"register_limit": 0, "chunk_threads": 32}),
    (2, 16392, "bf16", {}),
]
IDS = [f"{m}x{n}-{d}" for m, n, d, _ in CPU_CASES]


@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=IDS)
def test_layernorm_interpreter(M, N, dtype, plan, interpreter):
    x, w, b = make_inputs(M, N, dtype, seed=M * N)
    check(x, w, b, dtype, run("cpu", x, w, b, dtype, **plan))


@pytest.mark.parametrize(
    "N,plan", [(1000, {}), (1003, {}), (20001, {}), (3000, {"register_limit": 0, "chunk_threads": 32})]
)
def test_layernorm_large_mean_keeps_precision(N, plan, interpreter):
    """x = 1000 + N(0, 1) in f32: E[x^2] - E[x]^2 would lose about 1e-1 of the unit variance to rounding;
    the merged (mean, M2) statistics lose only the f32 rounding of the mean itself (~3e-5 of 1000)."""
    x, w, b = make_inputs(3, N, "f32", seed=N, offset=1000.0)
    check(x, w, b, "f32", run("cpu", x, w, b, "f32", **plan), atol=1e-4)


def test_layernorm_constant_row_is_bias(interpreter):
    x, w, b = make_inputs(2, 512, "f32", seed=5)
    x[0] = 3.25
    y = run("cpu", x, w, b, "f32")
    assert torch.equal(y[0], b)  # zero variance: (x - mean) = 0 exactly, eps keeps rsqrt finite


def test_layernorm_ptx_uses_128bit_accesses(interpreter, tmp_path):
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    x = torch.empty(64, 8192, dtype=torch.bfloat16)
    build_layernorm_module(8192, "bf16")(x, x[0], x[1], x, 64)
    (ptx,) = [p.read_text() for p in (tmp_path / "dump").glob("*/*.ptx")]
    # 32 values per thread: four 16-byte loads each of X, W and B, four 16-byte stores
    assert ptx.count("ld.global.v4.b32") == 12 and ptx.count("st.global.v4.b32") == 4, ptx
    assert "rsqrt.approx" in ptx and "bar.sync" in ptx and "shfl.sync.bfly" in ptx
    assert not any(op in ptx for op in ("div.s32", "div.u32", "rem.s32", "rem.u32", ".local")), ptx


# -- GPU ----------------------------------------------------------------------------------------------

GPU_CASES = [
    (5, 1, "f32"),
    (7, 3, "bf16"),
    (129, 127, "f16"),
    (1000, 1000, "bf16"),
    (3, 1001, "f32"),
    (4096, 8192, "bf16"),
    (300, 8192, "f32"),
    (1024, 4096, "f16"),
    (64, 16384, "bf16"),
    (16, 32768, "bf16"),
    (7, 65536, "f32"),
    (20000, 512, "bf16"),
    (3, 100003, "f16"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype", GPU_CASES, ids=[f"{m}x{n}-{d}" for m, n, d in GPU_CASES])
def test_layernorm_gpu(M, N, dtype, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    x, w, b = make_inputs(M, N, dtype, seed=M + N)
    check(x, w, b, dtype, run("cuda", x, w, b, dtype))


@pytest.mark.gpu
def test_layernorm_gpu_large_mean(monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    for N in (1003, 8192, 40000):
        x, w, b = make_inputs(64, N, "f32", seed=N, offset=1000.0)
        check(x, w, b, "f32", run("cuda", x, w, b, "f32"), atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES[:9], ids=IDS[:9])
def test_layernorm_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    x, w, b = make_inputs(M, N, dtype, seed=7)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    gpu = run("cuda", x, w, b, dtype, **plan)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    cpu = run("cpu", x, w, b, dtype, **plan)
    np.testing.assert_allclose(gpu.double().numpy(), cpu.double().numpy(), rtol=PARITY_RTOL[dtype], atol=1e-6)
