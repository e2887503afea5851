"""Hopper ``nvvm`` ops on the interpreter: mbarriers, fences, elect, setmaxnreg, named barriers, cluster
ids — and, through :mod:`.impl_tma` and :mod:`.impl_wgmma`, TMA/bulk copies and warpgroup MMA.

mbarrier state follows the PTX ISA exactly (:class:`~flydsl.interp.tasks.MBarrier`): arrivals and
transaction bytes per phase, the phase parity a ``try_wait.parity`` tests. Each active thread of an
arrive op arrives once (in linear thread order); more arrivals than the phase expects is a fault
(undefined on the GPU), as is using a barrier before ``mbarrier_init``. Waits suspend the warp
(kernels with waits run warp by warp, see :mod:`.tasks`); a wait that can never complete is reported
as a deadlock naming the barrier and the line.

Fences are no-ops here (one warp runs at a time and every copy completes when it is issued, so all
accesses are already ordered); ``setmaxnreg`` only checks that whole warps execute it.
"""

from __future__ import annotations

import numpy as np

from ..ir import Op
from . import impl_cluster, impl_tma, impl_wgmma  # noqa: F401 - register the cluster, TMA and wgmma impls
from .access import SHARED, cluster_dims, resolve
from .impl_gpu import _block_id
from .machine import Compiler, impl
from .tasks import MBarrier, active_lanes, barrier_table, describe_barrier, get_barrier

__all__ = ["active_lanes", "barrier_refs", "get_barrier"]


