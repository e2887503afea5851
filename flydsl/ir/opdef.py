"""``OpDef``: an operation declared as data, and the registry of every declared op.

A dialect module declares its ops at import (``addi = OpDef("arith.addi", ...)``); the declaration
registers the op by name in :data:`OPS`, where the parser, printer and passes look it up. Calling an
``OpDef`` builds the op at the current insertion point (:func:`flydsl.ir.builder.create`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .builder import create
from .core import IRError, Trait, Value
from .numpy_types import from_array, to_array

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
        evaluate: elementwise semantics on numpy arrays (``evaluate(op, *arrays) -> array``); used by
            the interpreter and, through the default folder, by constant folding. One semantics.
        scalar: ``scalar(op) -> f | None``: the same semantics on host scalars (see
            :mod:`flydsl.ir.numpy_types`): ``f(*values)`` computes one result for ``op``'s types and
            attributes (None: not for these types). Ops without one compute on host scalars through
            ``evaluate`` (:meth:`scalar_fn`).
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
        "scalar",
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
        infer: Callable[[list, dict], list] | None = None,
        verify: Callable | None = None,
        fold: Callable | None = None,
        evaluate: Callable | None = None,
        scalar: Callable | None = None,
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
        self.scalar = scalar
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

    def scalar_fn(self, op) -> Callable | None:
        """``f(*host_values)``: ``op``'s (one-result) semantics on host scalars — the op's scalar hook, else
        its ``evaluate`` on 0-d arrays; None when the op has neither. The host executor and
        compile-time folding compute through it, the interpreter through ``evaluate``; a property test
        holds the two equal."""
        if self.scalar is not None:
            f = self.scalar(op)
            if f is not None:
                return f
        if self.evaluate is None:
            return None
        return _evaluate_on_scalars(self.evaluate, op)

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


def _evaluate_on_scalars(ev: Callable, op) -> Callable:
    """``op``'s ``evaluate`` as a function of host scalars (0-d arrays in, a host scalar out)."""
    in_types = [v.type for v in op.operands]
    rt = op.results[0].type

    def f(*values):
        with np.errstate(all="ignore"):
            return from_array(rt, ev(op, *[to_array(t, v) for t, v in zip(in_types, values)]))

    return f
