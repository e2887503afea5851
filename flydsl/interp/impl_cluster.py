"""The thread block cluster on the interpreter: ``nvvm.mapa`` (another block's shared memory), ``nvvm.st_async``
(a store there completing on that block's mbarrier), ``nvvm.mbarrier_arrive_cluster`` (an arrive on another
block's mbarrier) and the cluster barrier (``nvvm.cluster_arrive`` /
``nvvm.cluster_wait``).

The blocks of a cluster run in one batch (flydsl/interp/kernel.py), so a shared-cluster pointer
(``rank << 32 | offset``, see :mod:`.access`) reads and writes the arena of the rank's block directly.

Cluster barrier (PTX ISA ``barrier.cluster``): each thread arrives once per phase and then waits; the
wait completes when every thread of every block of the cluster has arrived in that phase. State per
thread: how many times it arrived and how many times it passed a wait. Faults (each undefined or a hang
on the GPU): arriving twice without a wait in between, waiting without having arrived, waiting while a
thread of the cluster has not arrived yet (lanes run in lock-step, so this is a barrier some threads of
the cluster skip or reach in another branch first), an ``.aligned`` form reached by part of a warp, a
rank outside the cluster. Memory ordering needs nothing more: every access completes when it is issued.
"""

from __future__ import annotations

import numpy as np

from ..ir import Op, VectorType
from .access import CLUSTER_RANK_SHIFT, SHARED_CLUSTER, cluster_dims, cluster_peer, store
from .machine import Compiler, impl, value_dtype
from .tasks import get_barrier

__all__ = ["check_whole_warps"]


def _active(lanes) -> np.ndarray:
    m = lanes.mask
    return lanes.arange() if m is None else np.flatnonzero(m)


@impl("nvvm.mapa")
def mapa(op: Op, cc: Compiler):
    """``mapa.shared::cluster``: the same shared offset in the block of rank ``rank`` of the cluster."""
    p, rk = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])

    def step(env, lanes):
        rank = np.asarray(env[rk]).astype(np.int64)
        cx, cy, cz = cluster_dims(lanes.program)
        n = cx * cy * cz
        act = _active(lanes)
        rv = np.broadcast_to(rank.reshape(-1), (lanes.T,))[act]
        bad = (rv < 0) | (rv >= n)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise lanes.fault(
                op, f"mapa to block rank {int(rv[i])}, but the cluster has {n} block(s) (ranks 0-{n - 1})", int(act[i])
            )
        env[r] = (rank << CLUSTER_RANK_SHIFT) | np.asarray(env[p], np.int64)

    return step


