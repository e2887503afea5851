"""RMSNorm: ``Y = X * rsqrt(mean(X**2) + eps) * W``, row by row; optionally fused with the residual add
``X = X + R`` (the sum, rounded to the data type, is written to ``R_out`` and normalized).

``build_rmsnorm_module(N, dtype_str, eps=1e-6)`` returns ``launch(X, W, Y, M, stream=None)``;
``build_fused_add_rmsnorm_module(N, dtype_str, eps=1e-6)`` returns
``launch(X, R, W, Y, R_out, M, stream=None)`` (FlyDSL's signatures). f32/f16/bf16 data and weight, f32
arithmetic.

* Rows of up to 16K elements stay in registers (one read of X, one write of Y); the weight is loaded
  before the row's reduction, so its latency hides behind the shuffles and the barrier.
* The sum of squares: a tree of adds per thread, XOR shuffles per warp, shared memory across warps.
* ``rsqrt.approx`` (1.4 ulp): far below the rounding of the output.
* Longer rows (``long_rows="onchip"``, the default): one read; chunks kept in registers or staged in
  shared memory until the output. ``long_rows="two_pass"``: pass 1 accumulates over chunks (and writes
  ``X + R``), pass 2 re-reads and writes.
* Short rows: ``row_iters=k`` gives each block k groups of rows, all loads issued before the first use.
* ``long_rows="cluster"`` (sm_90): a row over a cluster of 2-8 blocks, each slice in registers, the sums
  of squares merged through distributed shared memory (``norm_common``).
* ``stream=True`` (long rows, without the fused add; ``row_stream``): softmax's and LayerNorm's ring schedule, a
  persistent block per SM that reads the next row into each chunk's registers or shared-memory slot as soon as this
  row's output frees it.
"""

from __future__ import annotations

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Constexpr, Stream
from kernels.norm.norm_common import (
    DTYPES,
    WIDE_ONLY,
    combine_add,
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
    StreamOps,
    StreamPlan,
    row_or_stream_plan,
    rule_defaults_off,
    stream_rows,
)
from kernels.norm.row_tail import ONE_PER_SM_TAIL, RowTail

__all__ = ["build_rmsnorm_module", "build_fused_add_rmsnorm_module"]

FAST = "afn,contract"
# 16 values per thread (8192 bf16: 512 threads per row) measured 1.4% faster than 32 on the H200;
# rows of more than 512 threads reduce too slowly (1024 threads: 20% slower)
PLAN_DEFAULTS = {"elems_per_thread": 16, "max_row_threads": 512}
# rows of 16K elements and more (issue 12): what measured fastest on the H200 for each length and type
# ((n_min, n_max, dtypes or None), options), the first match applies (docs/kernels.md, round 2)
# rows that are not a power of two (session 20, benchmarks/results/2026-12-01-NVIDIA-H200-norm-ragged-s20.md): chunks
# of 512 threads, two blocks per SM at 64 registers, instead of 1024 threads whose last chunk is mostly empty
O512 = {"onchip_threads": 512, "max_registers": 64, "cache_hint": "cs", WIDE_ONLY: True}  # (odd rows: the rules below)
O512_K16 = {**O512, "kept_values": 16}  # 16 values per thread kept, the rest staged
LONG_ROWS: list = [
    # % of the copy rate at 20000-28672: bf16 74-88 -> 92-94%, f32 (16 values kept) 87-89 -> 90-93%
    ((16385, 32767, ("bf16", "f16")), O512),
    ((16385, 32767, ("f32",)), O512_K16),
    ((32769, 49152, ("f32",)), O512),  # 40000 / 40960: 82-83 -> 90-94%
    ((49153, 65535, ("bf16", "f16")), {**O512, "elems_per_thread": 32}),  # 49160-61440: 78-89 -> 86-91%
    # 16K bf16: ptxas takes more than 64 registers (one block of 512 per SM); capped, two fit (49.5 -> 36.8 us
    # at 2048 x 16K on the H200, 2026-12-01 final check)
    ((12289, 24576, ("bf16", "f16")), {"max_registers": 64}),
    ((12289, 24576, ("f32",)), {"persist": 2}),
    # persistent, the next row prefetched (f32: streaming loads and stores too)
    ((24577, 1 << 31, ("bf16", "f16")), {"persist": 2}),
    ((24577, 1 << 31, ("f32",)), {"persist": 2, "cache_hint": "cs"}),
]
# the fused add (two inputs, two outputs: half the relative weight traffic)
FUSED_ADD_LONG_ROWS: list = [
    # bf16 rows that are not a power of two, 20000-61440: 79-96 -> 87-100% of the copy rate (session 20)
    ((16385, 32767, ("bf16", "f16")), O512_K16),
    ((32769, 65535, ("bf16", "f16")), O512_K16),
    ((12289, 24576, ("f32",)), {"register_limit": 8192}),  # 1024 threads x 16 values (46 registers: 2 blocks per SM)
    # f32 57344-61440 with their last rows over clusters (TAIL_ROWS): 512-thread chunks, two blocks per SM (% of the
    # copy rate, H200 session 21: 292 x 57344 84 -> 89%, 273 x 61440 80 -> 84%, 140 rows 79-83 -> 86-92%)
    ((55297, 65535, ("f32",)), O512_K16),
    ((24577, 49152, ("bf16", "f16")), {"cache_hint": "cs"}),
    ((49153, 1 << 31, ("bf16", "f16")), {"persist": 2}),
    ((49153, 1 << 31, ("f32",)), {"cache_hint": "cs"}),
]


