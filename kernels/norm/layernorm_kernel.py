"""LayerNorm: ``Y = (X - mean(X)) * rsqrt(var(X) + eps) * W + B``, row by row (biased variance, as torch).

``build_layernorm_module(N, dtype_str, eps=1e-5)`` returns ``launch(X, W, B, Y, M, stream=None)``
(FlyDSL's signature). f32/f16/bf16 data, weight and bias; f32 statistics.

* Variance without cancellation: each thread computes its values' mean and sum of squared deviations
  from that mean (exact two-pass over registers), and partials merge with Chan et al.'s rule
  ``(n, mean, M2) + (n', mean', M2')``, in one shuffle/shared-memory reduction per row. Unlike
  ``E[x^2] - E[x]^2``, rows with a large mean and a small spread keep their precision.
* Rows of up to 16K elements stay in registers (one read, one write); W and B are loaded after the
  reduction (fewer registers held through it). Longer rows (``long_rows="onchip"``, the default): one
  read, chunks kept in registers or staged in shared memory, chunk statistics merged the same way;
  ``long_rows="two_pass"``: pass 1 merges chunk statistics, pass 2 re-reads and writes.
* Short rows: ``row_iters=k`` gives each block k groups of rows, all loads issued before the first use.
* ``long_rows="cluster"`` (sm_90): a row over a cluster of 2-8 blocks, each slice in registers, the
  (count, mean, M2) partials merged through distributed shared memory (``norm_common``).
* ``pair_rows=True`` (onchip rows of up to 128 KB: 64K bf16, 32K f32): two rows per block, each thread the
  same columns of both; each W and B chunk is read once for the two rows (the long rows' weights are as many
  L2 bytes as the row: paired, half of them), and one reduction serves both. With ``persist``: a persistent
  grid over the pairs, the next pair's staged chunks copied in during this pair's output (``pair_rows.py``).
  ``pair_rows="reread"`` (the 48K-64K f32 default): longer rows pair too, each row's chunks beyond the block's
  registers and shared memory read for the statistics (without the streaming hint) and again, from L2, for the
  output; ``pair_wb_ahead``, ``reread_first``, ``pair_async``: variants of its schedule (docs/kernels.md).
* ``stream=True`` (``row_stream``): softmax's ring schedule, a persistent block per SM that keeps the next row's
  reads in flight through this row's reduction and output (``stream_wb_ahead``: W and B a chunk ahead).
"""

from __future__ import annotations

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Constexpr, Stream
from kernels.norm.norm_common import (
    DTYPES,
    WIDE_ONLY,
    combine_mean_m2,
    defaults_for,
    each_row,
    finish_rows,
    per_row,
    row_reduce,
    split_options,
    tree_sum,
    vector_width,
    with_defaults,
    with_register_cap,
)
from kernels.norm.pair_rows import each_pair, pair_grid
from kernels.norm.row_stream import (
    NOT_ROW_PLAN,
    StreamOps,
    StreamPlan,
    row_or_stream_plan,
    rule_defaults_off,
    stream_rows,
)
from kernels.norm.row_tail import ONE_PER_SM_TAIL, RowTail

__all__ = ["build_layernorm_module"]

