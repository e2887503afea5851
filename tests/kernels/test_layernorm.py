"""LayerNorm (``kernels/norm/layernorm_kernel.py``) against a float64 reference.

On the CPU interpreter (CI): tiny and odd N, N not a multiple of the vector width, rows that share a
block, a row count that does not fill the last block, rows longer than the register path (two passes),
rows with a large mean (no cancellation in the variance), and the PTX's 128-bit accesses. Marked
``gpu``: the same bodies on the GPU over a spread of shapes, against the reference and against the
interpreter. Outputs are poisoned with NaN first. Data are numpy arrays (torch CUDA tensors on the GPU),
so the CPU cases need no torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from _arrays import full, rand, randn, sync, to_device, to_numpy
from norm_cases import ATOL, CPU_CASES, CPU_IDS, GPU_CASES, GPU_IDS, PARITY_CASES, PARITY_IDS, check_close, check_parity

from kernels.norm.layernorm_kernel import build_layernorm_module

EPS = 1e-5


def reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    x, w, b = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w + b


def make_inputs(M, N, dtype, seed=0, offset=0.0):
    x = randn((M, N), dtype, seed, offset=offset)
    # |y| stays below 8, where half a bf16 ulp (the output's rounding) is still under the 2e-2 tolerance
    return x, rand(N, dtype, seed + 1), randn(N, dtype, seed + 2, scale=0.1)


def run(device, x, w, b, dtype, **plan) -> np.ndarray:
    M, N = x.shape
    X, W, B = (to_device(t, device) for t in (x, w, b))
    Y = full((M, N), float("nan"), x.dtype, device)
    build_layernorm_module(N, dtype, **plan)(X, W, B, Y, M)
    sync(device)
    return to_numpy(Y)


def check(x, w, b, dtype, y, atol=None):
    check_close(y, reference(x, w, b), atol or ATOL[dtype])


@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=CPU_IDS)
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
    np.testing.assert_array_equal(y[0], b)  # zero variance: (x - mean) = 0 exactly, eps keeps rsqrt finite


def test_layernorm_ptx_uses_128bit_accesses(interpreter, tmp_path):
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    x = full((64, 8192), 0, "bf16", "cpu")
    build_layernorm_module(8192, "bf16")(x, x[0], x[1], x, 64)
    (ptx,) = [p.read_text() for p in (tmp_path / "dump").glob("*/*.ptx")]
    # 32 values per thread: four 16-byte loads each of X, W and B, four 16-byte stores
    assert ptx.count("ld.global.v4.b32") == 12 and ptx.count("st.global.v4.b32") == 4, ptx
    assert "rsqrt.approx" in ptx and "bar.sync" in ptx and "shfl.sync.bfly" in ptx
    assert not any(op in ptx for op in ("div.s32", "div.u32", "rem.s32", "rem.u32", ".local")), ptx


@pytest.mark.parametrize("M,N", [(3, 32768), (2, 65536)])
def test_layernorm_long_f32_rows_default_plans(M, N, interpreter):
    """The f32 long-row defaults (LONG_ROWS): 32K in two chunks of 16 values per thread (one staged), 64K in eight of
    8 (four staged), every chunk's loads issued together."""
    x, w, b = make_inputs(M, N, "f32", seed=N)
    check(x, w, b, "f32", run("cpu", x, w, b, "f32"))


# -- GPU ----------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype", GPU_CASES, ids=GPU_IDS)
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
@pytest.mark.parametrize("M,N,dtype,plan", PARITY_CASES, ids=PARITY_IDS)
def test_layernorm_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    x, w, b = make_inputs(M, N, dtype, seed=7)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    gpu = run("cuda", x, w, b, dtype, **plan)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    cpu = run("cpu", x, w, b, dtype, **plan)
    check_parity(gpu, cpu, dtype)