# the last rows of a long-row grid over thread block clusters (kernels/norm/row_tail.py): a few rows (fewer than the
# SMs) or a last partial round of at most two (H200, session 21: benchmarks/results/*-norm-tail-s21.md)
# 16-bit rows of 64K (persistent pairs of 1024-thread blocks) at 100-273 rows: one row per 512-thread block, two per
# SM (H200, session 22: 78-96 -> 84-101% of the copy rate; 49160-61440 take such blocks at every row count)
_FEW_64K = {"few_rows": (100, 273), "few_plan": {k: v for k, v in O512.items() if k != WIDE_ONLY}}
TAIL_ROWS: list = [
    ((32769, 1 << 31, ("f32",)), {"tail_cols": 16384, **ONE_PER_SM_TAIL}),
    ((65536, 1 << 31, ("bf16", "f16")), {"tail_cols": 16384, **_FEW_64K}),
    ((49153, 1 << 31, None), {"tail_cols": 16384}),
]
# the fused add f32 over 48K at 34 rows and a few more (34 x 8 blocks are more than run at once, 240: no tail): every
# row over 4 blocks (H200, session 22: 49160 at 34-56 rows 67-77 -> 82-88%, 65536 at 34-40 65-71 -> 77-85%; at 64 rows,
# and 48 of 65536, the main plan was faster). Only the tail runs there (62 rows x 4 blocks are as many as run at once,
# 248): the few-rows plan's own main kernel (the base plan) is compiled but never launched
_FEW_T16 = {"tail_cols": 16384}
FUSED_ADD_TAIL_ROWS: list = [
    ((49153, 57343, ("f32",)), {"tail_cols": 8192, "few_rows": (34, 56), "few_plan": _FEW_T16}),
    ((57344, 1 << 31, ("f32",)), {"tail_cols": 8192, "few_rows": (34, 44), "few_plan": _FEW_T16}),
    ((32769, 1 << 31, ("f32",)), {"tail_cols": 8192}),
    ((32769, 1 << 31, ("bf16", "f16")), {"tail_cols": 16384}),
]


# options that do not ask for a plan_rows plan: any other one given switches a stream default off
NOT_ROW_PLAN_OPTIONS = NOT_ROW_PLAN


class _RMSNormStream(StreamOps):
    """RMSNorm's statistic and output over a streamed row (:class:`kernels.norm.row_stream.StreamOps`): the sum of
    squares (values past the row's end are 0), one reduction, each chunk's output with its weight chunk."""

    def __init__(self, W, Y, n: int, eps: float):
        self.W, self.Y, self.n, self.eps = W, Y, n, eps

    def begin(self):
        return fx.Float32(0.0)

    def chunk(self, ss, x, frag, c):
        return ss + tree_sum(x * x), None, None

    def reduce(self, ss, frag, plan, parity):
        (ss,) = row_reduce((ss,), combine_add, plan, parity)
        return fx.rsqrt(ss * (1.0 / self.n) + self.eps)

    def output(self, frag, c, v, aux, r):
        frag.store(self.Y, c, v.to(fx.Float32) * r * frag.load(self.W, c, broadcast=True).to(fx.Float32))


