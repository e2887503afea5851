"""Warps that wait on each other: mbarriers, named barriers, and warp-by-warp execution with deadlock
detection.

A kernel whose threads wait for other warps (``mbarrier_wait``/``try_wait``, named barriers — the
ops of :data:`flydsl.dialects.nvvm_sm90.TASK_OPS`) cannot run with every lane of a block in lock-step:
a producer warpgroup spinning on an "empty" barrier and a consumer warpgroup spinning on a "full" one
only make progress if each runs while the other waits. Such a kernel runs **one block at a time** (one
cluster at a time when its blocks reach each other: ``st_async``, cluster barriers), **warp by warp**: every
warp is a *task* (a Python thread holding the baton, so exactly one runs at a
time and the order is deterministic) that executes the kernel's compiled code with the block's
lanes, its active-lane mask restricted to its own 32 lanes. Lanes of one warp still run in
lock-step; warps interleave only at blocking points:

- a wait whose condition does not hold yet suspends the warp (condition recorded);
- the scheduler resumes, round-robin, the first suspended warp whose condition now holds;
- ``gpu.barrier`` / ``bar.sync`` are rendezvous: a warp waits until the expected threads of its block
  arrived (``gpu.barrier``: every warp of the block that has not exited); a cluster barrier's wait
  waits until every thread of the cluster arrived;
- a ``try_wait`` that would fail suspends like a wait, but when nothing else can run it returns
  false once per change of the world (so a polling loop that does other work still works), and a
  second false without any progress in between means the loop spins forever;
- when no warp can run and some are suspended, the kernel is **deadlocked**: an :class:`InterpError`
  lists every waiting warp, where it waits (the user's line), on which barrier (its shared-memory
  allocation) and the barrier's state — never a hang.

Barrier state lives in :class:`MBarrier` objects keyed by (block in batch, shared offset), in the
batch's ``lanes.cache`` (lock-step kernels that only arrive use the same model).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable

import numpy as np

from .access import _nearest_alloc
from .errors import InterpError, format_loc

__all__ = [
    "MBarrier", "Scheduler", "run_block_tasks", "barrier_table", "describe_barrier", "active_lanes", "get_barrier",
]  # fmt: skip


class MBarrier:
    """One mbarrier's state (PTX ISA): expected and pending arrivals, transaction bytes, completed phases."""

    __slots__ = ("expected", "pending", "tx", "phases", "init_loc")

    def __init__(self, count: int, loc=None):
        self.expected = count
        self.pending = count
        self.tx = 0
        self.phases = 0  # completed phases; the current phase's parity is phases & 1
        self.init_loc = loc

    @property
    def parity(self) -> int:
        return self.phases & 1

    def done(self, parity: int) -> bool:
        """``try_wait.parity``: the phase of this parity has completed (the current one has the other)."""
        return (self.phases & 1) != (parity & 1)

    def _settle(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phases += 1
            self.pending = self.expected

    def arrive(self, n: int) -> str | None:
        """``n`` arrivals; an error text when the phase expects fewer."""
        if n > self.pending:
            return f"{n} arrival(s) on a barrier whose current phase expects only {self.pending} more"
        self.pending -= n
        self._settle()
        return None

    def expect_tx(self, nbytes: int) -> None:
        self.tx += nbytes

    def complete_tx(self, nbytes: int) -> None:
        self.tx -= nbytes
        self._settle()

    def state(self) -> str:
        tx = f"{self.tx} transaction byte(s) still expected" if self.tx >= 0 else f"{-self.tx} byte(s) early"
        return (
            f"the barrier is in phase {self.phases} (parity {self.parity}) with {self.pending} of "
            f"{self.expected} arrival(s) pending and {tx}"
        )


def barrier_table(lanes) -> dict:
    """The batch's mbarriers: ``{(block in batch, shared offset): MBarrier}``."""
    t = lanes.cache.get("mbarriers")
    if t is None:
        t = lanes.cache["mbarriers"] = {}
    return t


def describe_barrier(lanes, off: int) -> str:
    """``mbarrier at shared offset 0x40 (element 2 of 'full', allocated at k.py:12)``."""
    allocs = lanes.program.shared_allocs + [lanes.dyn_region()]
    text = f"mbarrier at shared offset 0x{off:x}"
    rec = _nearest_alloc(allocs, off)
    if rec is not None and rec[1] <= off < rec[1] + rec[2]:
        name, start, _, loc = rec
        where = format_loc(loc)
        text += f" (element {(off - start) // 8} of {name}" + (f", allocated at {where}" if where else "") + ")"
    return text


class _Abort(BaseException):
    """Unwinds a suspended warp when the kernel stops (a fault or a deadlock elsewhere)."""


class _Task:
    __slots__ = ("idx", "lanes", "thread", "go", "state", "cond", "info", "can_timeout", "timed_out", "seen",
                 "error", "lo", "hi", "blk")  # fmt: skip

    def __init__(self, idx: int, lanes, lo: int, hi: int):
        self.idx, self.lanes, self.lo, self.hi = idx, lanes, lo, hi
        self.blk = lo // lanes.tpb  # the warp's block in the batch
        self.go = threading.Semaphore(0)
        self.state = "ready"
        self.cond: Callable[[], bool] | None = None  # what a blocked task waits for
        self.info: tuple | None = None  # (op, describe) of the wait, for a deadlock report
        self.can_timeout = False
        self.timed_out = False
        self.seen = -1
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None


class Scheduler:
    """Runs the warps of one block (or one cluster) as tasks (see the module docstring). ``lanes.sched`` points
    here."""

    def __init__(self, name: str):
        self.name = name
        self.tasks: list[_Task] = []
        self.current: _Task | None = None
        self.back = threading.Semaphore(0)
        self.aborting = False
        self.progress = 0  # bumped by every state change another warp could be waiting for
        self.bars: dict[tuple, list] = {}  # (block, named barrier id) -> [arrived threads, generation, expected]

    # -- called by ops, on a task's thread ---------------------------------------------------------------

    def wait_until(self, cond, op, describe, can_timeout: bool = False) -> bool:
        """Suspend the current warp until ``cond()`` holds; False when resumed because nothing else can
        run (``can_timeout``: a try_wait). ``describe()`` says what ``op`` waits for (deadlock reports)."""
        if cond():
            return True
        t = self._running()
        t.state, t.cond, t.info, t.can_timeout, t.timed_out = "blocked", cond, (op, describe), can_timeout, False
        self.back.release()
        t.go.acquire()
        if self.aborting:
            raise _Abort()
        return not t.timed_out

    def _running(self) -> _Task:
        """The task running now (the caller's: only the running task executes kernel code)."""
        t = self.current
        assert t is not None, "no task is running"
        return t

    def bump(self) -> None:
        self.progress += 1

    def warp_threads(self, lanes) -> int:
        t = self._running()
        return t.hi - t.lo

    def check_whole_warp(self, op, lanes, what: str) -> None:
        """``.aligned`` instructions: every thread of the warp executes them together."""
        t = self._running()
        m = lanes.mask
        if m is not None and not m[t.lo : t.hi].all():
            n = int(m[t.lo : t.hi].sum())
            raise lanes.fault(
                op,
                f"{what} reached by only {n} of the {t.hi - t.lo} threads of warp {t.idx}: it must be executed by "
                "the whole warp (not inside a branch that depends on the lane)",
                None,
            )

    def named_barrier(self, op, lanes, bid: int, count: int | None, wait: bool) -> None:
        """``bar.sync``/``bar.arrive`` on barrier ``bid`` expecting ``count`` threads (None: every live warp)."""
        self.check_whole_warp(op, lanes, "a barrier")
        if count is not None and (count <= 0 or count % lanes.warp_size):
            raise lanes.fault(op, f"a named barrier counts whole warps: {count} threads is not a positive "
                              f"multiple of {lanes.warp_size}", None)  # fmt: skip
        blk = self._running().blk
        st = self.bars.setdefault((blk, bid), [0, 0, count])
        if st[0] and st[2] != count:
            raise lanes.fault(
                op, f"barrier {bid} is in use with {st[2]} expected threads, but this warp expects {count}", None
            )
        st[2] = count
        st[0] += self.warp_threads(lanes)
        gen = st[1]
        self._release_barriers()
        if wait and st[1] == gen:

            def describe():
                exp = st[2] if st[2] is not None else self._live_threads(blk)
                return f"at barrier {bid}: {st[0]} of {exp} threads arrived"

            self.wait_until(lambda: st[1] != gen, op, describe)

    def _live_threads(self, blk: int) -> int:
        return sum(t.hi - t.lo for t in self.tasks if t.state != "done" and t.blk == blk)

    def _release_barriers(self) -> None:
        for (blk, _), st in self.bars.items():
            exp = st[2] if st[2] is not None else self._live_threads(blk)
            if st[0] and st[0] >= exp:
                st[0] = 0
                st[1] += 1
                self.bump()

    # -- the scheduler loop (main thread) ---------------------------------------------------------------

    def run(self, body) -> None:
        """Run ``body(task_lanes)`` for every task to completion (or raise the first fault / a deadlock)."""
        for t in self.tasks:
            th = t.thread = threading.Thread(target=self._main, args=(t, body), daemon=True, name=f"fly-warp-{t.idx}")
            th.start()
        nxt = 0
        try:
            while True:
                err = next((t.error for t in self.tasks if t.error is not None), None)
                if err is not None:
                    raise err
                live = [t for t in self.tasks if t.state != "done"]
                if not live:
                    return
                picked = self._pick(nxt)
                if picked is None:
                    raise self._deadlock(live)
                nxt = (picked.idx + 1) % len(self.tasks)
                self.current = picked
                picked.state = "running"
                picked.go.release()
                self.back.acquire()
                if picked.state == "done":
                    self._release_barriers()  # a warp that exits no longer counts for __syncthreads
        finally:
            self._shutdown()

    def _main(self, t: _Task, body) -> None:
        t.go.acquire()
        try:
            if not self.aborting:
                with np.errstate(all="ignore"):
                    body(t.lanes)
        except _Abort:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            t.error = e
        finally:
            t.state = "done"
            self.back.release()

    def _pick(self, start: int) -> _Task | None:
        n = len(self.tasks)
        for k in range(n):
            t = self.tasks[(start + k) % n]
            if t.state == "ready":
                return t
            if t.state == "blocked" and t.cond is not None and t.cond():
                return t
        for k in range(n):  # nothing can run: a failing try_wait may return false once per change
            t = self.tasks[(start + k) % n]
            if t.state == "blocked" and t.can_timeout and t.seen != self.progress:
                t.seen = self.progress
                t.timed_out = True
                return t
        return None

    def _deadlock(self, live: list[_Task]) -> InterpError:
        def op_of(t: _Task):
            assert t.info is not None  # set by wait_until
            return t.info[0]

        blocked = [t for t in live if t.state == "blocked"]
        groups: list[list] = []  # consecutive warps waiting at the same line for the same thing: one line
        for t in blocked:
            op, describe = t.info or (None, None)
            assert op is not None and describe is not None  # set by wait_until
            where = format_loc(getattr(op, "loc", None)) or "?"
            what = f"at {where} ({op.defn.name}) {describe()}"
            if groups and groups[-1][2] == what and groups[-1][1].idx + 1 == t.idx:
                groups[-1][1] = t
            else:
                groups.append([t, t, what])
        lines = []
        for a, b, what in groups:
            who = (
                f"warp {a.idx} (threads {a.lo}-{a.hi - 1}) waits"
                if a is b
                else (f"warps {a.idx}-{b.idx} (threads {a.lo}-{b.hi - 1}) wait")
            )
            lines.append(f"  {who} {what}")
        first = blocked[0]
        lanes = first.lanes
        bid, _ = lanes.coords(first.lo)
        detail = (
            f"deadlock in block {bid}: every warp that has not exited is waiting and none of the waits can "
            "complete (no other warp is left to arrive, no copy is in flight):\n" + "\n".join(lines) + "\n"
            "check the phase parity of each wait, the arrival count given to mbarrier_init, that every "
            "arrive happens, and that the bytes given to expect_tx match the copies that complete on the barrier"
        )
        return InterpError(detail, kernel=self.name, op=op_of(first), block=bid, thread=lanes.coords(first.lo)[1])

    def _shutdown(self) -> None:
        self.aborting = True
        for t in self.tasks:
            if t.state != "done" and t.thread is not None:
                t.go.release()
                self.back.acquire()
        for t in self.tasks:
            if t.thread is not None:
                t.thread.join()


def run_block_tasks(lanes, body) -> None:
    """Run one block or one cluster (``lanes``: a batch of its blocks) warp by warp; ``body(task_lanes)`` runs the
    kernel."""
    ws = lanes.warp_size
    sched = Scheduler(lanes.program.name)
    warps = [(b * lanes.tpb + lo, min(lo + ws, lanes.tpb) + b * lanes.tpb) for b in range(lanes.nb)
             for lo in range(0, lanes.tpb, ws)]  # fmt: skip
    for w, (lo, hi) in enumerate(warps):
        tl = copy.copy(lanes)
        m = np.zeros(lanes.T, np.bool_)
        m[lo:hi] = True
        tl.mask = m
        tl.sched = sched
        sched.tasks.append(_Task(w, tl, lo, hi))
    sched.run(body)


def active_lanes(lanes) -> np.ndarray:
    """Batch indices of the active lanes, in linear thread order."""
    m = lanes.mask
    return lanes.arange() if m is None else np.flatnonzero(m)


def get_barrier(lanes, op, blk: int, off: int) -> MBarrier:
    b = barrier_table(lanes).get((blk, off))
    if b is None:
        raise lanes.fault(
            op, f"{describe_barrier(lanes, off)} is used before mbarrier_init (its state is undefined)", None
        )
    return b
