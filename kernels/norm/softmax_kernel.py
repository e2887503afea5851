"""Row-wise softmax: ``C[i, :] = exp(A[i, :] - max(A[i, :])) / sum(exp(A[i, :] - max(A[i, :])))``.

f32/f16/bf16 in and out, f32 arithmetic. ``build_softmax_module(M, N, dtype_str)`` returns the launcher
``launch_fn(A, C, M, stream=None)`` (FlyDSL's signature; ``M`` is the run-time row count).

* Rows of up to 16K elements stay in registers: every element is read once and written once.
* One reduction per row, not two: each thread reduces its values to (max m, sum of exp(x - m)); pairs
  merge by rescaling to the larger max (the online-softmax rule), through XOR shuffles within a warp and
  shared memory across warps. Each thread then scales its exps by ``exp(m - M) / S``: one exp per element.
* exp is ``ex2.approx`` on ``x * log2(e)`` (``afn``: a few ulp, far below bf16/f16 rounding).
* Longer rows (``long_rows="onchip"``, the default): one read; chunks kept in registers or staged in
  shared memory, the exps recomputed for the output. ``long_rows="two_pass"``: pass 1 runs the online
  rule over chunks of the row, pass 2 re-reads and writes.
* Short rows: ``row_iters=k`` gives each block k groups of rows, all loads issued before the first use.
* ``long_rows="cluster"`` (sm_90): a row over a cluster of 2-8 blocks, each slice in registers, the
  (max, sum) partials merged through distributed shared memory (``norm_common``).
* ``stream=True`` (long rows; ``softmax_stream``): a persistent block per SM that loads the next row into each
  chunk's registers or shared-memory slot as soon as this row's output frees it, and copies the next row's first
  staged chunks into spare slots while this row is reduced (options ``stream_values``, ``stream_kept``, ``ring``).
* ``light_reduce=True``: the (max, sum) reduction takes the max first and rescales each sum once per stage (two
  ``ex2`` per thread instead of two per butterfly level); the stream plan always reduces so.
"""

from __future__ import annotations

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Constexpr, Stream
from kernels.norm.norm_common import (
    DTYPES,
    LOG2E,
    MASKED_MIN,
    WIDE_ONLY,
    combine_max_sum,
    defaults_for,
    each_row,
    finish_rows,
    row_reduce,
    split_options,
    tree_sum,
    vector_width,
    with_defaults,
    with_register_cap,
)
from kernels.norm.row_stream import (
    NOT_ROW_PLAN,
    StreamPlan,
    row_or_stream_plan,
    rule_defaults_off,
)
from kernels.norm.row_tail import RowTail
from kernels.norm.softmax_stream import max_sum_reduce, stream_rows

__all__ = ["build_softmax_module"]

