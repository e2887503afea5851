"""Softmax over long rows as a stream (``stream=True``): the ring schedule of :mod:`kernels.norm.row_stream` with
softmax's statistic — the online (max, sum of exp(x - max)) over a row's chunks, merged over its threads by
:func:`max_sum_reduce` (one ``ex2`` per thread per stage instead of two per butterfly level) — and its output.
``exps`` plans hold each chunk's exps (to the running max after it) in place of its values, so the output scales
them once per chunk instead of recomputing them.
"""

from __future__ import annotations

import flydsl.expr as fx
from kernels.norm.norm_common import LOG2E, WARP, RowPlan, combine_max_sum, row_reduce, tree_sum
from kernels.norm.row_stream import SMEM_LIMIT, StreamOps, StreamPlan, plan_stream
from kernels.norm.row_stream import stream_rows as _rows

__all__ = ["StreamPlan", "SMEM_LIMIT", "plan_stream", "stream_rows", "max_sum_reduce"]


def _butterfly(v, width, op):
    off = width // 2
    while off >= 1:
        v = op(v, fx.shuffle_xor(v, off))
        off //= 2
    return v


def _merge(m, s, width):
    """(max, sum of exp(x - max)) over ``width`` lanes: the max first, then each lane's sum rescaled to it once."""
    big = _butterfly(m, width, fx.max)
    s = s * fx.exp2((m - big) * LOG2E, fastmath="afn")
    return big, _butterfly(s, width, lambda a, b: a + b)


def max_sum_reduce(m, s, plan: RowPlan, parity=0):
    """Softmax's row statistics: each thread's (max ``m``, sum ``s`` of exp(x - m)) merged over the
    ``plan.threads`` threads of its row; every thread gets the row's (max, sum).

    As :func:`kernels.norm.norm_common.row_reduce` with ``combine_max_sum`` (XOR shuffles in a warp, each warp's
    partial through shared memory, one barrier, every warp merging its row's partials itself), but each stage
    reduces the max first and rescales the sums to it once: two ``ex2`` per thread in all instead of two per
    butterfly level (20 for a 1024-thread row). Persistent plans alternate two sets of partials by row
    (``parity``), as ``row_reduce`` does. A row over a cluster takes ``row_reduce`` itself (its partials cross the
    cluster's blocks through distributed shared memory; this reduction alone would leave each block its own)."""
    if plan.cluster > 1:
        return row_reduce((m, s), combine_max_sum, plan, parity)
    m, s = _merge(m, s, min(plan.threads, WARP))
    if plan.threads <= WARP:
        return m, s
    tid = fx.thread_idx.x
    lane, warp = tid % WARP, tid // WARP
    nw, bw = plan.threads // WARP, plan.block_threads // WARP
    smem = fx.alloc_shared(fx.Float32, 2 * bw * (2 if plan.persist else 1))
    if plan.persist:
        smem = smem + parity * (2 * bw)
    (smem + warp).store(m, mask=lane == 0)
    (smem + (bw + warp)).store(s, mask=lane == 0)
    fx.barrier()
    first = warp - warp % nw
    return _merge(smem[first + lane % nw], smem[bw + first + lane % nw], nw)


def _output(v, chunk_max, big_m, inv_s):
    """A chunk's softmax from its values ``v`` or, where ``chunk_max`` is given (exps plans), from its exps to it."""
    if chunk_max is None:
        return fx.exp2(v.to(fx.Float32) * LOG2E - big_m * LOG2E) * inv_s
    return v * (fx.exp2((chunk_max - big_m) * LOG2E) * inv_s)


def _online(m, s, x):
    """One chunk's step of the online (max, sum): the new running max and sum, and the chunk's exps to that max."""
    m_new = fx.max(m, x.reduce("max"))
    e = fx.exp2(x * LOG2E - m_new * LOG2E)
    return m_new, s * fx.exp2((m - m_new) * LOG2E) + tree_sum(e), e


class _SoftmaxOps(StreamOps):
    """Softmax's statistic and output over a streamed row (:class:`kernels.norm.row_stream.StreamOps`)."""

    def __init__(self, C, masked_min, plan: StreamPlan, dtype):
        self.C, self.fill = C, masked_min
        # exps held: kept chunks; staged ones too (f32 rows)
        self.exps, self.exps_staged = plan.exps, plan.exps and dtype.width == 32
        self.kept = plan.row.kept

    def begin(self):
        return fx.Float32(self.fill), fx.Float32(0.0)

    def chunk(self, state, x, frag, c):
        m, s, e = _online(*state, x)
        held = self.exps if c < self.kept else self.exps_staged
        return (m, s), (e if held else None), (m if held else None)  # the exps, and the max they are to

    def reduce(self, state, frag, plan: RowPlan, parity):
        big_m, s = max_sum_reduce(*state, plan, parity)
        return big_m, 1.0 / s

    def output(self, frag, c, v, aux, stats):
        frag.store(self.C, c, _output(v, aux, *stats))


def stream_rows(plan: StreamPlan, dtype, rows, A, C, masked_min, fastmath):
    """Softmax of rows ``block, block + grid, ...`` of ``A`` into ``C`` (the schedule of
    :func:`kernels.norm.row_stream.stream_rows`)."""
    _rows(plan, dtype, rows, A, _SoftmaxOps(C, masked_min, plan, dtype), fastmath)
