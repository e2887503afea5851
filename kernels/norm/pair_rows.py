"""Paired rows on a persistent grid (``pair_rows=True`` with ``persist``): the loop over a block's row pairs.

A paired onchip plan (:func:`norm_common.plan_rows` with ``pair_rows``: ``iters=2``) gives each thread the same
columns of two rows, so a kernel reads each weight chunk once for both (LayerNorm: W and B are as many bytes as
the row; paired, the L2 serves half of them). Its two rows fill an SM (64K bf16 or 32K f32: 2 x 128 KB, a
chunk of each row in registers and the rest staged in shared memory), so a second block cannot cover one
block's reduction and its ramp-up. Persistent, each block loops over pairs ``p = block, block + grid, ...``
(rows ``2p`` and ``2p + 1``) and the next pair's staged chunks are read *while this pair is written*: once a
thread has stored its values of chunk ``c`` (read back from that chunk's slot), it starts reading the next
pair's chunk ``c`` for the same slot. Each thread fills and reads back only its own vectors, and its store of
chunk ``c`` consumes what it read from the slot before the slot is refilled, so no barrier is needed. Two ways:

* ``cp.async`` (``cp.async.cg``, no register held): each thread waits for a chunk's copy group where it reads
  the chunk (``wait_group n``, the groups committed after it left in flight);
* through registers, for streaming plans (``cache="cs"``: a ``cp.async`` carries no evict-first hint, and the
  rows' lines kept at normal priority push the pair's weights out of L2 — round 2 measured the ``cp.async``
  pairs 5-12% slower than one-shot pairs): an ``ld.global.cs`` per chunk and row, written to the slot a chunk
  later (``st.shared``), the last chunk's after the output.

The next pair's kept chunks (registers) are loaded at the end of each iteration and carried into the next.
``plan.lag > 0`` (``pair_lag``): the next pair's staged chunks are also *reduced* as they arrive (a chunk after
its read started, with ``cp.async`` ``lag`` chunks after), so the next iteration starts with their partial
statistics and the memory idles only through the kept chunks' statistics and the reduction.
"""

from __future__ import annotations

import flydsl.expr as fx
from flydsl.compiler.ast_rewriter import ASTRewriter
from kernels.norm.norm_common import RowFragments, RowPlan, staging_buffer

__all__ = ["PairFragments", "each_pair", "pair_count", "pair_grid", "pair_rows"]


