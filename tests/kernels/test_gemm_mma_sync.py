"""examples/05_gemm_mma_sync.py end to end on the CPU interpreter (tile multiples and ragged M, N, K; B as
(N, K) and (K, N); bf16, f16, fp8; out-of-range rows and columns of C untouched), the PTX it compiles to
(mma.sync, ldmatrix, 16-byte cp.async; no register spills for the default tiles), and the trace-time
capability error of an fp8 MMA on sm_80."""

from __future__ import annotations

import glob
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest

import flydsl.compiler as flyc
from flydsl.codegen import find_ptxas, run_ptxas
from flydsl.interp import InterpError

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("flydsl_example_05_gemm", ROOT / "examples" / "05_gemm_mma_sync.py")
G = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(G)

DT = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH"):
        monkeypatch.delenv(v, raising=False)


def _operands(name, M, N, K, b_layout, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(DT[name])
    b = rng.standard_normal((N, K) if b_layout == "nk" else (K, N)).astype(DT[name])
    return a, b


@pytest.mark.parametrize(
    "name,M,N,K,b_layout,config",
    [
        ("bf16", 64, 64, 64, "nk", "64x64"),  # one tile, one k-slice
        ("bf16", 128, 128, 256, "kn", "64x64"),  # tile multiples, 8 k-slices through 2 stages
        ("bf16", 96, 80, 72, "nk", "64x64"),  # ragged M, N, K
        ("f16", 70, 40, 24, "kn", "64x64"),  # ragged, fewer k-slices than stages
        ("bf16", 130, 136, 200, "kn", "128x128w8"),  # 8 warps, 4 stages, ragged
        ("e4m3", 64, 72, 160, "nk", "64x64"),
        ("e5m2", 40, 64, 96, "nk", "64x64"),
        # fewer k-slices than pipeline stages (the prologue's slices past K are known at trace time)
        ("f16", 256, 256, 128, "kn", "128x256"),  # 2 slices, 4 stages, tile multiples
        ("bf16", 128, 128, 64, "nk", "128x128w8"),  # 1 slice, 4 stages, tile multiples
        ("bf16", 128, 128, 8, "kn", "128x128w8"),  # the smallest K (one 16-byte chunk), ragged K
        ("bf16", 100, 72, 40, "nk", "128x256s3"),  # 1 slice, 3 stages, ragged M, N, K
        ("bf16", 130, 120, 200, "nk", "128x128s3"),  # 4 warps, 3 stages (two blocks per SM on the GPU)
    ],
)
def test_gemm_on_the_interpreter(name, M, N, K, b_layout, config):
    err = G.check_cpu_case(name, M, N, K, b_layout, config)
    assert err < 1e-6, err


@pytest.mark.parametrize("b_layout", ["nk", "kn"])
def test_rows_and_columns_past_the_edges_are_untouched(b_layout):
    """C is a window of a larger array: the guard rows and columns around it keep their sentinel."""
    M, N, K = 70, 56, 40
    a, b = _operands("bf16", M, N, K, b_layout, seed=3)
    big = np.full((M + 5, N + 6), -8192.0, np.float32)
    c = big[:M, :N]
    G.gemm(a, b, c, b_layout, "64x64")
    bb = b.astype(np.float64)
    ref = a.astype(np.float64) @ (bb.T if b_layout == "nk" else bb)
    np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-5)
    assert (big[M:, :] == -8192.0).all() and (big[:, N:] == -8192.0).all()


def _launch_unchecked(a, b, c, b_layout, config, c_vec):
    """The launcher called as gemm_args would, minus its host checks and with C's store width forced."""
    cfg = G.CONFIGS[config]
    static = [flyc.from_dlpack(t) for t in (a, b, c)]
    G.gemm_launch(*static, cfg, b_layout, True, c_vec)