FAST = "afn,contract"
PLAN_DEFAULTS: dict = {}  # 32 values per thread (16 measured 5% slower at 32768 x 8192 bf16)
# rows of 16K elements and more (issue 12): what measured fastest on the H200 for each length and type
# ((n_min, n_max, dtypes or None), options), the first match applies (docs/kernels.md, round 2 and "Paired rows")
PAIR_512 = {"pair_rows": True, "onchip_threads": 512, "cache_hint": "cs"}
_ONE_ROW_64K = {"cache_hint": "cs", "onchip_threads": 1024, "elems_per_thread": 8}  # f32 rows over 48K before lnst
_PAIR_2B = {**PAIR_512, "max_registers": 64}  # two pair-blocks of 512 threads per SM
_ONE_ROW_BF16 = {"onchip_threads": 512, "max_registers": 64, "cache_hint": "cs"}  # two one-row blocks per SM
# 16K: capped at 64 registers, two blocks of 512 per SM (60.4 -> 38.3 us at 2048 x 16K bf16, H200 final check)
_RULES_16K: list = [
    ((12289, 24576, ("bf16", "f16")), {"cache_hint": "cs", "max_registers": 64}),
    ((12289, 24576, ("f32",)), {"max_registers": 64}),  # 69 registers: one block of 512 per SM; capped: two
]
# rows of 16K-64K that are not a power of two: one row per block of 512 threads, 16 values per thread and chunk, two
# blocks per SM (64 registers). The plans below (tuned at 32768 / 65536) spilled or ran mostly empty last chunks there:
# % of the copy rate at 20000-61440 (H200, session 20, benchmarks/results/2026-12-01-NVIDIA-H200-norm-ragged-s20.md):
# bf16 65-77 -> 79-89%, f32 62-82 -> 71-88% (the lowest at 57344-61440 f32, where 273-292 rows are 1.1 waves).
O512_E16 = {"onchip_threads": 512, "max_registers": 64, "elems_per_thread": 16, "cache_hint": "cs", WIDE_ONLY: True}
LONG_ROWS: list = [
    ((16385, 32767, None), O512_E16),
    ((32769, 65535, None), O512_E16),
    *_RULES_16K,
    # rows of narrower accesses (odd lengths: a predicate per value) keep session 19's plans: one row per block of
    # 512 threads with 128 registers (pairs need 8-byte accesses); the 64-register plan above spilled at 32767 bf16
    ((24577, 32767, None), {**PAIR_512, "max_registers": 128, "kept_values": 64}),
    ((32769, 65535, None), {**PAIR_512, "max_registers": 128, "kept_values": 64}),
    # 32K bf16: two rows per block of 512 threads (each W and B chunk read once for both), two blocks per SM
    # (1024 x 32K, ln2r round 4: 41.8 -> 40.7 us, 84 -> 87% of the same-shape copy)
    ((32768, 32768, ("bf16", "f16")), _PAIR_2B),
    # 64K bf16: one row per block of 512 threads, two per SM, with streaming hints (rounds 2-4: 43.9-45.1 -> 41.2 us,
    # 78-80 -> 85%; two rows per block measured the same, 41.2-41.3); longer rows the same
    ((65536, 1 << 31, ("bf16", "f16")), _ONE_ROW_BF16),
    # 32K f32: two rows per block of 512 threads with 128 registers, 32 values of each row kept (512 x 32K, rounds
    # 3-4: 44.0 -> 39.9-40.4 us, 80 -> 88%)
    ((32768, 32768, ("f32",)), {**PAIR_512, "max_registers": 128, "kept_values": 64}),
    # 64K f32: two rows per block of 512 threads with 128 registers sharing every W and B load; of each row, 40
    # values per thread kept in registers and 56 staged in shared memory, the rest (32 KB at 64K) read for the
    # statistics and again, from L2, for the output (256 x 64K, lnst rounds 2-4: 41.5-43.6 -> 39.1-40.4 us, 81-85 ->
    # 88-90% of the same-shape copy; docs/kernels.md "LayerNorm's long rows as a stream")
    ((65536, 65536, ("f32",)), {**PAIR_512, "pair_rows": "reread", "max_registers": 128, "kept_values": 80}),
    # longer f32 rows (a pair would re-read more than stays in L2): eight chunks of 8 values per thread, four kept and
    # four staged, all loaded at once (256 x 64K, lnmc rounds 3-5: 44.2 -> 41.1-41.6 us, 80 -> 85%)
    ((65537, 1 << 31, ("f32",)), _ONE_ROW_64K),
]


