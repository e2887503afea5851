"""Structural verification of IR: arity, dominance, terminators, isolation, required attributes and
each op's own ``verify`` hook. Errors print the offending op (and its source location)."""

from __future__ import annotations

from .core import IRError, Op, Trait
from .printer import print_op

__all__ = ["verify", "VerifyError"]


class VerifyError(IRError):
    pass


def _fail(op: Op, msg: str):
    try:
        text = print_op(op).split("\n", 1)[0]
    except Exception:  # pragma: no cover
        text = f"<{op.defn.name}>"
    where = ""
    if op.loc is not None:
        where = f" (at {op.loc[0]}:{op.loc[1]})"
    raise VerifyError(f"verifier: {op.defn.name}: {msg}{where}\n  {text}", op)


def verify(top: Op) -> None:
    """Raise :class:`VerifyError` on the first invalid op under ``top`` (inclusive)."""
    _verify(top, set())


def _verify(op: Op, visible: set) -> None:
    d = op.defn
    n = d.num_operands
    if n >= 0 and len(op.operands) != n:
        _fail(op, f"expects {n} operands, has {len(op.operands)}")
    if d.num_results >= 0 and len(op.results) != d.num_results:
        _fail(op, f"expects {d.num_results} results, has {len(op.results)}")
    if len(op.regions) != d.num_regions:
        _fail(op, f"expects {d.num_regions} regions, has {len(op.regions)}")
    for v in op.operands:
        if v not in visible:
            _fail(op, f"operand {v!r} does not dominate this use (defined later, in another region, or erased)")
    for a in d.attrs:
        if a not in op.attrs:
            _fail(op, f"missing required attribute '{a}'")
    if d.verify is not None:
        msg = d.verify(op)
        if msg:
            _fail(op, msg)
    if op.regions:
        inner = set() if Trait.ISOLATED in d.traits else visible
        for r in op.regions:
            for b in r.blocks:
                added = []
                for a in b.args:
                    if a not in inner:
                        inner.add(a)
                        added.append(a)
                last = len(b.ops) - 1
                for i, o in enumerate(b.ops):
                    if o.parent is not b:
                        _fail(o, "op's parent link does not point to its block")
                    if o.defn.is_terminator and i != last:
                        _fail(o, "terminator is not the last op of its block")
                    _verify(o, inner)
                    for res in o.results:
                        inner.add(res)
                        added.append(res)
                for v in added:
                    inner.discard(v)
