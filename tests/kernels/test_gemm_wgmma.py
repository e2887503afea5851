"""examples/06_gemm_wgmma.py (warp-specialized persistent Hopper GEMM) end to end: on the CPU interpreter at
small shapes against numpy (ragged M/N/K, several tiles per block, fp8, out-of-range rows untouched), and on
the GPU (marker ``gpu``) against torch."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit"))
import hopper_cases as H  # noqa: E402

_spec = importlib.util.spec_from_file_location("gemm_wgmma_example", ROOT / "examples" / "06_gemm_wgmma.py")
G = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(G)

DT = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "e4m3": ml_dtypes.float8_e4m3fn}


def _inputs(M, N, K, ab, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((M, K)).astype(DT[ab]), rng.standard_normal((N, K)).astype(DT[ab])


def _bf16_exact(got, a, b):
    """Each element is the f32-accumulated product rounded once to bf16: for fp8 bit for bit the fp8 tensor
    core's accumulation over the k32 wgmmas in k order (the interpreter's model); for 16-bit inputs up to
    the accumulation order."""
    if a.dtype == ml_dtypes.float8_e4m3fn:
        want = H.fp8_mm(a, b, "e4m3").astype(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
        return
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    err = np.abs(got.astype(np.float64) - ref)
    assert (err <= 2.0**-8 * np.abs(ref) + 1e-3).all(), f"max error {err.max()}"


@pytest.mark.parametrize(
    "M, N, K, ab, sms",
    [
        (128, 256, 64, "bf16", 1),  # one tile, one k-tile
        (256, 512, 320, "bf16", 2),  # 4 tiles over 2 blocks, 5 k-tiles: the ring wraps, phases flip
        (130, 264, 72, "bf16", 3),  # ragged in M, N and K: TMA zero-fill and clipped stores
        (96, 200, 48, "f16", 1),
        (128, 256, 384, "e4m3", 2),
        (40, 24, 32, "e4m3", 1),
    ],
)
def test_gemm_on_the_interpreter(interpreter, M, N, K, ab, sms):
    a, b = _inputs(M, N, K, ab, seed=M * N + K)
    c = np.full((M, N), np.nan, ml_dtypes.bfloat16)
    G.gemm(a, b, c, num_sms=sms)
    _bf16_exact(c, a, b)


def test_gemm_leaves_memory_outside_c_untouched(interpreter):
    M, N, K = 100, 72, 64
    a, b = _inputs(M, N, K, "bf16")
    big = np.full((M + 28, N + 8), -8192, ml_dtypes.bfloat16)  # C is a view inside a larger buffer
    G.gemm(a, b, big[:M, :N], num_sms=1)
    _bf16_exact(big[:M, :N], a, b)
    assert (big[M:] == -8192).all() and (big[:, N:] == -8192).all()


def test_gemm_with_more_blocks_than_tiles(interpreter):
    a, b = _inputs(64, 64, 64, "bf16")
    c = np.full((64, 64), np.nan, ml_dtypes.bfloat16)
    G.gemm(a, b, c, num_sms=8)  # the grid is min(#SMs, #tiles) = 1
    _bf16_exact(c, a, b)


def _run_on_the_gpu(a, b):
    import torch

    c = torch.full((a.shape[0], b.shape[0]), float("nan"), dtype=torch.bfloat16, device="cuda")
    G.gemm(a, b, c, torch.cuda.get_device_properties(0).multi_processor_count)
    torch.cuda.synchronize()
    return c.cpu().view(torch.int16).numpy().view(ml_dtypes.bfloat16)


def _numpy(t, dt):
    import torch

    return t.cpu().view(torch.uint8 if dt == ml_dtypes.float8_e4m3fn else torch.int16).numpy().view(dt)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "M, N, K, ab",
    [(512, 768, 320, "bf16"), (1000, 1032, 520, "bf16"), (256, 256, 4096, "f16"), (2048, 2048, 2048, "bf16")],
)
def test_gemm_on_the_gpu(M, N, K, ab):
    a, b = G._torch_inputs(M, N, K, ab)
    got = _run_on_the_gpu(a, b).astype(np.float64)
    ref = (a.double() @ b.double().T).cpu().numpy()
    err = np.abs(got - ref)
    assert (err <= 2.0**-8 * np.abs(ref) + 1e-2).all(), f"max error {err.max()}"


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K", [(512, 512, 512), (16, 4096, 4096), (130, 264, 208)])
def test_fp8_gemm_on_the_gpu_is_bit_exact(M, N, K):
    """fp8: (1) small integers, whose sums every accumulator of 13+ bits adds exactly: all of C is the
    exact product rounded to bf16; (2) normal data: every 16th column is bit for bit the interpreter's
    model of the fp8 tensor core's accumulation (flydsl/interp/tc_numerics.py), rounded to bf16."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    ints = [
        torch.randint(-2, 3, s, device="cuda", generator=g).float().to(torch.float8_e4m3fn) for s in ((M, K), (N, K))
    ]
    got = _run_on_the_gpu(*ints)  # integer partial sums below 2^14 (unless 4096 products of 4 share a sign)
    a, b = (_numpy(t, ml_dtypes.float8_e4m3fn) for t in ints)
    want = (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))

    ta, tb = G._torch_inputs(M, N, K, "e4m3")
    got = _run_on_the_gpu(ta, tb)[:, ::16]
    a, b = _numpy(ta, ml_dtypes.float8_e4m3fn), _numpy(tb, ml_dtypes.float8_e4m3fn)[::16]
    want = H.fp8_mm(a, b, "e4m3").astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
