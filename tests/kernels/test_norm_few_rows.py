"""The few-rows plan (``kernels/norm/row_tail.py``, ``few_rows`` / ``few_plan``): launches of a range of row counts
take another main plan, chosen at run time beside the tail launch.

On the interpreter the plans run with ``sms=4``: a main plan of 64-thread chunks, a few-rows plan of 32-thread chunks
(the block size tells which one a launch is), over row counts below, inside and above the range, with a tail and
without; every row right. The per-shape rules' GPU rows are in ``test_norm_tail.py``'s GPU test.
"""

from __future__ import annotations

import pytest
from norm_cases import check_rows, kernel_args

from benchmarks.cases.norm_sweep import KERNELS
from flydsl.runtime import cpu as cpu_runtime
from kernels.norm import layernorm_kernel, rmsnorm_kernel, softmax_kernel
from tools.fuzz_pool import raised_in

SMS, N, K = 4, 2500, 4  # 4 "SMs"; tail_cols 640: a tail row over a cluster of 4 blocks
CHUNKS = {"register_limit": 0, "onchip_threads": 64, "elems_per_thread": 8, "kept_values": 16, "sms": SMS}
FEW = {**CHUNKS, "onchip_threads": 32}
LO, HI = 5, 8


def _spy(monkeypatch) -> list:
    launches = []
    launch = cpu_runtime.CpuLauncher._launch

    def spy(self, mem, name, grid, block, *rest):
        launches.append((int(block[0]), int(grid[0])))
        return launch(self, mem, name, grid, block, *rest)

    monkeypatch.setattr(cpu_runtime.CpuLauncher, "_launch", spy)
    return launches


def expected(m: int, tail: bool) -> list:
    """``[(main block threads, rows)]`` and the tail's ``(None, blocks)``: 32 threads inside ``LO..HI``, else 64; the
    tail as ``row_tail`` splits it (``m % 4`` rows of 4 blocks, at most 16 blocks, at most 2 rounds before it)."""
    t = m % SMS if tail else 0
    t = t if t * K <= 16 and m // SMS <= 2 else 0
    out = [(32 if LO <= m <= HI else 64, m - t)] if m > t else []
    return out + ([(None, t * K)] if t else [])


CASES = [(k, tail) for k in KERNELS for tail in (True, False)]


@pytest.mark.parametrize("kernel,tail", CASES, ids=[f"{k}-{'tail' if t else 'no-tail'}" for k, t in CASES])
def test_the_row_count_picks_the_main_plan(kernel, tail, interpreter, monkeypatch):
    launches = _spy(monkeypatch)
    options = {**CHUNKS, "shape_defaults": False, "few_rows": (LO, HI), "few_plan": FEW}
    launch = KERNELS[kernel][0](N, "f32", {**options, "tail_cols": 640 if tail else 0, "tail_blocks": 16})
    for m in (2, 4, 5, 6, 8, 9, 13):
        launches.clear()
        inputs, y, ro, args = kernel_args(kernel, m, N, "f32")
        launch(*args)
        check_rows(kernel, inputs, y, ro, 1e-5)
        want = expected(m, tail)
        got = [(None if want[i][0] is None else b, g) for i, (b, g) in enumerate(launches[: len(want)])]
        assert len(launches) == len(want) and got == want, (m, launches)
        if tail and want[-1][0] is None:
            assert launches[-1][0] not in (32, 64), launches  # the tail's cluster plan


