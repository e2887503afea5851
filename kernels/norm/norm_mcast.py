"""The weights of a row kernel multicast across a thread block cluster (``weights_multicast=k``, sm_90).

LayerNorm's long rows read W and B from L2 for every row: as many bytes again as the row's own read and write
(docs/kernels.md, "Why LayerNorm's long rows stay at 80-86%"). Here ``k`` blocks on different SMs form a cluster;
each still works on its own row exactly as its row plan says (registers and staging), but the weights reach every
block's shared memory through a ring of ``wstages`` stages filled by one ``cp.async.bulk ... .multicast::cluster``
per *piece* for the whole cluster — one L2 read per piece instead of ``k``.

A piece is the ``threads x vec`` columns of one weight tensor that the row's threads touch with one vector access
(vector ``v`` of chunk ``c``: thread ``t`` reads columns ``c * chunk_cols + v * threads * vec + t * vec ...``), so a
thread reads back exactly its own vector of each piece. Pieces are used in the order the output phase needs them,
``u = (c * vecs + v) * tensors + k``; piece ``u`` lives in stage ``u % wstages`` and is issued by the block of
rank ``u % k`` (``wstages`` is a multiple of ``k``, so a stage always has the same issuer). The standard Hopper
producer/consumer pipeline (CUTLASS's ``PipelineTmaAsync``), one thread of each block as the producer:

* *full* mbarrier per stage in every block (one arrival: the block's own ``arrive_expect_tx`` of the piece's bytes;
  the multicast completes them there, in whichever order the two come);
* *empty* mbarrier per stage in its issuing block, ``k x warps`` arrivals: once a warp has used its vectors of
  piece ``u`` — after it stored the output they computed (``syncwarp``, then lane 0 arrives remotely,
  ``mbarrier.arrive.shared::cluster``; ptxas does not make the arrive wait for an earlier shared load's data, so a
  release right after the load could let the stage be refilled before the load read it);
* a vector's pieces (``tensors`` of them) are released together, so the issuer of piece ``u + wstages - tensors``
  waits, when its block takes piece ``u``, for every warp of the cluster to have released piece ``u - tensors``
  (the previous occupant of that stage, the previous vector's), then issues it. The first ``wstages`` pieces are
  issued at the kernel's start, before the rows' loads, so they arrive while the row is read.

Exit: a block leaves once it has taken its last piece. Nothing reaches into it after that: every piece multicast
into a block is one it waits for, and releases are sent only for pieces some issuer waits on (``u + wstages <
uses``), which that issuer waits for before it issues, so before it exits — the last ``wstages`` pieces are not
released at all (CUTLASS's ``producer_tail`` solves the same problem with extra waits). The blocks of a cluster
only stay within ``wstages - 1`` pieces of each other in the output phase; a block past the last row (the grid is a
multiple of ``k``) masks its loads and stores but takes every piece like the others.

Persistent plans (``persist``): every block of the grid loops over the same number of rows (the last ones masked),
and the ring runs on across them: use ``g = row * uses + u`` of the ring is piece ``u`` of row ``row``, issued by
rank ``u % k`` into stage ``u % wstages`` (``wstages`` is a power of two dividing ``uses``, so both stay static);
phases and the "is anyone waiting" tests are run-time. The ring's stages are reserved before the next row's
prefetch slots are fitted (``norm_common.plan_rows``).
"""

from __future__ import annotations

import dataclasses

import flydsl.expr as fx
from flydsl.compiler.ast_rewriter import ASTRewriter

__all__ = ["multicast_plan", "ring_bytes", "WeightRing", "PERSIST_STAGES"]

WARP = 32


PERSIST_STAGES = 4  # persistent plans: the ring's default depth (the rest of the shared memory prefetches rows)
# SMs that clusters of 4 or more blocks fill at one block per SM: the H100/H200's GPCs hold 16 or 18 SMs, so 128 of
# the 132 (docs/kernels.md, the column-slice plans); a persistent grid wider than that would run its last clusters
# after the others
CLUSTER4_SMS = 128


def _applies(plan, k: int, tensors: int, elem_bytes: int, clusters: bool) -> bool:
    if k < 1 or not clusters or tensors == 0 or k & (k - 1) or k > 8:
        return False
    if plan.rows != 1 or plan.iters != 1 or plan.cluster > 1 or plan.ragged:
        return False
    return plan.vec * elem_bytes == 16


