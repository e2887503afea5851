"""A long-row grid's last rows over thread block clusters (``kernels/norm/row_tail.py``): the right rows, the launches
the tail options ask for, and their checks.

On the interpreter the plans run with ``sms=4`` (a grid's "SMs"), so a few rows give every case: all rows the tail's
(fewer rows than SMs), a main kernel and a tail, no tail (no last partial round; a tail of too many blocks; more
rounds than ``tail_rounds``). On the GPU (marked ``gpu``) the kernels' own per-shape tails over 132 SMs, against a
float64 reference, with NaN-filled outputs read by the next kernel of the stream and under CUDA-graph replay (the
tail waits for the main kernel at its end: what follows must see both).
"""

from __future__ import annotations

import numpy as np
import pytest
from norm_cases import check_rows, kernel_args

from benchmarks.cases.norm_sweep import KERNELS
from flydsl.runtime import cpu as cpu_runtime
from kernels.norm import layernorm_kernel, rmsnorm_kernel, softmax_kernel
from kernels.norm.row_stream import NOT_ROW_PLAN, rule_defaults_off
from tools.fuzz_pool import raised_in

SMS = 4  # the interpreter's grids: 4 "SMs", so 5 rows are a round and a row
ONCHIP = {"shape_defaults": False, "register_limit": 0, "onchip_threads": 64, "elems_per_thread": 8, "kept_values": 16}
PLANS = {
    "onchip": {**ONCHIP, "sms": SMS},
    "persist": {**ONCHIP, "sms": SMS, "persist": 1},
    "stream": {"shape_defaults": False, "stream": True, "stream_threads": 64, "stream_values": 8, "sms": SMS},
    "pairs": {**ONCHIP, "sms": SMS, "pair_rows": True},
}
N, K = 2500, 4  # tail_cols 640: a row over a cluster of 4 blocks
# (rows, tail_blocks, tail_rounds) -> the tail's rows (0: none) over 4 SMs (paired rows: over 4 SMs' rounds of 8 rows)
ROWS = {(3, 16, 2): (3, 3), (6, 16, 2): (2, 0), (7, 8, 2): (0, 0), (13, 16, 2): (0, 0), (5, 16, 0): (0, 0),
        (9, 16, 2): (1, 1), (17, 16, 2): (0, 1), (4, 16, 0): (0, 4)}  # fmt: skip


@pytest.fixture
def launches(monkeypatch):
    """Every interpreter launch as ``(kernel name, blocks, threads, dynamic shared memory)``."""
    seen = []
    launch = cpu_runtime.CpuLauncher._launch

    def spy(self, mem, name, grid, block, smem, *rest):
        seen.append((str(name), int(grid[0]), int(block[0]), int(smem)))
        return launch(self, mem, name, grid, block, smem, *rest)

    monkeypatch.setattr(cpu_runtime.CpuLauncher, "_launch", spy)
    return seen


def _cases():
    for kernel in KERNELS:
        for name in PLANS:
            if (name == "pairs" and kernel != "layernorm") or (name == "stream" and kernel == "rmsnorm+add"):
                continue  # (pairs: LayerNorm's; the fused add has no stream plan)
            for (m, blocks, rounds), t in ROWS.items():
                yield kernel, name, m, blocks, rounds, t[name == "pairs"]


CASES = list(_cases())


@pytest.mark.parametrize(
    "kernel,plan,M,blocks,rounds,t", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}x{c[3]}r{c[4]}" for c in CASES]
)
def test_tail_rows_are_right_and_launched_as_asked(kernel, plan, M, blocks, rounds, t, interpreter, launches):
    inputs, y, ro, args = kernel_args(kernel, M, N, "f32")
    options = {**PLANS[plan], "tail_cols": 640, "tail_blocks": blocks, "tail_rounds": rounds}
    KERNELS[kernel][0](N, "f32", options)(*args)
    check_rows(kernel, inputs, y, ro, 1e-5)
    tails = [g for name, g, *_ in launches if name != launches[0][0] or M == t]
    assert tails == ([t * K] if t else []), launches
    assert len(launches) == (M > t) + (t > 0), launches  # the main kernel only where it has rows


