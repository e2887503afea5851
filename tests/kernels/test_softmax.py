"""Softmax (``kernels/norm/softmax_kernel.py``) against a float64 reference.

On the CPU interpreter (CI): tiny and odd N, N not a multiple of the vector width, rows that share a
block, a row count that does not fill the last block, rows longer than the register path (two passes),
-inf entries and large magnitudes, misaligned tensors, and the PTX's 128-bit accesses. Marked ``gpu``:
the same bodies on the GPU over a spread of shapes, against the reference and against the interpreter.
Outputs are poisoned with NaN first, so an element the kernel never writes fails the test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kernels.norm.softmax_kernel import build_softmax_module

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
ATOL = {"f32": 1e-5, "f16": 1e-2, "bf16": 2e-2}  # FlyDSL's tolerances
# GPU vs interpreter: the GPU's approximate ex2/rsqrt and fused multiply-adds move f32 results by a few ulp,
# which can flip the rounding of an f16/bf16 output by one ulp (at most 2**-10 / 2**-7 of its magnitude)
PARITY_RTOL = {"f32": 1e-5, "f16": 2**-10, "bf16": 2**-7}


def reference(a: torch.Tensor) -> np.ndarray:
    x = a.double().numpy()
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make_input(M, N, dtype, seed=0, scale=2.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(M, N, generator=g) * scale).to(TORCH[dtype])


def run(device, a, dtype, align_offset=0, **plan):
    """Softmax of ``a`` (CPU tensor) computed on ``device``; returns the output on the CPU.

    ``align_offset`` places both tensors that many elements into a larger buffer (an unaligned start)."""
    M, N = a.shape
    buf_a = torch.empty(M * N + align_offset, dtype=a.dtype, device=device)
    buf_c = torch.full((M * N + align_offset,), float("nan"), dtype=a.dtype, device=device)
    A = buf_a[align_offset:].view(M, N)
    A.copy_(a)
    C = buf_c[align_offset:].view(M, N)
    build_softmax_module(M, N, dtype, **plan)(A, C, M)
    if device == "cuda":
        torch.cuda.synchronize()
    return C.cpu()


def check(got: torch.Tensor, a: torch.Tensor, dtype: str, atol=None):
    assert not torch.isnan(got).any(), "output elements left unwritten (NaN poison) or NaN results"
    err = np.abs(got.double().numpy() - reference(a)).max()
    assert err <= (atol or ATOL[dtype]), f"max abs error {err:.3e} > {atol or ATOL[dtype]}"


@pytest.fixture
def interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY"):
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


# (M, N, dtype, plan options): the interpreter runs every block of the grid, so rows stay few.
CPU_CASES = [
    (3, 1, "f32", {}),  # one element per row
    (4, 3, "f16", {}),  # odd N: scalar accesses
    (5, 127, "bf16", {}),
    (2, 1000, "f32", {}),  # 128-bit accesses, ragged last vector slot
    (7, 1000, "bf16", {}),
    (3, 1002, "f16", {}),  # N % 8 == 2: 32-bit accesses
    (37, 64, "bf16", {}),  # 128 rows share a block; 37 rows leave most of it idle
    (9, 2000, "f32", {"block_threads": 512}),  # rows of 2-4 warps, several rows to a block
    (2, 4096, "bf16", {}),
    (2, 20000, "f32", {}),  # longer than the register path: two passes, ragged last chunk
    (3, 3000, "f32", {"register_limit": 0, "chunk_threads": 32}),  # 3 chunks of a warp each
    (2, 16392, "bf16", {}),  # the last chunk holds one vector: most threads have no valid element there
]


@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=[f"{m}x{n}-{d}" for m, n, d, _ in CPU_CASES])
def test_softmax_interpreter(M, N, dtype, plan, interpreter):
    a = make_input(M, N, dtype, seed=M * N)
    check(run("cpu", a, dtype, **plan), a, dtype)


def test_softmax_is_stable_on_large_values_and_minus_inf(interpreter):
    a = make_input(4, 200, "f32", seed=1, scale=1000.0)  # exp would overflow without the max subtraction
    a[1, ::3] = float("-inf")  # masked-out entries (attention masks) get probability 0
    a[2, :] = -1e30  # a constant row is uniform
    got = run("cpu", a, "f32")
    check(got, a, "f32")
    assert (got[1, ::3] == 0).all()
    assert torch.allclose(got[2], torch.full((200,), 1 / 200))


def test_softmax_on_misaligned_tensors(interpreter):
    """Tensors starting 1 or 2 elements into a buffer: the launcher picks narrower accesses."""
    a = make_input(3, 64, "bf16", seed=2)
    for off in (1, 2):
        check(run("cpu", a, "bf16", align_offset=off), a, "bf16")


def test_softmax_ptx_uses_128bit_accesses(interpreter, tmp_path):
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    a = torch.empty(64, 8192, dtype=torch.bfloat16)
    build_softmax_module(64, 8192, "bf16")(a, a, 64)
    (ptx,) = [p.read_text() for p in (tmp_path / "dump").glob("*/*.ptx")]
    # 8192 bf16 over 512 threads: 16 values each, two 16-byte loads and two 16-byte stores
    assert ptx.count("ld.global.v4.b32") == 2 and ptx.count("st.global.v4.b32") == 2, ptx
    assert ptx.count("ex2.approx") >= 16 and "bar.sync" in ptx and "shfl.sync.bfly" in ptx
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
    (16, 32768, "bf16"),  # two passes
    (7, 65536, "f32"),
    (20000, 512, "bf16"),  # many rows, many rows per block
    (3, 100003, "f16"),  # long odd rows
]


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype", GPU_CASES, ids=[f"{m}x{n}-{d}" for m, n, d in GPU_CASES])
def test_softmax_gpu(M, N, dtype, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    a = make_input(M, N, dtype, seed=M + N)
    check(run("cuda", a, dtype), a, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES[:9], ids=[f"{m}x{n}-{d}" for m, n, d, _ in CPU_CASES[:9]])
def test_softmax_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    a = make_input(M, N, dtype, seed=7)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    gpu = run("cuda", a, dtype, **plan)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    cpu = run("cpu", a, dtype, **plan)
    np.testing.assert_allclose(gpu.double().numpy(), cpu.double().numpy(), rtol=PARITY_RTOL[dtype], atol=1e-6)
