"""``canonicalize``: constant folding through the ops' fold hooks and numpy semantics, algebraic
identities, and structured-control-flow simplification (``scf.if`` on a constant condition is
inlined; an ``scf.for`` that never runs forwards its initial values).

Values are replaced through a substitution map applied to later operands (there are no use lists).
"""

from __future__ import annotations

import numpy as np

from ..dialects import arith, scf
from ..ir import Block, Op, VectorType, numpy_dtype
from .registry import register_pass

__all__ = ["canonicalize", "constant_value"]


def constant_value(v):
    """The numpy value of ``v`` if it is defined by ``arith.constant`` (vectors as ``(1, N)``), else None."""
    op = v.owner
    if type(op) is not Op or op.defn is not arith.constant:
        return None
    return arith.constant.evaluate(op)


def _materialize(value, t, loc, parent: Block) -> Op:
    if isinstance(t, VectorType):
        flat = np.asarray(value).reshape(-1)
        a = flat.reshape(()) if flat.size == 1 else flat
        attr = arith.normalize_constant(a, t)
    else:
        attr = arith.normalize_constant(np.asarray(value).reshape(()).item(), t)
    op = Op(arith.constant, [], [t], {"value": attr}, 0, loc)
    op.parent = parent
    return op


class _Canon:
    def __init__(self):
        self.subst: dict = {}
        self.changed = False

    def look(self, v):
        s = self.subst
        while v in s:
            v = s[v]
        return v

    def block(self, block: Block) -> None:
        out: list[Op] = []
        for op in block.ops:
            if self.subst:
                op.operands = [self.look(v) for v in op.operands]
            for r in op.regions:
                for b in r.blocks:
                    self.block(b)
            repl = self.fold(op, block, out)
            if repl is None:
                out.append(op)
        block.ops = out

    def fold(self, op: Op, block: Block, out: list[Op]):
        d = op.defn
        if d is scf.if_:
            return self.fold_if(op, block, out)
        if d is scf.for_:
            return self.fold_for(op)
        if op.regions or not op.results or not (d.is_pure or d.fold is not None):
            return None
        consts = [constant_value(v) for v in op.operands]
        results = None
        if d.fold is not None:
            with np.errstate(all="ignore"):
                results = d.fold(op, consts)
        if results is None and d.evaluate is not None and d.is_pure and d is not arith.constant:
            if all(c is not None for c in consts):
                try:
                    with np.errstate(all="ignore"):
                        r = d.evaluate(op, *consts)
                except Exception:  # a fault at fold time stays a run-time op (e.g. bad vector index)
                    return None
                results = [r]
        if results is None:
            return None
        new_vals = []
        for res, r in zip(op.results, results):
            if r is None:
                return None
            if type(r) is type(res):  # an existing Value
                new_vals.append(r)
            else:
                c = _materialize(np.asarray(r).astype(numpy_dtype(res.type)), res.type, op.loc, block)
                out.append(c)
                new_vals.append(c.results[0])
        for res, nv in zip(op.results, new_vals):
            self.subst[res] = nv
        self.changed = True
        return True

    def fold_if(self, op: Op, block: Block, out: list[Op]):
        c = constant_value(op.operands[0])
        if c is None:
            return None
        region = op.regions[0] if bool(np.asarray(c).reshape(-1)[0]) else op.regions[1]
        if not region.blocks:
            self.changed = True
            return True
        body = region.blocks[0]
        term = body.ops[-1]
        for o in body.ops[:-1]:
            o.parent = block
            out.append(o)
        for res, v in zip(op.results, term.operands):
            self.subst[res] = self.look(v)
        self.changed = True
        return True

    def fold_for(self, op: Op):
        lb, ub, st = (constant_value(v) for v in op.operands[:3])
        if lb is None or ub is None or st is None:
            return None
        if int(st) > 0 and int(lb) >= int(ub):
            for res, init in zip(op.results, op.operands[3:]):
                self.subst[res] = init
            self.changed = True
            return True
        return None


@register_pass("canonicalize")
def canonicalize(module: Op) -> None:
    """Fold constants and simplify in place (until nothing changes, at most 4 sweeps)."""
    for _ in range(4):
        c = _Canon()
        for r in module.regions:
            for b in r.blocks:
                c.block(b)
        if not c.changed:
            break
