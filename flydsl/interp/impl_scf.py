"""Structured control flow under an active-lane mask: ``scf.if/for/while``, calls and returns.

Divergence model (every lane advances op by op):

- ``scf.if`` with a uniform condition runs one branch. With a per-lane condition it runs the then
  region under ``mask & c`` and the else region under ``mask & ~c`` (a branch no active lane takes
  is skipped) and merges the results lane by lane.
- ``scf.for`` with uniform bounds loops in Python with a uniform induction variable. With per-lane
  bounds it loops while any lane is active; a lane whose trip count is exhausted is masked off and
  its carried values are frozen.
- ``scf.while`` runs the before region under the active lanes; lanes whose condition is false stop,
  and their results are the values ``scf.condition`` forwarded at that iteration.

Terminators (``scf.yield``, ``scf.condition``, ``func.return``, ``gpu.return``) are not steps: a
region's code lists the slots they yield (see :class:`~flydsl.interp.machine.RegionCode`).
"""

from __future__ import annotations

import numpy as np

from ..ir import Op
from ..utils.env import env as env_vars
from .machine import Compiler, impl, is_uniform, lookup_symbol, merge, run_region, value_dtype

__all__ = ["call_function"]


def _bind(env, slots, vals) -> None:
    for s, v in zip(slots, vals):
        env[s] = v


@impl("scf.if")
def if_(op: Op, cc: Compiler):
    """``scf.if``: one branch for a uniform condition; both, masked and merged, for a varying one."""
    c = cc.slot(op.operands[0])
    then_rc = cc.region(op.regions[0])
    else_rc = cc.region(op.regions[1])
    outs = cc.slots_of(op.results)

    def step(env, lanes):
        cond = env[c]
        if is_uniform(cond):
            rc = then_rc if bool(cond) else else_rc
            if rc is not None:
                _bind(env, outs, run_region(rc, env, lanes))
            return
        mask = lanes.mask
        tm = cond if mask is None else mask & cond
        em = ~cond if mask is None else mask & ~cond
        if not em.any():
            _bind(env, outs, run_region(then_rc, env, lanes))
            return
        if not tm.any():
            if else_rc is not None:
                _bind(env, outs, run_region(else_rc, env, lanes))
            return
        lanes.mask = tm
        tv = run_region(then_rc, env, lanes)
        if else_rc is not None:
            lanes.mask = em
            ev = run_region(else_rc, env, lanes)
            for s, a, b in zip(outs, tv, ev):
                env[s] = merge(cond, a, b)
        lanes.mask = mask

    return step


@impl("scf.for")
def for_(op: Op, cc: Compiler):
    """``scf.for lb to ub step s``: signed ``iv < ub``; ``s`` must be positive."""
    lb, ub, st = cc.slots_of(op.operands[:3])
    inits = cc.slots_of(op.operands[3:])
    body = cc.block(op.regions[0].blocks[0])
    iv_slot, arg_slots = body.arg_slots[0], body.arg_slots[1:]
    outs = cc.slots_of(op.results)
    dt = value_dtype(op.operands[0].type)

    def step(env, lanes):
        lo, hi, s = env[lb], env[ub], env[st]
        vals = [env[i] for i in inits]
        if is_uniform(lo) and is_uniform(hi) and is_uniform(s):
            s_i = int(s)
            if s_i <= 0:
                raise lanes.fault(op, f"scf.for step must be positive, got {s_i} (the GPU would loop forever)", None)
            for iv in range(int(lo), int(hi), s_i):
                env[iv_slot] = np.asarray(iv, dt)
                _bind(env, arg_slots, vals)
                vals = run_region(body, env, lanes)
        else:
            vals = _for_varying(op, lanes, env, body, iv_slot, arg_slots, lo, hi, s, vals)
        _bind(env, outs, vals)

    return step


def _for_varying(op, lanes, env, body, iv_slot, arg_slots, lo, hi, s, vals):
    """Per-lane bounds: loop while any lane is active; finished lanes keep their carried values."""
    T = lanes.T
    mask = lanes.mask
    iv = np.broadcast_to(lo, (T,)).copy()
    active = iv < hi
    if mask is not None:
        active &= mask
    bad = active & (np.broadcast_to(s, (T,)) <= 0)
    if bad.any():
        lane = int(np.flatnonzero(bad)[0])
        raise lanes.fault(op, "scf.for step must be positive (the GPU would loop forever)", lane)
    while active.any():
        lanes.mask = active
        env[iv_slot] = iv
        _bind(env, arg_slots, vals)
        new = run_region(body, env, lanes)
        vals = [merge(active, n, o) for n, o in zip(new, vals)]
        iv = iv + s
        active = active & (iv < hi)
    lanes.mask = mask
    return vals


