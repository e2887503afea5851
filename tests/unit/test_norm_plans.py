"""How the norm kernels cover a row (``kernels/norm/norm_common.plan_rows``): the cluster plan's block count,
slices and fallback, and the benchmark sweep's shape and variant selection."""

from __future__ import annotations

import pytest

from benchmarks.cases import norm_sweep
from kernels.norm.norm_common import NUM_SMS, PAIR_SMEM_BUDGET, SMEM_BUDGET, plan_rows, vector_width
from kernels.norm.pair_rows import pair_count, pair_grid


def plan(n, elem_bytes, **kw):
    return plan_rows(n, elem_bytes, vector_width(n, elem_bytes), **{"elems_per_thread": 16, **kw})


@pytest.mark.parametrize(
    "n, eb, kw, cluster, threads, cols",
    [
        (65536, 4, {}, 4, 512, 16384),  # 64K f32: four blocks of the 16K in-register plan
        (32768, 4, {}, 2, 512, 16384),
        (65536, 2, {}, 4, 512, 16384),
        (65536, 4, {"cluster_cols": 8192}, 8, 512, 8192),
        (16384, 4, {"cluster_cols": 8192}, 2, 512, 8192),
        (20000, 2, {}, 2, 512, 12288),  # the second slice ragged
    ],
)
def test_cluster_plans_split_the_row_into_power_of_two_slices(n, eb, kw, cluster, threads, cols):
    p = plan(n, eb, long_rows="cluster", max_row_threads=512, **kw)
    assert (p.cluster, p.threads, p.chunk_cols, p.chunks, p.rows) == (cluster, threads, cols, 1, 1)
    assert p.cluster_dims == (cluster, 1, 1) and p.grid(3) == 3 * cluster
    assert p.ragged == (cluster * cols != n)
    assert (cluster - 1) * cols < n <= cluster * cols


@pytest.mark.parametrize(
    "n, eb, threads, ept, vecs, chunks",
    [
        (49160, 2, 1024, 16, 1, 7),  # 6145 accesses: 7 chunks of one (86% in the row), not 4 of two (75%)
        (2500, 4, 64, 16, 2, 5),  # 625: 5 x 2 (640 slots); 10 x 1 holds as many, the wider wins
        (65536, 2, 1024, 16, 2, 4),  # a power of two: unchanged
        (40000, 4, 512, 16, 4, 5),  # already balanced
    ],
)
def test_balanced_chunks_leave_the_fewest_empty_accesses(n, eb, threads, ept, vecs, chunks):
    p = plan(n, eb, register_limit=0, onchip_threads=threads, elems_per_thread=ept, balance_chunks=True)
    assert (p.threads, p.vecs, p.chunks) == (threads, vecs, chunks)
    wide = plan(n, eb, register_limit=0, onchip_threads=threads, elems_per_thread=ept)
    assert p.chunks * p.chunk_cols <= wide.chunks * wide.chunk_cols and p.chunks * p.chunk_cols >= n


def test_rows_the_cluster_plan_cannot_hold_fall_back_to_onchip():
    p = plan(262144, 4, long_rows="cluster")  # 8 slices of 32K f32 would not fit in registers
    assert p.cluster == 1 and p.onchip and p.cluster_dims is None
    assert plan(8192, 2, long_rows="cluster").cluster == 1  # short rows: the ordinary in-register plan
    assert plan(1000, 4).grid(10) == 10 // plan(1000, 4).rows_per_block + 1


def test_sweep_shape_groups_and_cluster_variants(monkeypatch):
    monkeypatch.setenv("FLYDSL_NORM_SHAPES", "long")
    assert norm_sweep._shapes(False) == norm_sweep.LONG
    monkeypatch.setenv("FLYDSL_NORM_SHAPES", "short,few")
    assert norm_sweep._shapes(False) == norm_sweep.SHORT + norm_sweep.FEW
    monkeypatch.setenv("FLYDSL_NORM_SHAPES", "longest")
    with pytest.raises(ValueError, match="unknown group"):
        norm_sweep._shapes(False)
    assert norm_sweep._shapes(True) == norm_sweep.QUICK
    assert norm_sweep.applicable("cluster", 256, 65536) and not norm_sweep.applicable("cluster", 2048, 16384)
    assert norm_sweep.applicable("cluster8k", 2048, 16384) and not norm_sweep.applicable("cluster8k", 132, 8192)