@impl("nvvm.st_async")
def st_async(op: Op, cc: Compiler):
    """``st.async``: each active lane writes its value into the shared memory of a block of its cluster (like
    a store through a ``mapa`` pointer), then completes the value's bytes on the mbarrier its third operand
    names in that block (the barrier must be initialized; bytes beyond the phase's expected count are the
    next phase's, as on the GPU where a complete_tx may precede the expect_tx it matches)."""
    v, p, b = cc.slots_of(op.operands)
    t = op.operands[0].type
    n, elem = (t.numel, t.elem) if isinstance(t, VectorType) else (0, t)
    dt = value_dtype(elem)
    nbytes = max(n, 1) * dt.itemsize

    def step(env, lanes):
        store(lanes, op, SHARED_CLUSTER, env[p], n, dt, str(elem), env[v], None, nbytes)  # aligned to its size
        act = _active(lanes)
        bars = np.broadcast_to(np.asarray(env[b], np.int64).reshape(-1), (lanes.T,))[act]
        rank, off = bars >> CLUSTER_RANK_SHIFT, bars & ((1 << CLUSTER_RANK_SHIFT) - 1)
        peer = cluster_peer(lanes, act // lanes.tpb, rank)
        for blk, o in zip(peer.tolist(), off.tolist()):
            get_barrier(lanes, op, int(blk), int(o)).complete_tx(nbytes)
        if lanes.sched is not None:
            lanes.sched.bump()

    return step


@impl("nvvm.mbarrier_arrive_cluster")
def mbarrier_arrive_cluster(op: Op, cc: Compiler):
    """``mbarrier.arrive.shared::cluster``: each active lane arrives once on the mbarrier its ``mapa`` pointer
    names in a block of its cluster (the barrier must be initialized; more arrivals than its phase expects is a
    fault, as for a local arrive)."""
    (b,) = cc.slots_of(op.operands)

    def step(env, lanes):
        act = _active(lanes)
        bars = np.broadcast_to(np.asarray(env[b], np.int64).reshape(-1), (lanes.T,))[act]
        rank, off = bars >> CLUSTER_RANK_SHIFT, bars & ((1 << CLUSTER_RANK_SHIFT) - 1)
        peer = cluster_peer(lanes, act // lanes.tpb, rank)
        groups: dict = {}  # the lanes arriving on each barrier, arriving together (as a local arrive's do)
        for i, (blk, o) in enumerate(zip(peer.tolist(), off.tolist())):
            groups.setdefault((blk, o), []).append(i)
        for (blk, o), idx in groups.items():
            ln = int(act[idx[0]])
            if o % 8:
                raise lanes.fault(op, f"mbarrier (i64) at shared offset 0x{o:x} is not 8-byte aligned", ln)
            err = get_barrier(lanes, op, int(blk), int(o)).arrive(len(idx))
            if err:
                raise lanes.fault(op, f"the mbarrier at shared offset 0x{o:x} of cluster rank {int(rank[idx[0]])}: "
                                  f"{err} (check the count given to mbarrier_init and which threads arrive)",
                                  ln)  # fmt: skip
        if lanes.sched is not None:
            lanes.sched.bump()

    return step


def _late(lanes, lane_root, arr, act, need) -> str:
    """What a cluster barrier's waiting warp waits for (a deadlock report)."""
    late = np.flatnonzero((lane_root == lane_root[act[0]]) & (arr < need[0]))
    if late.shape[0] == 0:
        return "(ready)"
    b, t = lanes.coords(int(late[0]))
    return (
        f"at the cluster barrier for {late.shape[0]} thread(s) of the cluster to arrive (thread {t} of block {b} first)"
    )


def _state(lanes) -> tuple[np.ndarray, np.ndarray]:
    """(arrivals, passed waits) per lane of the batch."""
    st = lanes.cache.get("cluster_barrier")
    if st is None:
        st = lanes.cache["cluster_barrier"] = (np.zeros(lanes.T, np.int64), np.zeros(lanes.T, np.int64))
    return st


def check_whole_warps(op: Op, lanes, what: str) -> None:
    """An ``.aligned`` form (or ``bar.warp.sync``): every thread of each warp that reaches it (whole warps or none)."""
    m = lanes.mask
    if m is None:
        return
    warp = lanes.lane_block() * lanes.tpb + lanes.tid() // lanes.warp_size * lanes.warp_size
    size = np.bincount(warp, minlength=lanes.T)
    on = np.bincount(warp, weights=m, minlength=lanes.T)
    partial = (on > 0) & (on < size)
    if partial.any():
        w = int(np.flatnonzero(partial)[0])
        lane = int(np.flatnonzero(m & (warp == w))[0])
        raise lanes.fault(
            op,
            f"{what} reached by only {int(on[w])} of the {int(size[w])} threads of a warp: it must be executed by the "
            "whole warp (not inside a branch that depends on the lane)",
            lane,
        )


@impl("nvvm.cluster_arrive")
def cluster_arrive(op: Op, cc: Compiler):
    """``barrier.cluster.arrive``: each active thread arrives in its current phase."""
    aligned = bool(op.attrs.get("aligned"))

    def step(env, lanes):
        if aligned:
            check_whole_warps(op, lanes, "cluster_arrive (.aligned)")
        arr, passed = _state(lanes)
        act = _active(lanes)
        twice = arr[act] != passed[act]
        if twice.any():
            raise lanes.fault(
                op,
                "a thread arrives at the cluster barrier a second time without a cluster_wait in between "
                "(undefined on the GPU)",
                int(act[np.flatnonzero(twice)[0]]),
            )
        arr[act] += 1
        if lanes.sched is not None:
            lanes.sched.bump()

    return step


@impl("nvvm.cluster_wait")
def cluster_wait(op: Op, cc: Compiler):
    """``barrier.cluster.wait``: passes once every thread of the cluster arrived in the waiter's phase."""
    aligned = bool(op.attrs.get("aligned"))

    def step(env, lanes):
        if aligned:
            check_whole_warps(op, lanes, "cluster_wait (.aligned)")
        arr, passed = _state(lanes)
        act = _active(lanes)
        if act.shape[0] == 0:
            return
        early = arr[act] == passed[act]
        if early.any():
            raise lanes.fault(
                op,
                "a thread waits at the cluster barrier without having arrived (call cluster_arrive first): on the "
                "GPU it waits forever",
                int(act[np.flatnonzero(early)[0]]),
            )
        root = cluster_peer(lanes, np.arange(lanes.nb, dtype=np.int64), np.zeros(lanes.nb, np.int64))
        lane_root = root[lanes.lane_block()]
        need = passed[act] + 1

        def shortfall():
            least = np.full(lanes.nb, np.iinfo(np.int64).max, np.int64)
            np.minimum.at(least, lane_root, arr)  # the fewest arrivals of any thread of each cluster
            return least[lane_root[act]] < need

        if lanes.sched is not None:  # warp by warp: wait for the cluster's other warps to arrive
            lanes.sched.wait_until(lambda: not shortfall().any(), op, lambda: _late(lanes, lane_root, arr, act, need))
        short = shortfall()
        if short.any():
            i = int(np.flatnonzero(short)[0])
            waiter = int(act[i])
            late = np.flatnonzero((lane_root == lane_root[waiter]) & (arr < need[i]))
            cx, cy, cz = cluster_dims(lanes.program)
            b_late, t_late = lanes.coords(int(late[0]))
            members = lanes.tpb * cx * cy * cz
            raise lanes.fault(
                op,
                f"cluster barrier: this thread waits, but thread {t_late} of block {b_late} of its cluster has not "
                f"arrived ({members - late.shape[0]} of {members} threads did); every thread of the cluster must "
                "arrive before any can pass, so on the GPU this hangs (a block or thread that skips the barrier, "
                "or one that reaches it in another branch)",
                waiter,
            )
        passed[act] += 1
        if lanes.sched is not None:
            lanes.sched.bump()

    return step
