"""Stream-K for the preshuffle GEMM: an even split of the K iterations of all output tiles across a grid of at
most ``max_blocks`` blocks, and the deterministic reduction of the tiles that end up split.

**Schedule.** The work is ``T = tiles × iters`` iterations (one pipeline stage of K each), tile-major. Block
``b`` takes the contiguous range ``[b·q, min((b+1)·q, T))`` with ``q = max(min_iters, ceil(T / max_blocks))``,
and the grid has ``ceil(T / q)`` blocks: every block streams the same amount of B (the last one may have
less), whatever the number of tiles — no partial wave. A range is cut into *segments* at tile boundaries;
a tile whose iterations lie in one block is finished there (its epilogue runs straight from the
registers); the others are *split* over the blocks ``first(t) = t·iters // q`` … ``last(t) = (t·iters +
iters - 1) // q``.

**Reduction (deterministic, no waiting).** Every segment of a split tile stores its partial accumulators
(float32, or int32 for int8) in a workspace slot, fences (``fence.sc.gpu``), and one thread adds 1 to the
tile's arrival counter. The block that arrives last (the counter's old value is ``segments - 1``) sums the
partials of the tile **in block order** — the same order, hence the same bits, whichever block arrives
last — runs the epilogue and resets the counter to 0 for the next launch. No block waits for another, so
any number of blocks may be resident, in any order.

**Workspace** (one int32 buffer, :func:`workspace_words`): ``COUNTER_WORDS`` counters (the counter of a
split tile is indexed by its first block: a block starts at most one split tile, because only the last
tile beginning in its range can continue past it), then two partial slots per block — a block holds at
most two split segments, its first and its last (``slot(b, t) = 2b + (t != first tile of b)``). A slot
stores thread ``t`` of consumer ``c``'s 16-byte chunk ``j`` at words ``((c·chunks + j)·threads + t)·4``:
every store and load of a warp is 512 contiguous bytes. Counters are zero between launches; launches that
share a workspace must not run concurrently (as cuBLAS's workspace: one stream at a time).
"""

from __future__ import annotations

import flydsl.expr as fx

__all__ = ["StreamK", "workspace_words", "COUNTER_WORDS"]

COUNTER_WORDS = 1024  # counters of split tiles: at most one per block (max_blocks <= 1024)


def workspace_words(max_blocks: int, consumers: int, threads: int, vals: int) -> int:
    """Int32 words of the workspace: the counters, then two slots per block of ``consumers × threads × vals``."""
    if not 1 <= max_blocks <= COUNTER_WORDS:
        raise ValueError(f"max_blocks must be 1..{COUNTER_WORDS}, got {max_blocks}")
    return COUNTER_WORDS + 2 * max_blocks * consumers * threads * vals


class StreamK:
    """The schedule and the reduction, traced inside a kernel.

    Args:
        iters: K iterations of one tile.
        max_blocks, min_iters: the grid bound and the fewest iterations per block.
        consumers, threads, vals: the warpgroups that hold a tile's accumulators, threads per warpgroup, and
            accumulator values per thread (a multiple of 4).
    """

    def __init__(self, iters: int, max_blocks: int, min_iters: int, consumers: int, threads: int, vals: int):
        if vals % 4:
            raise ValueError(f"the accumulators per thread must be a multiple of 4, got {vals}")
        self.iters, self.max_blocks, self.min_iters = iters, max_blocks, max(1, min_iters)
        self.consumers, self.threads, self.vals = consumers, threads, vals
        self.slot_words = consumers * threads * vals
        self.words = workspace_words(max_blocks, consumers, threads, vals)

    # -- the schedule (host launcher and kernel alike: integer arithmetic on the run-time tile count) ----------
    def quantum(self, tiles):
        """Iterations per block: ``max(min_iters, ceil(tiles·iters / max_blocks))``."""
        total = tiles * self.iters
        return fx.max((total + self.max_blocks - 1) // self.max_blocks, self.min_iters)

    def grid(self, tiles):
        """Blocks of the launch (at least 1)."""
        q = self.quantum(tiles)
        return fx.max((tiles * self.iters + q - 1) // q, 1)

    def block_range(self, tiles, b):
        """``(q, it0, it1)``: block ``b``'s iterations."""
        q = self.quantum(tiles)
        it0 = b * q
        return q, it0, fx.min(it0 + q, tiles * self.iters)

    def first_block(self, q, tile):
        return tile * self.iters // q

    def last_block(self, q, tile):
        return (tile * self.iters + self.iters - 1) // q

    def slot(self, q, b, tile):
        """The partial slot of block ``b``'s segment of ``tile``: ``2b``, or ``2b + 1`` unless it is the first
        tile of the block's range."""
        first_tile = b * q // self.iters
        return 2 * b + fx.min(tile - first_tile, 1)  # tile >= first_tile: 0 for the first tile, else 1

    # -- the reduction (the kernel writes the control flow: helpers are not rewritten) -------------------------
    def counter(self, ws, fb):
        """The arrival counter of the split tile whose first block is ``fb`` (an Int32 pointer)."""
        return ws.iterator.recast(fx.Int32) + fb

    def slot_base(self, ws, dt, slot):
        """The first word of partial slot ``slot`` (a pointer to ``dt``): ``slot_words`` contiguous words."""
        return (ws.iterator.recast(fx.Int32) + COUNTER_WORDS).recast(dt) + slot * self.slot_words

    def _offset(self, c, j, t):
        return ((c * (self.vals // 4) + j) * self.threads + t) * 4

    def _chunk(self, ws, dt, slot, c, j, t):
        return self.slot_base(ws, dt, slot) + self._offset(c, j, t)

    def publish(self, ws, acc, slot, c, t) -> None:
        """Store thread ``t`` of consumer ``c``'s accumulators ``acc`` (a Vector of ``vals``) in ``slot``."""
        for j in fx.range_constexpr(self.vals // 4):
            self._chunk(ws, acc.dtype, slot, c, j, t).store(acc[4 * j : 4 * j + 4], align=16)

    def partial(self, ws, dt, slot, c, t):
        """Thread ``t`` of consumer ``c``'s accumulators in ``slot`` (read from L2: ``ld.global.cg``)."""
        chunks = [self._chunk(ws, dt, slot, c, j, t).load(vec_width=4, align=16, cache="cg")
                  for j in range(self.vals // 4)]  # fmt: skip
        return fx.Vector.from_elements([x for v in chunks for x in v], dt)

    def publish_at(self, base, acc, c, t) -> None:
        """:meth:`publish` into a copy of a slot at ``base`` (shared memory)."""
        for j in fx.range_constexpr(self.vals // 4):
            (base + self._offset(c, j, t)).store(acc[4 * j : 4 * j + 4], align=16)

    def partial_at(self, base, dt, c, t):
        """Thread ``t`` of consumer ``c``'s accumulators in a copy of a slot at ``base`` (shared memory)."""
        chunks = [(base + self._offset(c, j, t)).load(vec_width=4, align=16) for j in range(self.vals // 4)]
        return fx.Vector.from_elements([x for v in chunks for x in v], dt)