@pytest.mark.parametrize("arch, clustered", [("sm_90a", True), ("sm_80", False)])
def test_the_cluster_plan_needs_a_target_with_clusters(arch, clustered, monkeypatch, tmp_path):
    import numpy as np

    from kernels.norm.softmax_kernel import build_softmax_module

    monkeypatch.setenv("ARCH", arch)
    monkeypatch.setenv("COMPILE_ONLY", "1")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    launch = build_softmax_module(0, 32768, "f32", long_rows="cluster")
    x = np.zeros((2, 32768), np.float32)
    launch(x, x, 2)
    ptx = launch._last[1].artifact.ptx
    assert (".reqnctapercluster 2, 1, 1" in ptx and "mapa.shared::cluster" in ptx) == clustered


@pytest.mark.parametrize(
    "n, eb, threads, blocks, prefetch, slots",
    [
        (16384, 2, 512, 2, 1, 1),  # the in-register plan: 2 blocks per SM, the next row's 32 KB prefetched
        (32768, 2, 1024, 1, 2, 2),  # onchip, both chunks kept: both prefetched (64 KB)
        (65536, 2, 1024, 1, 4, 6),  # 2 kept + 2 staged, all prefetched: the staged ones in two sets (192 KB)
        (65536, 4, 1024, 1, 1, 3),  # 256 KB rows: only the first chunk fits beside the staging
    ],
)
def test_persistent_plans_prefetch_what_fits_the_shared_memory(n, eb, threads, blocks, prefetch, slots):
    p = plan(n, eb, max_row_threads=512, persist=2)
    assert (p.threads, p.persist, p.prefetch, p.slots) == (threads, blocks, prefetch, slots)
    assert p.slots * p.chunk_cols * eb * p.persist <= SMEM_BUDGET
    assert p.grid(10) == 10 and p.grid(10**6) == blocks * NUM_SMS  # at most `persist` blocks per SM
    assert p.func_attrs == {"min_blocks_per_sm": blocks}  # ptxas keeps them together in one SM
    # every chunk held in shared memory has its own slot, in each of the two parities
    for parity in (0, 1):
        used = [p.slot(c, parity) for c in range(p.chunks) if c >= p.kept or c < p.prefetch_kept]
        assert len(set(used)) == len(used) and all(0 <= s < p.slots for s in used)
    staged = [c for c in range(p.chunks) if p.kept <= c < p.prefetch]  # prefetched and held to the output
    assert not {p.slot(c, 0) for c in staged} & {p.slot(c, 1) for c in staged}


def test_plans_that_are_not_persistent():
    assert plan(16384, 2).persist == 0 and plan(16384, 2).func_attrs == {}
    assert plan(512, 2, persist=2).persist == 0  # several rows to a block: short rows are not looped
    assert plan(8192, 2, persist=2, persist_from=16384).persist == 0  # only rows of 16K and more
    assert plan(16384, 2, persist=2, persist_from=16384).persist == 1  # 1024 threads: one block per SM
    assert plan(16383, 2, persist=2).persist == 0  # 2-byte accesses: cp.async moves 4-16 bytes
    assert plan(4096, 4, persist=8, sms=3).grid(100) == 3 * 4  # at most 4 blocks of 256 threads per SM


def test_kernel_options_are_split_from_the_plan_options():
    from kernels.norm.norm_common import split_options, with_register_cap
    from kernels.norm.rmsnorm_kernel import build_rmsnorm_module

    assert split_options({"persist": 2, "max_registers": 64}) == ({"persist": 2}, {"max_registers": 64})
    launch = build_rmsnorm_module(1024, "f32", max_registers=64)
    assert launch.compile_hints == {"maxnreg": 64}
    assert with_register_cap(launch, {}) is launch


