"""Pure elementwise ops: executed through their dialect's ``evaluate`` (the one shared semantics).

Every op with ``OpDef.evaluate`` and no impl of its own runs here (arith, math, most of vector).
Constants are evaluated once at compile time into the environment prototype. The two vector ops
with a run-time index check only the active lanes' indices (masked-off lanes may hold anything).
"""

from __future__ import annotations

import numpy as np

from ..ir import Op
from .machine import Compiler, impl

__all__ = ["build_pure"]


def build_pure(op: Op, cc: Compiler):
    """A step computing ``op``'s single result with ``op.defn.evaluate`` (constants fold at compile time)."""
    ev = op.defn.evaluate
    ins = cc.slots_of(op.operands)
    if len(op.results) != 1:
        raise NotImplementedError(f"{op.defn.name}: evaluate-based ops have exactly one result")
    r = cc.slot(op.results[0])
    if not ins:
        cc.constant(op.results[0], ev(op))
        return None
    if len(ins) == 1:
        (a,) = ins

        def step1(env, lanes):
            env[r] = ev(op, env[a])

        return step1
    if len(ins) == 2:
        a, b = ins

        def step2(env, lanes):
            env[r] = ev(op, env[a], env[b])

        return step2
    if len(ins) == 3:
        a, b, c = ins

        def step3(env, lanes):
            env[r] = ev(op, env[a], env[b], env[c])

        return step3

    def stepn(env, lanes):
        env[r] = ev(op, *[env[i] for i in ins])

    return stepn


@impl("arith.constant")
def constant(op: Op, cc: Compiler):
    """``arith.constant``: evaluated once into the prototype (uniform)."""
    cc.constant(op.results[0], op.defn.evaluate(op))


def _active_index(op, lanes, idx, n):
    """Check a run-time vector index on active lanes; return it with inactive lanes clamped to 0."""
    i = np.asarray(idx).astype(np.int64)
    m = lanes.mask
    per_lane = i.ndim == 1 and i.shape[0] == lanes.T
    if m is not None:
        if per_lane:
            i = np.where(m, i, 0)
        elif lanes.first_active() < 0:
            return np.zeros_like(i)
    bad = (i < 0) | (i >= n)
    if bad.any():
        pos = np.flatnonzero(bad.reshape(-1))[0]
        lane = int(pos) if per_lane else None
        raise lanes.fault(
            op, f"run-time vector index {int(i.reshape(-1)[pos])} out of range for a vector of {n} lanes", lane
        )
    return i


@impl("vector.extractelement")
def extractelement(op: Op, cc: Compiler):
    """``vector.extractelement(v, idx)``: an out-of-range index on an active lane is a fault."""
    ev = op.defn.evaluate
    v, ix = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])
    n = op.operands[0].type.numel

    def step(env, lanes):
        env[r] = ev(op, env[v], _active_index(op, lanes, env[ix], n))

    return step


@impl("vector.insertelement")
def insertelement(op: Op, cc: Compiler):
    """``vector.insertelement(x, v, idx)``: an out-of-range index on an active lane is a fault."""
    ev = op.defn.evaluate
    x, v, ix = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])
    n = op.operands[1].type.numel

    def step(env, lanes):
        env[r] = ev(op, env[x], env[v], _active_index(op, lanes, env[ix], n))

    return step
