"""Softmax's stream plan (``kernels/norm/softmax_stream.py``) and its (max, sum) reduction, against float64.

On the CPU interpreter: the stream plan at small N (chunks of one or two warps) with kept chunks in registers,
staged chunks in a ring of shared-memory slots (every ring size from one spare slot to two sets), rows that do
not fill the last chunk, blocks looping over several rows (a grid over fewer SMs than rows), a grid wider than
the rows, bf16; ``light_reduce`` (max first, sums rescaled once) on the in-register, onchip and persistent plans.
The interpreter completes ``cp.async`` copies only at a wait (as the hardware may), so a slot read before its
copy's group was waited for reads stale data and fails. Marked ``gpu``: the same plans against the interpreter,
and the plans the benchmarks time at 32K/64K against the reference.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from _arrays import randn
from norm_cases import ATOL
from test_softmax import check, check_gpu_matches_interpreter, run

from kernels.norm.softmax_kernel import build_softmax_module
from kernels.norm.softmax_stream import plan_stream

# chunks of 64 threads x 8 values (512 columns): 2500 columns make 5 chunks, the last ragged
S64 = {"stream": True, "stream_threads": 64, "stream_values": 8}
S32 = {"stream": True, "stream_threads": 32, "stream_values": 16}  # one warp x 16 values: 2000 columns in 4 chunks
ONCHIP = {"register_limit": 0, "onchip_threads": 64, "elems_per_thread": 8, "kept_values": 16}  # softmax_kernel's
CPU_CASES = [
    (5, 2500, "f32", {**S64, "stream_kept": 16, "sms": 2, "ring": 4}),  # 2 kept, 3 staged, 1 spare slot
    (5, 2500, "f32", {**S64, "stream_kept": 16, "sms": 1, "ring": 5}),  # one block, 5 rows, 2 spare slots
    (5, 2500, "f32", {**S64, "stream_kept": 16, "sms": 2}),  # ring of 6: the next row's staged chunks all early
    (7, 2500, "f32", {**S64, "stream_kept": 0, "sms": 3}),  # everything staged
    (5, 2500, "f32", {**S64, "stream_kept": 48, "sms": 2}),  # everything in registers (refilled in the output)
    (2, 2500, "f32", {**S64, "stream_kept": 16, "sms": 4}),  # more blocks than rows
    (4, 2000, "f32", {**S32, "stream_kept": 16, "sms": 1, "ring": 4}),  # 1 kept, 3 staged
    (5, 4100, "bf16", {**S64, "stream_kept": 16, "sms": 2, "ring": 9}),  # 8 bf16 per access, 9 chunks, 7 staged
    (3, 2500, "f32", {**S64, "stream_kept": 16, "sms": 2, "cache_hint": "cs"}),
    # exps in place of the values: in registers and in the slots (rescaled per chunk at the output)
    (5, 2500, "f32", {**S64, "stream_kept": 16, "sms": 2, "ring": 4, "stream_exps": True}),
    (7, 2500, "f32", {**S64, "stream_kept": 0, "sms": 3, "stream_exps": True}),
    (5, 2500, "f32", {**S64, "stream_kept": 48, "sms": 2, "stream_exps": True}),
    (5, 4100, "bf16", {**S64, "stream_kept": 16, "sms": 2, "ring": 9, "stream_exps": True}),  # kept exps only
    (3, 65535, "f32", {}),  # the 64K f32 default (the stream plan) on odd rows: 4-byte copies, the last chunk ragged
    (133, 65536, "f32", {"sms": 1}),  # the default over one SM's block: 133 rows in a loop
    # the light reduction on the plans of softmax_kernel: in registers (rows of 4 warps), onchip, persistent
    (9, 2000, "f32", {"light_reduce": True, "block_threads": 512}),
    (3, 2500, "f32", {**ONCHIP, "light_reduce": True}),
    (5, 2500, "f32", {**ONCHIP, "light_reduce": True, "persist": 1, "sms": 2}),
    (37, 64, "bf16", {"light_reduce": True}),  # rows of 8 threads, 16 rows to a block
    # stream options on rows of 2-byte accesses (odd bf16 rows): cp.async cannot copy 2 bytes, so plan_rows' plan (it
    # failed inside the kernel: "CopyG2SOp copies 32, 64 or 128 bits per thread, got 16")
    (3, 2501, "bf16", {**S64, "stream_kept": 0, "sms": 2}),
]
CPU_IDS = [f"{m}x{n}-{d}-" + "-".join(f"{k}{v}" for k, v in p.items() if k != "stream") for m, n, d, p in CPU_CASES]


@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=CPU_IDS)
def test_softmax_stream_interpreter(M, N, dtype, plan, interpreter):
    a = randn((M, N), dtype, seed=M * N + 1, scale=2.0)
    check(run("cpu", a, dtype, **plan), a, dtype)


def test_stream_plan_shapes():
    """The 64K f32 row: 8 chunks of 1024 threads x 8 values, 4 in registers, 4 staged, a ring of 7 slots (224 KB):
    3 of the next row's 4 staged chunks are copied while this row is reduced."""
    p = plan_stream(65536, 4, 4, elems_per_thread=8, kept_values=32)
    assert (p.row.chunks, p.row.kept, p.staged, p.ring, p.early) == (8, 4, 4, 7, 3)
    assert p.staging_bytes(4) == 7 * 32768
    p = plan_stream(65536, 2, 8, elems_per_thread=8, kept_values=32)  # bf16: 8 chunks of 16 KB, two sets
    assert (p.row.chunks, p.row.kept, p.staged, p.ring, p.early) == (8, 4, 4, 8, 4)
    with pytest.raises(ValueError, match="do not fit in shared memory"):
        plan_stream(65536, 4, 4, elems_per_thread=8, kept_values=0)  # 256 KB staged
    with pytest.raises(ValueError, match=r"ring=4 slots for 4 staged chunks: .* give 5 to 7"):
        plan_stream(65536, 4, 4, elems_per_thread=8, kept_values=32, ring=4)
    # 3 staged chunks of 64 KB fill the 3 slots that fit: no spare slot (it said "ring=3 must lie in (3, 3]")
    with pytest.raises(ValueError, match=r"3 staged chunks of 65536 bytes and a spare slot do not fit .*stream_kept"):
        plan_stream(65528, 4, 4, threads=1024, elems_per_thread=16, kept_values=16)