def test_sweep_replay_only_timing_and_the_same_shape_copy(monkeypatch):
    monkeypatch.setenv("FLYDSL_NORM_TIMING", "graph")
    assert norm_sweep._timing() == "graph"
    monkeypatch.setenv("FLYDSL_NORM_TIMING", "replays")
    with pytest.raises(ValueError, match="both, graph or b2b"):
        norm_sweep._timing()
    assert norm_sweep.applicable("persist", 2048, 16384) and not norm_sweep.applicable("persist", 4096, 8192)
    assert norm_sweep.applicable("o512r64", 1024, 32768) and not norm_sweep.applicable("o512r64", 2048, 16384)


def test_the_summary_puts_each_row_against_the_copy_at_its_shape(tmp_path):
    import json

    from benchmarks.norm_summary import against_copy

    def row(impl, us):
        return {"kernel": "rmsnorm", "shape": [1024, 32768], "dtype": "bf16", "impl": impl, "median_us": us,
                "pct_copy": 80.0, "note": ""}  # fmt: skip

    rows = [row("copy:graph", 34.0), row("flydsl:graph", 40.0), row("flydsl-persist:graph", 36.0), row("flydsl", 1.0)]
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"meta": {"copy_gbps": 4277, "commit": "x"}, "results": rows}))
    line = against_copy(str(path))
    assert "copy  34.0" in line and "default 40.0 (85%)" in line and "persist 36.0 (94%)" in line
    assert "triton -" in line


def test_a_second_input_gets_its_own_slots_or_is_not_prefetched():
    p = plan(65536, 2, max_row_threads=512, persist=2, inputs=2)  # the fused add: X and R
    assert (p.inputs, p.prefetch, p.slots) == (2, 2, 6)
    x_slots = {p.slot(c, par) for c in range(p.chunks) for par in (0, 1)}
    r_slots = {p.slot(c, 0, region=1) for c in range(p.prefetch)}
    assert not x_slots & r_slots and max(x_slots | r_slots) == p.slots - 1
    q = plan(16384, 4, max_row_threads=512, persist=2, inputs=2)  # 2 x 64 KB per block do not fit twice
    assert (q.inputs, q.prefetch, q.persist) == (1, 1, 2)


@pytest.mark.parametrize("inputs", [1, 2])
def test_early_prefetch_puts_every_slot_in_two_sets(inputs):
    p = plan(2500, 4, register_limit=0, onchip_threads=64, elems_per_thread=8, kept_values=16, persist=1,
             inputs=inputs, prefetch_early=True)  # fmt: skip
    assert p.early and p.prefetch == p.chunks == 5 and p.kept == 2
    for region in range(inputs):
        sets = [{p.slot(c, par, region) for c in range(p.prefetch)} for par in (0, 1)]
        assert len(sets[0]) == len(sets[1]) == p.prefetch and not sets[0] & sets[1]
    every = {p.slot(c, par, reg) for c in range(p.prefetch) for par in (0, 1) for reg in range(inputs)}
    assert every == set(range(p.slots))
    # where two sets would prefetch less, the plan keeps one (32K f32: both chunks once, not one twice)
    assert not plan(32768, 4, max_row_threads=512, persist=2, prefetch_early=True).early


def test_weights_held_in_shared_memory_take_slots_after_the_rows():
    p = plan(32768, 2, max_row_threads=512, persist=2, weights_smem=True, weight_tensors=2)  # LayerNorm's W, B
    assert (p.weights, p.prefetch, p.slots) == (2, 2, 2)
    assert [p.weight_slot(k, c) for k in (0, 1) for c in (0, 1)] == [2, 3, 4, 5]
    assert p.staging_bytes(2) == 6 * p.chunk_cols * 2 <= SMEM_BUDGET
    # 64K bf16: the weights would leave no room to prefetch: read from L2 per row instead
    assert plan(65536, 2, max_row_threads=512, persist=2, weights_smem=True, weight_tensors=1).weights == 0
    assert plan(32768, 2, max_row_threads=512, persist=2, weights_smem=True).weights == 0  # softmax: none


def test_per_shape_defaults_take_the_first_matching_rule_and_can_be_left_out():
    from kernels.norm.norm_common import defaults_for, with_defaults

    rules = [((16384, 16384, ("bf16",)), {"a": 1}), ((16384, 65536, None), {"a": 2})]
    assert defaults_for(rules, 16384, "bf16") == {"a": 1} and defaults_for(rules, 16384, "f32") == {"a": 2}
    assert defaults_for(rules, 8192, "bf16") == {}
    base = {"b": 0}
    assert with_defaults({"a": 1, "b": 0}, base, {"b": 3}) == {"a": 1, "b": 3}
    assert with_defaults({"a": 1, "b": 0}, base, {"shape_defaults": False}) == {"b": 0}