def chunk_stats(frag, x, c):
    """(count, mean, sum of squared deviations) of this thread's values ``x`` (f32) of chunk ``c``."""
    mask = frag.lane_mask(c)
    if mask is None:
        n = fx.Float32(x.numel)
        mean = tree_sum(x) * (1.0 / x.numel)
        d = x - mean
    else:  # values past the row's end were not loaded (they are 0): leave them out
        n = tree_sum(mask.select(1.0, 0.0))
        mean = tree_sum(x) / fx.max(n, 1.0)
        d = mask.select(x - mean, 0.0)
    return n, mean, tree_sum(d * d)


class _LayerNormStream(StreamOps):
    """LayerNorm's statistic and output over a streamed row (:class:`kernels.norm.row_stream.StreamOps`): each
    chunk's (count, mean, M2) merged by Chan's rule, one reduction, then each chunk's output with its W and B
    chunks, loaded at use or (``ahead``) a chunk ahead — the first chunk's through the reduction."""

    def __init__(self, W, B, Y, n: int, eps: float, ahead: bool):
        self.W, self.B, self.Y, self.n, self.eps, self.ahead = W, B, Y, n, eps, ahead
        self.wb = None

    def begin(self):
        return fx.Float32(0.0), fx.Float32(0.0), fx.Float32(0.0)

    def chunk(self, state, x, frag, c):
        return combine_mean_m2(state, chunk_stats(frag, x, c)), None, None

    def _weights(self, frag, c):
        return [frag.load(t, c, broadcast=True) for t in (self.W, self.B)]

    def reduce(self, state, frag, plan, parity):
        if self.ahead:
            self.wb = self._weights(frag, 0)
        _, mean, m2 = row_reduce(state, combine_mean_m2, plan, parity)
        return mean, fx.rsqrt(m2 * (1.0 / self.n) + self.eps)

    def output(self, frag, c, v, aux, stats):
        wb = self.wb if self.ahead else self._weights(frag, c)
        if self.ahead and c + 1 < frag.plan.chunks:
            self.wb = self._weights(frag, c + 1)
        w, b = (t.to(fx.Float32) for t in wb)
        mean, rstd = stats
        frag.store(self.Y, c, (v.to(fx.Float32) - mean) * rstd * w + b)


# options that do not ask for a plan_rows plan: any other one given switches a stream default off
NOT_ROW_PLAN_OPTIONS = {*NOT_ROW_PLAN, "stream_wb_ahead"}
# the builder's own options (taken out before the plan's; named where an unknown one is refused)
LAYERNORM_OPTIONS = ("before", "stream_wb_ahead", "pair_wb_ahead", "reread_first", "pair_async")


# the last rows of a long-row grid over thread block clusters (kernels/norm/row_tail.py): a few rows (fewer than the
# SMs) or a last partial round of at most two (H200, session 21: benchmarks/results/*-norm-tail-s21.md)
# f32 rows over 48K, up to a round and a tail (33 rows x 8 blocks): a row per 1024-thread block, not the pairs (which
# take one row per block below a round; H200, session 22, 34-160 rows of 49160 / 65536: 32-84 -> 49-90% of the copy
# rate; at 200-273 rows the pairs were faster); their tails of 16384 columns at most 224 blocks: 34-56 rows over
# clusters of 4 (65536: 65-71 -> 78-84%), 57-132 rows none (the tail lost at 64), 133-165 the last rows (+1-4 points)
_FEW_LN_F32 = {"cache_hint": "cs", "tail_cols": 16384, "tail_blocks": 224}
TAIL_ROWS: list = [
    ((49153, 1 << 31, ("f32",)), {"tail_cols": 8192, "few_rows": 165, "few_plan": _FEW_LN_F32, **ONE_PER_SM_TAIL}),
    ((32769, 1 << 31, ("f32",)), {"tail_cols": 8192, **ONE_PER_SM_TAIL}),
    ((49153, 1 << 31, None), {"tail_cols": 8192}),
]