@pytest.mark.parametrize("kernel", ["rmsnorm+add", "layernorm"])
def test_the_few_rows_launches_own_tail(kernel, interpreter, monkeypatch):
    """``tail_cols`` and ``tail_blocks`` in ``few_plan``: the few-rows launches' own tail (clusters of 2 here, at most
    5 blocks), the others' none; one tail kernel where both tails are alike."""
    launches = _spy(monkeypatch)
    options = {**CHUNKS, "shape_defaults": False, "few_rows": (LO, HI), "tail_blocks": 16}
    few = {**FEW, "tail_cols": 1280, "tail_blocks": 5}  # (7 rows: 3 tail rows x 2 blocks are over 5: no tail)
    launch = KERNELS[kernel][0](N, "f32", {**options, "tail_cols": 0, "few_plan": few})
    for m, want in (
        (3, [(64, 3)]),
        (5, [(32, 4), (None, 2)]),
        (6, [(32, 4), (None, 4)]),
        (7, [(32, 7)]),
        (9, [(64, 9)]),
    ):
        launches.clear()
        inputs, y, ro, args = kernel_args(kernel, m, N, "f32")
        launch(*args)
        check_rows(kernel, inputs, y, ro, 1e-5)
        got = [(None if w[0] is None else b, g) for w, (b, g) in zip(want, launches)]
        assert len(launches) == len(want) and got == want, (m, launches)
    names = set()
    spy = cpu_runtime.CpuLauncher._launch

    def named(self, mem, name, grid, block, *rest):
        names.add(str(name))
        return spy(self, mem, name, grid, block, *rest)

    monkeypatch.setattr(cpu_runtime.CpuLauncher, "_launch", named)
    alike = KERNELS[kernel][0](N, "f32", {**options, "tail_cols": 640, "few_plan": {**FEW, "tail_cols": 640}})
    for m in (3, 5, 9):
        alike(*kernel_args(kernel, m, N, "f32")[3])
    assert len(names) == 3, names  # main, few-rows, one tail


# other plan kinds as the few-rows plan or beside it: (kernel, main options, few_plan)
KINDS = [
    ("softmax", CHUNKS, {"stream": True, "stream_threads": 64, "stream_values": 8, "sms": SMS}),
    ("rmsnorm", {"stream": True, "stream_threads": 64, "stream_values": 8, "sms": SMS}, FEW),
    ("rmsnorm+add", CHUNKS, {**FEW, "persist": 1}),
    ("layernorm", {**CHUNKS, "pair_rows": True}, FEW),
    ("layernorm", CHUNKS, {**CHUNKS, "pair_rows": True, "persist": 1}),
]


@pytest.mark.parametrize("kernel,main,few", KINDS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(KINDS)])
def test_few_rows_plans_of_every_kind(kernel, main, few, interpreter, monkeypatch):
    """Stream, persistent and paired plans as the few-rows plan or as the main one, with a tail: every row right, and
    the launches inside the range run another kernel than those outside it."""
    names = []
    launch_ = cpu_runtime.CpuLauncher._launch

    def spy(self, mem, name, grid, block, *rest):
        names.append(str(name))
        return launch_(self, mem, name, grid, block, *rest)

    monkeypatch.setattr(cpu_runtime.CpuLauncher, "_launch", spy)
    launch = KERNELS[kernel][0](N, "f32", {**main, "shape_defaults": False, "few_rows": (LO, HI), "few_plan": few,
                                           "tail_cols": 640, "tail_blocks": 16})  # fmt: skip
    first = {}
    for m in (3, 5, 7, 9, 11):
        names.clear()
        inputs, y, ro, args = kernel_args(kernel, m, N, "f32")
        launch(*args)
        check_rows(kernel, inputs, y, ro, 1e-5)
        first[m] = names[0]
    assert first[5] == first[7] and first[9] == first[11] and first[5] != first[9], first  # (3: all the tail's)