@pytest.mark.parametrize("tail", [640, 0], ids=["tail", "no-tail"])
def test_no_rows_launch_nothing_and_negative_rows_are_refused(tail, interpreter):
    """M = 0: no launch and no error (an empty batch), with a tail or without; M < 0: the launch's FLY222."""
    _, y, _, args = kernel_args("rmsnorm", 3, N, "f32")
    launch = KERNELS["rmsnorm"][0](N, "f32", {**PLANS["onchip"], "tail_cols": tail})
    launch(*args[:-1], 0)
    assert np.isnan(y).all()
    with pytest.raises(ValueError, match=r"FLY222.*grid, computed at run time, is \(-1, 1, 1\)"):
        launch(*args[:-1], -1)


def test_tail_of_odd_rows(interpreter):
    """Rows of 2501 f32 (scalar accesses): the tail's last block holds a ragged slice."""
    for kernel in KERNELS:
        inputs, y, ro, args = kernel_args(kernel, 3, 2501, "f32")
        KERNELS[kernel][0](2501, "f32", {**PLANS["onchip"], "tail_cols": 640})(*args)
        check_rows(kernel, inputs, y, ro, 1e-5)


BAD = [
    {"tail_cols": -1},
    {"tail_blocks": -1},
    {"tail_rounds": -1},
    {"tail_cols": "8k"},
    {"tail_regs": 300},
    {"tail_spread": 1},
]


@pytest.mark.parametrize("bad", BAD)
def test_tail_options_are_checked_when_built(bad):
    with pytest.raises(ValueError, match="tail_cols=.*tail_blocks=.*tail_rounds=.*tail_regs=") as e:
        KERNELS["rmsnorm"][0](4096, "f32", bad)
    assert raised_in(e.value).startswith("kernels"), raised_in(e.value)


def test_tail_options_keep_a_stream_default():
    """A tail option alone does not describe another row plan: softmax's stream default at 61440 f32 stays on."""
    assert softmax_kernel.plan_defaults(61440, "f32").get("stream") is True
    tail = {"tail_cols": 0, "tail_blocks": 8, "tail_rounds": 1, "tail_regs": 64}
    assert rule_defaults_off(tail, NOT_ROW_PLAN) == tail


def test_the_default_tail_is_what_runs_at_once(interpreter, launches):
    """``tail_blocks`` 0 (the default): a tail of at most as many blocks as the GPU runs at once in its clusters (an
    H200's 62 clusters of 4 at two blocks per SM: 248 blocks, 62 rows; session 23 measured larger tails run in waves,
    e.g. 64 rows of RMSNorm bf16 65536 in 11.5 us against 8.8 without a tail)."""
    f = KERNELS["rmsnorm"][0](N, "f32", {**ONCHIP, "sms": 132, "tail_cols": 640})
    for M, grids in ((62, [62 * K]), (63, [63])):  # (63 rows: 252 blocks; the main kernel, a row per block)
        launches.clear()
        inputs, y, ro, args = kernel_args("rmsnorm", M, N, "f32")
        f(*args)
        check_rows("rmsnorm", inputs, y, ro, 1e-5)
        assert [g for _, g, *_ in launches] == grids, launches


def test_a_tail_after_full_main_blocks_takes_an_sm_per_block(interpreter, launches):
    """After main blocks of 1024 threads (no room beside them) a tail of at most as many blocks as run at once one
    per SM (120 in clusters of 4) asks for SPREAD_SMEM of shared memory: its blocks take an SM each; a larger one, or
    a tail alone (every row the tail's), does not; rows right either way."""
    from kernels.norm.row_tail import SPREAD_SMEM

    options = {**ONCHIP, "onchip_threads": 1024, "elems_per_thread": 2, "tail_cols": 640}
    for sms, M, smem in ((SMS, 5, SPREAD_SMEM), (SMS, 3, 0), (40, 70, SPREAD_SMEM), (40, 71, 0)):
        f = KERNELS["rmsnorm"][0](N, "f32", {**options, "sms": sms})
        launches.clear()
        inputs, y, ro, args = kernel_args("rmsnorm", M, N, "f32")
        f(*args)
        check_rows("rmsnorm", inputs, y, ro, 1e-5)
        assert launches[-1][1] == (M % sms) * K and launches[-1][3] == smem, launches
        assert len(launches) == 1 + (M > sms) and (M < sms or launches[0][2] == 1024), launches  # (the main's blocks)