FAST = "afn,contract"  # ex2.approx; x * log2e - m * log2e as one fma
# 16 values per thread (8192 bf16: 512 threads per row) measured 1.4% faster than 32 on the H200;
# rows of more than 512 threads reduce too slowly (1024 threads: 30% slower)
PLAN_DEFAULTS = {"elems_per_thread": 16, "max_row_threads": 512}
# rows of 16K elements and more (issue 12): what measured fastest on the H200 for each length and type
# ((n_min, n_max, dtypes or None), options), the first match applies (docs/kernels.md, round 2 and "margin")
# rows of 16K-24K that are not a power of two (20000, 20480, 24576): 512 threads, up to 48 values each in registers,
# two blocks per SM, not 1024 threads over a 32K row (its last chunk 22-50% full); H200, session 20, % of the copy rate:
# bf16 59-68 -> 94-96%, f32 85-87 -> 92-93% (benchmarks/results/2026-12-01-NVIDIA-H200-norm-ragged-s20.md)
REG_512 = {"register_limit": 32768, "max_row_threads": 512, "max_registers": 64, "cache_hint": "cs", WIDE_ONLY: True}
_RULES_16K_32K: list = [
    # 2048 x 16K bf16: a 64-register cap (ptxas schedules it better: 37.0 vs 39.5 us; 2 blocks per SM either way)
    ((12289, 24576, ("bf16", "f16")), {"max_registers": 64}),
    # 32K: in registers, 1024 threads x 32 values (each exp once), persistent with the next row prefetched
    ((24577, 49152, None), {"persist": 2, "register_limit": 32768, "max_row_threads": 1024}),
]
LONG_ROWS: list = [
    ((16385, 24576, None), REG_512),
    *_RULES_16K_32K,
    # 64K bf16: persistent, the whole next row prefetched; the light reduction (40.7 -> 39.9 us, two rounds)
    ((49153, 1 << 31, ("bf16", "f16")), {"persist": 2, "light_reduce": True}),
    # 64K f32: the stream plan, chunks of 16 values, 32 in registers (41.3-43.3 -> 38.8-39.4 us, two rounds); longer
    # rows do not fit its ring (two staged chunks of 64 KB and a spare): streaming hints
    ((49153, 65536, ("f32",)), {"stream": True, "stream_values": 16, "stream_kept": 32}),
    ((65537, 1 << 31, ("f32",)), {"cache_hint": "cs"}),
]
# the last rows of a long-row grid over thread block clusters (kernels/norm/row_tail.py): a few rows (fewer than the
# SMs) or a last partial round of at most two (H200, session 21: benchmarks/results/*-norm-tail-s21.md)
# 133-198 rows (a round and a tail: 66 rows x 4 blocks fill the tail's 264): the main kernel's rows in 512-thread blocks
# at 64 registers, so the tail's blocks fit beside them (1024-thread blocks fill an SM's registers: the tail waited
# for them; H200, session 22, 140-160 rows: 63-74 -> 79-92% of the copy rate; at 100-132 and 200-273 rows they
# measured 2-7 points slower in f32)
FEW_O512 = {"onchip_threads": 512, "max_registers": 64, "cache_hint": "cs"}
# (tail_blocks: 63-66 rows of 64K f32 in two waves of the tail measured faster than the main plan, 16.1 vs 17.7 us;
# H200, session 23)
TAIL_ROWS: list = [
    ((49153, 1 << 31, None), {"tail_cols": 16384, "few_rows": (133, 198), "few_plan": FEW_O512, "tail_blocks": 264})
]
# the rules before the stream plan and the light reduction (main at 039f7a2): ``before=True`` measures against them
LONG_ROWS_BEFORE: list = [
    *_RULES_16K_32K,
    ((49153, 1 << 31, ("bf16", "f16")), {"persist": 2}),
    ((49153, 1 << 31, ("f32",)), {"cache_hint": "cs"}),  # only a quarter of a row fits to prefetch: streaming hints
]


# options that do not ask for a plan_rows plan: any other one given switches a stream default off
NOT_ROW_PLAN_OPTIONS = {*NOT_ROW_PLAN, "light_reduce"}


def plan_defaults(N: int, dtype_str: str, before: bool = False) -> dict:
    """The plan options a row of ``N`` elements of ``dtype_str`` gets unless the caller gives its own (``before``:
    under :data:`LONG_ROWS_BEFORE`)."""
    tail = {} if before else defaults_for(TAIL_ROWS, N, dtype_str)  # the last rows' launch (row_tail)
    return {**PLAN_DEFAULTS, **defaults_for(LONG_ROWS_BEFORE if before else LONG_ROWS, N, dtype_str), **tail}


