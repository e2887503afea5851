"""``dce``: remove ops whose results are unused and that have no side effects (pure ops, and
structured control flow whose regions only hold such ops)."""

from __future__ import annotations

from collections import Counter

from ..dialects import scf
from ..ir import Block, Op
from .registry import register_pass

__all__ = ["dce", "has_side_effects"]

_REGION_OPS = frozenset((scf.for_, scf.if_, scf.while_))
_NEUTRAL = frozenset((scf.yield_, scf.condition))


def has_side_effects(op: Op) -> bool:
    """True unless the op (and everything nested in it) is pure."""
    d = op.defn
    if d.is_pure or d in _NEUTRAL:
        return False
    if d in _REGION_OPS:
        return any(has_side_effects(o) for r in op.regions for b in r.blocks for o in b.ops)
    return True


def _count(block: Block, uses: Counter) -> None:
    for op in block.ops:
        uses.update(op.operands)
        for r in op.regions:
            for b in r.blocks:
                _count(b, uses)


def _drop_uses(op: Op, uses: Counter) -> None:
    uses.subtract(op.operands)
    for r in op.regions:
        for b in r.blocks:
            for o in b.ops:
                _drop_uses(o, uses)


def _sweep(block: Block, uses: Counter) -> None:
    keep = []
    for op in reversed(block.ops):
        dead = op.results and not any(uses[r] for r in op.results) and not has_side_effects(op)
        if dead and not op.defn.is_terminator:
            _drop_uses(op, uses)
            continue
        for r in op.regions:
            for b in r.blocks:
                _sweep(b, uses)
        keep.append(op)
    keep.reverse()
    block.ops = keep


@register_pass("dce")
def dce(module: Op) -> None:
    """Delete dead ops in place."""
    uses: Counter = Counter()
    for r in module.regions:
        for b in r.blocks:
            _count(b, uses)
    for r in module.regions:
        for b in r.blocks:
            _sweep(b, uses)