BAD = [
    ({"few_rows": 8}, "give few_rows .* with few_plan"),
    ({"few_rows": (5, 8), "few_plan": None}, "give few_rows .* with few_plan"),
    ({"few_rows": (0, 8), "few_plan": FEW}, r"a range \(lo, hi\)"),
    ({"few_rows": (9, 8), "few_plan": FEW}, r"1 <= lo <= hi"),
    ({"few_rows": [5, 8], "few_plan": FEW}, r"a range \(lo, hi\)"),
    ({"few_rows": -3, "few_plan": FEW}, "give few_rows"),
    ({"few_rows": 8, "few_plan": {**FEW, "tail_rounds": 3}}, "the tail options but tail_cols and tail_blocks .* are "),
    (
        {"few_rows": 8, "few_plan": {**FEW, "tail_spread": False}},
        "the tail options but tail_cols and tail_blocks .* are ",
    ),
    ({"few_rows": 8, "few_plan": {**FEW, "tail_cols": -1}}, "its tail_cols is a column count >= 0"),
    ({"few_rows": 8, "few_plan": {**FEW, "tail_blocks": -1}}, "its tail_blocks a block count >= 0"),
    ({"few_rows": 8, "few_plan": {**FEW, "max_registers": "64"}}, "its max_registers is an integer 16-255"),
    ({"few_rows": 8, "few_plan": {**FEW, "max_registers": 300}}, "its max_registers is an integer 16-255"),
    ({"few_rows": 8, "few_plan": {**FEW, "onchip_threads": 96}}, "onchip_threads=96: a row's threads are a power"),
    ({"onchip_threads": 96}, "onchip_threads=96: a row's threads are a power of two"),
    ({"few_rows": 8, "few_plan": {**FEW, "shape_defaults": True}}, "are the launcher's"),
    ({"few_rows": 8, "few_plan": {**FEW, "onchip_thread": 32}}, "unknown plan option.*'onchip_thread'"),
]


@pytest.mark.parametrize("bad,match", BAD, ids=[str(i) for i in range(len(BAD))])
def test_few_rows_options_are_checked_when_built(bad, match):
    with pytest.raises(ValueError, match=match) as e:
        KERNELS["rmsnorm"][0](4096, "f32", bad)
    assert raised_in(e.value).startswith("kernels"), raised_in(e.value)


def test_a_kernels_own_options_stay_out_of_the_few_rows_plan():
    with pytest.raises(ValueError, match="'pair_async' are the kernel's options, every plan's: give them beside"):
        KERNELS["layernorm"][0](4096, "f32", {"few_rows": 8, "few_plan": {"pair_async": True}})


def test_few_rows_zero_switches_a_rule_off():
    """``few_rows=0`` over a per-shape rule: its ``few_plan`` goes too (a few_plan alone is an error, below)."""
    from kernels.norm.norm_common import with_defaults

    rule = softmax_kernel.plan_defaults(65536, "f32")
    assert rule["few_rows"] and "few_plan" in rule
    merged = with_defaults(rule, softmax_kernel.PLAN_DEFAULTS, {"few_rows": 0})
    assert merged["few_rows"] == 0 and "few_plan" not in merged
    softmax_kernel.build_softmax_module(0, 65536, "f32", few_rows=0)  # builds
    with pytest.raises(ValueError, match="a few_plan alone would not be used"):
        softmax_kernel.build_softmax_module(0, 65536, "f32", few_rows=0, few_plan=FEW)