def test_the_tail_register_cap_and_its_blocks_at_once():
    """A tail's register cap: two 512-thread blocks per SM (64) by default, or ``tail_regs`` up to what one block may
    take; its default block limit follows (clusters of 4 at one block per SM: 30 of them, 120 blocks)."""
    from types import SimpleNamespace

    import flydsl.expr as fx
    from kernels.norm.row_tail import ONE_PER_SM_TAIL, RowTail, blocks_at_once

    p512, p256 = SimpleNamespace(block_threads=512, cluster=4), SimpleNamespace(block_threads=256, cluster=8)
    rt = RowTail(65536, fx.Float32, {"tail_cols": 16384}, "rmsnorm", {})
    assert (rt.tail_registers(p512), rt.tail_limits(p512, rt.limits)) == (64, (248, 2, 0))
    assert (rt.tail_registers(p256), rt.tail_limits(p256, rt.limits)) == (128, (240, 2, 0))
    # spread: after 1024-thread main blocks (all of an SM's registers at 64) a tail of at most 120 blocks (as many as
    # run at once one per SM) takes an SM per block; beside 512-thread blocks at 64 registers one fits (no spread),
    # at all they may take (128) none
    main1024, main512 = SimpleNamespace(block_threads=1024), SimpleNamespace(block_threads=512)
    assert rt.tail_limits(p512, rt.limits, main1024) == (248, 2, 120)
    assert rt.tail_limits(p512, rt.limits, main512, 64) == (248, 2, 0)
    assert rt.tail_limits(p512, rt.limits, main512) == (248, 2, 120)
    assert RowTail(65536, fx.Float32, {"tail_cols": 16384, "tail_spread": False}, "rmsnorm", {}).tail_limits(
        p512, rt.limits, main1024) == (248, 2, 0)  # fmt: skip
    rt = RowTail(65536, fx.Float32, {"tail_cols": 16384, "tail_regs": 255}, "rmsnorm", {})
    assert (rt.tail_registers(p512), rt.tail_limits(p512, rt.limits, main1024)) == (128, (120, 2, 0))
    rt = RowTail(65536, fx.Float32, {"tail_cols": 16384, **ONE_PER_SM_TAIL}, "rmsnorm", {})
    assert (rt.tail_registers(p512), rt.tail_limits(p512, rt.limits)) == (128, (264, 2, 0))
    assert rt.tail_limits(None, rt.limits) == (*rt.limits, 0)  # (no tail)
    assert [blocks_at_once(k, 1) for k in (2, 3, 4, 8, 16)] == [132, 90, 120, 120, 112]
    assert [blocks_at_once(k, b) for k, b in ((4, 2), (8, 3), (4, 9))] == [248, 360, 496]


def test_tail_defaults():
    """Rows of more than 48K elements take a tail; shorter ones, ``shape_defaults=False`` and ``before`` none."""
    assert layernorm_kernel.plan_defaults(61440, "f32")["tail_cols"] == 8192
    assert "tail_cols" not in layernorm_kernel.plan_defaults(65536, "f32", before=True)
    assert rmsnorm_kernel.plan_defaults(57344, "bf16")["tail_cols"] == 16384
    assert rmsnorm_kernel.plan_defaults(57344, "f32", fused_add=True)["tail_cols"] == 8192
    assert layernorm_kernel.plan_defaults(40000, "f32")["tail_cols"] == 8192
    assert all("tail_cols" not in m.plan_defaults(40000, "bf16") for m in (layernorm_kernel, softmax_kernel))
    assert "tail_cols" not in rmsnorm_kernel.plan_defaults(32768, "f32")
    # f32 RMSNorm and LayerNorm keep session 21's tails (a block per SM at all its registers, up to 264 blocks);
    # the others two blocks per SM (session 23)
    assert rmsnorm_kernel.plan_defaults(49160, "f32")["tail_regs"] == 255
    assert layernorm_kernel.plan_defaults(65536, "f32")["tail_blocks"] == 264
    assert "tail_regs" not in rmsnorm_kernel.plan_defaults(65536, "bf16")
    assert "tail_regs" not in softmax_kernel.plan_defaults(65536, "f32")


