"""``OpDef``: an operation declared as data, and the registry of every declared op.

A dialect module declares its ops at import (``addi = OpDef("arith.addi", ...)``); the declaration
registers the op by name in :data:`OPS`, where the parser, printer and passes look it up. Calling an
``OpDef`` builds the op at the current insertion point (:func:`flydsl.ir.builder.create`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .builder import create
from .core import IRError, Trait, Value

__all__ = ["OpDef", "OPS", "lookup_op"]


class OpDef:
    """Declaration of an operation.

    Args:
        name: ``dialect.opname``.
        operands: number of operands, or ``-1`` for any number (variadic).
        results: number of results, or ``-1`` when given at build time.
        regions: number of regions.
        traits: names from :class:`Trait`.
        attrs: names of required attributes.
        infer: ``infer(operand_types, attrs) -> list[Type]`` when result types are not given.
        verify: ``verify(op) -> str | None``: an error message, or None when valid.
        fold: ``fold(op, consts) -> list | None`` where ``consts[i]`` is the numpy constant of operand i
            or None; returns per result a numpy constant or an existing ``Value``, or None.
        evaluate: elementwise semantics on numpy arrays (``evaluate(attrs, *arrays) -> array``); used by
            the interpreter and, through the default folder, by constant folding. One semantics.
        fmt: print/parse format name (see :mod:`flydsl.ir.printer`).
        doc: one-line description.
        requires: the target capabilities the op needs (names of
            :data:`flydsl.dialects.capabilities.CAPABILITIES`): a name, a tuple of names, or
            ``requires(op) -> name | tuple`` when they depend on the op's types. None: every target has it.
    """

    __slots__ = (
        "name",
        "dialect",
        "num_operands",
        "num_results",
        "num_regions",
        "traits",
        "attrs",
        "infer",
        "verify",
        "fold",
        "evaluate",
        "fmt",
        "doc",
        "requires",
        "is_pure",
        "is_terminator",
        "extra",
    )

    def __init__(
        self,
        name: str,
        *,
        operands: int = -1,
        results: int = 1,
        regions: int = 0,
        traits: tuple | frozenset = (),
        attrs: tuple = (),
        infer: Callable | None = None,
        verify: Callable | None = None,
        fold: Callable | None = None,
        evaluate: Callable | None = None,
        fmt: str = "generic",
        doc: str = "",
        requires: str | tuple | Callable | None = None,
        **extra: Any,
    ):
        self.name = name
        self.dialect = name.split(".", 1)[0]
        self.num_operands = operands
        self.num_results = results
        self.num_regions = regions
        self.traits = frozenset(traits)
        self.attrs = tuple(attrs)
        self.infer = infer
        self.verify = verify
        self.fold = fold
        self.evaluate = evaluate
        self.fmt = fmt
        self.doc = doc
        self.requires = requires
        self.is_pure = Trait.PURE in self.traits
        self.is_terminator = Trait.TERMINATOR in self.traits
        self.extra = extra
        if name in OPS:
            raise ValueError(f"op {name} is declared twice")
        OPS[name] = self

    def __repr__(self) -> str:
        return f"OpDef({self.name})"

    def has(self, trait: str) -> bool:
        return trait in self.traits

    def __call__(self, *operands: Value, result_types=None, loc=None, **attrs):
        """Build this op at the current insertion point; returns its result(s) (None if none)."""
        op = create(self, list(operands), result_types, attrs, loc=loc)
        res = op.results
        n = len(res)
        if n == 1:
            return res[0]
        if n == 0:
            return None
        return tuple(res)


OPS: dict[str, OpDef] = {}


def lookup_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise IRError(f"unknown op '{name}' (is its dialect imported?)") from None
