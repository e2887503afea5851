"""Shared helpers for dialect declarations: result-type inference, numpy semantics helpers, and the
builders of scalar hooks for integer ops.

Value shapes in ``evaluate`` functions (the executable semantics shared by the interpreter and the
constant folder): a scalar is an array of ndim <= 1 (``()`` or ``(1,)`` when the same for every
thread, ``(T,)`` per thread); a vector is an array of ndim 2 (``(1, N)`` or ``(T, N)``).

Scalar hooks (``OpDef.scalar``) compute the same semantics on host scalars (``flydsl.ir.numpy_types``):
:func:`int_scalar` builds one from a Python expression of the operands as signed ints — the value
before wrapping to the result's width.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..ir import IntegerType, Op, Type, VectorType, numpy_dtype, unsigned_dtype
from ..ir.types import i1

__all__ = [
    "int_scalar",
    "ScalarSource",
    "source_fn",
    "scalar_source",
    "int_source",
    "INT_HELPERS",
    "same_as_first",
    "same_as_second",
    "bool_like",
    "is_vec",
    "as_unsigned",
    "from_unsigned",
    "to_dtype",
    "rows_like",
    "check_same_types",
]


def same_as_first(types, attrs):
    return [types[0]]


def same_as_second(types, attrs):
    return [types[1]]


def bool_like(t: Type) -> Type:
    """``i1`` for a scalar, ``vector<Nxi1>`` for a vector."""
    if isinstance(t, VectorType):
        return VectorType(t.shape, i1)
    return i1


def is_vec(t: Type) -> bool:
    return isinstance(t, VectorType)


def as_unsigned(a: np.ndarray, t: Type) -> np.ndarray:
    """Reinterpret a signed-stored integer array as unsigned (i1 stays bool)."""
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    return np.asarray(a).view(unsigned_dtype(t))


def from_unsigned(a: np.ndarray, t: Type) -> np.ndarray:
    e = t.element_type
    if isinstance(e, IntegerType) and e.width == 1:
        return (np.asarray(a) & 1).astype(np.bool_)
    return np.asarray(a).astype(unsigned_dtype(t), copy=False).view(numpy_dtype(t))


def to_dtype(a, t: Type) -> np.ndarray:
    return np.asarray(a).astype(numpy_dtype(t), copy=False)


def rows_like(cond: np.ndarray, value_is_vector: bool) -> np.ndarray:
    """Make a scalar (per-thread) condition broadcast against vector values."""
    if value_is_vector and cond.ndim <= 1:
        return np.asarray(cond)[..., None]
    return cond


def check_same_types(op: Op) -> str | None:
    ts = [v.type for v in op.operands] + [r.type for r in op.results]
    if any(t is not ts[0] for t in ts):
        return "operand and result types must match, got " + ", ".join(map(str, ts))
    return None


def _tdiv(a: int, b: int) -> int:
    """Integer division rounding toward zero (C's ``/``) on Python ints."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# the functions scalar expressions may call (a generated caller binds them in its own globals)
INT_HELPERS: dict[str, Callable] = {"_tdiv": _tdiv}


class ScalarSource(NamedTuple):
    """An op's scalar semantics as Python source, for generated code to paste in (the launch plans).

    ``expr`` is over the operands ``a`` (and ``b``) as signed ints wrapped to their width (the names in
    :data:`INT_HELPERS` are functions, the names in ``consts`` integers); ``wrap`` is the result's width,
    to which the value is wrapped (two's complement; an i1 result is a bool), or None when the value is
    the result itself (a comparison's bool).
    """

    expr: str
    consts: dict
    wrap: int | None


_FNS: dict[tuple, Callable] = {}


def source_fn(src: ScalarSource, arity: int, negate_i1: bool = False) -> Callable:
    """The host function ``f(*operands)`` of ``src`` (compiled once per source). ``negate_i1``: the
    operands are i1 values, which enter as signed 1-bit integers (true is -1)."""
    key = (src.expr, tuple(sorted(src.consts.items())), src.wrap, arity, negate_i1)
    f = _FNS.get(key)
    if f is None:
        names = "ab"[:arity]
        body = "".join(f"    {n} = -{n}\n" for n in names) if negate_i1 else ""
        w = src.wrap
        if w is None:
            body += f"    return {src.expr}\n"
        elif w == 1:  # an i1 is a bool
            body += f"    return bool(({src.expr}) & 1)\n"
        else:
            half = 1 << (w - 1)
            body += f"    return ((({src.expr}) + {half}) & {(1 << w) - 1}) - {half}\n"
        consts = "".join(f", {k}={v}" for k, v in src.consts.items())
        ns = dict(INT_HELPERS)
        exec(f"def f({', '.join(names)}{consts}):\n{body}", ns)  # noqa: S102 - a table expression
        f = _FNS[key] = ns["f"]
    return f


def int_scalar(expr: str, arity: int = 2) -> Callable:
    """The scalar hook (``OpDef.scalar``) of an integer op that maps its operands to its result's type.

    Args:
        expr: the op's value before wrapping to the width, as a Python expression of the operands ``a``
            (and ``b``) as signed ints, the width ``w`` and its mask ``m`` (``2**w - 1``); helper
            ``_tdiv(a, b)`` divides rounding toward zero. An i1 operand enters as 0 or -1.
        arity: 1 or 2 operands.

    Returns:
        ``scalar(op)`` giving ``f(*values)`` for a scalar op (None for vectors, which go through
        ``evaluate``); ``scalar.source(op)`` is the :class:`ScalarSource` (None for vectors and i1).
    """

    def source(op) -> ScalarSource | None:
        t = op.results[0].type
        if isinstance(t, VectorType) or t.bitwidth == 1:
            return None
        w = t.bitwidth
        return ScalarSource(expr, {"w": w, "m": (1 << w) - 1}, w)

    def scalar(op):
        t = op.results[0].type
        if isinstance(t, VectorType):
            return None
        w = t.bitwidth
        return source_fn(ScalarSource(expr, {"w": w, "m": (1 << w) - 1}, w), arity, negate_i1=w == 1)

    scalar.expr, scalar.source = expr, source
    return scalar


def scalar_source(op) -> ScalarSource | None:
    """``op``'s scalar semantics as source (:class:`ScalarSource`), when its hook offers one."""
    hook = op.defn.scalar
    source = getattr(hook, "source", None)
    return source(op) if source is not None else None


def int_source(src: ScalarSource, operands: list[str], helper: Callable[[str, Callable], str]) -> str:
    """``src.expr`` as Python source over ``operands`` (names or literals; each may be evaluated more than
    once), unwrapped, for generated code: the constants are inlined, a test decided by literals is decided
    now (``-1 if 128 == 0 else n // 128`` is ``n // 128``), and each helper function is named by
    ``helper(name, fn)`` (which binds it in the caller's globals)."""
    key = (src.expr, tuple(sorted(src.consts.items())), tuple(operands))
    tree = _SOURCES.get(key)
    if tree is None:
        subs = {n: _Fold({}).visit(ast.parse(x, mode="eval").body) for n, x in zip("ab", operands)}  # (-3) is -3
        subs.update({k: ast.Constant(v) for k, v in src.consts.items()})
        tree = _SOURCES[key] = _Fold(subs).visit(ast.parse(src.expr, mode="eval").body)
    text = ast.unparse(_Rename(helper).visit(copy.deepcopy(tree)))
    return f"({text})"


_SOURCES: dict[tuple, ast.expr] = {}
_FOLDABLE_CALLS = {"min": min, "max": max, "abs": abs}


class _Fold(ast.NodeTransformer):
    """Substitute the operands and constants; evaluate what only literals decide."""

    def __init__(self, subs: dict):
        self.subs = subs

    def visit_Name(self, node: ast.Name) -> ast.expr:
        sub = self.subs.get(node.id)
        return copy.deepcopy(sub) if sub is not None else node

    def generic_visit(self, node):
        node = super().generic_visit(node)
        if isinstance(node, ast.IfExp) and isinstance(node.test, ast.Constant):
            return node.body if node.test.value else node.orelse
        if isinstance(node, ast.Compare):  # (a < 0) == False is a >= 0
            same = _against_bool(node)
            if same is not None:
                return same
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)) or (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FOLDABLE_CALLS
        ):
            kids = [c for c in ast.iter_child_nodes(node) if not isinstance(c, (ast.operator, ast.unaryop,
                    ast.cmpop, ast.boolop, ast.expr_context)) and c is not getattr(node, "func", None)]  # fmt: skip
            huge = isinstance(node, ast.BinOp) and isinstance(node.op, (ast.LShift, ast.Pow))
            if huge and not (isinstance(node.right, ast.Constant) and 0 <= node.right.value <= 256):
                return node  # e.g. 1 << 2**64 - 1 on a branch that a test excludes: never computed
            if kids and all(isinstance(c, ast.Constant) for c in kids):
                try:
                    code = compile(ast.fix_missing_locations(ast.Expression(node)), "<fold>", "eval")
                    value = eval(code, {"__builtins__": {}}, dict(_FOLDABLE_CALLS))  # noqa: S307 - literals only
                except ArithmeticError:  # e.g. a division by a literal zero on a path the test excludes
                    return node
                return ast.copy_location(ast.Constant(value), node)
        return node


_NEGATED = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}


def _against_bool(node: ast.Compare) -> ast.expr | None:
    """``c == True``/``c != False`` as ``c``, ``c == False``/``c != True`` as ``c`` negated, for ``c`` a
    one-operator comparison (None: not that form)."""
    if len(node.ops) != 1 or type(node.ops[0]) not in (ast.Eq, ast.NotEq):
        return None
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    if not (isinstance(right, ast.Constant) and type(right.value) is bool):
        return None
    if not (isinstance(left, ast.Compare) and len(left.ops) == 1):
        return None
    if right.value == isinstance(node.ops[0], ast.Eq):
        return left
    return ast.Compare(left.left, [_NEGATED[type(left.ops[0])]()], left.comparators)


class _Rename(ast.NodeTransformer):
    def __init__(self, helper: Callable[[str, Callable], str]):
        self.helper = helper

    def visit_Name(self, node: ast.Name) -> ast.expr:
        fn = INT_HELPERS.get(node.id)
        return ast.Name(self.helper(node.id, fn), ast.Load()) if fn is not None else node
