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
"""

from __future__ import annotations

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Constexpr, Stream
from kernels.norm.norm_common import (
    DTYPES,
    combine_mean_m2,
    defaults_for,
    each_row,
    finish_rows,
    plan_rows,
    row_reduce,
    split_options,
    tree_sum,
    vector_width,
    with_defaults,
    with_register_cap,
)

__all__ = ["build_layernorm_module"]

FAST = "afn,contract"
PLAN_DEFAULTS: dict = {}  # 32 values per thread (16 measured 5% slower at 32768 x 8192 bf16)
# rows of 16K elements and more (issue 12): what measured fastest on the H200 for each length and type
# ((n_min, n_max, dtypes or None), options), the first match applies (docs/kernels.md, round 2)
LONG_ROWS: list = [
    # 16K bf16: capped at 64 registers, two blocks of 512 per SM (60.4 -> 38.3 us at 2048 x 16K, H200 final check)
    ((12289, 24576, ("bf16", "f16")), {"cache_hint": "cs", "max_registers": 64}),
    ((12289, 24576, ("f32",)), {"max_registers": 64}),  # 69 registers: one block of 512 per SM; capped: two
    # 32K bf16: persistent, W and B in shared memory once per block (not re-read from L2 for every row)
    ((24577, 49152, ("bf16", "f16")), {"persist": 2, "weights_smem": True, "cache_hint": "cs"}),
    # 32K f32: two chunks of 16 values per thread, one kept in registers and one staged, both loaded at once
    # (44.3 -> 42.4 us at 512 x 32K on the H200; docs/kernels.md, "W and B multicast across a cluster")
    ((24577, 49152, ("f32",)), {"onchip_threads": 1024, "elems_per_thread": 16, "kept_values": 16}),
    ((49153, 1 << 31, ("bf16", "f16")), {"onchip_threads": 512, "max_registers": 64}),  # two blocks of 512 per SM
    # 64K f32: eight chunks of 8 values per thread, four kept and four staged, all loaded at once (44.2 -> 41.4 us)
    ((49153, 1 << 31, ("f32",)), {"cache_hint": "cs", "onchip_threads": 1024, "elems_per_thread": 8}),
]


def plan_defaults(N: int, dtype_str: str) -> dict:
    """The plan options a row of ``N`` elements of ``dtype_str`` gets unless the caller gives its own."""
    return {**PLAN_DEFAULTS, **defaults_for(LONG_ROWS, N, dtype_str)}


def build_layernorm_module(N: int, dtype_str: str, eps: float = 1e-5, **plan_options):
    """``launch(Input, Gamma, Beta, Output, m_in, stream=None)``; ``plan_options`` go to
    ``norm_common.plan_rows``."""
    dtype = DTYPES[dtype_str]
    plan_options, kernel_options = split_options(
        with_defaults(plan_defaults(N, dtype_str), PLAN_DEFAULTS, plan_options)
    )
    plan_options["weight_tensors"] = 2  # W and B

    @flyc.kernel
    def layernorm_kernel(
        X: fx.Pointer, W: fx.Pointer, B: fx.Pointer, Y: fx.Pointer, rows: fx.Int32, vec: Constexpr[int]
    ):
        plan = plan_rows(N, dtype.width // 8, vec, **plan_options, clusters=fx.nvvm.has_clusters())

        def chunk_stats(frag, x, c):
            """(count, mean, sum of squared deviations) of this thread's values of chunk c."""
            mask = frag.lane_mask(c)
            if fx.const_expr(mask is None):
                n = fx.Float32(x.numel)
                mean = tree_sum(x) * (1.0 / x.numel)
                d = x - mean
            else:  # values past the row's end were not loaded (they are 0): leave them out
                n = tree_sum(mask.select(1.0, 0.0))
                mean = tree_sum(x) / fx.max(n, 1.0)
                d = mask.select(x - mean, 0.0)
            return n, mean, tree_sum(d * d)

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
                    (frag,) = groups
                    stats = (fx.Float32(0.0), fx.Float32(0.0), fx.Float32(0.0))
                    held = []
                    for batch in plan.batches():
                        raws = [frag.fetch(X, c) for c in batch]  # the batch's loads, issued together
                        for c, raw in zip(batch, raws):
                            stats = combine_mean_m2(stats, chunk_stats(frag, raw.to(fx.Float32), c))
                            held.append(frag.keep(c, raw))
                    after_stats()
                    _, mean, m2 = row_reduce(stats, combine_mean_m2, plan, frag.parity)
                    rstd = fx.rsqrt(m2 * (1.0 / N) + eps)
                    for c in fx.range_constexpr(plan.chunks):
                        output(frag, c, frag.recall(c, held[c]).to(fx.Float32), mean, rstd)
                else:
                    (frag,) = groups
                    stats = (fx.Float32(0.0), fx.Float32(0.0), fx.Float32(0.0))
                    for c in range(plan.chunks):
                        stats = combine_mean_m2(stats, chunk_stats(frag, frag.load(X, c).to(fx.Float32), c))
                    _, mean, m2 = row_reduce(stats, combine_mean_m2, plan)
                    rstd = fx.rsqrt(m2 * (1.0 / N) + eps)
                    for c in range(plan.chunks):
                        output(frag, c, frag.load(X, c).to(fx.Float32), mean, rstd)

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
        plan = plan_rows(N, dtype.width // 8, vec, **plan_options, clusters=fx.nvvm.has_clusters())
        layernorm_kernel(Input.iterator, Gamma.iterator, Beta.iterator, Output.iterator, m_in, vec).launch(
            grid=(plan.grid(m_in), 1, 1),
            block=(plan.block_threads, 1, 1),
            cluster=plan.cluster_dims,
            value_attrs=plan.func_attrs,
            stream=stream,
        )

    return with_register_cap(launch_layernorm, kernel_options)
