"""RMSNorm (``kernels/norm/rmsnorm_kernel.py``), plain and fused with the residual add, against a float64
reference.

On the CPU interpreter (CI): tiny and odd N, N not a multiple of the vector width, rows that share a
block, a row count that does not fill the last block, rows longer than the register path (two passes),
and the PTX's 128-bit accesses. Marked ``gpu``: the same bodies on the GPU over a spread of shapes,
against the reference and against the interpreter. Outputs are poisoned with NaN first. Data are numpy
arrays (torch CUDA tensors on the GPU), so the CPU cases need no torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from _arrays import full, rand, randn, sync, to_device, to_numpy
from norm_cases import ATOL, CPU_CASES, CPU_IDS, GPU_CASES, GPU_IDS, PARITY_CASES, PARITY_IDS, check_close, check_parity

from kernels.norm.rmsnorm_kernel import build_fused_add_rmsnorm_module, build_rmsnorm_module

EPS = 1e-6


def reference(x: np.ndarray, w: np.ndarray, eps=EPS) -> np.ndarray:
    x, w = x.astype(np.float64), w.astype(np.float64)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w


def make_inputs(M, N, dtype, seed=0):
    return randn((M, N), dtype, seed), randn((M, N), dtype, seed + 1), rand(N, dtype, seed + 2)


def run(device, x, r, w, dtype, fused, **plan):
    """(Y, R_out) computed on ``device`` as numpy arrays (R_out is None without the fused add)."""
    M, N = x.shape
    X, R, W = (to_device(t, device) for t in (x, r, w))
    Y = full((M, N), float("nan"), x.dtype, device)
    if fused:
        R_out = full((M, N), float("nan"), x.dtype, device)
        build_fused_add_rmsnorm_module(N, dtype, **plan)(X, R, W, Y, R_out, M)
    else:
        R_out = None
        build_rmsnorm_module(N, dtype, **plan)(X, W, Y, M)
    sync(device)
    return to_numpy(Y), None if R_out is None else to_numpy(R_out)


def check(x, r, w, dtype, fused, y, r_out):
    if fused:
        s = (x.astype(np.float32) + r.astype(np.float32)).astype(x.dtype)  # the sum, rounded to the data type
        np.testing.assert_array_equal(r_out, s, err_msg="residual sum differs")
        x = s
    check_close(y, reference(x, w), ATOL[dtype])


@pytest.mark.parametrize("fused", [False, True], ids=["plain", "fused_add"])
@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=CPU_IDS)
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
    y = full((3, 256), float("nan"), "f32", "cpu")
    build_rmsnorm_module(256, "f32", eps=1.0)(x, w, y, 3)
    np.testing.assert_allclose(y, reference(x, w, eps=1.0), atol=1e-6)


def _ptx(interpreter, tmp_path, M: int, N: int, dtype: str) -> str:
    """The PTX of RMSNorm's default plan for ``M x N`` rows of ``dtype`` (compiled, not run; without the last rows'
    kernel of longer rows, ``kernels/norm/row_tail.py``)."""
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    x = full((M, N), 0, dtype, "cpu")
    build_rmsnorm_module(N, dtype, tail_cols=0)(x, x[0], x, M)
    (ptx,) = [p.read_text() for p in (tmp_path / "dump").glob("*/*.ptx")]
    return ptx


def test_rmsnorm_ptx_uses_128bit_accesses(interpreter, tmp_path):
    ptx = _ptx(interpreter, tmp_path, 64, 8192, "bf16")
    # 16 values per thread: two 16-byte loads of X and two of the weight, two 16-byte stores
    assert ptx.count("ld.global.v4.b32") == 4 and ptx.count("st.global.v4.b32") == 2, ptx
    assert "rsqrt.approx" in ptx and "bar.sync" in ptx and "shfl.sync.bfly" in ptx
    assert not any(op in ptx for op in ("div.s32", "div.u32", "rem.s32", "rem.u32", ".local")), ptx


@pytest.mark.parametrize("option", ["light_reduce", "before", "elems_per_thred", "clusters"])
def test_an_option_no_rmsnorm_plan_takes_is_named_when_built(option):
    """Another kernel's plan option (softmax's ``light_reduce``, LayerNorm's ``before``), a misspelt one or one the
    builder sets itself (``clusters``: the target's): a ValueError naming the builder and the option when the kernel
    is built (it was a TypeError from plan_rows inside the kernel's trace)."""
    for build in (build_rmsnorm_module, build_fused_add_rmsnorm_module):
        with pytest.raises(
            ValueError, match=rf"{build.__name__}: unknown plan option\(s\) '{option}'.*elems_per_thread"
        ):
            build(65528, "bf16", **{option: True})


def test_ragged_rows_predicate_only_the_last_chunk(interpreter, tmp_path):
    """57000 f32 rows: four chunks of 16384 columns, the last one 7848 long. Only its accesses are predicated (and
    lose the streaming hint); predicating the three full chunks too spilled at the 64-register cap and cost up to
    10% (ptxas; H200, session 20)."""
    ptx = _ptx(interpreter, tmp_path, 2, 57000, "f32")
    # 4 stores per chunk: the full chunks' 12 unpredicated; of the last, the 2 that can reach a column before 57000
    assert ptx.count("st.global.cs.v4.b32") == 12 and ptx.count("st.global.v4.b32") == 2, ptx


# -- GPU ----------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("fused", [False, True], ids=["plain", "fused_add"])
@pytest.mark.parametrize("M,N,dtype", GPU_CASES, ids=GPU_IDS)
def test_rmsnorm_gpu(M, N, dtype, fused, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    x, r, w = make_inputs(M, N, dtype, seed=M + N)
    check(x, r, w, dtype, fused, *run("cuda", x, r, w, dtype, fused))


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", PARITY_CASES, ids=PARITY_IDS)
def test_rmsnorm_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    x, r, w = make_inputs(M, N, dtype, seed=7)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    gpu, gpu_r = run("cuda", x, r, w, dtype, True, **plan)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    cpu, cpu_r = run("cpu", x, r, w, dtype, True, **plan)
    np.testing.assert_array_equal(gpu_r, cpu_r)  # the residual sum is exact on both
    check_parity(gpu, cpu, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("fused", [False, True], ids=["plain", "fused_add"])
def test_rmsnorm_gpu_staging_of_exactly_48kb(fused, monkeypatch):
    """40000 bf16 rows in chunks of 512 threads x 16 values: three chunks staged, exactly 48 KB of dynamic shared
    memory beside the reduction's static partials. A block may hold more than 48 KB only once the kernel's limit
    is raised; the runtime raised it only above 48 KB of dynamic memory, so this launch failed
    (CUDA_ERROR_INVALID_VALUE)."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    plan = {"shape_defaults": False, "onchip_threads": 512, "max_registers": 64}
    x, r, w = make_inputs(3, 40000, "bf16", seed=5)
    check(x, r, w, "bf16", fused, *run("cuda", x, r, w, "bf16", fused, **plan))
