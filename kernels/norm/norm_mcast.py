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
* *empty* mbarrier per stage in its issuing block, ``k x warps`` arrivals: after a warp has read its vectors of
  piece ``u`` (``syncwarp``, then lane 0 arrives remotely, ``mbarrier.arrive.shared::cluster``);
* the issuer of piece ``u + wstages - 1`` waits, when its block takes piece ``u``, for every warp of the cluster to
  have released piece ``u - 1`` (the previous occupant of that stage), then issues it. The first ``wstages``
  pieces are issued at the kernel's start, before the rows' loads, so they arrive while the row is read.

Exit: a block leaves once it has taken its last piece. Nothing reaches into it after that: every piece multicast
into a block is one it waits for, and releases are sent only for pieces some issuer waits on (``u + wstages <
uses``), which that issuer waits for before it issues, so before it exits — the last ``wstages`` pieces are not
released at all (CUTLASS's ``producer_tail`` solves the same problem with extra waits). The blocks of a cluster
only stay within ``wstages - 1`` pieces of each other in the output phase; a block past the last row (the grid is a
multiple of ``k``) masks its loads and stores but takes every piece like the others.
"""

from __future__ import annotations

import dataclasses

import flydsl.expr as fx
from flydsl.compiler.ast_rewriter import ASTRewriter

__all__ = ["multicast_plan", "WeightRing"]

WARP = 32


def multicast_plan(plan, k: int, stages: int, tensors: int, elem_bytes: int, budget: int, clusters: bool = True):
    """``plan`` with its ``tensors`` weights multicast across clusters of ``k`` blocks through ``stages`` shared
    stages (0: as many as fit ``budget`` bytes beside the plan's staging, a multiple of ``k``, at most what the
    row uses); ``plan`` unchanged where it cannot: no clusters on the target, ``k < 2``, rows of several blocks or
    several rows per block, persistent plans, ragged rows or accesses narrower than 16 bytes (a bulk copy moves
    16-byte multiples from 16-byte aligned addresses), or fewer than ``k`` stages fit."""
    if k < 2 or not clusters or tensors == 0 or k & (k - 1) or k > 8:
        return plan
    if plan.rows != 1 or plan.iters != 1 or plan.persist or plan.cluster > 1 or plan.ragged:
        return plan
    if plan.vec * elem_bytes != 16:
        return plan
    piece = plan.threads * plan.vec * elem_bytes
    uses = tensors * plan.chunks * plan.vecs
    most = -(-uses // k) * k
    if stages <= 0:
        stages = (budget - plan.staging_bytes(elem_bytes)) // piece // k * k
    stages = min(stages - stages % k, most)
    if stages < k:
        return plan
    return dataclasses.replace(plan, mcast=k, wstages=stages, wtensors=tensors)


class WeightRing:
    """One block's end of the pipeline: built at the kernel's start (mbarriers, one cluster barrier, the first
    pieces issued); :meth:`take` gives this thread's vector of a weight's piece and releases it."""

    def __init__(self, plan, dtype, staging, weights):
        p = self.plan = plan
        self.dtype, self.weights = dtype, weights
        self.piece = p.threads * p.vec  # elements
        self.uses = p.wtensors * p.chunks * p.vecs
        self.ring = staging + (p.slots + p.weights * p.chunks) * p.rows * p.chunk_cols
        self.tid = fx.thread_idx.x
        self.rank = fx.nvvm.cluster_ctarank()
        self.full = fx.alloc_shared(fx.Int64, p.wstages, align=8)
        self.empty = fx.alloc_shared(fx.Int64, p.wstages, align=8)
        _setup(self)

    def use(self, k: int, c: int, v: int) -> int:
        """The pipeline index of vector ``v`` of chunk ``c`` of weight ``k``."""
        return (c * self.plan.vecs + v) * self.plan.wtensors + k

    def source(self, u: int):
        """The global address of piece ``u``."""
        p = self.plan
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
        """This thread's ``vec`` values (of the weights' type) of vector ``v`` of chunk ``c`` of weight ``k``."""
        return _take(self, self.use(k, c, v))


def _issue(ring: WeightRing, u: int):
    """Thread 0 of every block: arm this block's full barrier for piece ``u``; the issuing block's thread 0 then
    waits until the stage is free (every warp of the cluster released piece ``u - stages``) and multicasts it."""
    p = ring.plan
    s = u % p.wstages
    nbytes = ring.piece * (ring.dtype.width // 8)
    if ring.tid == 0:
        fx.nvvm.mbarrier_arrive_expect_tx(ring.full + s, nbytes)
        if ring.rank == u % p.mcast:
            if fx.const_expr(u >= p.wstages):
                fx.nvvm.mbarrier_wait(ring.empty + s, (u // p.wstages - 1) % 2)
            fx.nvvm.bulk_copy_g2s(
                ring.ring + s * ring.piece, ring.source(u), nbytes, ring.full + s, multicast_mask=(1 << p.mcast) - 1
            )


def _setup(ring: WeightRing):
    p = ring.plan
    if ring.tid == 0:
        for s in fx.range_constexpr(p.wstages):
            fx.nvvm.mbarrier_init(ring.full + s, 1)
            fx.nvvm.mbarrier_init(ring.empty + s, p.mcast * (p.block_threads // WARP))
        fx.nvvm.fence_mbarrier_init()
    # every block's barriers exist before a peer multicasts into it or arrives on them (no memory to release)
    fx.nvvm.cluster_arrive_relaxed(aligned=True)
    fx.nvvm.cluster_wait(aligned=True)
    for u in fx.range_constexpr(min(p.wstages, ring.uses)):
        _issue(ring, u)


def _take(ring: WeightRing, u: int):
    p = ring.plan
    s = u % p.wstages
    nxt = u + p.wstages - 1  # the piece whose stage piece u - 1 frees
    if fx.const_expr(u >= 1 and nxt < ring.uses):
        _issue(ring, nxt)
    fx.nvvm.mbarrier_wait(ring.full + s, (u // p.wstages) % 2)
    vals = (ring.ring + (s * ring.piece + ring.tid * p.vec)).load(vec_width=p.vec)
    if fx.const_expr(u + p.wstages < ring.uses):  # some issuer waits for this release (see the module docstring)
        fx.nvvm.syncwarp()
        if ring.tid % WARP == 0:
            fx.nvvm.mbarrier_arrive(ring.empty + s, peer_cta_rank_in_cluster=s % p.mcast)
    return vals


_issue = ASTRewriter.transform(_issue)
_setup = ASTRewriter.transform(_setup)
_take = ASTRewriter.transform(_take)
