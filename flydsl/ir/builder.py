"""Building ops: the insertion point, source locations and the trace budget.

Ops are appended to the block of the innermost ``InsertionPoint``. The compiler installs a location
provider (which finds the user's file:line), an op budget and a target check (called with every op whose
definition declares ``requires``) for each trace; the IR layer itself knows nothing about users, Python
frames or targets.
"""

from __future__ import annotations

from collections.abc import Callable

from .core import Block, IRError, Location, Op, OpDef, Value

__all__ = [
    "InsertionPoint",
    "create",
    "current_block",
    "set_location_provider",
    "set_requirement_check",
    "TraceBudget",
    "location",
]


class _State:
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


_S = _State()


class InsertionPoint:
    """``with InsertionPoint(block):`` appends every op built inside to ``block``."""

    __slots__ = ("block",)

    def __init__(self, block: Block):
        self.block = block

    def __enter__(self) -> Block:
        _S.stack.append(_S.block)
        _S.block = self.block
        return self.block

    def __exit__(self, *exc) -> None:
        _S.block = _S.stack.pop()


class location:
    """``with location((file, line, col)):`` stamps ops built inside with that location."""

    __slots__ = ("loc", "prev")

    def __init__(self, loc: Location | None):
        self.loc = loc

    def __enter__(self):
        self.prev = _S.loc_override
        _S.loc_override = self.loc

    def __exit__(self, *exc):
        _S.loc_override = self.prev


def current_block() -> Block | None:
    return _S.block


def set_location_provider(fn: Callable[[], Location | None] | None) -> Callable | None:
    """Install the function that returns the location of the op being built; returns the previous one."""
    prev = _S.loc_provider
    _S.loc_provider = fn
    return prev


def set_requirement_check(fn: Callable[[Op], None] | None) -> Callable | None:
    """Install the function called with each new op whose definition declares ``requires`` (before the op
    joins its block; it raises to reject the op); returns the previous one."""
    prev = _S.check
    _S.check = fn
    return prev


class TraceBudget:
    """``with TraceBudget(max_ops, on_exceed):`` counts ops built; calls ``on_exceed(op)`` past the budget."""

    __slots__ = ("max_ops", "on_exceed", "saved")

    def __init__(self, max_ops: int, on_exceed: Callable[[Op], None]):
        self.max_ops = max_ops
        self.on_exceed = on_exceed

    def __enter__(self):
        self.saved = (_S.count, _S.max_ops, _S.on_budget)
        _S.count = 0
        _S.max_ops = self.max_ops
        _S.on_budget = self.on_exceed
        return self

    @property
    def count(self) -> int:
        return _S.count

    def __exit__(self, *exc):
        _S.count, _S.max_ops, _S.on_budget = self.saved


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
    if loc is None:
        loc = _S.loc_override
        if loc is None and _S.loc_provider is not None:
            loc = _S.loc_provider()
    op = Op(defn, operands, result_types, attrs, defn.num_regions, loc)
    block = _S.block
    if block is None:
        raise IRError(f"cannot build {defn.name} here: no insertion point (ops are built inside a kernel trace)")
    if defn.requires is not None and _S.check is not None:
        _S.check(op)
    op.parent = block
    block.ops.append(op)
    _S.count += 1
    if _S.count > _S.max_ops:
        _S.on_budget(op)
    return op