def test_a_plan_of_the_callers_own_switches_the_few_rows_rule_off():
    """Options that describe a main plan (a plan_rows option, ``stream`` or the stream plan's own) get that plan at
    every row count: a rule's few-rows plan is switched off as its stream default is; tail options, ``cache_hint``
    and ``max_registers`` alone keep both; a few_plan given beside a rule's range replaces the rule's plan."""
    from kernels.norm.norm_common import with_defaults
    from kernels.norm.row_stream import NOT_ROW_PLAN, rule_defaults_off

    rule = softmax_kernel.plan_defaults(65536, "f32")
    for caller, few in (({"persist": 2}, 0), ({"stream": True}, 0), ({"stream_values": 8}, 0),
                        ({"tail_cols": 0}, rule["few_rows"]), ({"cache_hint": "cs"}, rule["few_rows"]),
                        ({"max_registers": 64}, rule["few_rows"]), ({"persist": 2, "few_rows": 9, "few_plan": FEW}, 9)):  # fmt: skip
        merged = with_defaults(rule, softmax_kernel.PLAN_DEFAULTS, rule_defaults_off(caller, NOT_ROW_PLAN))
        assert merged["few_rows"] == few, (caller, merged)
        assert ("few_plan" in merged) == bool(few), (caller, merged)
    own = with_defaults(rule, softmax_kernel.PLAN_DEFAULTS, rule_defaults_off({"few_plan": FEW}, NOT_ROW_PLAN))
    assert own["few_rows"] == rule["few_rows"] and own["few_plan"] == FEW
    with pytest.raises(ValueError, match="a few_plan alone would not be used"):
        KERNELS["softmax"][0](N, "f32", {"few_plan": FEW})  # (no rule at 2500 columns)


def test_few_rows_defaults():
    """The per-shape rules (H200, session 22): softmax over 48K at a round and a tail, LayerNorm f32 over 48K up to
    a round and a tail (its tail of 16384 columns), RMSNorm 16-bit rows of 64K at 100-273 rows, the fused add f32
    over 48K at 34 rows and a few more (a tail of 16384 columns); none before them, none for shorter rows."""
    assert softmax_kernel.plan_defaults(65536, "f32")["few_rows"] == (133, 198)
    assert softmax_kernel.plan_defaults(49160, "bf16")["few_plan"]["onchip_threads"] == 512
    assert layernorm_kernel.plan_defaults(65536, "f32")["few_rows"] == 165
    assert "few_rows" not in layernorm_kernel.plan_defaults(65536, "bf16")
    assert "few_rows" not in layernorm_kernel.plan_defaults(40000, "f32")
    assert rmsnorm_kernel.plan_defaults(65536, "bf16")["few_rows"] == (100, 273)
    assert "few_rows" not in rmsnorm_kernel.plan_defaults(61440, "bf16")
    assert "few_rows" not in softmax_kernel.plan_defaults(65536, "f32", before=True)
    assert "few_rows" not in rmsnorm_kernel.plan_defaults(65536, "bf16", fused_add=True)
    assert rmsnorm_kernel.plan_defaults(65536, "f32", fused_add=True)["few_rows"] == (34, 44)
    assert rmsnorm_kernel.plan_defaults(49160, "f32", fused_add=True)["few_plan"] == {"tail_cols": 16384}
    assert layernorm_kernel.plan_defaults(49160, "f32")["few_plan"]["tail_blocks"] == 224


def test_the_few_rows_choice_is_in_the_launch_plan(interpreter):
    """The choice is one more run-time ``if`` in the launcher: a launch plan (generated Python) calls it."""
    import flydsl.compiler as flyc
    from flydsl.runtime.launch_plan import launch_plan

    _, _, _, args = kernel_args("softmax", 3, N, "f32")
    sources = []
    for few in (0, (LO, HI)):
        f = KERNELS["softmax"][0](N, "f32", {**CHUNKS, "shape_defaults": False, "few_rows": few, "tail_cols": 640,
                                             **({"few_plan": FEW} if few else {})})  # fmt: skip
        plan = launch_plan(flyc.compile(f, *args)._entry.artifact.host_op())
        assert plan is not None
        sources.append(plan.source)
    assert sources[1].count("launch(") == 2 * sources[0].count("launch(") == 4, sources[1]
    assert "(a8 >= 5)" in sources[1] and "(a8 <= 8)" in sources[1] and "(a8 >= 5)" not in sources[0]


def _ptx_kernels(tmp_path, interpreter, kernel, options) -> dict:
    """``{kernel name: its PTX}`` of a launcher built with ``options`` (COMPILE_ONLY, dumped)."""
    import re

    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    interpreter.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    KERNELS[kernel][0](N, "f32", options)(*kernel_args(kernel, 3, N, "f32")[3])
    (ptx,) = [p.read_text() for p in (tmp_path / "dump").glob("*/*.ptx")]
    return {m.group(1): body for m, body in zip(re.finditer(r"\.entry (\w+)", ptx), re.split(r"\.entry \w+", ptx)[1:])}


