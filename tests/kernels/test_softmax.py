"""Softmax (``kernels/norm/softmax_kernel.py``) against a float64 reference.

On the CPU interpreter (CI): tiny and odd N, N not a multiple of the vector width, rows that share a
block, a row count that does not fill the last block, rows longer than the register path (two passes),
-inf entries and large magnitudes, misaligned tensors, and the PTX's 128-bit accesses. Marked ``gpu``:
the same bodies on the GPU over a spread of shapes, against the reference and against the interpreter.
Outputs are poisoned with NaN first, so an element the kernel never writes fails the test. Data are numpy
arrays (torch CUDA tensors on the GPU), so the CPU cases need no torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from _arrays import full, randn, sync, to_device, to_numpy
from norm_cases import ATOL, CPU_CASES, CPU_IDS, GPU_CASES, GPU_IDS, PARITY_CASES, PARITY_IDS, check_close, check_parity

from kernels.norm.layernorm_kernel import build_layernorm_module
from kernels.norm.softmax_kernel import build_softmax_module


def reference(a: np.ndarray) -> np.ndarray:
    x = a.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run(device, a: np.ndarray, dtype, align_offset=0, **plan) -> np.ndarray:
    """Softmax of ``a`` computed on ``device``, as a numpy array.

    ``align_offset`` places both tensors that many elements into a larger buffer (an unaligned start)."""
    M, N = a.shape
    A = to_device(a, device, offset=align_offset)
    C = full((M, N), float("nan"), a.dtype, device, offset=align_offset)
    build_softmax_module(M, N, dtype, **plan)(A, C, M)
    sync(device)
    return to_numpy(C)


def check(got: np.ndarray, a: np.ndarray, dtype: str, atol=None):
    check_close(got, reference(a), atol or ATOL[dtype])


@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=CPU_IDS)
def test_softmax_interpreter(M, N, dtype, plan, interpreter):
    a = randn((M, N), dtype, seed=M * N, scale=2.0)
    check(run("cpu", a, dtype, **plan), a, dtype)


def test_softmax_is_stable_on_large_values_and_minus_inf(interpreter):
    a = randn((4, 200), "f32", seed=1, scale=1000.0)  # exp would overflow without the max subtraction
    a[1, ::3] = float("-inf")  # masked-out entries (attention masks) get probability 0
    a[2, :] = -1e30  # a constant row is uniform
    got = run("cpu", a, "f32")
    check(got, a, "f32")
    assert (got[1, ::3] == 0).all()
    np.testing.assert_allclose(got[2], np.full(200, 1 / 200), rtol=1e-6)


def test_softmax_on_misaligned_tensors(interpreter):
    """Tensors starting 1 or 2 elements into a buffer: the launcher picks narrower accesses."""
    a = randn((3, 64), "bf16", seed=2, scale=2.0)
    for off in (1, 2):
        check(run("cpu", a, "bf16", align_offset=off), a, "bf16")


def test_softmax_ptx_uses_128bit_accesses(interpreter, tmp_path):
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    a = full((64, 8192), 0, "bf16", "cpu")
    build_softmax_module(64, 8192, "bf16")(a, a, 64)
    (ptx,) = [p.read_text() for p in (tmp_path / "dump").glob("*/*.ptx")]
    # 8192 bf16 over 512 threads: 16 values each, two 16-byte loads and two 16-byte stores
    assert ptx.count("ld.global.v4.b32") == 2 and ptx.count("st.global.v4.b32") == 2, ptx
    assert ptx.count("ex2.approx") >= 16 and "bar.sync" in ptx and "shfl.sync.bfly" in ptx
    assert not any(op in ptx for op in ("div.s32", "div.u32", "rem.s32", "rem.u32", ".local")), ptx


# -- GPU ----------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype", GPU_CASES, ids=GPU_IDS)
def test_softmax_gpu(M, N, dtype, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    a = randn((M, N), dtype, seed=M + N, scale=2.0)
    check(run("cuda", a, dtype), a, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", PARITY_CASES, ids=PARITY_IDS)
def test_softmax_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    check_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch)


def check_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    """The same softmax on the GPU and on the interpreter agree (within the GPU's approximate ``ex2``)."""
    a = randn((M, N), dtype, seed=7, scale=2.0)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    gpu = run("cuda", a, dtype, **plan)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    cpu = run("cpu", a, dtype, **plan)
    check_parity(gpu, cpu, dtype)


# a row over a cluster of 8 blocks of 6144 columns: 40000 f32 leaves the last block without a column of the row (its
# maximum MASKED_MIN); bf16: 8 blocks of 8192, the last three empty
EMPTY_BLOCK_CASES = [(2, 40000, "f32"), (2, 40000, "bf16")]
CLUSTER_8K = {"shape_defaults": False, "long_rows": "cluster", "cluster_cols": 8192}


@pytest.mark.parametrize("M,N,dtype", EMPTY_BLOCK_CASES)
def test_softmax_cluster_block_without_columns(M, N, dtype, interpreter):
    a = randn((M, N), dtype, seed=N, scale=2.0)
    check(run("cpu", a, dtype, **CLUSTER_8K), a, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype", EMPTY_BLOCK_CASES)
def test_softmax_gpu_cluster_block_without_columns(M, N, dtype, monkeypatch):
    """The GPU contracts ``x * log2e - m * log2e`` to one fma: with x = m = MASKED_MIN that is exactly 0 only when
    the product is exact (a power of two); at -1e38 the empty block's exp was inf and the row NaN on the H200."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    a = randn((M, N), dtype, seed=N, scale=2.0)
    check(run("cuda", a, dtype, **CLUSTER_8K), a, dtype)


def test_masked_min_times_log2e_is_exact():
    """Why MASKED_MIN is a power of two: its f32 product with log2(e) is exact, so fma(x, log2e, -(m * log2e)) = 0."""
    import ml_dtypes

    from kernels.norm.norm_common import LOG2E, MASKED_MIN

    for dt in ("f32", "bf16"):
        m, c = np.float32(MASKED_MIN[dt]), np.float32(LOG2E)
        assert np.isfinite(m * c) and np.float64(m * c) == np.float64(m) * np.float64(c)
        assert float(m.astype(ml_dtypes.bfloat16)) == MASKED_MIN[dt]  # held exactly by the data type too


LIGHT_CLUSTER = {"shape_defaults": False, "long_rows": "cluster", "cluster_cols": 1024, "light_reduce": True}


def test_softmax_light_reduce_over_a_cluster(interpreter):
    """``light_reduce`` (the 64K bf16 default) with a row over a cluster: the blocks' partials are merged across the
    cluster (they were not: each block normalised its own slice — wrong rows on the H200, a cluster barrier never
    arrived at on the interpreter)."""
    a = randn((2, 3001), "f32", seed=3, scale=2.0)
    check(run("cpu", a, "f32", **LIGHT_CLUSTER), a, "f32")


@pytest.mark.gpu
def test_softmax_gpu_cluster_over_the_64k_bf16_defaults(monkeypatch):
    """``long_rows="cluster"`` over the 64K bf16 defaults (persistent, ``light_reduce``): 2.4-14x the largest value
    wrong on the H200 before the fix (found by a plan fuzz, session 20)."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    a = randn((3, 65528), "bf16", seed=4, scale=2.0)
    check(run("cuda", a, "bf16", long_rows="cluster"), a, "bf16")
    check(run("cuda", a[:, :3001].copy(), "bf16", **LIGHT_CLUSTER), a[:, :3001].copy(), "bf16")


@pytest.mark.parametrize(
    "build, own",
    [
        (lambda **kw: build_softmax_module(0, 4096, "f32", **kw), "light_reduce"),
        (lambda **kw: build_layernorm_module(4096, "f32", **kw), "pair_wb_ahead"),
    ],
    ids=["softmax", "layernorm"],
)
def test_an_option_the_builder_sets_itself_is_refused_with_what_it_takes(build, own):
    """``clusters`` (whether the target has them: the builder's) was listed as an option the plans take and then was a
    TypeError from inside the trace ("multiple values for keyword argument"); the refusal names the builder's own
    options too (LayerNorm's pair options were in no docstring)."""
    with pytest.raises(ValueError, match=rf"unknown plan option\(s\) 'clusters' .*it takes .*\b{own}\b"):
        build(clusters=False)