@impl("scf.while")
def while_(op: Op, cc: Compiler):
    """``scf.while``: lanes leave when their condition is false, with the values forwarded then."""
    inits = cc.slots_of(op.operands)
    before = cc.region(op.regions[0])
    after = cc.region(op.regions[1])
    outs = cc.slots_of(op.results)
    detect = _state_is_visible(op)

    def step(env, lanes):
        mask = lanes.mask
        active = mask
        vals = [env[i] for i in inits]
        results = None
        limit = env_vars.interp_max_while_iterations
        n = 0
        seen = _Cycle() if detect else None
        while True:
            n += 1
            if n > limit:
                raise lanes.fault(
                    op,
                    f"scf.while ran {limit} iterations without its condition becoming false — an infinite loop? "
                    "(on the GPU it would hang; raise FLYDSL_INTERP_MAX_WHILE_ITERATIONS if the loop is really "
                    "this long)",
                    None,
                )
            if seen is not None and seen.repeats(vals, active, lanes.writes):
                raise lanes.fault(
                    op,
                    f"scf.while makes no progress: after {n - 1} iterations its loop-carried values and active "
                    "threads are back to an earlier state and no memory was written since, so its condition will "
                    "never become false (on the GPU it would hang)",
                    None,
                )
            lanes.mask = active
            _bind(env, before.arg_slots, vals)
            out = run_region(before, env, lanes)
            cond, fwd = out[0], out[1:]
            if results is None or active is mask:
                results = fwd
            else:
                results = [merge(active, f, r) for f, r in zip(fwd, results)]
            if is_uniform(cond):
                if not bool(cond):
                    break
            else:
                nxt = cond if active is None else active & cond
                if not nxt.any():
                    break
                if not (nxt.all() if active is None else np.array_equal(nxt, active)):
                    active = nxt
            lanes.mask = active
            _bind(env, after.arg_slots, fwd)
            vals = run_region(after, env, lanes)
        lanes.mask = mask
        _bind(env, outs, results)

    return step


def _state_is_visible(op: Op) -> bool:
    """True when everything an ``scf.while``'s iteration depends on is its carried values, its lanes and
    memory written through counted stores and atomics — so a repeated state proves an endless loop. Not
    for loops with calls (anything may happen in the callee) or ``nvvm`` ops (barriers, asynchronous
    copies and other warps change state the count does not see)."""
    for o in op.walk():
        name = o.defn.name
        if name == "func.call" or name.startswith("nvvm."):
            return False
    return True


class _Cycle:
    """Brent's cycle detection over the state of an ``scf.while`` (carried values, active lanes, memory
    write count). The interpreter is deterministic, so a state seen before means an endless loop: caught
    within about twice the cycle length, instead of after FLYDSL_INTERP_MAX_WHILE_ITERATIONS iterations."""

    __slots__ = ("saved", "power", "steps")

    def __init__(self):
        self.saved = None
        self.power = 1
        self.steps = 0

    def repeats(self, vals: list, active, writes: int) -> bool:
        saved = self.saved
        if saved is not None and saved[2] == writes and _same(saved[1], active):
            if all(_same(a, b) for a, b in zip(saved[0], vals)):
                return True
        self.steps += 1
        if saved is None or self.steps == self.power:
            copy = np.copy
            self.saved = ([copy(v) for v in vals], None if active is None else copy(active), writes)
            self.power *= 2
            self.steps = 0
        return False


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return np.array_equal(a, b)


def call_function(fc, lanes, args) -> list:
    """Run a compiled function with argument values ``args``; returns its returned values."""
    env = list(fc.proto)
    _bind(env, fc.arg_slots, args)
    assert fc.body is not None  # compiled with the function
    return run_region(fc.body, env, lanes)


@impl("func.call")
def call(op: Op, cc: Compiler):
    """``func.call @callee(args)``: a device function call (same lanes, same mask)."""
    callee = lookup_symbol(op, op.attrs["callee"])
    fc = cc.program.function(callee)
    ins = cc.slots_of(op.operands)
    outs = cc.slots_of(op.results)

    def step(env, lanes):
        _bind(env, outs, call_function(fc, lanes, [env[i] for i in ins]))

    return step