def build_softmax_module(M: int, N: int, dtype_str: str = "f32", **plan_options):
    """A launcher for softmax over rows of ``N`` elements of ``dtype_str`` (``M`` is not baked in).

    ``plan_options`` go to :func:`kernels.norm.norm_common.plan_rows` (``elems_per_thread``,
    ``block_threads``, ``register_limit``...) or, with ``stream=True``, to
    :func:`kernels.norm.row_stream.plan_stream` (``row_stream.STREAM_OPTIONS``); ``light_reduce``; ``before=True``:
    the per-shape defaults of :data:`LONG_ROWS_BEFORE`. Options of a ``plan_rows`` plan (``persist``,
    ``long_rows``...) without ``stream`` switch a stream default off: the caller gets the plan they describe.
    """
    del M  # the row count is a run-time argument
    before = plan_options.pop("before", False)
    plan_options = rule_defaults_off(plan_options, NOT_ROW_PLAN_OPTIONS)
    plan_options, kernel_options = split_options(
        with_defaults(plan_defaults(N, dtype_str, before), PLAN_DEFAULTS, plan_options)
    )
    light = plan_options.pop("light_reduce", False)
    dtype = DTYPES[dtype_str]
    # the main plan (a stream plan, or plan_rows'), the few-rows plan and the last rows' launch (row_tail)
    regs = kernel_options.get("max_registers", 0)
    rt = RowTail(N, dtype, plan_options, "build_softmax_module", PLAN_DEFAULTS, ("before", "light_reduce"), regs=regs)
    masked_min = MASKED_MIN[dtype_str]

    def reduce_max_sum(m, s, plan, parity=0):
        if fx.const_expr(light):
            return max_sum_reduce(m, s, plan, parity)
        return row_reduce((m, s), combine_max_sum, plan, parity)

    def make_plan(vec, split):  # the stream plan copies by cp.async: rows of 16-bit accesses take plan_rows' plan
        return row_or_stream_plan(N, dtype, vec, *split)

    @flyc.kernel
    def softmax_kernel(A: fx.Pointer, C: fx.Pointer, rows: fx.Int32, vec: Constexpr[int], role: Constexpr[int]):
        plan = rt.kernel_plan(role, vec, make_plan)
        rt.begin(plan, rows, vec, role)

        def row_body(groups, after_stats):
            """Softmax of the rows of ``groups``; ``after_stats()`` runs once every value has been read and
            reduced per thread (a persistent plan starts its next row's prefetch there)."""
            with fx.fastmath(FAST):
                if fx.const_expr(plan.chunks == 1):
                    # every group's loads first (several rows per thread in flight), then each group's reduction
                    xs = [f.fetch(A, 0, fill=masked_min).to(fx.Float32) for f in groups]
                    parts = []
                    for x in xs:
                        m = x.reduce("max")
                        e = fx.exp2(x * LOG2E - m * LOG2E)
                        parts.append((m, e, tree_sum(e)))
                    after_stats()
                    for f, (m, e, s) in zip(groups, parts):
                        big_m, s = reduce_max_sum(m, s, plan, f.parity)
                        scale = fx.exp2((m - big_m) * LOG2E) / s
                        f.store(C, 0, e * scale)
                elif fx.const_expr(plan.onchip):
                    (frag,) = groups
                    m = fx.Float32(masked_min)
                    s = fx.Float32(0.0)
                    held = []
                    for batch in plan.batches():
                        raws = [frag.fetch(A, c, fill=masked_min) for c in batch]  # the batch's loads, together
                        for c, raw in zip(batch, raws):
                            x = raw.to(fx.Float32)
                            m_new = fx.max(m, x.reduce("max"))
                            s = s * fx.exp2((m - m_new) * LOG2E) + tree_sum(fx.exp2(x * LOG2E - m_new * LOG2E))
                            m = m_new
                            held.append(frag.keep(c, raw))
                    after_stats()
                    big_m, s = reduce_max_sum(m, s, plan, frag.parity)
                    inv_s = 1.0 / s
                    for c in fx.range_constexpr(plan.chunks):
                        x = frag.recall(c, held[c]).to(fx.Float32)
                        frag.store(C, c, fx.exp2(x * LOG2E - big_m * LOG2E) * inv_s)
                else:
                    (frag,) = groups
                    m = fx.Float32(masked_min)
                    s = fx.Float32(0.0)
                    for c in range(plan.chunks):
                        x = frag.load(A, c, fill=masked_min).to(fx.Float32)
                        m_new = fx.max(m, x.reduce("max"))
                        e = fx.exp2(x * LOG2E - m_new * LOG2E)
                        s = s * fx.exp2((m - m_new) * LOG2E) + tree_sum(e)
                        m = m_new
                    big_m, s = reduce_max_sum(m, s, plan)
                    inv_s = 1.0 / s
                    for c in range(plan.chunks):
                        x = frag.load(A, c).to(fx.Float32)
                        frag.store(C, c, fx.exp2(x * LOG2E - big_m * LOG2E) * inv_s)

        if fx.const_expr(isinstance(plan, StreamPlan)):
            stream_rows(plan, dtype, rows, A, C, masked_min, FAST)
        else:
            each_row(plan, dtype, rows, (A,), row_body)
            finish_rows(plan)

    @flyc.jit
    def launch_softmax(A: fx.Tensor, C: fx.Tensor, M: fx.Int32, stream: Stream = Stream(None)):
        vec = vector_width(N, dtype.width // 8, min(A.alignment, C.alignment))
        rt.launch(softmax_kernel, (A.iterator, C.iterator), M, vec, make_plan, stream)

    return with_register_cap(launch_softmax, kernel_options)
