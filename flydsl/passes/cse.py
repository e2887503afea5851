"""``cse``: common-subexpression elimination of pure, region-free ops (scoped: a value computed in an
enclosing block is reused inside nested regions, never the other way round)."""

from __future__ import annotations

import numpy as np

from ..ir import Block, Op, Trait
from .registry import register_pass

__all__ = ["cse"]


def _freeze(v):
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, float) and v != v:
        return ("nan",)
    return (type(v).__name__, v)


def _key(op: Op):
    attrs = op.attrs
    fa = tuple(sorted((k, _freeze(x)) for k, x in attrs.items())) if attrs else ()
    return (op.defn, tuple(map(id, op.operands)), fa, tuple(r.type for r in op.results))


def _run(block: Block, scopes: list[dict], subst: dict) -> None:
    table: dict = {}
    scopes.append(table)
    out = []
    for op in block.ops:
        if subst:
            op.operands = [subst.get(v, v) for v in op.operands]
        if op.regions:
            isolated = Trait.ISOLATED in op.defn.traits
            for r in op.regions:
                for b in r.blocks:
                    _run(b, [] if isolated else scopes, subst)
            out.append(op)
            continue
        if not op.defn.is_pure or not op.results:
            out.append(op)
            continue
        k = _key(op)
        hit = None
        for sc in reversed(scopes):
            hit = sc.get(k)
            if hit is not None:
                break
        if hit is None:
            table[k] = op
            out.append(op)
        else:
            for a, b in zip(op.results, hit.results):
                subst[a] = b
    block.ops = out
    scopes.pop()


@register_pass("cse")
def cse(module: Op) -> None:
    """Merge identical pure ops in place."""
    for r in module.regions:
        for b in r.blocks:
            _run(b, [], {})