def test_the_regression_check_compares_the_shapes_both_runs_have(tmp_path):
    import json

    from benchmarks.norm_summary import compare

    def run(path, rows):
        results = [
            {"kernel": k, "shape": s, "dtype": "bf16", "impl": "flydsl:graph", "median_us": t} for k, s, t in rows
        ]
        path.write_text(json.dumps({"meta": {}, "results": results}))
        return str(path)

    old = run(tmp_path / "a.json", [("softmax", [1, 8192], 10.0), ("rmsnorm", [1, 8192], 8.0)])
    new = run(tmp_path / "b.json", [("softmax", [1, 8192], 8.0), ("layernorm", [1, 8192], 9.0)])
    assert compare(old, new).splitlines() == ["softmax     1x8192      bf16    10.0 ->     8.0 us (+25.0%)"]


def test_the_long_rows_table_gives_both_references(tmp_path):
    import json

    from benchmarks.norm_summary import long_rows_table

    def row(impl, us, pct):
        return {"kernel": "layernorm", "shape": [512, 65536], "dtype": "bf16", "impl": impl, "median_us": us,
                "pct_copy": pct, "note": ""}  # fmt: skip

    rows = [row("copy:graph", 35.0, 89.0), row("flydsl:graph", 40.0, 78.0), row("triton:graph", 70.0, 44.0)]
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"meta": {"copy_gbps": 4277, "commit": "x"}, "results": rows}))
    table = long_rows_table(str(path))
    assert "| 512x65536 bf16 | layernorm | 35.0 (89.0%) | 40.0 | 87.5% | 78.0% | 70.0 (50%) | - |" in table


def test_16k_half_rows_cap_registers_for_two_blocks_per_sm():
    """2048 x 16K bf16 on the H200 (final check, 2026-12-01): uncapped, ptxas gives RMSNorm/LayerNorm more than 64
    registers and one block of 512 per SM (49.5 / 60.4 us); capped at 64, two fit (36.8 / 38.3 us)."""
    from kernels.norm import layernorm_kernel, rmsnorm_kernel

    for mod in (rmsnorm_kernel, layernorm_kernel):
        for dt in ("bf16", "f16"):
            assert mod.plan_defaults(16384, dt)["max_registers"] == 64
        assert "max_registers" not in mod.plan_defaults(8192, "bf16")


@pytest.mark.parametrize(
    "n, eb, kw, vecs, chunks, kept, smem_kb",
    [
        (65536, 2, {}, 1, 8, 2, 192),  # 64K bf16: one access (8 values) per thread, chunk and row; 2 kept, 6 staged
        (32768, 4, {}, 1, 8, 4, 128),  # 32K f32: 4 values per chunk, 4 kept and 4 staged per row
        (32768, 4, {"kept_values": 16}, 1, 8, 2, 192),  # 2 kept, 6 staged per row
        (32768, 2, {}, 1, 4, 2, 64),
    ],
)
def test_paired_rows_share_a_block_and_each_have_their_own_slots(n, eb, kw, vecs, chunks, kept, smem_kb):
    p = plan_rows(n, eb, vector_width(n, eb), pair_rows=True, **kw)
    assert (p.iters, p.rows, p.threads, p.vecs, p.chunks, p.kept) == (2, 1, 1024, vecs, chunks, kept)
    assert p.staging_bytes(eb) == 2 * p.slots * p.chunk_cols * eb == smem_kb * 1024 <= SMEM_BUDGET
    assert p.batch * p.vecs * p.vec * 2 == 64  # load_values: the loads of a batch cover both rows
    assert pair_grid(p, 7) == 7 and pair_grid(p, 264) == 132 and pair_grid(p, 265) == 133 and p.persist == 0