def test_a_c_window_with_rows_off_the_4_byte_grid_is_stored_element_by_element():
    """The H200's 'misaligned address' (test_gemm_example_ragged_rows_untouched_on_the_gpu): C = big[:M, :N]
    of bf16 with N + 9 columns in ``big`` — every odd row starts 2 bytes off a 4-byte boundary, so the pair
    stores the example chose from N alone faulted. The store width now follows the row stride and address:
    pairs where they are aligned, single elements here; the interpreter runs the same case."""
    M, N, K = 70, 40, 24
    a, b = _operands("bf16", M, N, K, "kn", seed=7)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for extra, want_vec in ((9, 1), (6, 2), (8, 8)):  # row strides of 98, 92 and 96 bytes
        big = np.full((M + 7, N + extra), -8192.0, ml_dtypes.bfloat16)
        c = big[:M, :N]
        assert G.gemm_args(a, b, c, "kn", "64x64")[-1] == want_vec
        G.gemm(a, b, c, "kn", "64x64")
        np.testing.assert_allclose(c.astype(np.float64), ref.astype(ml_dtypes.bfloat16).astype(np.float64))
        assert (big[M:, :] == -8192.0).all() and (big[:, N:] == -8192.0).all()


def test_a_forced_pair_store_into_rows_off_the_4_byte_grid_is_versioned_not_a_fault():
    """The program the GPU trapped on (pairs of bf16 forced into rows that start 2 bytes off a 4-byte
    boundary). A copy over global memory now claims only the alignment the specialization proves (2 bytes:
    the row stride is 49 elements) and tests the address for the pair store, so it stores correctly where
    it used to fault — on the GPU and on the interpreter, which runs the same IR."""
    M, N, K = 70, 40, 24
    a, b = _operands("bf16", M, N, K, "kn", seed=7)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    big = np.full((M + 7, N + 9), -8192.0, ml_dtypes.bfloat16)
    c = big[:M, :N]
    _launch_unchecked(a, b, c, "kn", "64x64", 2)
    np.testing.assert_allclose(c.astype(np.float64), ref.astype(ml_dtypes.bfloat16).astype(np.float64))
    assert (big[M:, :] == -8192.0).all() and (big[:, N:] == -8192.0).all()
    ir = G.gemm_launch._last[1].artifact.ir_text()
    assert re.search(r'"ptr\.(masked_)?store"\(.*\{align = 2, fast_align = 4\}.*vector<2xbf16>', ir), ir


@pytest.mark.parametrize("operand", ["A", "B"])
def test_operand_rows_off_the_16_byte_grid_are_rejected_and_fault_in_the_interpreter(operand):
    """A or B whose rows do not start 16-byte aligned (a window of a wider array, or a view one element in):
    the host check names the operand; launched anyway, the interpreter faults at the example's cp.async."""
    M, N, K = 64, 64, 32
    a, b = _operands("bf16", M, N, K, "nk", seed=1)
    c = np.zeros((M, N), np.float32)
    t = a if operand == "A" else b
    wide = np.zeros((t.shape[0], t.shape[1] + 4), t.dtype)  # rows of 72 bytes
    wide[:, : t.shape[1]] = t
    view = wide[:, : t.shape[1]]
    args = (view, b) if operand == "A" else (a, view)
    with pytest.raises(ValueError, match=rf"{operand} must be row-major with rows starting 16-byte aligned"):
        G.gemm_args(*args, c, "nk", "64x64")
    with pytest.raises(
        InterpError, match=r"cp.async of 16 bytes: the source address 0x[0-9a-f]+ is not 16-byte aligned"
    ) as ei:
        _launch_unchecked(*args, c, "nk", "64x64", 2)
    assert "05_gemm_mma_sync.py" in str(ei.value) and "fx.copy(g2s, src_" in str(ei.value)


def test_odd_n_stores_single_elements():
    M, N, K = 33, 31, 16
    a, b = _operands("bf16", M, N, K, "nk", seed=5)
    c = np.full((M, N), np.nan, np.float32)
    G.gemm(a, b, c, "nk", "64x64")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-6, atol=1e-5)