def test_a_launcher_with_a_tail_keeps_the_fast_launch_plan(interpreter):
    """The run-time split is two ``if``s in the launcher: a launch plan (generated Python), not the interpreted
    host function, calls it."""
    import flydsl.compiler as flyc
    from flydsl.runtime.launch_plan import launch_plan

    _, _, _, args = kernel_args("rmsnorm", 3, N, "f32")
    f = KERNELS["rmsnorm"][0](N, "f32", {**PLANS["onchip"], "tail_cols": 640})
    plan = launch_plan(flyc.compile(f, *args)._entry.artifact.host_op())
    assert plan is not None and plan.source.count("    if ") >= 2


# -- GPU ----------------------------------------------------------------------------------------------


# the last three: the few-rows plans of session 22 (softmax and LayerNorm f32 beside a tail, RMSNorm bf16 64K, LayerNorm
# f32 alone)
GPU_ROWS = [(8, 57344, "f32"), (24, 61440, "bf16"), (140, 57344, "f32"), (273, 61440, "f32"), (270, 49160, "bf16"),
            (140, 65536, "f32"), (100, 65536, "bf16"), (64, 49160, "f32")]  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize("M,n,dtype", GPU_ROWS, ids=[f"{m}x{n}-{d}" for m, n, d in GPU_ROWS])
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_gpu_tail_rows_follow_in_the_stream_and_in_graphs(kernel, M, n, dtype, monkeypatch):
    """Every row right; the next kernel of the stream (a torch reduction) and a CUDA-graph replay see no row of the
    NaN-filled output unwritten: the tail (launched with programmatic dependent launch) waits for the main kernel."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    inputs, y, ro, args = kernel_args(kernel, M, n, dtype, "cuda")
    launch = KERNELS[kernel][0](n, dtype, {})
    tol = 2e-2 if dtype == "bf16" else 1e-4
    launch(*args)
    unwritten = torch.isnan(y).sum()  # queued right behind the launcher's kernels
    assert int(unwritten) == 0
    check_rows(kernel, inputs, y, ro, tol)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch(*args)
    for _ in range(3):
        y.fill_(float("nan"))
        graph.replay()
        assert int(torch.isnan(y).sum()) == 0
    check_rows(kernel, inputs, y, ro, tol)


def test_the_dependent_launch_protocol_in_the_ir(interpreter, tmp_path):
    """The main kernel lets the tail launch first thing (``griddep_launch_dependents``, its first op) and never waits;
    the tail waits for the main kernel as its last op before returning (so what follows sees both) and, where it has
    every row, once more near its start (under a run-time ``if``) — the order the GPU test relies on."""
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    _, _, _, args = kernel_args("rmsnorm", 3, N, "f32")
    KERNELS["rmsnorm"][0](N, "f32", {**PLANS["onchip"], "tail_cols": 640})(*args)
    (text,) = [p.read_text() for p in (tmp_path / "dump").glob("*/03_dce.mlir")]
    main, tail = text.split("gpu.func @")[1:3]
    ops = [ln.strip() for ln in main.splitlines()[1:] if ln.strip() and not ln.strip().startswith("}")]
    assert ops[0].startswith('"nvvm.griddep_launch_dependents"') and "griddep_wait" not in main
    assert "cluster_dims" in tail.splitlines()[0] and "griddep_launch_dependents" not in tail
    body = [ln.strip() for ln in tail.splitlines() if ln.strip() and not ln.strip().startswith("}")]
    ret = max(i for i, ln in enumerate(body) if ln.startswith("gpu.return"))
    assert body[ret - 1].startswith('"nvvm.griddep_wait"') and tail.count('"nvvm.griddep_wait"') == 2