def test_pairs_leave_no_sm_idle():
    """Two rows per block from more rows than SMs on; up to one row per SM, one row per block (read twice)."""
    p = plan_rows(65536, 2, 8, pair_rows=True)
    assert (p.paired, p.sms) == (True, NUM_SMS)
    assert [pair_count(p, m) for m in (1, 131, 132, 133, 264, 265, 512)] == [1, 131, 132, 67, 132, 133, 256]
    assert pair_count(plan_rows(65536, 2, 8, pair_rows=True, sms=4), 7) == 4


def test_rows_that_do_not_pair():
    assert plan_rows(65536, 4, 4, pair_rows=True).iters == 1  # 64K f32: two rows' staging is 2 x 192 KB
    # 512 threads, one chunk of 8 values kept per row: 2 x 15 staged chunks of 8 KB, more than PAIR_SMEM_BUDGET
    assert plan_rows(65536, 2, 8, pair_rows=True, onchip_threads=512, kept_values=8).iters == 1
    assert plan_rows(8192, 2, 8, pair_rows=True).iters == 1  # rows in registers: no staging to pair
    assert plan_rows(40000, 2, 2, pair_rows=True).iters == 1  # 4-byte accesses: a predicate per value
    assert plan_rows(65536, 2, 8, pair_rows=False) == plan_rows(65536, 2, 8)


def test_persistent_paired_rows_take_one_block_per_sm():
    p = plan_rows(65536, 2, 8, pair_rows=True, persist=2)
    assert (p.iters, p.persist, p.prefetch, p.weights) == (2, 1, 0, 0)
    assert pair_grid(p, 512) == NUM_SMS and pair_grid(p, 7) == 7 and p.func_attrs == {"min_blocks_per_sm": 1}
    assert plan_rows(65536, 2, 8, pair_rows=True, persist=2, weights_smem=True, weight_tensors=2).weights == 0
    assert plan_rows(65536, 2, 8, pair_rows=True, persist=1, pair_lag=2).lag == 2
    assert plan_rows(65536, 2, 8, pair_rows=True, pair_lag=2).lag == 0  # only a persistent pair reduces ahead


def test_only_layernorm_pairs_rows():
    from kernels.norm.rmsnorm_kernel import build_rmsnorm_module
    from kernels.norm.softmax_kernel import build_softmax_module

    with pytest.raises(ValueError, match="only LayerNorm pairs rows"):
        build_softmax_module(0, 65536, "bf16", pair_rows=True)
    with pytest.raises(ValueError, match="only LayerNorm pairs rows"):
        build_rmsnorm_module(65536, "bf16", pair_rows=True)
    assert norm_sweep.applicable("pair", 512, 65536) and not norm_sweep.applicable("pair_p", 2048, 16384)


def test_fewer_kept_values_pair_with_up_to_224_kb_of_slots(monkeypatch):
    p = plan_rows(65536, 2, 8, pair_rows=True, kept_values=16)  # 64K bf16: 1 chunk of 8 kept, 7 staged per row
    assert (p.iters, p.kept, p.staging_bytes(2)) == (2, 1, PAIR_SMEM_BUDGET)
    monkeypatch.setenv("FLYDSL_NORM_SHAPES", "rows128k")  # the shapes whose rows pair (128 KB each)
    assert norm_sweep._shapes(False) == [(512, 65536, "bf16"), (512, 32768, "f32")]