# the rules before this session's branch lnst (main at d69a6a1): ``before=True`` measures against them
LONG_ROWS_BEFORE: list = [
    *_RULES_16K,
    ((24577, 49152, ("bf16", "f16")), _PAIR_2B),
    ((24577, 49152, ("f32",)), {**PAIR_512, "max_registers": 128, "kept_values": 64}),
    ((49153, 1 << 31, ("bf16", "f16")), _ONE_ROW_BF16),
    ((49153, 1 << 31, ("f32",)), _ONE_ROW_64K),
]


def reduced_ahead(frag, empty):
    """The partial statistics a fragment starts from: those of the chunks a persistent pair reduced ahead
    (``pair_rows.PairFragments.ahead_stats``), else ``empty``."""
    stats = getattr(frag, "ahead_stats", None)
    return empty if stats is None else stats


def plan_defaults(N: int, dtype_str: str, before: bool = False) -> dict:
    """The plan options a row of ``N`` elements of ``dtype_str`` gets unless the caller gives its own (``before``:
    under :data:`LONG_ROWS_BEFORE`)."""
    tail = {} if before else defaults_for(TAIL_ROWS, N, dtype_str)  # the last rows' launch (row_tail)
    return {**PLAN_DEFAULTS, **defaults_for(LONG_ROWS_BEFORE if before else LONG_ROWS, N, dtype_str), **tail}


def _grid(plan, m):
    """A main kernel's blocks for ``m`` rows: a pair's, or a row's."""
    return pair_grid(plan, m) if plan.paired else plan.grid(m)


