"""LayerNorm's and RMSNorm's stream plan (``stream=True``: softmax's ring schedule, ``kernels/norm/row_stream.py``)
against float64.

On the CPU interpreter: small chunks (64 threads x 8 values) with kept chunks in registers and staged ones in a
ring of shared-memory slots (one spare slot to two sets), everything staged or everything kept, W and B loaded at
use or a chunk ahead, bf16, rows that do not fill the last chunk, blocks looping over more rows than the grid
(and a grid wider than the rows), a large mean; then the 1024-thread plans the benchmarks time, at row lengths
whose last chunk is ragged (49160, 50000, 61440, 65528), odd rows (4-byte copies; 16-bit odd rows fall back to
plan_rows: ``cp.async`` moves 4 bytes or more). The interpreter completes ``cp.async`` copies only at a wait (as
the hardware may), so a slot read before its group was waited for reads stale data and fails. RMSNorm (without the
fused add, which reads two inputs) on a few of the same plans. Marked ``gpu``: the 64K plans against the reference
on the H200 and the small cases against the interpreter.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import test_rmsnorm as rms
from test_layernorm import EPS, check, check_gpu_matches_interpreter, make_inputs, run

from kernels.norm import layernorm_kernel as lk

S64 = {"stream": True, "stream_threads": 64, "stream_values": 8}  # chunks of 512 columns: 2500 make 5, ragged
LS8 = {"stream": True, "stream_values": 8, "stream_kept": 32, "cache_hint": "cs"}  # 1024 threads: 8 chunks at 64K
CPU_CASES = [
    (5, 2500, "f32", {**S64, "stream_kept": 16, "sms": 2, "ring": 4}),  # 2 kept, 3 staged, 1 spare slot
    (5, 2500, "f32", {**S64, "stream_kept": 16, "sms": 2, "ring": 4, "stream_wb_ahead": True}),
    (5, 2500, "f32", {**S64, "stream_kept": 16, "sms": 1, "ring": 5}),  # one block, 5 rows, 2 spare slots
    (5, 2500, "f32", {**S64, "stream_kept": 16, "sms": 2}),  # ring of 6: the next row's staged chunks all early
    (7, 2500, "f32", {**S64, "stream_kept": 0, "sms": 3}),  # everything staged
    (5, 2500, "f32", {**S64, "stream_kept": 48, "sms": 2, "stream_wb_ahead": True}),  # everything in registers
    (2, 2500, "f32", {**S64, "stream_kept": 16, "sms": 4}),  # more blocks than rows
    (5, 2560, "f32", {**S64, "stream_kept": 16, "sms": 2, "ring": 4, "stream_clamp": True}),  # next rows clamped
    (2, 2560, "f32", {**S64, "stream_kept": 16, "sms": 4, "stream_clamp": True}),
    (5, 2500, "f32", {**S64, "stream_kept": 16, "sms": 2, "stream_clamp": True}),  # ragged: still predicated
    (5, 4100, "bf16", {**S64, "stream_kept": 16, "sms": 2, "ring": 9}),  # 8 bf16 per access, 9 chunks, 7 staged
    (5, 4100, "bf16", {**S64, "stream_kept": 16, "sms": 2, "ring": 9, "stream_wb_ahead": True}),
    (3, 2501, "f32", {**S64, "stream_kept": 16, "sms": 2, "cache_hint": "cs"}),  # odd: 4-byte copies
]
CPU_IDS = [f"{m}x{n}-{d}-" + "-".join(f"{k}{v}" for k, v in p.items() if k != "stream") for m, n, d, p in CPU_CASES]


@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=CPU_IDS)
def test_layernorm_stream_interpreter(M, N, dtype, plan, interpreter):
    x, w, b = make_inputs(M, N, dtype, seed=M * N + 3)
    check(x, w, b, dtype, run("cpu", x, w, b, dtype, **plan))


LONG_CASES = [  # the 1024-thread plans at 48K-64K: ragged last chunks, more rows than blocks, fewer
    (3, 49160, "f32", {**LS8, "sms": 2}),  # 7 chunks, the last with 8 columns: 4 kept, 3 staged
    (3, 50000, "f32", {**LS8, "sms": 2, "stream_wb_ahead": True}),
    (5, 49152, "f32", {**LS8, "sms": 2, "stream_clamp": True}),  # 6 chunks, a block's last row's next clamped
    (3, 61440, "f32", {**LS8, "sms": 1, "stream_kept": 16}),  # 8 chunks, 2 kept, 6 staged (1 early)
    (5, 65528, "f32", {**LS8, "sms": 2}),  # 8 chunks, the last 8 columns short
    (3, 65535, "f32", {**LS8, "sms": 2}),  # odd: scalar accesses, 4-byte copies
    (2, 65536, "f32", {**LS8, "stream_kept": 24}),  # fewer rows than SMs: one row per block
    (3, 65528, "bf16", {**LS8, "sms": 2, "stream_kept": 16}),  # 2 kept, 6 staged (ring 12)
    (3, 65535, "bf16", LS8),  # odd 16-bit rows: no cp.async of 2 bytes, plan_rows' plan instead
    (3, 65536, "f32", {"sms": 2}),  # the 64K defaults over two SMs
    (3, 65536, "bf16", {"sms": 2}),
]
LONG_IDS = [f"{m}x{n}-{d}-" + "-".join(f"{k}{v}" for k, v in p.items() if k != "stream") for m, n, d, p in LONG_CASES]


@pytest.mark.parametrize("M,N,dtype,plan", LONG_CASES, ids=LONG_IDS)
def test_layernorm_stream_long_rows_interpreter(M, N, dtype, plan, interpreter):
    x, w, b = make_inputs(M, N, dtype, seed=N + M)
    check(x, w, b, dtype, run("cpu", x, w, b, dtype, **plan))


def test_layernorm_stream_large_mean_keeps_precision(interpreter):
    """Rows of mean 1000 and unit variance in f32: the chunks' (count, mean, M2) merged by Chan's rule, as the other
    plans (no E[x^2] - E[x]^2 cancellation)."""
    x, w, b = make_inputs(3, 2500, "f32", seed=11, offset=1000.0)
    check(x, w, b, "f32", run("cpu", x, w, b, "f32", **S64, stream_kept=16, sms=2, ring=4), atol=1e-4)


RMS_CASES = [CPU_CASES[i] for i in (0, 4, 5, 7, 10)] + [LONG_CASES[i] for i in (0, 5, 7)]  # staged, kept, clamped, bf16
RMS_IDS = [f"{m}x{n}-{d}-" + "-".join(f"{k}{v}" for k, v in p.items() if k != "stream") for m, n, d, p in RMS_CASES]


@pytest.mark.parametrize("M,N,dtype,plan", RMS_CASES, ids=RMS_IDS)
def test_rmsnorm_stream_interpreter(M, N, dtype, plan, interpreter):
    plan = {k: v for k, v in plan.items() if k != "stream_wb_ahead"}
    x, r, w = rms.make_inputs(M, N, dtype, seed=M + N)
    rms.check(x, r, w, dtype, False, *rms.run("cpu", x, r, w, dtype, False, **plan))


def test_the_fused_add_has_no_stream_plan():
    with pytest.raises(ValueError, match="the fused add"):
        rms.build_fused_add_rmsnorm_module(65536, "f32", stream=True)


def _ptx(tmp_path, interpreter, n, dtype, **plan):
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    x = np.zeros((2, n), np.float32 if dtype == "f32" else np.float16)
    if dtype == "bf16":
        import ml_dtypes

        x = x.astype(ml_dtypes.bfloat16)
    lk.build_layernorm_module(n, dtype, EPS, **plan, tail_cols=0, few_rows=0)(x, x[0], x[1], x, 2)  # (one kernel)
    (path,) = (tmp_path / "dump").glob("*/*.ptx")
    text = path.read_text()
    path.unlink()
    return text


def test_layernorm_stream_ptx(interpreter, tmp_path):
    """64K f32, chunks of 8 values: X's 4 kept chunks loaded before the loop and refilled in it (``ld.global.cs``),
    its 4 staged ones copied by cp.async (before the loop and in it: 3 early, 1 late), W and B read once per chunk
    (no hint), Y stored with the hint; one barrier per row; the next row's copies left pending at the reduction."""
    ptx = _ptx(tmp_path, interpreter, 65536, "f32", **LS8)
    # predicated (a next row may lie past the last): no hint on the kept chunks' loads; W and B: 8 chunks of two
    # 16-byte loads each
    assert ptx.count("ld.global.v4.b32") == 2 * 4 * 2 + 2 * 8 * 2 and ptx.count("ld.global.cs") == 0
    assert ptx.count("st.global.cs.v4.b32") == 8 * 2 and ptx.count("st.global.v4") == 0
    assert ptx.count("cp.async.cg.shared.global") == 2 * 4 * 2 and ptx.count("bar.sync") == 1
    assert re.search(r"cp\.async\.wait_group\s+2;", ptx)
    # clamped: the next row of a block's last is the last row again, so its loads carry the hint
    ptx = _ptx(tmp_path, interpreter, 65536, "f32", **LS8, stream_clamp=True)
    assert ptx.count("ld.global.cs.v4.b32") == 2 * 4 * 2 and ptx.count("ld.global.v4.b32") == 2 * 8 * 2