def test_layernorm_long_rows_defaults():
    """LayerNorm's rows of 32K-64K (ln2r rounds 2-4 on the H200, docs/kernels.md "Paired rows"): 32K rows in pairs
    (bf16: blocks of 512 threads, two per SM; f32: one block of 512 threads with 128 registers), 64K bf16 one row per
    block with streaming hints; 48K-64K f32 (lnst rounds 2-3) pairs of 512 threads with 128 registers re-reading what
    does not fit; longer f32 rows (lnmc rounds 3-5, and ``before=True`` at 64K) one row per 1024-thread block, eight
    chunks of 8 values."""
    from kernels.norm.layernorm_kernel import plan_defaults
    from kernels.norm.norm_common import split_options
    from kernels.norm.row_tail import pop_tail_options

    def default_plan(n, dt, eb, before=False):
        plan, kernel = split_options(pop_tail_options(plan_defaults(n, dt, before))[0], pairs=True)
        return plan_rows(n, eb, 16 // eb, **plan), kernel

    p, k = default_plan(32768, "bf16", 2)
    assert (p.paired, p.threads, p.persist, p.cache, k) == (True, 512, 0, "cs", {"max_registers": 64})
    assert 2 * p.staging_bytes(2) <= SMEM_BUDGET  # two pair-blocks per SM
    p, k = default_plan(32768, "f32", 4)
    assert (p.paired, p.threads, p.kept, p.cache, k) == (True, 512, 8, "cs", {"max_registers": 128})
    p, k = default_plan(65536, "bf16", 2)
    assert (p.paired, p.threads, p.cache, k) == (False, 512, "cs", {"max_registers": 64})
    p, k = default_plan(65536, "f32", 4)  # 32 chunks of 2048 columns per row: 10 kept, 14 staged, 8 re-read
    assert (p.paired, p.threads, p.kept, p.staged, p.reread, p.cache, k) == (
        True,
        512,
        10,
        14,
        8,
        "cs",
        {"max_registers": 128},
    )
    assert p.staging_bytes(4) == 224 * 1024
    for n in (49153, 65536, 65537, 100000):  # the rules before lnst: one row per block
        p, k = default_plan(n, "f32", 4, before=n <= 65536)
        chunks = -(-n // 8192)  # 4 kept, or as many as leave at most 200 KB staged
        assert (p.paired, p.threads, p.vecs * p.vec, p.chunks, p.kept, p.cache, k) == (
            False, 1024, 8, chunks, max(4, chunks - 6), "cs", {}
        )  # fmt: skip
        assert n != 65536 or p.batches() == [list(range(8))]  # 64K: every chunk's loads issued together
    assert norm_sweep.applicable("e8", 256, 65536) and not norm_sweep.applicable("e8", 2048, 16384)


@pytest.mark.parametrize("n", [2000, 20000, 30000])
def test_reread_pairs_of_rows_that_fit_are_the_plain_pair_plan(n):
    """``pair_rows="reread"`` where the row is held in registers (nothing staged): the plain ``pair_rows=True`` plan,
    never a negative re-read count (it gave reread=-14 at 20000 f32, and the kernel indexed past its chunks)."""
    kw = {"onchip_threads": 512, "kept_values": 96, "weight_tensors": 2}
    p = plan(n, 4, pair_rows="reread", **kw)
    assert p == plan(n, 4, pair_rows=True, **kw) and p.reread >= 0
    assert plan(65536, 4, pair_rows="reread", **{**kw, "kept_values": 80}).reread == 8  # the 64K f32 default's


def test_rules_measured_on_wide_accesses_skip_odd_rows():
    """The session-20 rules (512-thread plans at 64 registers, measured on rows of 16-byte accesses) apply only to
    rows of 8-byte accesses or wider; odd rows (a predicate per value) keep the earlier plans — under the 64-register
    rules the fused add spilled 194-246 bytes at 32767 / 40001 bf16 and LayerNorm 48 at 32767 (ptxas)."""
    from kernels.norm import layernorm_kernel, rmsnorm_kernel, softmax_kernel
    from kernels.norm.norm_common import WIDE_ONLY

    assert softmax_kernel.plan_defaults(20000, "bf16")["register_limit"] == 32768
    assert "register_limit" not in softmax_kernel.plan_defaults(20001, "bf16")
    assert "max_registers" not in rmsnorm_kernel.plan_defaults(32766, "bf16", fused_add=True)  # 4-byte: narrow too
    assert rmsnorm_kernel.plan_defaults(32760, "bf16", fused_add=True)["kept_values"] == 16
    assert "max_registers" not in rmsnorm_kernel.plan_defaults(32767, "bf16", fused_add=True)
    assert layernorm_kernel.plan_defaults(32767, "bf16")["max_registers"] == 128
    assert layernorm_kernel.plan_defaults(40000, "f32")["max_registers"] == 64
    for n in (20000, 20001, 32767, 40000):
        for dt in ("bf16", "f32"):
            for d in (softmax_kernel.plan_defaults(n, dt), layernorm_kernel.plan_defaults(n, dt)):
                assert WIDE_ONLY not in d