def pair_count(plan: RowPlan, m):
    """The row pairs of ``m`` rows (an int or a run-time Int32). While the rows fit the SMs one per block
    (``m <= plan.sms``), pairing would leave half of the SMs idle: each "pair" is then one row twice (read twice,
    from L2 the second time; the same values stored twice)."""
    if isinstance(m, int):
        return m if m <= plan.sms else (m + 1) // 2
    return (m <= plan.sms).select(m, (m + 1) // 2)


def pair_grid(plan: RowPlan, m):
    """The blocks of a paired plan for ``m`` rows: one per pair, persistent plans at most ``persist`` per SM."""
    n = pair_count(plan, m)
    if not plan.persist:
        return n
    cap = plan.persist * plan.sms
    return min(n, cap) if isinstance(n, int) else fx.min(n, cap)


def pair_rows(plan: RowPlan, p, m):
    """The two rows of pair ``p`` of ``m`` rows (:func:`pair_count`): ``2p`` and ``2p + 1`` (the last row again past
    the end: the same values stored twice, no predicate on every access), or ``p`` twice while ``m <= sms``."""
    small = m <= plan.sms
    return small.select(p, p * 2), fx.min(small.select(p, p * 2 + 1), m - 1)


class PairFragments(RowFragments):
    """Row ``group`` (0 or 1) of a pair: :class:`RowFragments` whose kept chunks are loaded ahead
    (:meth:`load_kept`) and whose staged chunks arrive in their slots ahead (:meth:`refill`: the first pair's
    before the loop, later pairs' from the previous pair's :meth:`store`). ``next_row``: this row's successor in
    the block's next pair (the same slots). With ``cp.async``, every pair commits one copy group per staged chunk
    and row, chunk by chunk and row A before row B, so a reader knows how many younger groups may be in flight."""

    def __init__(self, plan: RowPlan, dtype, row0, rows_left, staging, parity, group, next_row=None, reduce=None):
        super().__init__(plan, dtype, row0, rows_left, staging, parity=parity)
        self.group = group
        self.next_row = next_row
        self.source = None
        self.async_copies = plan.cache != "cs"  # else through registers (module docstring)
        self.kept_values = {}  # chunk -> this row's values (loaded by the previous pair's output, or load_kept)
        self.in_flight = {}  # registers path: chunk -> values loaded for the slot, not yet written to it
        self.reduce = reduce  # (partial(frag, values, c), combine, empty partial): the kernel's chunk statistics
        # plan.lag > 0: the staged chunks whose statistics were computed ahead (during the previous pair's output,
        # the first pair's before the loop) and their merged partial; the kernel reduces only the other chunks
        ahead_end = plan.chunks if not self.async_copies else plan.chunks - plan.lag
        self.ahead = range(plan.kept, ahead_end) if plan.lag and reduce else ()
        self.ahead_stats = reduce[2] if reduce else None

    def load_kept(self, t, c):
        """Load this row's kept chunk ``c`` of ``t`` into registers."""
        self.kept_values[c] = self.load(t, c, rows_checked=True)
        return self.kept_values[c]

    def _merge(self, c, values):
        part, combine, _ = self.reduce
        self.ahead_stats = combine(self.ahead_stats, part(self, values, c))

    def refill(self, t, c):
        """Start reading this row's staged chunk ``c`` of ``t`` for its slot: a ``cp.async`` group, or (registers
        path) an ``ld.global.cs`` that :meth:`land` writes to the slot."""
        p = self.plan
        if not self.async_copies:
            self.in_flight[c] = self.load(t, c, rows_checked=True)
            return
        self.copy_async(t, c, self.staging, p.slot(c))
        fx.nvvm.cp_async_commit_group()

    def land(self, c, pending: int = 0):
        """Chunk ``c``'s read has had time to arrive: registers path, write it to its slot; ``cp.async``, wait for
        its group (``pending``: the groups committed after it, left in flight). Reduce it when it is one of
        :attr:`ahead`."""
        if not self.async_copies:
            v = self.in_flight.pop(c)
            dst = self._slot_view(c)
            regs = fx.make_fragment_like(dst)
            regs.store(v)
            fx.copy(self.tiled_plain, regs, dst)
            if c in self.ahead:
                self._merge(c, v)
            return
        if c in self.ahead:
            fx.nvvm.cp_async_wait_group(pending)
            self._merge(c, self._from_slot(c))

    def fetch(self, t, c=0, fill=None, region=0):
        p = self.plan
        self.source = t
        if c < p.kept:
            v = self.kept_values[c]
        else:
            if self.async_copies:  # this chunk's copy only: the groups committed after it may stay in flight
                fx.nvvm.cp_async_wait_group(2 * (p.chunks - 1 - c) + 1 - self.group)
            v = self._from_slot(c)
        mask = self.lane_mask(c)
        if fill is not None and mask is not None:
            v = mask.select(v, fill)
        return v

    def keep(self, c, values, fetched=True):
        return values if c < self.plan.kept else None  # a staged chunk is in its slot already

    def store(self, t, c, values):
        super().store(t, c, values)
        p, nxt = self.plan, self.next_row
        if c < p.kept or nxt is None:
            return
        nxt.refill(self.source, c)  # this slot's values are consumed: refill it
        if not self.async_copies:
            if c - 1 >= p.kept:
                nxt.land(c - 1)  # a chunk's output later: its loads have arrived
        elif c - p.lag in nxt.ahead:
            nxt.land(c - p.lag, 2 * p.lag)  # committed since: lag chunks of both rows


def _pair(plan: RowPlan, dtype, rows, p, bufs, parity, nxt=None, reduce=None):
    """The two :class:`PairFragments` of pair ``p`` (:func:`pair_rows`). ``rows_left`` counts from the
    pair's first row, so a pair past the last row reads nothing."""
    pair = pair_rows(plan, p, rows)
    out = []
    for g in range(2):
        nxt_g = nxt[g] if nxt else None
        out.append(PairFragments(plan, dtype, pair[g], rows - pair[0], bufs[g], parity, g, nxt_g, reduce))
    return out


def _land_rest(plan: RowPlan, frags, start: int):
    """Land the staged chunks from ``start`` on of ``frags`` (chunk by chunk, both rows): the first pair's before
    the loop, and with registers each pair's last chunk after the output."""
    for c in range(start, plan.chunks):
        for f in frags:
            f.land(c, 2 * (plan.chunks - 1 - c) + 1 - f.group)


def _each_pair(plan: RowPlan, dtype, rows, inputs, row_body, reduce=None):
    """Run ``row_body(groups, after_stats)`` over the block's row pairs (``groups``: the pair's two fragments;
    ``after_stats`` does nothing): one pair of :class:`RowFragments` (one-shot plans), or a loop over pairs of
    :class:`PairFragments`, the next pair's staged chunks of ``inputs[0]`` read during this pair's output (module
    docstring). ``reduce`` (``plan.lag > 0``): the kernel's chunk statistics
    ``(partial(frag, values, c), combine, empty partial)``; each fragment then says which staged chunks it has
    reduced already (``ahead``) and their merged partial (``ahead_stats``): the kernel merges the rest into it."""
    staging = staging_buffer(plan, dtype)
    bufs = [staging, staging + plan.slots * plan.rows * plan.chunk_cols]  # each row its own slots
    if fx.const_expr(not plan.persist):  # one pair per block, read and reduced by the kernel's own body
        pair = pair_rows(plan, fx.block_idx.x, rows)
        row_body([RowFragments(plan, dtype, r, rows - r, buf) for r, buf in zip(pair, bufs)], lambda: None)
        return
    x = inputs[0]
    first, step = fx.block_idx.x, fx.grid_dim.x
    head = _pair(plan, dtype, rows, first, bufs, 0, reduce=reduce)
    kept = [h.load_kept(x, c) for c in range(plan.kept) for h in head]  # carried: each pair's kept chunks
    for c in fx.range_constexpr(plan.kept, plan.chunks):
        for h in head:
            h.refill(x, c)
            if fx.const_expr(plan.cache == "cs" and c > plan.kept):
                h.land(c - 1)  # registers: a chunk in flight per row while the next is read, as in the output
    _land_rest(plan, head, plan.chunks - 1 if plan.cache == "cs" else plan.kept)
    ahead = [h.ahead_stats for h in head]  # carried: each pair's partial of its chunks reduced ahead
    parity = fx.Int32(0)
    for p in range(first, pair_count(plan, rows), step):
        nxt = _pair(plan, dtype, rows, p + step, bufs, 1 - parity, reduce=reduce)
        groups = _pair(plan, dtype, rows, p, bufs, parity, nxt, reduce)
        for i, v in enumerate(kept):
            groups[i % 2].kept_values[i // 2] = v
        for g, a in enumerate(ahead):
            groups[g].ahead_stats = a
        row_body(groups, lambda: None)  # its stores read (and reduce) the next pair's staged chunks
        # the next pair's kept chunks: issued here, before the next iteration's waits for its copies (loaded at
        # the top of an iteration, ptxas sinks the second row's loads below those waits)
        kept = [n.load_kept(x, c) for c in range(plan.kept) for n in nxt]
        if fx.const_expr(plan.cache == "cs"):
            _land_rest(plan, nxt, plan.chunks - 1)  # registers: the last chunk, read during the last output
        ahead = [n.ahead_stats for n in nxt]
        parity = 1 - parity
    fx.nvvm.cp_async_wait_group(0)  # the last copies (of no row: zeros) land before the block exits


# the pair loop is a run-time loop: the helper's control flow is rewritten as a kernel body's is
each_pair = ASTRewriter.transform(_each_pair)
