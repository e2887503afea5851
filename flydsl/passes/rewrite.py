"""The pattern-rewrite driver: rewrite patterns indexed by the op they apply to, applied greedily.

A pattern is a function ``pattern(op, rw) -> bool`` registered in a :class:`PatternSet` for one or more
op names (or for every op). :func:`apply_patterns` walks a module's blocks in order; at each op it
first rewrites the operands through the replacements made so far, runs the patterns of the op's nested
regions, then tries the patterns registered for the op's name, then those for every op, until one
returns True (it rewrote something). Sweeps repeat until one changes nothing (at most ``max_sweeps``).

A pattern changes the IR only through the :class:`Rewriter`:

* ``rw.replace(op, values)`` — every later use of ``op``'s results reads ``values``; ``op`` is dropped;
* ``rw.erase(op)`` — drop an op whose results are unused;
* ``with rw.building():`` — ops built inside (``arith.const(...)``, any ``OpDef`` call) are placed before
  the op being rewritten; ``rw.insert(op)`` places an op made by hand;
* ``rw.inline(block)`` — move a region's block (all but its terminator) before the op; returns the
  terminator's operands.

There are no use lists: a replacement is a substitution applied to later operands as the walk reaches
them. That is sound because a block is walked in order and a value is only used after its definition
(later in its block, in later ops' regions, or in the enclosing block after the op that holds the
region). Patterns must not look at an op's *users*.

Canonicalization (:mod:`.canonicalize`) is a PatternSet; a lowering is another.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from ..ir import Block, InsertionPoint, Op, Value

__all__ = ["PatternSet", "Rewriter", "apply_patterns", "Pattern"]

Pattern = Callable[[Op, "Rewriter"], bool]


class PatternSet:
    """Rewrite patterns indexed by op name (plus patterns for every op).

    Example::

        CANON = PatternSet("canonicalize")

        @CANON.pattern("scf.for")
        def zero_trip_for(op, rw) -> bool: ...
    """

    def __init__(self, name: str):
        self.name = name
        self.by_op: dict[str, list[Pattern]] = {}
        self.any_op: list[Pattern] = []

    def add(self, fn: Pattern, *roots: str) -> Pattern:
        """Register ``fn`` for the ops named ``roots`` (every op when none is named)."""
        if roots:
            for r in roots:
                self.by_op.setdefault(r, []).append(fn)
        else:
            self.any_op.append(fn)
        return fn

    def pattern(self, *roots: str) -> Callable[[Pattern], Pattern]:
        """Decorator form of :meth:`add`."""
        return lambda fn: self.add(fn, *roots)

    def for_op(self, name: str) -> list[Pattern]:
        """The patterns tried on an op named ``name``, in order."""
        return self.by_op.get(name, []) + self.any_op

    def __repr__(self) -> str:
        n = sum(len(v) for v in self.by_op.values()) + len(self.any_op)
        return f"<PatternSet {self.name}: {n} patterns>"


class Rewriter:
    """The patterns' handle on the IR: replacements, erasure and new ops, around the op being rewritten."""

    def __init__(self):
        self.subst: dict[Value, Value] = {}
        self.changed = False
        self._block: Block | None = None
        self._out: list[Op] = []

    def lookup(self, v: Value) -> Value:
        """``v`` after the replacements made so far."""
        s = self.subst
        while v in s:
            v = s[v]
        return v

    def replace(self, op: Op, values) -> bool:
        """Replace ``op``'s results by ``values`` (one per result) and drop ``op``; returns True."""
        for r, v in zip(op.results, values):
            self.subst[r] = self.lookup(v)
        self.changed = True
        return True

    def erase(self, op: Op) -> bool:
        """Drop ``op`` (its results must be unused); returns True."""
        self.changed = True
        return True

    def insert(self, new: Op) -> Op:
        """Place ``new`` before the op being rewritten."""
        new.parent = self._block
        self._out.append(new)
        return new

    @contextlib.contextmanager
    def building(self) -> Iterator[None]:
        """``with rw.building():`` ops built inside go before the op being rewritten."""
        tmp = Block()
        with InsertionPoint(tmp):
            yield
        for o in tmp.ops:
            self.insert(o)

    def inline(self, block: Block) -> list[Value]:
        """Move ``block``'s ops, all but its terminator, before the op being rewritten; returns the
        terminator's operands (after replacements)."""
        ops = block.ops
        term = ops[-1] if ops and ops[-1].defn.is_terminator else None
        for o in ops[:-1] if term is not None else ops:
            self.insert(o)
        return [self.lookup(v) for v in term.operands] if term is not None else []

    def _walk(self, block: Block, patterns: PatternSet) -> None:
        out: list[Op] = []
        for op in block.ops:
            if self.subst:
                op.operands = [self.lookup(v) for v in op.operands]
            for r in op.regions:
                for b in r.blocks:
                    self._walk(b, patterns)
            self._block, self._out = block, out
            if not any(p(op, self) for p in patterns.for_op(op.defn.name)):
                out.append(op)
        block.ops = out


def apply_patterns(module: Op, patterns: PatternSet, max_sweeps: int = 4) -> bool:
    """Apply ``patterns`` to ``module`` in place until a sweep changes nothing (at most ``max_sweeps``);
    returns whether anything changed."""
    changed = False
    for _ in range(max_sweeps):
        rw = Rewriter()
        for r in module.regions:
            for b in r.blocks:
                rw._walk(b, patterns)
        changed = changed or rw.changed
        if not rw.changed:
            break
    return changed