def _stages(plan, k: int, stages: int, tensors: int, elem_bytes: int, budget: int) -> int:
    piece = plan.threads * plan.vec * elem_bytes
    uses = tensors * plan.chunks * plan.vecs
    if plan.persist or stages < 0:  # the ring cycles over the same pieces row after row: a power of two dividing them
        want = stages if stages > 0 else PERSIST_STAGES
        stages = 1 << max(0, want.bit_length() - 1)
        while uses % stages or stages * piece + plan.staging_bytes(elem_bytes) > budget * max(1, plan.persist):
            stages //= 2  # (a persistent plan without a prefetch: as many as fit)
        return stages
    fit = (budget - plan.staging_bytes(elem_bytes)) // piece  # beside the staging
    return min(stages or fit, fit, -(-uses // k) * k) // k * k


def ring_bytes(plan, k: int, stages: int, tensors: int, elem_bytes: int) -> int:
    """The shared bytes the ring of a persistent version of ``plan`` (not yet persistent) would take."""
    if not _applies(plan, k, tensors, elem_bytes, True):
        return 0
    return _stages(plan, k, stages or -1, tensors, elem_bytes, 1 << 30) * plan.threads * plan.vec * elem_bytes


def multicast_plan(plan, k: int, stages: int, tensors: int, elem_bytes: int, budget: int, clusters: bool = True):
    """``plan`` with its ``tensors`` weights multicast across clusters of ``k`` blocks through ``stages`` shared
    stages (0: as many as fit ``budget`` bytes beside the plan's staging, a multiple of ``k``, at most what the
    row uses; persistent plans: :data:`PERSIST_STAGES`, a power of two that divides the pieces of a row);
    ``k = 1``: the same ring filled by each block for itself (no cluster: the measurement of what the multicast
    changes). ``plan`` unchanged where it cannot: no clusters on the target, rows of several blocks or several
    rows per block, ragged rows or accesses narrower than 16 bytes (a bulk copy moves 16-byte multiples from
    16-byte aligned addresses), or fewer than ``k`` stages fit."""
    if not _applies(plan, k, tensors, elem_bytes, clusters):
        return plan
    stages = _stages(plan, k, stages, tensors, elem_bytes, budget)
    if stages < k or stages <= tensors:  # (a vector's pieces are refilled together: at least one more stage)
        return plan
    sms = min(plan.sms, CLUSTER4_SMS) if plan.persist and k >= 4 else plan.sms
    return dataclasses.replace(plan, mcast=k, wstages=stages, wtensors=tensors, sms=sms)


class WeightRing:
    """One block's end of the pipeline: built at the kernel's start (mbarriers, one cluster barrier, the first
    pieces issued); :meth:`take` gives this thread's vector of a weight's piece, :meth:`release` frees it."""

    def __init__(self, plan, dtype, staging, weights, rows=None):
        p = self.plan = plan
        self.dtype, self.weights = dtype, weights
        self.piece = p.threads * p.vec  # elements
        self.uses = p.wtensors * p.chunks * p.vecs
        self.ring = staging + (p.slots + p.weights * p.chunks) * p.rows * p.chunk_cols
        self.tid = fx.thread_idx.x
        self.rank = fx.nvvm.cluster_ctarank()
        self.full = fx.alloc_shared(fx.Int64, p.wstages, align=8)
        self.empty = fx.alloc_shared(fx.Int64, p.wstages, align=8)
        # persistent plans: every block of the grid takes ``iters`` rows (the last ones masked past ``rows``), and
        # the ring runs on over them (``row``: the iteration, set by the row loop; piece ``u`` of it is use
        # ``row * uses + u``); else one row, ``row = 0``
        self.iters = (rows + fx.grid_dim.x - 1) // fx.grid_dim.x if p.persist else 1
        self.total = self.iters * self.uses
        self.row = 0
        _setup(self)

    def use(self, k: int, c: int, v: int) -> int:
        """The pipeline index of vector ``v`` of chunk ``c`` of weight ``k``."""
        return (c * self.plan.vecs + v) * self.plan.wtensors + k

    def source(self, u: int):
        """The global address of piece ``u`` (of any row)."""
        p = self.plan
        u = u % self.uses
        k, cv = u % p.wtensors, u // p.wtensors
        c, v = cv // p.vecs, cv % p.vecs
        w = getattr(self.weights[k], "iterator", self.weights[k])
        return w + (c * p.chunk_cols + v * self.piece)

    def store(self, frag, t, c: int, v: int, values) -> None:
        """Write this thread's vector ``v`` of chunk ``c`` of ``frag``'s row of ``t`` (masked past the last row):
        one vector at a time, so the output phase holds one vector of results, not a chunk."""
        p = self.plan
        it = getattr(t, "iterator", t)
        col = c * p.chunk_cols + v * self.piece
        dst = it + frag.offset + col + self.tid * p.vec
        dst.store(values.to(self.dtype), align=p.vec * self.dtype.width // 8, cache=p.cache or None,
                  mask=frag.rows_left > 0)  # fmt: skip

    def take(self, k: int, c: int, v: int):
        """This thread's ``vec`` values (of the weights' type) of vector ``v`` of chunk ``c`` of weight ``k``. Release
        the piece (:meth:`release`) only once the values have been *used* (e.g. after the store of what they
        computed): ptxas does not make the release arrive wait for the shared load's data (the load's scoreboard),
        and a stage refilled before the load read it would give the load the next piece's values."""
        return _take(self, self.use(k, c, v))

    def release(self, k: int, c: int, v: int) -> None:
        """This warp is done with vector ``v`` of chunk ``c`` of weight ``k`` (see :meth:`take`)."""
        _release(self, self.use(k, c, v))


def _issue(ring: WeightRing, u: int, g=None):
    """Thread 0 of every block: arm this block's full barrier for piece ``u`` (use ``g`` of the ring, run-time in
    persistent plans; else ``u``); the issuing block's thread 0 then waits until the stage is free (every warp of
    the cluster released use ``g - stages``) and multicasts it. Stage and issuer depend on ``u`` only (``stages``
    and the cluster size divide the pieces of a row in persistent plans)."""
    p = ring.plan
    s = u % p.wstages
    nbytes = ring.piece * (ring.dtype.width // 8)
    if ring.tid == 0:
        fx.nvvm.mbarrier_arrive_expect_tx(ring.full + s, nbytes)
        if ring.rank == u % p.mcast:
            if fx.const_expr(g is None):
                if fx.const_expr(u >= p.wstages):
                    fx.nvvm.mbarrier_wait(ring.empty + s, (u // p.wstages - 1) % 2)
            else:
                if g >= p.wstages:
                    fx.nvvm.mbarrier_wait(ring.empty + s, (g // p.wstages - 1) % 2)
            mask = (1 << p.mcast) - 1 if p.mcast > 1 else None  # k = 1: a plain bulk copy into this block
            dst = ring.ring + s * ring.piece
            fx.nvvm.bulk_copy_g2s(dst, ring.source(u), nbytes, ring.full + s, multicast_mask=mask)


def _setup(ring: WeightRing):
    p = ring.plan
    if ring.tid == 0:
        for s in fx.range_constexpr(p.wstages):
            fx.nvvm.mbarrier_init(ring.full + s, 1)
            fx.nvvm.mbarrier_init(ring.empty + s, p.mcast * (p.block_threads // WARP))
        fx.nvvm.fence_mbarrier_init()
    # every block's barriers exist before a peer multicasts into it or arrives on them (no memory to release)
    if fx.const_expr(p.mcast > 1):
        fx.nvvm.cluster_arrive_relaxed(aligned=True)
        fx.nvvm.cluster_wait(aligned=True)
    else:
        fx.barrier()
    for u in fx.range_constexpr(min(p.wstages, ring.uses)):
        _issue(ring, u)


def _take(ring: WeightRing, u: int):
    p = ring.plan
    S, lag = p.wstages, p.wtensors  # a vector's pieces are released together, after its output
    s = u % S
    nxt = u + S - lag  # the piece whose stage piece u - lag (the previous vector's) frees
    if fx.const_expr(not p.persist):
        if fx.const_expr(u >= lag and nxt < ring.uses):
            _issue(ring, nxt)
        parity = (u // S) % 2
    else:  # use g of the ring (run-time): stages divide a row's pieces, so the stage is u's
        g = ring.row * ring.uses + u
        if (g >= lag) & (g + (S - lag) < ring.total):
            _issue(ring, nxt % ring.uses, g + (S - lag))
        parity = (ring.row * (ring.uses // S) + u // S) % 2
    fx.nvvm.mbarrier_wait(ring.full + s, parity)
    return (ring.ring + (s * ring.piece + ring.tid * p.vec)).load(vec_width=p.vec)


def _release(ring: WeightRing, u: int):
    """Release use ``u`` (this row's) when some issuer waits for it (see the module docstring): not the last
    ``stages`` uses of a block."""
    p = ring.plan
    s = u % p.wstages
    if fx.const_expr(not p.persist):
        if fx.const_expr(u + p.wstages < ring.uses):
            _arrive(ring, s)
    else:
        if ring.row * ring.uses + (u + p.wstages) < ring.total:
            _arrive(ring, s)


def _arrive(ring: WeightRing, s: int):
    fx.nvvm.syncwarp()
    if ring.tid % WARP == 0:
        if fx.const_expr(ring.plan.mcast > 1):
            fx.nvvm.mbarrier_arrive(ring.empty + s, peer_cta_rank_in_cluster=s % ring.plan.mcast)
        else:
            fx.nvvm.mbarrier_arrive(ring.empty + s)


_issue = ASTRewriter.transform(_issue)
_setup = ASTRewriter.transform(_setup)
_take = ASTRewriter.transform(_take)
_release = ASTRewriter.transform(_release)
_arrive = ASTRewriter.transform(_arrive)