def plan_defaults(N: int, dtype_str: str, fused_add: bool = False) -> dict:
    """The plan options a row of ``N`` elements of ``dtype_str`` gets unless the caller gives its own."""
    rules, tail = (FUSED_ADD_LONG_ROWS, FUSED_ADD_TAIL_ROWS) if fused_add else (LONG_ROWS, TAIL_ROWS)
    return {**PLAN_DEFAULTS, **defaults_for(rules, N, dtype_str), **defaults_for(tail, N, dtype_str)}


def _build(N: int, dtype_str: str, eps: float, fused_add: bool, plan_options: dict):
    plan_options = rule_defaults_off(plan_options, NOT_ROW_PLAN_OPTIONS)
    plan_options, kernel_options = split_options(
        with_defaults(plan_defaults(N, dtype_str, fused_add), PLAN_DEFAULTS, plan_options)
    )
    dtype = DTYPES[dtype_str]
    # the main plan (a stream plan, or plan_rows'), the few-rows plan and the last rows' launch (row_tail)
    name = "build_fused_add_rmsnorm_module" if fused_add else "build_rmsnorm_module"
    rt = RowTail(N, dtype, plan_options, name, PLAN_DEFAULTS, regs=kernel_options.get("max_registers", 0))
    if fused_add and any(split and split[0] for split in (rt.main, rt.few)):
        raise ValueError("stream=True: the stream plan reads one input; the fused add (X and R) has two")
    # one weight; the fused add's persistent plans prefetch R beside X
    kernel_tensors = {"weight_tensors": 1, "inputs": 2 if fused_add else 1}

    @flyc.kernel
    def rmsnorm_kernel(
        X: fx.Pointer,
        W: fx.Pointer,
        Y: fx.Pointer,
        residual: tuple,
        rows: fx.Int32,
        vec: Constexpr[int],
        role: Constexpr[int],
    ):
        R, R_out = residual if fused_add else (None, None)  # the fused add's (R, R_out); () without it
        plan = rt.kernel_plan(role, vec, make_plan)
        rt.begin(plan, rows, vec, role)

        def load_raw(frag, c):
            """This thread's X in chunk c (with the fused add: X + R rounded to the data type, stored to R_out)."""
            x = frag.fetch(X, c)
            if fx.const_expr(fused_add):
                x = (x.to(fx.Float32) + frag.fetch(R, c, region=1).to(fx.Float32)).to(dtype)
                frag.store(R_out, c, x)
            return x

        def row_body(groups, after_stats):
            """RMSNorm of the rows of ``groups``; ``after_stats()`` runs once every value has been read and
            reduced per thread (a persistent plan starts its next row's prefetch there)."""
            with fx.fastmath(FAST):
                if fx.const_expr(plan.chunks == 1):
                    # every group's loads first (several rows per thread in flight), then each group's reduction
                    xs = [load_raw(f, 0).to(fx.Float32) for f in groups]
                    # NOTE: the weight is loaded before the reduction (its latency hides behind the shuffles and
                    # the barrier; the same columns in every group: loaded once), except 32 f32 values per thread:
                    # held through the reduction, they made 79 registers at 16384 f32 (one block of 512 per SM)
                    w_early = dtype.width < 32 or plan.vecs * plan.vec < 32
                    w = groups[0].load(W, 0, broadcast=True) if fx.const_expr(w_early) else None
                    parts = [tree_sum(x * x) for x in xs]
                    after_stats()
                    for f, x, ss in zip(groups, xs, parts):
                        (ss,) = row_reduce((ss,), combine_add, plan, f.parity)
                        r = fx.rsqrt(ss * (1.0 / N) + eps)
                        f.store(
                            Y, 0, x * r * (w if fx.const_expr(w_early) else f.load(W, 0, broadcast=True)).to(fx.Float32)
                        )
                elif fx.const_expr(plan.onchip):
                    (frag,) = groups
                    ss = fx.Float32(0.0)
                    held = []
                    for batch in plan.batches():
                        raws = [load_raw(frag, c) for c in batch]  # the batch's loads, issued together
                        for c, raw in zip(batch, raws):
                            x = raw.to(fx.Float32)
                            ss = ss + tree_sum(x * x)
                            held.append(frag.keep(c, raw, fetched=not fused_add))  # the sum is new
                    after_stats()
                    (ss,) = row_reduce((ss,), combine_add, plan, frag.parity)
                    r = fx.rsqrt(ss * (1.0 / N) + eps)
                    for c in fx.range_constexpr(plan.chunks):
                        w = frag.load(W, c, broadcast=True).to(fx.Float32)
                        frag.store(Y, c, frag.recall(c, held[c]).to(fx.Float32) * r * w)
                else:
                    (frag,) = groups
                    ss = fx.Float32(0.0)
                    for c in range(plan.chunks):
                        x = load_raw(frag, c).to(fx.Float32)
                        ss = ss + tree_sum(x * x)
                    (ss,) = row_reduce((ss,), combine_add, plan)
                    r = fx.rsqrt(ss * (1.0 / N) + eps)
                    for c in range(plan.chunks):
                        # NOTE: with the fused add, pass 2 reads back the sums this thread wrote in pass 1
                        x = frag.load(R_out if fused_add else X, c).to(fx.Float32)
                        w = frag.load(W, c, broadcast=True).to(fx.Float32)
                        frag.store(Y, c, x * r * w)

        if fx.const_expr(isinstance(plan, StreamPlan)):  # the ring schedule of row_stream.py
            stream_rows(plan, dtype, rows, X, _RMSNormStream(W, Y, N, eps), FAST)
        else:
            each_row(plan, dtype, rows, (X, R) if fused_add else (X,), row_body, (W,))
            finish_rows(plan)

    def make_plan(vec, split):
        streamed, stream_plan_options, plan_options = split
        return row_or_stream_plan(N, dtype, vec, streamed, stream_plan_options, {**plan_options, **kernel_tensors})

    def launch(X, R, W, Y, R_out, M, stream):
        vec = vector_width(N, dtype.width // 8, min(t.alignment for t in (X, R, W, Y, R_out)))
        residual = (R.iterator, R_out.iterator) if fused_add else ()  # no parameters where unused
        rt.launch(rmsnorm_kernel, (X.iterator, W.iterator, Y.iterator, residual), M, vec, make_plan, stream)

    if fused_add:

        @flyc.jit
        def launch_fused_add_rmsnorm(
            Input: fx.Tensor,
            ResidualIn: fx.Tensor,
            Gamma: fx.Tensor,
            Output: fx.Tensor,
            ResidualOut: fx.Tensor,
            m_in: fx.Int32,
            stream: Stream = Stream(None),
        ):
            launch(Input, ResidualIn, Gamma, Output, ResidualOut, m_in, stream)

        return with_register_cap(launch_fused_add_rmsnorm, kernel_options)

    @flyc.jit
    def launch_rmsnorm(
        Input: fx.Tensor, Gamma: fx.Tensor, Output: fx.Tensor, m_in: fx.Int32, stream: Stream = Stream(None)
    ):
        launch(Input, Input, Gamma, Output, Output, m_in, stream)

    return with_register_cap(launch_rmsnorm, kernel_options)


def build_rmsnorm_module(N: int, dtype_str: str, eps: float = 1e-6, *, fused_add: bool = False, **plan_options):
    """``launch(Input, Gamma, Output, m_in, stream=None)``; with ``fused_add=True`` the fused-add launcher of
    :func:`build_fused_add_rmsnorm_module`. ``plan_options`` go to ``norm_common.plan_rows``."""
    return _build(N, dtype_str, eps, fused_add, plan_options)


def build_fused_add_rmsnorm_module(N: int, dtype_str: str, eps: float = 1e-6, **plan_options):
    """``launch(Input, ResidualIn, Gamma, Output, ResidualOut, m_in, stream=None)``: ``ResidualOut = Input +
    ResidualIn`` (rounded to the data type), ``Output = rmsnorm(ResidualOut) * Gamma``."""
    return _build(N, dtype_str, eps, True, plan_options)