def build_layernorm_module(N: int, dtype_str: str, eps: float = 1e-5, **plan_options):
    """``launch(Input, Gamma, Beta, Output, m_in, stream=None)``; ``plan_options`` go to
    ``norm_common.plan_rows`` or, with ``stream=True``, to ``row_stream.plan_stream``; ``before=True``: the per-shape
    defaults of :data:`LONG_ROWS_BEFORE`."""
    dtype = DTYPES[dtype_str]
    plan_options = dict(plan_options)
    before = plan_options.pop("before", False)
    plan_options = rule_defaults_off(plan_options, NOT_ROW_PLAN_OPTIONS)
    plan_options, kernel_options = split_options(
        with_defaults(plan_defaults(N, dtype_str, before), PLAN_DEFAULTS, plan_options), pairs=True
    )
    wb_ahead = plan_options.pop("stream_wb_ahead", False)
    wb_depth = plan_options.pop("pair_wb_ahead", 1)  # pairs: W and B chunks in flight ahead of their use
    reread_first = plan_options.pop("reread_first", False)  # re-read pairs: those chunks written first, not last
    pair_async = plan_options.pop("pair_async", False)  # one-shot pairs: the staged chunks copied by cp.async
    # the main plan (a stream plan, or plan_rows'), the few-rows plan and the last rows' launch (row_tail)
    regs = kernel_options.get("max_registers", 0)
    rt = RowTail(N, dtype, plan_options, "build_layernorm_module", PLAN_DEFAULTS, LAYERNORM_OPTIONS, True, regs)

    def make_plan(vec, split):
        streamed, stream_plan_options, plan_options = split
        return row_or_stream_plan(N, dtype, vec, streamed, stream_plan_options, {**plan_options, "weight_tensors": 2})

    @flyc.kernel
    def layernorm_kernel(
        X: fx.Pointer,
        W: fx.Pointer,
        B: fx.Pointer,
        Y: fx.Pointer,
        rows: fx.Int32,
        vec: Constexpr[int],
        role: Constexpr[int],
    ):
        plan = rt.kernel_plan(role, vec, make_plan)
        rt.begin(plan, rows, vec, role)

        def output(frag, c, x, mean, rstd):
            w = frag.load(W, c, broadcast=True).to(fx.Float32)
            b = frag.load(B, c, broadcast=True).to(fx.Float32)
            frag.store(Y, c, (x - mean) * rstd * w + b)

        def row_body(groups, after_stats):
            """LayerNorm of the rows of ``groups``; ``after_stats()`` runs once every value has been read and
            reduced per thread (a persistent plan starts its next row's prefetch there)."""
            with fx.fastmath(FAST):
                if fx.const_expr(plan.chunks == 1):
                    # every group's loads first (several rows per thread in flight), then each group's reduction
                    xs = [f.fetch(X, 0).to(fx.Float32) for f in groups]
                    parts = [chunk_stats(f, x, 0) for f, x in zip(groups, xs)]
                    after_stats()
                    for f, x, st in zip(groups, xs, parts):
                        _, mean, m2 = row_reduce(st, combine_mean_m2, plan, f.parity)
                        # NOTE: W and B are loaded after the reduction: loaded before it, they would hold 2 x 32
                        # more registers through it (80 instead of 62 at 8192 bf16: 3 blocks per SM instead of 4)
                        # and ran 3% slower.
                        output(f, 0, x, mean, fx.rsqrt(m2 * (1.0 / N) + eps))
                elif fx.const_expr(plan.onchip):
                    # one row, or two paired rows (``pair_rows``: each thread the same columns of both, so each
                    # W and B chunk is read once for the two rows, and one reduction serves both)
                    zero = (fx.Float32(0.0), fx.Float32(0.0), fx.Float32(0.0))
                    # a persistent pair with ``pair_lag``: some staged chunks were reduced during the previous
                    # pair's output (pair_rows.py): start from their partial, leave them out here
                    stats = [reduced_ahead(f, zero) for f in groups]
                    ahead = [getattr(f, "ahead", ()) for f in groups]
                    held = [[] for _ in groups]
                    on_chip = plan.kept + plan.staged  # one-shot pairs of longer rows: the rest is read again
                    # ``pair_async`` (one-shot pairs): the staged chunks copied straight to their slots (cp.async,
                    # after the first batch's loads), so no register is held while they are in flight
                    copied = range(plan.kept, on_chip) if pair_async and len(groups) > 1 and not plan.persist else ()
                    waited = []
                    for i, batch in enumerate(plan.batches()):
                        # the batch's loads together; chunk by chunk, each chunk of both rows (a persistent pair's
                        # kept chunks of the second row are then used, so loaded, as early as the first row's); the
                        # chunks read again for the output without the streaming hint (so that they stay in L2)
                        raws = {(g, c): f.fetch(X, c) if c < on_chip else f.load(X, c, hint=False)
                                for c in batch if c not in copied
                                for g, f in enumerate(groups) if c not in ahead[g]}  # fmt: skip
                        if fx.const_expr(i == 0 and len(copied) > 0):
                            for c in copied:
                                for f in groups:
                                    f.copy_async(X, c, f.staging, plan.slot(c))
                            fx.nvvm.cp_async_commit_group()
                        for c in batch:
                            for g, f in enumerate(groups):
                                if fx.const_expr(c in copied):
                                    if fx.const_expr(not waited):
                                        fx.nvvm.cp_async_wait_group(0)
                                        waited.append(c)
                                    stats[g] = combine_mean_m2(
                                        stats[g], chunk_stats(f, f.recall(c, None).to(fx.Float32), c)
                                    )
                                if fx.const_expr((g, c) in raws):
                                    part = chunk_stats(f, raws[g, c].to(fx.Float32), c)
                                    stats[g] = combine_mean_m2(stats[g], part)
                                    held[g].append(f.keep(c, raws[g, c]))
                                else:
                                    held[g].append(None)  # in its slot
                    after_stats()
                    # the chunks read again (one-shot pairs of longer rows) last, each loaded into the registers of a
                    # kept chunk once that one is written (``reread_first``: first, each loaded where it is written)
                    order = list(range(plan.chunks))
                    if fx.const_expr(reread_first):
                        order = order[on_chip:] + order[:on_chip]
                    depth = min(wb_depth, plan.chunks)
                    if fx.const_expr(len(groups) > 1):  # paired: W and B's first chunks in flight through the reduction
                        wbs = [[groups[0].load(t, order[j], broadcast=True) for t in (W, B)] for j in range(depth)]
                    red = row_reduce(sum(stats, ()), per_row(combine_mean_m2, 3), plan, groups[0].parity)
                    means = red[1::3]
                    rstds = [fx.rsqrt(m2 * (1.0 / N) + eps) for m2 in red[2::3]]
                    if fx.const_expr(len(groups) == 1):
                        for c in fx.range_constexpr(plan.chunks):
                            output(groups[0], c, groups[0].recall(c, held[0][c]).to(fx.Float32), means[0], rstds[0])
                    else:
                        # W and B once per chunk for both rows, loaded ``wb_depth`` chunks ahead: a store to Y may
                        # alias W and B for all the compiler knows, so a load after it waits; with one block per SM
                        # nothing would cover that latency. Each row's values read back (converted) only as its turn
                        # comes.
                        again = {}  # (row, chunk) -> a chunk read again, loaded early
                        for i, c in enumerate(order):
                            w, b = (v.to(fx.Float32) for v in wbs.pop(0))
                            if fx.const_expr(i + depth < plan.chunks):
                                wbs.append([groups[0].load(t, order[i + depth], broadcast=True) for t in (W, B)])
                            for g, f in enumerate(groups):
                                if fx.const_expr(c < on_chip):
                                    x = f.recall(c, held[g][c])
                                else:
                                    x = again.pop((g, c)) if (g, c) in again else f.load(X, c)
                                f.store(Y, c, (x.to(fx.Float32) - means[g]) * rstds[g] * w + b)
                            if fx.const_expr(not reread_first and c < plan.kept and on_chip + c < plan.chunks):
                                for g, f in enumerate(groups):  # this kept chunk's registers: a chunk read again
                                    again[g, on_chip + c] = f.load(X, on_chip + c)
                else:
                    (frag,) = groups
                    stats = (fx.Float32(0.0), fx.Float32(0.0), fx.Float32(0.0))
                    for c in range(plan.chunks):
                        stats = combine_mean_m2(stats, chunk_stats(frag, frag.load(X, c).to(fx.Float32), c))
                    _, mean, m2 = row_reduce(stats, combine_mean_m2, plan)
                    rstd = fx.rsqrt(m2 * (1.0 / N) + eps)
                    for c in range(plan.chunks):
                        output(frag, c, frag.load(X, c).to(fx.Float32), mean, rstd)

        if fx.const_expr(isinstance(plan, StreamPlan)):  # the ring schedule of row_stream.py
            stream_rows(plan, dtype, rows, X, _LayerNormStream(W, B, Y, N, eps, wb_ahead), FAST)
        elif fx.const_expr(plan.paired):
            # paired rows, the next pair copied in (and with plan.lag, partly reduced) during this pair's output
            each_pair(plan, dtype, rows, (X,), row_body, (lambda f, v, c: chunk_stats(f, v.to(fx.Float32), c),
                                                           combine_mean_m2, (fx.Float32(0.0),) * 3))  # fmt: skip
            finish_rows(plan)
        else:
            each_row(plan, dtype, rows, (X,), row_body, (W, B))
            finish_rows(plan)

    @flyc.jit
    def launch_layernorm(
        Input: fx.Tensor,
        Gamma: fx.Tensor,
        Beta: fx.Tensor,
        Output: fx.Tensor,
        m_in: fx.Int32,
        stream: Stream = Stream(None),
    ):
        vec = vector_width(N, dtype.width // 8, min(t.alignment for t in (Input, Gamma, Beta, Output)))
        args = (Input.iterator, Gamma.iterator, Beta.iterator, Output.iterator)
        rt.launch(layernorm_kernel, args, m_in, vec, make_plan, stream, _grid)

    return with_register_cap(launch_layernorm, kernel_options)
