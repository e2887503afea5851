"""The nvvm ops and the mma.sync GEMM on the GPU against the interpreter running the same IR: every mma.sync
kind (bit for bit on inputs whose sums are exact, within the accumulation's rounding on random ones),
ldmatrix/stmatrix lane patterns and cp.async zero fill bit for bit, and examples/05 on small problems
(bit for bit) and at 4096³ against cuBLAS."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from flydsl.codegen import Target, compile_module
from flydsl.dialects import gpu as dgpu
from flydsl.ir import new_module
from flydsl.ir import types as T
from flydsl.runtime import cuda
from flydsl.testing import launch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "unit"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))

import test_gemm_mma_sync as GT  # noqa: E402
import test_nvvm_interp as NI  # noqa: E402

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA device")]


def _module(op):
    mod = new_module()
    gm = dgpu.build_gpu_module("kernels")
    mod.regions[0].blocks[0].append(gm)
    gm.regions[0].blocks[0].append(op)
    return mod


def both(op, block, *arrays):
    """Run kernel ``op`` (one block) on the interpreter and on the GPU; returns (cpu arrays, gpu arrays)."""
    cpu = [a.copy() for a in arrays]
    launch(op, 1, block, *cpu, check=True)
    ck = compile_module(_module(op), Target(arch=cuda.device_arch()))
    k = cuda.CudaKernel.from_compiled(ck, op.attrs["sym_name"])
    dev = [torch.from_numpy(np.ascontiguousarray(a).view(np.uint8)).cuda() for a in arrays]
    k.launch(1, block, 0, None, tuple(dev))
    torch.cuda.synchronize()
    gpu = [d.cpu().numpy().view(a.dtype).reshape(a.shape) for d, a in zip(dev, arrays)]
    return cpu, gpu


def _bits(a):
    return a.view(np.uint8)


MMA_KINDS = [
    (T.bf16, T.bf16, T.f32, "m16n8k16", {}),
    (T.f16, T.f16, T.f32, "m16n8k16", {}),
    (T.f16, T.f16, T.f16, "m16n8k16", {}),
    (NI.F8E4, NI.F8E4, T.f32, "m16n8k32", {}),
    (NI.F8E4, NI.F8E5, T.f32, "m16n8k32", {}),
    (T.i8, T.i8, T.i32, "m16n8k32", {}),
    (T.i8, T.i8, T.i32, "m16n8k32", {"a_signed": False}),
]


@pytest.mark.parametrize("ta,tb,tc,shape,attrs", MMA_KINDS, ids=lambda x: str(x) if not isinstance(x, dict) else "")
def test_mma_sync_gpu_equals_interpreter(ta, tb, tc, shape, attrs):
    na = 16 if ta.bitwidth == 8 else 8
    nb = 8 if tb.bitwidth == 8 else 4
    op = NI._mma_kernel(ta, tb, tc, shape, na, nb, 4, **attrs)
    rng = np.random.default_rng(0)
    warps = 4
    for exact in (True, False):
        if tc is T.i32:
            a = rng.integers(-128, 128, (32 * warps, na)).astype(np.int8)
            b = rng.integers(-128, 128, (32 * warps, nb)).astype(np.int8)
            c = rng.integers(-(2**31), 2**31 - 1, (32 * warps, 4)).astype(np.int32)
        elif exact:  # small integers: every partial sum is exact, any order gives the same bits
            a = rng.integers(-4, 5, (32 * warps, na)).astype(NI.NP[ta])
            b = rng.integers(-4, 5, (32 * warps, nb)).astype(NI.NP[tb])
            c = rng.integers(-64, 65, (32 * warps, 4)).astype(NI.NP[tc])
        else:
            a = rng.standard_normal((32 * warps, na)).astype(NI.NP[ta])
            b = rng.standard_normal((32 * warps, nb)).astype(NI.NP[tb])
            c = rng.standard_normal((32 * warps, 4)).astype(NI.NP[tc])
        d = np.zeros_like(c)
        cpu, gpu = both(op, 32 * warps, a, b, c, d)
        if exact or tc is T.i32:
            assert _bits(cpu[3]).tobytes() == _bits(gpu[3]).tobytes(), (ta, tb, tc, attrs)
        else:  # the tensor cores' f32 (f16) sum is not correctly rounded: a few ulps of the largest term
            tol = 4e-3 if tc is T.f16 else 2e-6
            np.testing.assert_allclose(gpu[3].astype(np.float64), cpu[3].astype(np.float64), rtol=tol, atol=tol * 8)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_gpu_equals_interpreter(num, trans):
    rows = np.random.default_rng(num).permutation(32).astype(np.int32)
    mem = np.random.default_rng(1).standard_normal((32, 8)).astype(np.float16)
    cpu, gpu = both(
        NI._matrix_kernel(num, trans, T.f16, False, rows), 32, mem, np.zeros((32, 2 * num), np.float16), rows
    )
    assert _bits(cpu[1]).tobytes() == _bits(gpu[1]).tobytes()
    np.testing.assert_array_equal(gpu[1], NI.isa_ldmatrix(mem, rows, num, trans))


@pytest.mark.parametrize("num,trans", [(1, False), (2, True), (4, False), (4, True)])
def test_stmatrix_gpu_equals_interpreter(num, trans):
    rows = np.random.default_rng(num).permutation(32).astype(np.int32)
    frags = np.random.default_rng(2).standard_normal((32, 2 * num)).astype(np.float16)
    mem = np.zeros((32, 8), np.float16)
    cpu, gpu = both(NI._matrix_kernel(num, trans, T.f16, True, rows), 32, frags, mem, rows)
    written = rows[: 8 * num]
    assert _bits(cpu[1][written]).tobytes() == _bits(gpu[1][written]).tobytes()


@pytest.mark.parametrize("nbytes", [4, 8, 16])
def test_cp_async_zero_fill_gpu_equals_interpreter(nbytes):
    rng = np.random.default_rng(nbytes)
    src = rng.integers(1, 127, 32 * nbytes).astype(np.int8)
    sizes = rng.integers(0, nbytes + 1, 32).astype(np.int32)
    k = NI._cp_kernel(nbytes, True, [("copy", 0), ("commit",), ("wait", 0), ("read", 0)])
    cpu, gpu = both(k, 32, src, np.zeros(32 * nbytes, np.int8), sizes)
    np.testing.assert_array_equal(gpu[1], cpu[1])


# ---------------------------------------------------------------------------------------------------------
# examples/05 on the GPU
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def gpu_env(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH"):
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    "name,M,N,K,b_layout,config",
    [
        ("bf16", 96, 80, 72, "nk", "64x64"),
        ("bf16", 130, 136, 200, "kn", "128x128w8"),
        ("f16", 256, 256, 128, "kn", "128x256"),  # 2 k-slices, 4 stages
        ("bf16", 128, 128, 8, "kn", "128x128w8"),  # 1 k-slice (the smallest K), 4 stages
        ("e4m3", 64, 72, 160, "nk", "64x64"),
    ],
)
def test_gemm_example_gpu_equals_interpreter(gpu_env, name, M, N, K, b_layout, config):
    """Small-integer operands: every sum is exact, so the GPU and the interpreter agree bit for bit."""
    rng = np.random.default_rng(0)
    dt = GT.DT[name]
    a = rng.integers(-3, 4, (M, K)).astype(dt)
    b = rng.integers(-3, 4, (N, K) if b_layout == "nk" else (K, N)).astype(dt)
    gpu_env.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    c_cpu = np.full((M, N), np.nan, np.float32)
    GT.G.gemm(a, b, c_cpu, b_layout, config)
    gpu_env.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    ta, tb = torch.from_numpy(a.view(np.uint8)).cuda(), torch.from_numpy(b.view(np.uint8)).cuda()
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16, "e4m3": torch.float8_e4m3fn}[name]
    c_gpu = torch.full((M, N), float("nan"), device="cuda")
    GT.G.gemm(ta.view(tdt), tb.view(tdt), c_gpu, b_layout, config)
    torch.cuda.synchronize()
    assert c_gpu.cpu().numpy().tobytes() == c_cpu.tobytes()
    bb = b.astype(np.float64)
    np.testing.assert_array_equal(c_cpu, a.astype(np.float64) @ (bb.T if b_layout == "nk" else bb))


@pytest.mark.parametrize(
    "name,b_layout", [("bf16", "kn"), ("bf16", "nk"), ("f16", "kn"), ("e4m3", "nk")], ids=lambda x: str(x)
)
def test_gemm_example_4096_against_cublas(gpu_env, name, b_layout):
    err, ours, ref = GT.G.check_gpu_case(name, 4096, 4096, 4096, b_layout)
    print(
        f"\n[gemm] {name} 4096^3 B={b_layout}: max rel err {err:.1e}, flydsl {ours:.0f} TFLOP/s, cuBLAS {ref:.0f} TFLOP/s"
    )
    assert err < 2e-2


def test_gemm_example_ragged_rows_untouched_on_the_gpu(gpu_env):
    M, N, K = 1000, 1000, 1000
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    big = torch.full((M + 7, N + 9), -8192.0, device="cuda", dtype=torch.bfloat16)
    c = big[:M, :N]
    GT.G.gemm(a, b, c, "kn")
    torch.cuda.synchronize()
    ref = (a.float() @ b.float()).bfloat16()
    assert ((c.float() - ref.float()).abs().max() / ref.float().abs().max()).item() < 2e-2
    assert (big[M:, :] == -8192.0).all() and (big[:, N:] == -8192.0).all()