def test_unaligned_rows_are_rejected_on_the_host():
    a, b = _operands("bf16", 16, 16, 20, "nk")
    with pytest.raises(ValueError, match="16-byte aligned"):
        G.gemm_args(a, b, np.zeros((16, 16), np.float32), "nk")
    a, b = _operands("e4m3", 16, 16, 32, "kn")
    with pytest.raises(ValueError, match="ldmatrix cannot transpose 8-bit elements"):
        G.gemm_args(a, b, np.zeros((16, 16), np.float32), "kn")


# ---------------------------------------------------------------------------------------------------------
# the PTX (compiled for sm_90a without a GPU)
# ---------------------------------------------------------------------------------------------------------


def _ptx(monkeypatch, name, M, N, K, b_layout, config=None, arch="sm_90a"):
    monkeypatch.setenv("COMPILE_ONLY", "1")
    monkeypatch.setenv("ARCH", arch)
    a = np.zeros((M, K), DT[name])
    b = np.zeros((N, K) if b_layout == "nk" else (K, N), DT[name])
    c = np.zeros((M, N), ml_dtypes.bfloat16)
    args = G.gemm_args(a, b, c, b_layout, config)
    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    G.gemm_launch(*args)
    return G.gemm_launch


@pytest.mark.parametrize("b_layout", ["nk", "kn"])
def test_the_default_tiles_compile_to_tensor_core_code_without_spills(monkeypatch, tmp_path, b_layout):
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    _ptx(monkeypatch, "bf16", 4096, 4096, 4096, b_layout)
    ptx = (tmp_path / "gemm_kernel_0" / "05_final_isa.ptx").read_text()
    t = ".trans" if b_layout == "kn" else ""
    # the 128x256x64 tile of 8 warps: 4 k-steps x (4 x 8) mma per k-slice; ldmatrix.x4 for A and B
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") == 128
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    assert f"ldmatrix.sync.aligned.m8n8.x4{t}.shared.b16" in ptx
    assert re.search(r"cp\.async\.cg\.shared\.global \[[^]]+\], \[[^]]+\], 16, %r", ptx)
    if find_ptxas() is None:
        pytest.skip("ptxas not found: register and spill counts not checked")
    log = run_ptxas(ptx, "sm_90a")
    regs = int(re.search(r"Used (\d+) registers", log).group(1))
    assert regs <= 255 and "0 bytes spill stores" in log, log
    sass = _sass(ptx, tmp_path)
    if sass is None:
        pytest.skip("cuobjdump not found: SASS not checked")
    assert sass.count("HMMA.16816.F32.BF16") == 128 and "LDSM.16" in sass and "LDGSTS" in sass
    assert "LDL" not in sass and "STL" not in sass  # no local memory anywhere


def _cuobjdump():
    exe = shutil.which("cuobjdump")
    if exe:
        return exe
    try:
        import nvidia

        for base in nvidia.__path__:
            found = glob.glob(os.path.join(base, "*", "bin", "cuobjdump"))
            if found:
                return found[0]
    except ImportError:
        pass
    return None


def _sass(ptx: str, tmp_path) -> str | None:
    exe = _cuobjdump()
    if exe is None:
        return None
    (tmp_path / "k.ptx").write_text(ptx)
    subprocess.run([find_ptxas(), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")], check=True)
    return subprocess.run([exe, "-sass", str(tmp_path / "k.cubin")], capture_output=True, text=True, check=True).stdout


def test_fp8_mma_on_sm80_is_an_error_at_the_users_line(monkeypatch):
    """Traced for sm_80 the fp8 GEMM stops at its ``fx.gemm`` line (FLY520) before the interpreter runs it."""
    monkeypatch.setenv("ARCH", "sm_80")
    a, b = _operands("e4m3", 64, 64, 64, "nk")
    c = np.full((64, 64), np.nan, np.float32)
    with pytest.raises(flyc.FlyDSLError) as e:
        G.gemm(a, b, c, "nk", "64x64")
    text = str(e.value)
    assert "05_gemm_mma_sync.py" in text and "fx.gemm(mma, acc" in text and "error[FLY520]" in text
    assert (
        "an fp8 (e4m3/e5m2) warp-level MMA (mma.sync) needs sm_89 or newer; this kernel is compiled for sm_80" in text
    )
    assert np.isnan(c).all()
