"""How Python's operators lower to ``arith`` ops: the op chosen for ``a <kind> b`` on a type, the
compile-time fold through that op's semantics, and integer ``**`` by repeated squaring.

Shared by scalars (:mod:`.numeric`) and vectors (:mod:`.vector`): a scalar and a vector of the same
dtypes always produce the same op. Types are only read for ``is_float``, ``is_integer``, ``signed``,
``width`` (Index is unsigned, Boolean is ``i1``).
"""

from __future__ import annotations

from ...dialects import arith
from ...dialects import math as dmath
from ...ir import Value
from .fastmath import fastmath_attrs
from .fold import fold

__all__ = [
    "ARITH_KINDS", "BIT_KINDS", "CMP_KINDS", "SYMBOL", "is_unsigned", "emit_binary", "fold_binary", "int_pow",
    "operator_methods", "operator_mixin",
]  # fmt: skip

ARITH_KINDS = frozenset(("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"))
BIT_KINDS = frozenset(("and", "or", "xor", "lshift", "rshift"))
CMP_KINDS = frozenset(("lt", "le", "gt", "ge", "eq", "ne"))

SYMBOL = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
    "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>",
    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
}  # fmt: skip

# op choice by signedness (Index is unsigned), FlyDSL's lowering table
_INT_SIGNED = {
    "add": arith.addi, "sub": arith.subi, "mul": arith.muli, "floordiv": arith.floordivsi, "mod": arith.remsi,
    "and": arith.andi, "or": arith.ori, "xor": arith.xori, "lshift": arith.shli, "rshift": arith.shrsi,
}  # fmt: skip
_INT_UNSIGNED = dict(_INT_SIGNED, floordiv=arith.divui, mod=arith.remui, rshift=arith.shrui)
_FLOAT = {"add": arith.addf, "sub": arith.subf, "mul": arith.mulf, "truediv": arith.divf, "mod": arith.remf}
_CMP_S = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"}
_CMP_U = {"lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge", "eq": "eq", "ne": "ne"}
_CMP_F = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}


def is_unsigned(C) -> bool:
    """Whether integer ops on ``C`` use the unsigned forms (``divui``, ``shrui``, ``ult``…)."""
    return C.is_integer and not C.signed


def _cmp_op(kind: str, C):
    if C.is_float:
        return arith.cmpf, _CMP_F[kind]
    return arith.cmpi, (_CMP_U if is_unsigned(C) else _CMP_S)[kind]


def emit_binary(kind: str, C, a: Value, b: Value, fastmath=None) -> Value:
    """Build the op for ``a <kind> b`` on run-time values of type ``C`` (scalar or vector); ``pow`` on
    integers is :func:`int_pow`'s job."""
    if kind in CMP_KINDS:
        defn, pred = _cmp_op(kind, C)
        return defn(a, b, predicate=pred)
    if C.is_float:
        fm = fastmath_attrs(fastmath)
        if kind == "floordiv":
            return dmath.floor(arith.divf(a, b, **fm), **fm)
        if kind == "pow":
            return dmath.powf(a, b, **fm)
        return _FLOAT[kind](a, b, **fm)
    return (_INT_UNSIGNED if is_unsigned(C) else _INT_SIGNED)[kind](a, b)


def fold_binary(kind: str, C, R, av, bv):
    """The compile-time value of ``av <kind> bv`` (Python values of type ``C``; result type ``R``), through
    the same op's numpy semantics as the run-time path.

    Raises:
        ZeroDivisionError: integer ``//`` or ``%`` by a compile-time zero.
    """
    if kind in CMP_KINDS:
        defn, pred = _cmp_op(kind, C)
        return fold(defn, R, [C, C], [av, bv], predicate=pred)
    if C.is_float:
        if kind == "floordiv":
            q = fold(arith.divf, C, [C, C], [av, bv])
            return fold(dmath.floor, C, [C], [q])
        if kind == "pow":
            return fold(dmath.powf, C, [C, C], [av, bv])
        return fold(_FLOAT[kind], C, [C, C], [av, bv])
    if kind in ("floordiv", "mod") and bv == 0:
        raise ZeroDivisionError(f"integer {SYMBOL[kind]} by zero in a compile-time {C.__name__} expression")
    return fold((_INT_UNSIGNED if is_unsigned(C) else _INT_SIGNED)[kind], C, [C, C], [av, bv])


def int_pow(base, exponent, mul):
    """``base ** exponent`` for a compile-time integer exponent by repeated squaring with ``mul``.

    Raises:
        TypeError: a run-time exponent. ValueError: a negative exponent.
    """
    e = exponent
    if getattr(e, "_is_numeric", False):
        if not e.is_static():
            raise TypeError(
                "integer ** needs a compile-time exponent; for a run-time exponent convert to a float "
                "first: x.to(fx.Float32) ** e"
            )
        e = e.value
    if getattr(e, "_is_vector", False):
        raise TypeError("integer ** needs a compile-time scalar exponent, got a Vector")
    e = int(e)
    if e < 0:
        raise ValueError(f"integer ** with a negative exponent ({e})")
    result = None
    while e:
        if e & 1:
            result = base if result is None else mul(result, base)
        e >>= 1
        if e:
            base = mul(base, base)
    return result


def operator_methods(kind: str, impl):
    """The methods ``__kind__`` and ``__rkind__`` of an operator mixin: ``impl(kind, self, other)`` and
    ``impl(kind, other, self)`` (``impl`` returns NotImplemented for operands it does not take)."""

    def fwd(self, other):
        return impl(kind, self, other)

    def rev(self, other):
        return impl(kind, other, self)

    fwd.__name__, rev.__name__ = f"__{kind}__", f"__r{kind}__"
    return fwd, rev


# the binary operators with a reflected form, and the comparisons (no reflected form: Python swaps them)
_BINARY_DUNDERS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift")
_COMPARE_DUNDERS = ("lt", "le", "gt", "ge", "eq", "ne")


def operator_mixin(name: str, doc: str, binary, neg, absolute, invert) -> type:
    """A mixin class with Python's operators: ``a <op> b`` is ``binary(kind, a, b)`` (and the reflected
    form ``binary(kind, b, a)``), ``divmod`` is floordiv and mod, ``-a``/``abs(a)``/``~a`` are ``neg``,
    ``absolute`` and ``invert``, ``+a`` is ``a``. (Python looks operators up on the class, so they are
    methods; the scalar and vector classes get theirs from here.)"""
    ns: dict = {"__doc__": doc, "__slots__": (), "__module__": __name__}
    for kind in _BINARY_DUNDERS:
        ns[f"__{kind}__"], ns[f"__r{kind}__"] = operator_methods(kind, binary)
    for kind in _COMPARE_DUNDERS:
        ns[f"__{kind}__"] = operator_methods(kind, binary)[0]

    def __divmod__(self, o):
        return binary("floordiv", self, o), binary("mod", self, o)

    def __rdivmod__(self, o):
        return binary("floordiv", o, self), binary("mod", o, self)

    def __pos__(self):
        return self

    ns.update(__divmod__=__divmod__, __rdivmod__=__rdivmod__, __pos__=__pos__)
    ns.update(__neg__=lambda self: neg(self), __abs__=lambda self: absolute(self), __invert__=lambda self: invert(self))
    ns["__hash__"] = None  # __eq__ builds a comparison; the classes that hash say how
    return type(name, (), ns)
