"""RMSNorm (``kernels/norm/rmsnorm_kernel.py``), plain and fused with the residual add, against a float64
reference.

On the CPU interpreter (CI): tiny and odd N, N not a multiple of the vector width, rows that share a
block, a row count that does not fill the last block, rows longer than the register path (two passes),
and the PTX's 128-bit accesses. Marked ``gpu``: the same bodies on the GPU over a spread of shapes,
against the reference and against the interpreter. Outputs are poisoned with NaN first.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kernels.norm.rmsnorm_kernel import build_fused_add_rmsnorm_module, build_rmsnorm_module

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
ATOL = {"f32": 1e-5, "f16": 1e-2, "bf16": 2e-2}  # FlyDSL's tolerances
# GPU vs interpreter: the GPU's approximate ex2/rsqrt and fused multiply-adds move f32 results by a few ulp,
# which can flip the rounding of an f16/bf16 output by one ulp (at most 2**-10 / 2**-7 of its magnitude)
PARITY_RTOL = {"f32": 1e-5, "f16": 2**-10, "bf16": 2**-7}
EPS = 1e-6


def reference(x: torch.Tensor, w: torch.Tensor) -> np.ndarray:
    x, w = x.double().numpy(), w.double().numpy()
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS) * w


def make_inputs(M, N, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = TORCH[dtype]
    return torch.randn(M, N, generator=g).to(t), torch.randn(M, N, generator=g).to(t), torch.rand(N, generator=g).to(t)


def run(device, x, r, w, dtype, fused, **plan):
    """(Y, R_out) computed on ``device`` (R_out is None without the fused add), on the CPU."""
    M, N = x.shape
    X, R, W = (t.to(device) for t in (x, r, w))
    Y = torch.full((M, N), float("nan"), dtype=x.dtype, device=device)
    if fused:
        R_out = torch.full_like(Y, float("nan"))
        build_fused_add_rmsnorm_module(N, dtype, **plan)(X, R, W, Y, R_out, M)
    else:
        R_out = None
        build_rmsnorm_module(N, dtype, **plan)(X, W, Y, M)
    if device == "cuda":
        torch.cuda.synchronize()
    return Y.cpu(), None if R_out is None else R_out.cpu()


def check(x, r, w, dtype, fused, y, r_out):
    if fused:
        s = (x.float() + r.float()).to(x.dtype)  # the sum, rounded to the data type as torch's x + r
        assert torch.equal(r_out, s), "residual sum differs"
        x = s
    assert not torch.isnan(y).any(), "output elements left unwritten (NaN poison) or NaN results"
    err = np.abs(y.double().numpy() - reference(x, w)).max()
    assert err <= ATOL[dtype], f"max abs error {err:.3e} > {ATOL[dtype]}"


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


@pytest.mark.parametrize("fused", [False, True], ids=["plain", "fused_add"])
@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=IDS)
def test_rmsnorm_interpreter(M, N, dtype, plan, fused, interpreter):
    x, r, w = make_inputs(M, N, dtype, seed=M * N)
    check(x, r, w, dtype, fused, *run("cpu", x, r, w, dtype, fused, **plan))


def test_rmsnorm_eps_and_zero_rows(interpreter):
    """A zero row gives zeros (not NaN): eps keeps rsqrt finite; eps is the builder's."""
    x, r, w = make_inputs(3, 256, "f32", seed=3)
    x[1] = 0.0
    y, _ = run("cpu", x, r, w, "f32", False)
    check(x, r, w, "f32", False, y, None)
    assert (y[1] == 0).all()
    y = torch.full_like(x, float("nan"))
    build_rmsnorm_module(256, "f32", eps=1.0)(x, w, y, 3)
    want = x.double() / torch.sqrt((x.double() ** 2).mean(1, keepdim=True) + 1.0) * w.double()
    assert torch.allclose(y.double(), want, atol=1e-6)


def test_rmsnorm_ptx_uses_128bit_accesses(interpreter, tmp_path):
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    x = torch.empty(64, 8192, dtype=torch.bfloat16)
    build_rmsnorm_module(8192, "bf16")(x, x[0], x, 64)
    (ptx,) = [p.read_text() for p in (tmp_path / "dump").glob("*/*.ptx")]
    # 16 values per thread: two 16-byte loads of X and two of the weight, two 16-byte stores
    assert ptx.count("ld.global.v4.b32") == 4 and ptx.count("st.global.v4.b32") == 2, ptx
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
@pytest.mark.parametrize("fused", [False, True], ids=["plain", "fused_add"])
@pytest.mark.parametrize("M,N,dtype", GPU_CASES, ids=[f"{m}x{n}-{d}" for m, n, d in GPU_CASES])
def test_rmsnorm_gpu(M, N, dtype, fused, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    x, r, w = make_inputs(M, N, dtype, seed=M + N)
    check(x, r, w, dtype, fused, *run("cuda", x, r, w, dtype, fused))


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES[:9], ids=IDS[:9])
def test_rmsnorm_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    x, r, w = make_inputs(M, N, dtype, seed=7)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    gpu, gpu_r = run("cuda", x, r, w, dtype, True, **plan)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    cpu, cpu_r = run("cpu", x, r, w, dtype, True, **plan)
    assert torch.equal(gpu_r, cpu_r)  # the residual sum is exact on both
    np.testing.assert_allclose(gpu.double().numpy(), cpu.double().numpy(), rtol=PARITY_RTOL[dtype], atol=1e-6)
