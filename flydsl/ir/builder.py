"""Building ops: the insertion point, source locations and the op budget — per thread.

Ops are appended to the block of the innermost ``InsertionPoint``. The compiler installs a location
provider (which finds the user's file:line), an op budget and a target check (called with every op whose
definition declares ``requires``) for each trace; the IR layer itself knows nothing about users, Python
frames or targets.

All of it lives in a :class:`BuilderState`. Each thread has its own (so two threads build IR at once
without seeing each other's insertion points), and a trace can install a fresh one for its duration
with :class:`use_builder` (so a trace started inside another one builds exactly what it would alone).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .core import Block, IRError, Location, Op, Value

if TYPE_CHECKING:  # annotations only: opdef.py imports this module
    from .opdef import OpDef

__all__ = [
    "BuilderState",
    "use_builder",
    "InsertionPoint",
    "create",
    "current_block",
    "set_location_provider",
    "set_requirement_check",
    "TraceBudget",
    "location",
]


class BuilderState:
    """Where new ops go (``block`` and the stack of enclosing insertion points), how they are located
    (``loc_provider``, ``loc_override``), the op budget (``count``, ``max_ops``, ``on_budget``) and the
    target check (``check``)."""

    __slots__ = ("block", "stack", "loc_provider", "loc_override", "count", "max_ops", "on_budget", "check")

    def __init__(self):
        self.block: Block | None = None
        self.stack: list[Block | None] = []
        self.loc_provider: Callable[[], Location | None] | None = None
        self.loc_override: Location | None = None
        self.count = 0
        self.max_ops = 1 << 62
        self.on_budget: Callable[[Op], None] | None = None
        self.check: Callable[[Op], None] | None = None


_tls = threading.local()


def _state() -> BuilderState:
    """This thread's builder state (created on first use)."""
    try:
        return _tls.state
    except AttributeError:
        s = _tls.state = BuilderState()
        return s


class use_builder:
    """``with use_builder(state):`` ops built by this thread inside go through ``state``; the previous
    state is back afterwards."""

    __slots__ = ("state", "prev")

    def __init__(self, state: BuilderState):
        self.state = state

    def __enter__(self) -> BuilderState:
        self.prev = _state()
        _tls.state = self.state
        return self.state

    def __exit__(self, *exc) -> None:
        _tls.state = self.prev


class InsertionPoint:
    """``with InsertionPoint(block):`` appends every op built inside to ``block``."""

    __slots__ = ("block", "state")

    def __init__(self, block: Block):
        self.block = block

    def __enter__(self) -> Block:
        s = self.state = _state()
        s.stack.append(s.block)
        s.block = self.block
        return self.block

    def __exit__(self, *exc) -> None:
        s = self.state
        s.block = s.stack.pop()


class location:
    """``with location((file, line, col)):`` stamps ops built inside with that location."""

    __slots__ = ("loc", "prev", "state")

    def __init__(self, loc: Location | None):
        self.loc = loc

    def __enter__(self):
        s = self.state = _state()
        self.prev = s.loc_override
        s.loc_override = self.loc

    def __exit__(self, *exc):
        self.state.loc_override = self.prev


def current_block() -> Block | None:
    return _state().block


def set_location_provider(fn: Callable[[], Location | None] | None) -> Callable | None:
    """Install the function that returns the location of the op being built; returns the previous one."""
    s = _state()
    prev = s.loc_provider
    s.loc_provider = fn
    return prev


def set_requirement_check(fn: Callable[[Op], None] | None) -> Callable | None:
    """Install the function called with each new op whose definition declares ``requires`` (before the op
    joins its block; it raises to reject the op); returns the previous one."""
    s = _state()
    prev = s.check
    s.check = fn
    return prev


class TraceBudget:
    """``with TraceBudget(max_ops, on_exceed):`` counts ops built; calls ``on_exceed(op)`` past the budget."""

    __slots__ = ("max_ops", "on_exceed", "saved", "state")

    def __init__(self, max_ops: int, on_exceed: Callable[[Op], None]):
        self.max_ops = max_ops
        self.on_exceed = on_exceed

    def __enter__(self):
        s = self.state = _state()
        self.saved = (s.count, s.max_ops, s.on_budget)
        s.count = 0
        s.max_ops = self.max_ops
        s.on_budget = self.on_exceed
        return self

    @property
    def count(self) -> int:
        return self.state.count

    def __exit__(self, *exc):
        s = self.state
        s.count, s.max_ops, s.on_budget = self.saved


def create(
    defn: OpDef,
    operands: list,
    result_types=None,
    attrs: dict | None = None,
    *,
    loc: Location | None = None,
) -> Op:
    """Create an op of kind ``defn`` and append it at the insertion point."""
    for v in operands:
        if type(v) is not Value:
            raise IRError(
                f"{defn.name}: operand {v!r} is not an IR value (got {type(v).__name__}); "
                "convert Python numbers and fx values with their .ir_value() first"
            )
    n = defn.num_operands
    if n >= 0 and len(operands) != n:
        raise IRError(f"{defn.name} takes {n} operands, got {len(operands)}")
    if result_types is None:
        if defn.infer is not None:
            result_types = defn.infer([v.type for v in operands], attrs or {})
        elif defn.num_results == 0:
            result_types = ()
        else:
            raise IRError(f"{defn.name}: result types must be given")
    try:
        s = _tls.state
    except AttributeError:
        s = _state()
    if loc is None:
        loc = s.loc_override
        if loc is None and s.loc_provider is not None:
            loc = s.loc_provider()
    op = Op(defn, operands, result_types, attrs, defn.num_regions, loc)
    block = s.block
    if block is None:
        raise IRError(f"cannot build {defn.name} here: no insertion point (ops are built inside a kernel trace)")
    if defn.requires is not None and s.check is not None:
        s.check(op)
    op.parent = block
    block.ops.append(op)
    s.count += 1
    if s.count > s.max_ops:
        s.on_budget(op)
    return op