# -- GPU ----------------------------------------------------------------------------------------------

STREAM_64K = {"stream": True, "stream_values": 8, "stream_kept": 32}
GPU_CASES = [
    (256, 65536, "f32", STREAM_64K),
    (37, 65536, "f32", {**STREAM_64K, "cache_hint": "cs"}),
    (512, 65536, "bf16", STREAM_64K),
    (300, 32768, "f32", {**STREAM_64K, "stream_kept": 16}),
    (100, 65536, "bf16", {**STREAM_64K, "stream_kept": 16}),
    (5, 70001, "f32", STREAM_64K),  # odd rows: scalar accesses, ragged last chunk
    (256, 65536, "f32", {**STREAM_64K, "stream_kept": 24, "stream_exps": True}),
    (256, 65536, "f32", {"light_reduce": True}),
    (1024, 32768, "bf16", {"light_reduce": True}),
]


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", GPU_CASES, ids=[f"{m}x{n}-{d}-{len(p)}" for m, n, d, p in GPU_CASES])
def test_softmax_stream_gpu(M, N, dtype, plan, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    a = randn((M, N), dtype, seed=M + N, scale=2.0)
    check(run("cuda", a, dtype, **plan), a, dtype, atol=ATOL[dtype])


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=CPU_IDS)
def test_softmax_stream_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    check_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch)


def test_sweep_times_the_stream_variants_on_softmax_long_rows_only():
    from benchmarks.cases import norm_sweep

    assert norm_sweep.applicable("s8", 256, 65536, "f32", "softmax")
    assert not norm_sweep.applicable("s8", 256, 65536, "f32", "rmsnorm")  # not a plan of the other kernels
    assert not norm_sweep.applicable("s8", 2048, 16384, "bf16", "softmax")
    assert norm_sweep.applicable("s8k48", 512, 65536, "bf16") and not norm_sweep.applicable("s8k48", 256, 65536, "f32")
    assert norm_sweep.applicable("s8k0", 1024, 32768, "bf16") and not norm_sweep.applicable("s8k0", 256, 65536, "f32")


def test_long_row_defaults_and_the_plans_before():
    from kernels.norm import softmax_kernel as sk

    assert sk.plan_defaults(65536, "f32")["stream"] and sk.plan_defaults(65536, "bf16")["light_reduce"]
    assert sk.plan_defaults(65536, "f32", before=True) == {**sk.PLAN_DEFAULTS, "cache_hint": "cs"}
    assert sk.plan_defaults(65536, "bf16", before=True) == {**sk.PLAN_DEFAULTS, "persist": 2}
    for n, dt in ((16384, "bf16"), (32768, "f32"), (32768, "bf16"), (8192, "f32"), (65537, "f32")):  # unchanged
        # (f32 rows over 64K: the stream plan's ring does not hold their staged chunks)
        now = {
            k: v for k, v in sk.plan_defaults(n, dt).items() if not k.startswith(("tail_", "few_"))
        }  # (row_tail.py's)
        assert now == sk.plan_defaults(n, dt, before=True)


def test_options_of_another_plan_switch_the_stream_default_off(interpreter, tmp_path):
    """64K f32 defaults to the stream plan; ``persist``/``long_rows`` ask for a plan_rows plan, which they get (only
    the stream plan waits with a group of copies left pending: the next row's, in flight)."""
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    a = np.zeros((2, 65536), np.float32)

    def ptx(**plan):
        build_softmax_module(2, 65536, "f32", **plan)(a, a, 2)
        (path,) = (tmp_path / "dump").glob("*/*.ptx")
        text = path.read_text()
        path.unlink()
        return text

    assert re.search(r"cp\.async\.wait_group\s+1;", ptx())  # the stream plan
    assert not re.search(r"cp\.async\.wait_group\s+1;", ptx(persist=1, sms=1))  # the persistent onchip plan
    assert "cp.async" not in ptx(long_rows="two_pass")


def test_the_ftz_diagnostic_patches_only_the_kernels_compiled_inside(interpreter):
    """``benchmarks.softmax_ftz_diag.ftz_exp2``: a measurement's kernels get ``ex2.approx.ftz.f32``, no other."""
    from benchmarks.softmax_ftz_diag import ftz_exp2

    interpreter.setenv("COMPILE_ONLY", "1")
    interpreter.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    a = np.zeros((2, 4096), np.float32)

    def ptx():
        launcher = build_softmax_module(2, 4096, "f32")
        launcher(a, a, 2)
        return launcher._last[1].artifact.ptx

    with ftz_exp2():
        inside = ptx()
    outside = ptx()
    assert "ex2.approx.ftz.f32" in inside and "ex2.approx.f32" not in inside
    assert "ex2.approx.f32" in outside and "ftz" not in outside
