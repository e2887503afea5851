"""Pure ops that need more than their ``evaluate``: constants are evaluated once at compile time into
the environment prototype; the two vector ops with a run-time index check only the active lanes'
indices (masked-off lanes may hold anything). Every other op with ``OpDef.evaluate`` and no impl of its
own runs through ``evaluate`` (:func:`flydsl.interp.machine.build_pure`)."""

from __future__ import annotations

import numpy as np

from ..dialects import arith
from ..dialects import math as _m
from ..ir import Op, VectorType
from .machine import Compiler, impl


@impl("arith.constant")
def constant(op: Op, cc: Compiler):
    """``arith.constant``: evaluated once into the prototype (uniform)."""
    cc.constant(op.results[0], arith.const_value(op))


@impl("math.sincos")
def sincos(op: Op, cc: Compiler):
    """``math.sincos``: its two results through ``math.sin`` and ``math.cos``'s semantics."""
    (a,) = cc.slots_of(op.operands)
    rs, rc = cc.slot(op.results[0]), cc.slot(op.results[1])
    sin_ev, cos_ev = _m.sin.evaluate, _m.cos.evaluate

    def step(env, lanes):
        env[rs] = sin_ev(op, env[a])
        env[rc] = cos_ev(op, env[a])

    return step


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
    n = VectorType.of(op.operands[0]).numel

    def step(env, lanes):
        env[r] = ev(op, env[v], _active_index(op, lanes, env[ix], n))

    return step


@impl("vector.insertelement")
def insertelement(op: Op, cc: Compiler):
    """``vector.insertelement(x, v, idx)``: an out-of-range index on an active lane is a fault."""
    ev = op.defn.evaluate
    x, v, ix = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])
    n = VectorType.of(op.operands[1]).numel

    def step(env, lanes):
        env[r] = ev(op, env[x], env[v], _active_index(op, lanes, env[ix], n))

    return step