def test_layernorm_stream_defaults_switch_off_for_another_plan():
    """Options of a plan_rows plan (``pair_rows``, ``persist``...) given without ``stream`` ask for that plan."""
    assert lk.NOT_ROW_PLAN_OPTIONS >= {"stream", "stream_values", "stream_kept", "cache_hint", "stream_wb_ahead"}
    assert "pair_rows" not in lk.NOT_ROW_PLAN_OPTIONS and "persist" not in lk.NOT_ROW_PLAN_OPTIONS


def test_sweep_times_the_layernorm_stream_variants_on_layernorm_rows_over_32k_only():
    from benchmarks.cases import norm_sweep

    assert norm_sweep.applicable("ls8", 256, 65536, "f32", "layernorm")
    assert not norm_sweep.applicable("ls8", 256, 65536, "f32", "softmax")
    assert not norm_sweep.applicable("ls8", 1024, 32768, "bf16", "layernorm")
    assert norm_sweep.applicable("ls8k0", 512, 65536, "bf16", "layernorm")
    assert not norm_sweep.applicable("ls8k0", 256, 65536, "f32", "layernorm")  # 256 KB staged: does not fit


# -- GPU ----------------------------------------------------------------------------------------------

LS512 = {**LS8, "stream_threads": 512, "stream_kept": 64, "max_registers": 128}
GPU_CASES = [
    (256, 65536, "f32", LS8),
    (300, 65536, "f32", {**LS8, "stream_kept": 16}),  # not a multiple of the grid
    (37, 65536, "f32", {**LS8, "stream_wb_ahead": True}),  # fewer rows than SMs
    (256, 65536, "f32", {**LS8, "stream_values": 16}),
    (256, 65536, "f32", LS512),
    (7, 49160, "f32", LS8),
    (7, 50000, "f32", {**LS8, "stream_kept": 24}),
    (7, 61440, "f32", LS8),
    (7, 65528, "f32", LS8),
    (5, 70001, "f32", LS8),  # odd rows: scalar accesses, ragged last chunk
    (512, 65536, "bf16", LS8),
    (300, 65536, "f32", {**LS8, "stream_clamp": True}),
    (37, 65536, "bf16", {**LS8, "stream_clamp": True, "stream_kept": 16}),
    (100, 65536, "bf16", {**LS8, "stream_kept": 16}),
    (512, 65536, "bf16", {**LS8, "stream_kept": 0}),
    (512, 65536, "bf16", {**LS512, "stream_wb_ahead": True}),
    (9, 65528, "bf16", LS8),
]
GPU_IDS = [f"{m}x{n}-{d}-" + "-".join(f"{k}{v}" for k, v in p.items() if k != "stream") for m, n, d, p in GPU_CASES]


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", GPU_CASES, ids=GPU_IDS)
def test_layernorm_stream_gpu(M, N, dtype, plan, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    x, w, b = make_inputs(M, N, dtype, seed=M + N)
    check(x, w, b, dtype, run("cuda", x, w, b, dtype, **plan))


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", GPU_CASES[:2] + GPU_CASES[-4:], ids=GPU_IDS[:2] + GPU_IDS[-4:])
def test_rmsnorm_stream_gpu(M, N, dtype, plan, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    plan = {k: v for k, v in plan.items() if k != "stream_wb_ahead"}
    x, r, w = rms.make_inputs(M, N, dtype, seed=M + N)
    rms.check(x, r, w, dtype, False, *rms.run("cuda", x, r, w, dtype, False, **plan))


@pytest.mark.gpu
def test_layernorm_stream_gpu_large_mean(monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    x, w, b = make_inputs(200, 65536, "f32", seed=5, offset=1000.0)
    check(x, w, b, "f32", run("cuda", x, w, b, "f32", **LS8), atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=CPU_IDS)
def test_layernorm_stream_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    check_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch)
