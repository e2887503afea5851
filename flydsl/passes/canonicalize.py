"""``canonicalize``: constant folding through the ops' fold hooks and semantics, algebraic identities,
and structured-control-flow simplification, as rewrite patterns (:mod:`.rewrite`).

* every op: its ``fold`` hook (``x + 0 -> x``, ``x * 0 -> 0``, ``select(c, a, a) -> a``…), else, for a
  pure op whose operands are all constants, ``evaluate`` on them (one semantics with the interpreter);
  results become ``arith.constant``s;
* ``scf.if`` on a constant condition: the chosen region is inlined;
* ``scf.for`` that never runs (constant bounds, ``lb >= ub``): its results are its initial values.
"""

from __future__ import annotations

import numpy as np

from ..dialects import arith
from ..ir import Op, VectorType, numpy_dtype
from .registry import register_pass
from .rewrite import PatternSet, Rewriter, apply_patterns

__all__ = ["canonicalize", "constant_value", "CANONICALIZE"]

CANONICALIZE = PatternSet("canonicalize")


def constant_value(v):
    """The numpy value of ``v`` if it is defined by ``arith.constant`` (vectors as ``(1, N)``), else None."""
    op = v.owner
    if type(op) is not Op or op.defn is not arith.constant:
        return None
    return arith.const_value(op)


def _materialize(value, t, loc) -> Op:
    if isinstance(t, VectorType):
        flat = np.asarray(value).reshape(-1)
        lanes = np.ascontiguousarray(flat).view(np.uint8).reshape(flat.size, -1)
        splat = flat.size == 1 or bool((lanes == lanes[0]).all())  # every lane bit-identical: dense<x>
        attr = arith.normalize_constant(flat[:1].reshape(()) if splat else flat, t)
    else:
        attr = arith.normalize_constant(np.asarray(value).reshape(()).item(), t)
    return Op(arith.constant, [], [t], {"value": attr}, 0, loc)


@CANONICALIZE.pattern("scf.if")
def inline_constant_if(op: Op, rw: Rewriter) -> bool:
    """``scf.if`` on a constant: the chosen region's ops replace it (an empty else: nothing)."""
    c = constant_value(op.operands[0])
    if c is None:
        return False
    region = op.regions[0] if bool(np.asarray(c).reshape(-1)[0]) else op.regions[1]
    if not region.blocks:
        return rw.erase(op)
    return rw.replace(op, rw.inline(region.blocks[0]))


@CANONICALIZE.pattern("scf.for")
def zero_trip_for(op: Op, rw: Rewriter) -> bool:
    """An ``scf.for`` with constant bounds that never runs: its results are its initial values."""
    lb, ub, st = (constant_value(v) for v in op.operands[:3])
    if lb is None or ub is None or st is None or not (int(st) > 0 and int(lb) >= int(ub)):
        return False
    return rw.replace(op, op.operands[3:])


@CANONICALIZE.pattern()
def fold(op: Op, rw: Rewriter) -> bool:
    """The op's ``fold`` hook, else ``evaluate`` on all-constant operands of a pure op."""
    d = op.defn
    if op.regions or not op.results or not (d.is_pure or d.fold is not None) or d is arith.constant:
        return False
    consts = [constant_value(v) for v in op.operands]
    results = None
    if d.fold is not None:
        with np.errstate(all="ignore"):
            results = d.fold(op, consts)
    if results is None and d.evaluate is not None and d.is_pure and all(c is not None for c in consts):
        try:
            with np.errstate(all="ignore"):
                results = [d.evaluate(op, *consts)]
        except Exception:  # a fault at fold time stays a run-time op (e.g. a bad vector index)
            return False
    if results is None or any(r is None for r in results):
        return False
    values = []
    for res, r in zip(op.results, results):
        if type(r) is type(res):  # an existing Value
            values.append(r)
        else:
            c = rw.insert(_materialize(np.asarray(r).astype(numpy_dtype(res.type)), res.type, op.loc))
            values.append(c.results[0])
    return rw.replace(op, values)


@register_pass("canonicalize")
def canonicalize(module: Op) -> None:
    """Fold constants and simplify in place (until nothing changes, at most 4 sweeps)."""
    apply_patterns(module, CANONICALIZE)