CAPS = [(0, 0, 32, None), (0, 64, 32, "255"), (0, 64, 1024, "64"), (40, 64, 32, "40"), (40, 0, 32, "40")]


@pytest.mark.parametrize("few_regs,main_regs,threads,want", CAPS)
def test_the_few_rows_kernels_register_cap(few_regs, main_regs, threads, want, tmp_path, interpreter):
    """The few-rows kernel's PTX ``.maxnreg``: its own ``max_registers``, else none, as its options alone would give
    — where the launcher caps the main kernel (its cap is every kernel's that sets none), all that one of its blocks
    may take (1024 threads: 64; more fails the launch on the GPU); the main kernel keeps the launcher's."""
    few = {**FEW, "onchip_threads": threads, **({"max_registers": few_regs} if few_regs else {})}
    options = {**CHUNKS, "shape_defaults": False, "few_rows": (LO, HI), "tail_cols": 0, "few_plan": few,
               **({"max_registers": main_regs} if main_regs else {})}  # fmt: skip
    kernels = _ptx_kernels(tmp_path, interpreter, "rmsnorm", options)
    assert len(kernels) == 2, list(kernels)
    caps = {name: (body.split("{")[0].split(".maxnreg")[1].split()[0] if ".maxnreg" in body.split("{")[0] else None)
            for name, body in kernels.items()}  # fmt: skip
    main, few = [caps[k] for k in sorted(caps, key=lambda k: ".reqntid 64," not in kernels[k].split("{")[0])]
    assert f".reqntid {threads}," in "".join(kernels.values())
    assert (main, few) == (str(main_regs) if main_regs else None, want), caps


def test_the_dependent_launch_protocol_of_the_few_rows_kernels(tmp_path, interpreter):
    """A few-rows kernel whose launches have their own tail lets it launch first thing; that tail waits as the main
    one does (at its end, and at its start where it has every row); the main kernel without a tail never signals."""
    options = {**CHUNKS, "shape_defaults": False, "few_rows": (LO, HI), "tail_cols": 0, "tail_blocks": 16,
               "few_plan": {**FEW, "tail_cols": 1280}}  # fmt: skip
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    interpreter.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    KERNELS["rmsnorm"][0](N, "f32", options)(*kernel_args("rmsnorm", 3, N, "f32")[3])
    (text,) = [p.read_text() for p in (tmp_path / "dump").glob("*/03_dce.mlir")]
    funcs = text.split("gpu.func @")[1:]
    assert len(funcs) == 3, [f.split("(")[0] for f in funcs]
    tails = [f for f in funcs if "cluster_dims" in f.splitlines()[0]]
    mains = [f for f in funcs if f not in tails]
    assert len(tails) == 1 and tails[0].count('"nvvm.griddep_wait"') == 2
    assert "griddep_launch_dependents" not in tails[0]
    signals = sorted("griddep_launch_dependents" in f for f in mains)
    assert signals == [False, True] and not any("griddep_wait" in f for f in mains)


def test_the_exploration_rounds_build():
    """Every variant of ``benchmarks.norm_variants``' named rounds builds a launcher for its cells' shapes (the
    options are checked when built), or is refused with a reason (a few_plan with no range at that shape)."""
    from benchmarks.norm_variants import SETS

    for cells, variants in SETS.values():
        for k, dt, n in dict.fromkeys(c[:3] for c in cells):
            for name, plan in variants.items():
                try:
                    KERNELS[k][0](n, dt, dict(plan))
                except ValueError as e:
                    assert "a few_plan alone would not be used" in str(e), (k, dt, n, name, e)
