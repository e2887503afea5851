"""The IR's data structures: Value, Op, Block, Region.

One ``Op`` class serves every operation; what distinguishes ``arith.addi`` from ``scf.for`` is its
``OpDef`` (:mod:`.opdef`): name, operand/result/region counts, traits, and hooks (result-type
inference, verify, fold/evaluate, print format). Dialects declare ``OpDef``s; the printer, verifier,
passes, interpreter and LLVM emitter are generic dispatchers over them.

There are no use lists: passes that replace values carry a substitution map instead, which keeps
building ops cheap (a few hundred nanoseconds each).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .types import Type

if TYPE_CHECKING:  # annotations only: opdef.py builds Ops through builder.py, which imports this module
    from .opdef import OpDef

__all__ = ["Value", "Op", "Block", "Region", "Location", "SymbolRef", "Trait", "IRError"]

# (filename, line, column); None when unknown.
Location = tuple


class IRError(Exception):
    """An IR invariant was broken (verifier, builder misuse). Carries the offending op if known."""

    def __init__(self, message: str, op: Op | None = None, loc: Location | None = None):
        self.op = op
        self.loc = loc if loc is not None else (op.loc if op is not None else None)
        self.raw_message = message
        super().__init__(message)


class I32Array(tuple):
    """A dense array of 32-bit ints as an attribute value (MLIR ``array<i32: 64, 1, 1>``, e.g. a kernel's
    ``known_block_size``); a tuple everywhere else."""

    __slots__ = ()


class SymbolRef(str):
    """A reference to a symbol (``@name``) as an attribute value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"@{str.__str__(self)}"


class Trait:
    """Op traits used by the generic passes and the verifier."""

    PURE = "pure"  # no side effects: CSE/DCE may remove or merge it
    TERMINATOR = "terminator"  # must be the last op of its block
    COMMUTATIVE = "commutative"
    ISOLATED = "isolated"  # regions do not see values defined outside (functions, modules)
    SYMBOL = "symbol"  # has a `sym_name` attribute
    SAME_TYPE = "same_type"  # all operands and results share one type
    CONSTANT = "constant"  # materializes its `value` attribute


class Value:
    """An SSA value: the result of an op or an argument of a block."""

    __slots__ = ("type", "owner", "index")

    def __init__(self, type: Type, owner: Op | Block | None, index: int):
        self.type = type
        self.owner = owner
        self.index = index

    @property
    def defining_op(self) -> Op | None:
        o = self.owner
        return o if isinstance(o, Op) else None

    @property
    def is_block_arg(self) -> bool:
        return isinstance(self.owner, Block)

    def __repr__(self) -> str:
        o = self.owner
        if isinstance(o, Op):
            return f"<Value #{self.index} of {o.defn.name} : {self.type}>"
        return f"<BlockArg #{self.index} : {self.type}>"

    # A raw Value is never a Python truth value, integer or sequence: tracing must never
    # fall into Python's protocols by accident.
    def __bool__(self):
        raise TypeError(
            "an IR value has no Python truth value at trace time; "
            "wrap it in an fx numeric type and use `.select(...)` or `if` inside a kernel"
        )

    def __iter__(self):
        raise TypeError("an IR value is not iterable; wrap vectors in fx.Vector(...)")

    def __index__(self):
        raise TypeError("an IR value is not a Python integer at trace time")


class Block:
    """A list of ops with typed arguments."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self, arg_types=(), parent: Region | None = None):
        self.args = [Value(t, self, i) for i, t in enumerate(arg_types)]
        self.ops: list[Op] = []
        self.parent = parent

    @property
    def arguments(self) -> list[Value]:
        """The block arguments (the MLIR bindings' name for ``args``)."""
        return self.args

    @property
    def operations(self) -> list[Op]:
        """The ops (the MLIR bindings' name for ``ops``)."""
        return self.ops

    def add_arg(self, type: Type) -> Value:
        v = Value(type, self, len(self.args))
        self.args.append(v)
        return v

    def append(self, op: Op) -> Op:
        op.parent = self
        self.ops.append(op)
        return op

    @property
    def terminator(self) -> Op | None:
        if self.ops and self.ops[-1].defn.is_terminator:
            return self.ops[-1]
        return None

    @property
    def parent_op(self) -> Op | None:
        return self.parent.parent if self.parent is not None else None


class Region:
    """A list of blocks owned by an op. Structured control flow uses exactly one block."""

    __slots__ = ("blocks", "parent")

    def __init__(self, parent: Op | None = None):
        self.blocks: list[Block] = []
        self.parent = parent

    def add_block(self, arg_types=()) -> Block:
        b = Block(arg_types, self)
        self.blocks.append(b)
        return b

    @property
    def block(self) -> Block:
        """The single block (creating it when empty)."""
        if not self.blocks:
            return self.add_block()
        return self.blocks[0]


class Op:
    """One operation. ``defn`` says what it is; everything else is its data."""

    __slots__ = ("defn", "operands", "results", "attrs", "regions", "loc", "parent")

    def __init__(
        self,
        defn: OpDef,
        operands: list[Value],
        result_types,
        attrs: dict | None = None,
        num_regions: int = 0,
        loc: Location | None = None,
    ):
        self.defn = defn
        self.operands = operands
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs = attrs if attrs is not None else {}
        self.regions = [Region(self) for _ in range(num_regions)] if num_regions else []
        self.loc = loc
        self.parent: Block | None = None

    @property
    def name(self) -> str:
        return self.defn.name

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise IRError(f"op {self.defn.name} has {len(self.results)} results, not one", self)
        return self.results[0]

    @property
    def parent_op(self) -> Op | None:
        b = self.parent
        return b.parent_op if b is not None else None

    @property
    def attributes(self) -> dict:
        """The attributes (the MLIR bindings' name for ``attrs``)."""
        return self.attrs

    @property
    def entry_block(self) -> Block:
        """The first block of the first region (a function's entry block)."""
        return self.regions[0].blocks[0]

    def walk(self) -> Iterator[Op]:
        """Pre-order walk over this op and every op nested in its regions."""
        yield self
        for r in self.regions:
            for b in r.blocks:
                for o in b.ops:
                    yield from o.walk()

    def __repr__(self) -> str:
        from .printer import print_op  # cycle: the printer prints Ops (imports this module)

        try:
            return print_op(self)
        except Exception:  # pragma: no cover - repr must never raise
            return f"<Op {self.defn.name}>"
