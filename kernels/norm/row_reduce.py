"""Row reductions of the norm kernels: per-thread partials merged over a row's threads (XOR shuffles within a warp,
shared memory across warps, distributed shared memory across a cluster's blocks), the partial kinds (sums, softmax's
max/sum, Welford/Chan mean and M2) and the balanced lane sum. Re-exported by :mod:`kernels.norm.norm_common`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import flydsl.expr as fx

if TYPE_CHECKING:
    from kernels.norm.norm_common import RowPlan

WARP = 32


def tree_sum(v):
    """The sum of a Vector's lanes as a balanced tree of vector adds: log2(n) dependent adds instead of the
    n of an ordered ``v.reduce("add")``."""
    n = v.numel
    while n > 1:
        h = n // 2
        s = v[:h] + v[h : 2 * h]
        if n % 2:
            s = s.insert(0, s[0] + v[n - 1])
        v, n = s, h
    return v[0]


# A row reduction carries a tuple of Float32 partials; ``combine(a, b)`` merges two tuples.


def combine_add(a, b):
    return tuple(x + y for x, y in zip(a, b))


LOG2E = 1.4426950408889634


def combine_max_sum(a, b):
    """Softmax partials (max m, sum of exp(x - m)): rescale both sums to the larger max."""
    (ma, sa), (mb, sb) = a, b
    m = fx.max(ma, mb)
    fm = "afn"
    return m, sa * fx.exp2((ma - m) * LOG2E, fastmath=fm) + sb * fx.exp2((mb - m) * LOG2E, fastmath=fm)


def combine_mean_m2(a, b):
    """Chan et al.'s parallel variance: partials (count, mean, sum of squared deviations from the mean)."""
    (na, ma, qa), (nb, mb, qb) = a, b
    n = na + nb
    d = mb - ma
    wb = nb / fx.max(n, 1.0)  # 0 when both are empty
    return n, ma + d * wb, qa + qb + d * d * na * wb


def per_row(combine, k: int):
    """``combine`` over tuples that hold several rows' partials, ``k`` per row (paired rows reduce together)."""

    def merged(a, b):
        return tuple(x for i in range(0, len(a), k) for x in combine(a[i : i + k], b[i : i + k]))

    return merged


def _butterfly(vals, combine, width):
    off = width // 2
    while off >= 1:
        vals = combine(vals, tuple(fx.shuffle_xor(v, off) for v in vals))
        off //= 2
    return vals


def row_reduce(vals, combine, plan: RowPlan, parity=0):
    """Reduce per-thread partials over the ``plan.threads`` threads of each row; every thread gets the result.

    Within a warp: XOR shuffles. Across the warps of a row: each warp's lane 0 writes its result to shared
    memory, one barrier, then every warp reads all of its row's partials and reduces them itself (so no
    second barrier and no broadcast). Cluster plans: see :func:`_cluster_reduce`.

    A persistent plan reduces once per row in a loop: rows alternate between two sets of partials
    (``parity``, the row's :attr:`RowFragments.parity`), so a warp that runs ahead writes the next row's
    partial while a slower one may still read this row's; the row after that reuses this set only once every
    warp has passed the next row's barrier, after its reads.
    """
    vals = _butterfly(tuple(vals), combine, min(plan.threads, WARP))
    if plan.cluster > 1:
        return _cluster_reduce(vals, combine, plan)
    if plan.threads <= WARP:
        return vals
    tid = fx.thread_idx.x
    lane, warp = tid % WARP, tid // WARP
    nw, bw = plan.threads // WARP, plan.block_threads // WARP  # warps per row, per block
    smem = fx.alloc_shared(fx.Float32, len(vals) * bw * (2 if plan.persist else 1))
    if plan.persist:
        smem = smem + parity * (len(vals) * bw)
    for k, v in enumerate(vals):
        (smem + (k * bw + warp)).store(v, mask=lane == 0)
    fx.barrier()
    first = warp - warp % nw  # the row's first warp
    vals = tuple(smem[k * bw + first + lane % nw] for k in range(len(vals)))
    return _butterfly(vals, combine, nw)


def _cluster_reduce(vals, combine, plan: RowPlan):
    """Reduce the warps' partials over the cluster's blocks: each warp's lane 0 writes its partials to its
    block's shared memory; one cluster barrier (release/acquire: it also orders the block's own warps); every
    warp reads all ``cluster x warps`` partials through distributed shared memory (lane ``j`` the ones of
    index ``j``, ``j + 32``... combined in that order) and finishes with XOR shuffles — the same values in the
    same order in every warp of every block, so every block gets the same statistics. Then each thread arrives
    (arrive only) to say it is done reading the others' shared memory; :func:`finish_rows` waits for that
    before the block exits."""
    tid = fx.thread_idx.x
    lane, warp = tid % WARP, tid // WARP
    nw = max(1, plan.threads // WARP)
    total = plan.cluster * nw  # powers of two
    smem = fx.alloc_shared(fx.Float32, len(vals) * nw)
    for k, v in enumerate(vals):
        (smem + (k * nw + warp)).store(v, mask=lane == 0)
    fx.nvvm.cluster_arrive(aligned=True)
    fx.nvvm.cluster_wait(aligned=True)
    width = min(total, WARP)
    acc = None
    for i in range(max(1, total // WARP)):
        idx = lane % width + i * WARP
        peer = fx.nvvm.map_shared(smem, idx // nw)
        part = tuple(peer[k * nw + idx % nw] for k in range(len(vals)))
        acc = part if acc is None else combine(acc, part)
    fx.nvvm.cluster_arrive(aligned=True)
    return _butterfly(acc, combine, width)


def finish_rows(plan: RowPlan) -> None:
    """The end of a row kernel: a cluster plan's block waits until every block of its cluster has read the
    partials in its shared memory (the second barrier of :func:`_cluster_reduce`); a tail launch's block then waits
    for the main kernel before it (``kernels/norm/row_tail.py``); nothing otherwise."""
    if plan.cluster > 1:
        fx.nvvm.cluster_wait(aligned=True)
    if plan.tail:
        fx.nvvm.griddep_wait()
