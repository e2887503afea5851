"""Row statistics across a thread block cluster without a cluster barrier per row (persistent cluster plans).

A persistent cluster plan (``long_rows="cluster"`` with ``persist``) gives each block of a cluster a fixed slice of
the columns for all of the cluster's rows — its slice of the weights stays in its shared memory, read from L2 once
per block instead of once per row. Each row's statistics are merged across the cluster by *pushing* them:

* every block reduces its slice to one partial (``row_reduce``'s block reduction);
* thread ``j`` of each block stores that partial into block ``j``'s shared memory (its own slot, indexed by the
  sender's rank) with ``st.async``, which completes the partial's bytes on block ``j``'s mbarrier;
* thread 0 arms its own mbarrier for the ``cluster`` partials it expects (``arrive.expect_tx``); every thread waits
  for that phase and merges the partials from its own shared memory in rank order — the same values in the same
  order in every block, so every block gets bit-identical statistics.

No fence and no cluster barrier per row: ``barrier.cluster.arrive`` with release semantics, and any release fence,
compile to ``MEMBAR.ALL.GPU`` (ptxas 13.0 for sm_90a), which waits for the thread's outstanding global stores and
loads, while ``st.async`` is a plain ``STAS`` and the wait a ``SYNCS`` try-wait on shared memory.

Rows alternate between two sets of slots and two mbarriers (``parity``), each mbarrier completing one phase every
other row (``phase``). A block writes set ``p`` of another block for row ``i + 2`` only after it received that
block's partial of row ``i + 1``, which that block sends after a block barrier that follows all its threads' reads of
set ``p`` for row ``i``: no slot is overwritten while it is read. Bytes of row ``i + 2`` may reach an mbarrier before
its owner armed that phase: the transaction count goes below zero and the phase stays open (its one arrival, the
owner's, is still pending). One cluster barrier after the mbarriers' initialization, none at the end (nothing is
read from another block's shared memory).
"""

from __future__ import annotations

import flydsl.expr as fx
from flydsl.compiler.ast_rewriter import ASTRewriter

__all__ = ["ClusterExchange", "SLOT_FLOATS"]

SLOT_FLOATS = 4  # one partial (up to 4 Float32 statistics) per sender: 16 bytes, one st.async.v4


class ClusterExchange:
    """The mbarriers and partial slots of a persistent cluster plan's blocks; ``reduce`` merges one row's partials.
    Construct it once, before the row loop (it initializes the mbarriers and synchronizes the cluster)."""

    def __init__(self, cluster: int):
        self.cluster = cluster
        self.bars = fx.alloc_shared(fx.Int64, 2, align=8)
        self.slots = fx.alloc_shared(fx.Float32, 2 * cluster * SLOT_FLOATS, align=16)
        _init_bars(self.bars)

    def reduce(self, vals: tuple, combine, parity, phase) -> tuple:
        """The merge of the cluster's block partials ``vals`` (every thread holds its block's) for a row of
        ``parity`` (0/1: the slot set and mbarrier) whose mbarrier completes its phase of parity ``phase``."""
        width = len(vals) if len(vals) <= 2 else SLOT_FLOATS
        if len(vals) > SLOT_FLOATS:
            raise ValueError(f"a cluster partial holds at most {SLOT_FLOATS} statistics, got {len(vals)}")
        base = self.slots + parity * (self.cluster * SLOT_FLOATS)
        bar = self.bars + parity
        mine = base + fx.block_idx.x % self.cluster * SLOT_FLOATS  # my slot, at the same offset in every block
        lanes = list(vals) + [fx.Float32(0.0)] * (width - len(vals))
        value = lanes[0] if width == 1 else fx.Vector.from_elements(lanes, dtype=fx.Float32)
        _push(value, mine, bar, self.cluster, width * 4)
        fx.nvvm.mbarrier_wait(bar, phase)
        out = None
        for j in range(self.cluster):  # rank order: the same merge in every block
            v = (base + j * SLOT_FLOATS).load(vec_width=width)
            part = (v,) if width == 1 else tuple(v[i] for i in range(len(vals)))
            out = part if out is None else combine(out, part)
        return out


def _init_bars_(bars):
    if fx.thread_idx.x == 0:
        fx.nvvm.mbarrier_init(bars, 1)
        fx.nvvm.mbarrier_init(bars + 1, 1)
        fx.nvvm.fence_mbarrier_init()
    fx.nvvm.cluster_arrive(aligned=True)  # release/acquire, once: the mbarriers exist before any block pushes
    fx.nvvm.cluster_wait(aligned=True)


def _push_(value, mine, bar, cluster, nbytes):
    """Thread ``j < cluster`` stores ``value`` at ``mine`` in block ``j`` (completing on its ``bar``); thread 0
    arms this block's ``bar`` for the ``cluster`` partials."""
    tid = fx.thread_idx.x
    if tid < cluster:
        fx.nvvm.st_async(fx.nvvm.map_shared(mine, tid), value, fx.nvvm.map_shared(bar, tid))
    if tid == 0:
        fx.nvvm.mbarrier_arrive_expect_tx(bar, cluster * nbytes)


# the helpers branch on the thread index at run time: their control flow is rewritten as a kernel body's is
_init_bars = ASTRewriter.transform(_init_bars_)
_push = ASTRewriter.transform(_push_)