def barrier_refs(lanes, op, p) -> list[tuple[int, int, np.ndarray]]:
    """``[(block in batch, shared offset, lanes)]`` of the mbarriers the active lanes name, in order of
    first use (offsets checked: in bounds, 8-byte aligned)."""
    act = active_lanes(lanes)
    if act.shape[0] == 0:
        return []
    offs = np.broadcast_to(np.asarray(p, np.int64).reshape(-1), (lanes.T,))[act]
    resolve(lanes, op, SHARED, offs, act, 8, "mbarrier (i64)", "access")
    key = (act // lanes.tpb) * (1 << 32) + offs
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    out = []
    for g in np.argsort(first, kind="stable").tolist():
        sel = act[inv == g]
        out.append((int(sel[0]) // lanes.tpb, int(offs[first[g]]), sel))
    return out


def _values(env_value, lanes, sel: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.asarray(env_value).reshape(-1), (lanes.T,))[sel]


def _bump(lanes) -> None:
    if lanes.sched is not None:
        lanes.sched.bump()


@impl("nvvm.mbarrier_init")
def mbarrier_init(op: Op, cc: Compiler):
    """``mbarrier.init``: phase 0, ``count`` pending arrivals, no transaction bytes."""
    b, c = cc.slots_of(op.operands)

    def step(env, lanes):
        for blk, off, sel in barrier_refs(lanes, op, env[b]):
            n = int(_values(env[c], lanes, sel)[-1])
            if not 1 <= n < 1 << 20:
                raise lanes.fault(op, f"mbarrier_init count must be in [1, 2^20), got {n}", int(sel[-1]))
            barrier_table(lanes)[(blk, off)] = MBarrier(n, op.loc)
        _bump(lanes)

    return step


def _arrive_step(op: Op, cc: Compiler, with_tx: bool, arrive: bool):
    b = cc.slot(op.operands[0])
    x = cc.slot(op.operands[1]) if len(op.operands) > 1 else None

    def step(env, lanes):
        for blk, off, sel in barrier_refs(lanes, op, env[b]):
            bar = get_barrier(lanes, op, blk, off)
            vals = _values(env[x], lanes, sel).astype(np.int64) if x is not None else None
            if with_tx:
                bar.expect_tx(int(vals.sum()))
            if arrive:
                n = int(vals.sum()) if (vals is not None and not with_tx) else sel.shape[0]
                err = bar.arrive(n)
                if err:
                    raise lanes.fault(op, f"{describe_barrier(lanes, off)}: {err} (check the count given to "
                                      "mbarrier_init and which threads arrive)", int(sel[0]))  # fmt: skip
        _bump(lanes)

    return step


@impl("nvvm.mbarrier_arrive")
def mbarrier_arrive(op: Op, cc: Compiler):
    """``mbarrier.arrive``: each active thread arrives ``count`` (default 1) times."""
    return _arrive_step(op, cc, with_tx=False, arrive=True)


@impl("nvvm.mbarrier_arrive_expect_tx")
def mbarrier_arrive_expect_tx(op: Op, cc: Compiler):
    """``mbarrier.arrive.expect_tx``: each active thread adds its bytes to the transaction count, then arrives."""
    return _arrive_step(op, cc, with_tx=True, arrive=True)


@impl("nvvm.mbarrier_expect_tx")
def mbarrier_expect_tx(op: Op, cc: Compiler):
    """``mbarrier.expect_tx``: add transaction bytes without arriving."""
    return _arrive_step(op, cc, with_tx=True, arrive=False)


def _wait_parts(lanes, op, bv, pv):
    """``(ready(), describe())`` for the active lanes waiting on barrier ``bv`` for parity ``pv``."""
    waits = []
    for blk, off, sel in barrier_refs(lanes, op, bv):
        bar = get_barrier(lanes, op, blk, off)
        for par in np.unique(_values(pv, lanes, sel) & 1).tolist():
            waits.append((bar, int(par), off))

    def ready() -> bool:
        return all(bar.done(par) for bar, par, _ in waits)

    def describe() -> str:
        parts = [
            f"for the phase of parity {par} of {describe_barrier(lanes, off)} to complete; {bar.state()}"
            for bar, par, off in waits
            if not bar.done(par)
        ]
        return "; ".join(parts) or "(ready)"

    return ready, describe


@impl("nvvm.mbarrier_try_wait")
def mbarrier_try_wait(op: Op, cc: Compiler):
    """``mbarrier.try_wait.parity``: true per lane once that phase completed (the warp may be suspended
    until then; when nothing else can run it returns false once per change)."""
    b, p = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])

    def step(env, lanes):
        ready, describe = _wait_parts(lanes, op, env[b], env[p])
        if lanes.sched is not None:
            lanes.sched.wait_until(ready, op, describe, can_timeout=True)
        out = np.zeros(lanes.T, np.bool_)
        for blk, off, sel in barrier_refs(lanes, op, env[b]):
            bar = barrier_table(lanes)[(blk, off)]
            out[sel] = (bar.parity != (_values(env[p], lanes, sel) & 1)) if bar is not None else False
        env[r] = out

    return step


@impl("nvvm.mbarrier_wait")
def mbarrier_wait(op: Op, cc: Compiler):
    """Block until the phase of the given parity completed (``try_wait.parity`` in a loop on the GPU)."""
    b, p = cc.slots_of(op.operands)

    def step(env, lanes):
        ready, describe = _wait_parts(lanes, op, env[b], env[p])
        if lanes.sched is not None:
            lanes.sched.wait_until(ready, op, describe)
        elif not ready():
            raise lanes.fault(op, f"deadlock: this wait can never complete: it waits {describe()}", None)

    return step


def _impls(*names):
    def deco(fn):
        for n in names:
            impl(n)(fn)
        return fn

    return deco


@_impls("nvvm.fence_proxy_async", "nvvm.fence_mbarrier_init", "nvvm.tma_prefetch_desc", "nvvm.bulk_commit",
        "nvvm.bulk_wait", "nvvm.wgmma_fence", "nvvm.wgmma_commit", "nvvm.griddep_wait",
        "nvvm.griddep_launch_dependents", "nvvm.bulk_prefetch_l2")  # fmt: skip
def no_op(op: Op, cc: Compiler):
    """Ordering and grouping ops: nothing to do (one warp runs at a time; copies and MMAs complete when issued;
    a launch runs after the previous one has completed, so a grid dependency is always met; a prefetch into
    L2 changes no value)."""
    return None


@impl("nvvm.elect_sync")
def elect_sync(op: Op, cc: Compiler):
    """``elect.sync``: true in the lowest active lane of each warp."""
    r = cc.slot(op.results[0])

    def step(env, lanes):
        act = active_lanes(lanes)
        out = np.zeros(lanes.T, np.bool_)
        if act.shape[0]:
            warp = (act // lanes.tpb) * lanes.tpb + (act % lanes.tpb) // lanes.warp_size * lanes.warp_size
            _, first = np.unique(warp, return_index=True)
            out[act[first]] = True
        env[r] = out

    return step


@impl("nvvm.setmaxnreg")
def setmaxnreg(op: Op, cc: Compiler):
    """``setmaxnreg``: registers are not modelled; the whole warp must execute it (``.sync.aligned``)."""

    def step(env, lanes):
        if lanes.sched is not None:
            lanes.sched.check_whole_warp(op, lanes, "setmaxnreg")
            return
        m = lanes.mask
        if m is None:
            return
        ws = lanes.warp_size
        pad = (-lanes.tpb) % ws
        mm = np.pad(m.reshape(lanes.nb, lanes.tpb), ((0, 0), (0, pad))).reshape(lanes.nb, -1, ws)
        partial = mm.any(axis=2) & ~mm.all(axis=2)
        if partial.any():
            b, w = (int(x[0]) for x in np.nonzero(partial))
            raise lanes.fault(op, f"setmaxnreg reached by only some threads of warp {w}: it must be executed by "
                              "the whole warp", b * lanes.tpb + w * ws)  # fmt: skip

    return step


@_impls("nvvm.barrier_sync", "nvvm.barrier_arrive")
def named_barrier(op: Op, cc: Compiler):
    """``bar.sync id, count`` / ``bar.arrive id, count``: a rendezvous of ``count`` threads (whole warps)."""
    i, c = cc.slots_of(op.operands)
    wait = op.defn.name == "nvvm.barrier_sync"

    def step(env, lanes):
        act = active_lanes(lanes)
        bid, cnt = _values(env[i], lanes, act), _values(env[c], lanes, act)
        if bid.shape[0] == 0:
            return
        if np.unique(bid).shape[0] != 1 or np.unique(cnt).shape[0] != 1:
            raise lanes.fault(op, "the barrier id and thread count must be the same in every thread", None)
        if not 0 <= int(bid[0]) < 16:
            raise lanes.fault(op, f"named barrier ids are 0-15, got {int(bid[0])}", None)
        lanes.sched.named_barrier(op, lanes, int(bid[0]), int(cnt[0]), wait)

    return step


_DIM = {"x": 0, "y": 1, "z": 2}


@_impls("nvvm.cluster_ctarank", "nvvm.cluster_id", "nvvm.cluster_ctaid", "nvvm.cluster_dim")
def cluster_sreg(op: Op, cc: Compiler):
    """Cluster special registers from the kernel's ``cluster_dims`` (1×1×1 without clusters)."""
    r = cc.slot(op.results[0])
    name = op.defn.name

    def step(env, lanes):
        cd = cluster_dims(lanes.program)
        if name == "nvvm.cluster_dim":
            env[r] = np.asarray(cd[_DIM[op.attrs["dimension"]]], np.int32)
            return
        ids = [np.asarray(_block_id(lanes, d)).astype(np.int64) for d in range(3)]
        if name == "nvvm.cluster_ctarank":
            x, y, z = (ids[d] % cd[d] for d in range(3))
            env[r] = (x + cd[0] * (y + cd[1] * z)).astype(np.int32)
            return
        d = _DIM[op.attrs["dimension"]]
        v = ids[d] // cd[d] if name == "nvvm.cluster_id" else ids[d] % cd[d]
        env[r] = v.astype(np.int32)

    return step
