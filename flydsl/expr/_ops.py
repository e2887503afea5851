"""Operators on DSL scalars (installed on :class:`Numeric`): arithmetic, bitwise, shifts, comparisons,
unary ops and ``select``. The semantic layer: operand normalization, the common type, the result
type, then either a host fold or one ``arith`` op.

The type rules (:func:`operand_types`) and the op choice (:func:`emit_binary`) are shared with
``fx.Vector``, whose operators apply them lane-wise: a scalar and a vector of the same dtypes always
produce the same element type and the same op.
"""

from __future__ import annotations

import operator

from ..dialects import arith
from ..dialects import math as dmath
from ..ir import Value
from ._fastmath import fastmath_attrs
from .numeric import (
    Boolean,
    Float32,
    Float64,
    Index,
    Int32,
    Numeric,
    _fold,
    as_numeric,
    common_type,
)

__all__ = [
    "binary",
    "select",
    "operand_types",
    "emit_binary",
    "fold_binary",
    "int_pow",
    "is_unsigned",
    "norm_operand",
    "SYMBOL",
    "ARITH_KINDS",
    "BIT_KINDS",
    "CMP_KINDS",
]

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
# exact on Python ints once wrapped to the width (faster than a numpy fold)
_PY_EXACT = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}
_PY_BITS = {"and": operator.and_, "or": operator.or_, "xor": operator.xor}


def is_unsigned(C) -> bool:
    """Whether integer ops on ``C`` use the unsigned forms (``divui``, ``shrui``, ``ult``…)."""
    return C is Index or (C.is_integer and not C.signed)


def norm_operand(x):
    """A scalar operand as a Numeric (Python literals by value, raw IR scalars by type), or None."""
    if isinstance(x, Numeric):
        return x
    if getattr(x, "_is_vector", False):
        return None
    try:
        return as_numeric(x)
    except TypeError:
        return None


def operand_types(kind: str, A, B):
    """``(C, R)``: the type both operands convert to and the result type of ``A <kind> B``.

    Boolean operands must already be widened to Int32 for arithmetic kinds (see :func:`binary`).

    Raises:
        TypeError: bitwise/shift on floats, or any arithmetic/comparison on a narrow storage float.
    """
    if A.is_storage or B.is_storage:
        s = A if A.is_storage else B
        raise TypeError(
            f"operator {SYMBOL[kind]} on {s.__name__}: narrow storage floats (fp8) support conversions only; "
            f"convert first, e.g. x.to(fx.Float32) {SYMBOL[kind]} y"
        )
    C = common_type(A, B)
    if kind in BIT_KINDS and C.is_float:
        raise TypeError(
            f"operator {SYMBOL[kind]} needs integers, got {A.__name__} and {B.__name__}; "
            "use .bitcast() to operate on a float's bits"
        )
    if kind == "truediv" and C.is_integer:
        C = Float32 if C.width <= 32 else Float64
    return C, (Boolean if kind in CMP_KINDS else C)


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


def fold_binary(kind: str, C, av, bv):
    """The compile-time value of ``av <kind> bv`` (Python values of type ``C``), through the same op's
    numpy semantics as the run-time path.

    Raises:
        ZeroDivisionError: integer ``//`` or ``%`` by a compile-time zero.
    """
    if kind in CMP_KINDS:
        defn, pred = _cmp_op(kind, C)
        return _fold(defn, Boolean, [C, C], [av, bv], predicate=pred)
    if C.is_float:
        if kind == "floordiv":
            q = _fold(arith.divf, C, [C, C], [av, bv])
            return _fold(dmath.floor, C, [C], [q])
        if kind == "pow":
            return _fold(dmath.powf, C, [C, C], [av, bv])
        f = _PY_EXACT.get(kind)
        if f is not None and C is Float64:
            return f(av, bv)
        return _fold(_FLOAT[kind], C, [C, C], [av, bv])
    if kind in ("floordiv", "mod") and bv == 0:
        raise ZeroDivisionError(f"integer {SYMBOL[kind]} by zero in a compile-time {C.__name__} expression")
    f = _PY_EXACT.get(kind) or _PY_BITS.get(kind)
    if f is not None and C is not Boolean:
        return C.from_py(f(av, bv))
    return _fold((_INT_UNSIGNED if is_unsigned(C) else _INT_SIGNED)[kind], C, [C, C], [av, bv])


def int_pow(base, exponent, mul):
    """``base ** exponent`` for a compile-time integer exponent by repeated squaring with ``mul``.

    Raises:
        TypeError: a run-time exponent. ValueError: a negative exponent.
    """
    e = exponent
    if isinstance(e, Numeric):
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


def binary(kind: str, a, b):
    """``a <kind> b`` for DSL scalars (or NotImplemented when an operand is not one)."""
    a, b = norm_operand(a), norm_operand(b)
    if a is None or b is None:
        return NotImplemented
    if kind in ARITH_KINDS:
        if type(a) is Boolean:
            a = a.to(Int32)
        if type(b) is Boolean:
            b = b.to(Int32)
    C, R = operand_types(kind, type(a), type(b))
    if type(a) is not C:
        a = a.to(C)
    if type(b) is not C:
        b = b.to(C)
    if kind == "pow" and C.is_integer:
        if a.is_static() and b.is_static():
            if b.value < 0:
                raise ValueError(f"integer ** with a negative exponent ({b.value})")
            return C._make(C.from_py(pow(a.value, b.value, 1 << C.width)))
        r = int_pow(a, b, lambda x, y: binary("mul", x, y))
        return C._make(1) if r is None else r
    av, bv = a.value, b.value
    if type(av) is not Value and type(bv) is not Value:
        return R._make(fold_binary(kind, C, av, bv))
    return R._make(emit_binary(kind, C, a.ir_value(), b.ir_value()))


def _unary_math(defn, x):
    C = type(x)
    if x.is_static():
        return C._make(_fold(defn, C, [C], [x.value]))
    return C._make(defn(x.ir_value(), **fastmath_attrs()))


def _neg(x):
    x = x.to(Int32) if type(x) is Boolean else x
    C = type(x)
    if C.is_storage:
        operand_types("sub", C, C)  # raises: storage floats have no arithmetic
    if C.is_float:
        if x.is_static():
            return C._make(-x.value)
        return C._make(arith.negf(x.value, **fastmath_attrs()))
    return binary("sub", C._make(0), x)


def _abs(x):
    C = type(x)
    if C is Boolean:
        raise TypeError("abs() of a Boolean is undefined; convert it first: x.to(fx.Int32)")
    if C.is_storage:
        operand_types("sub", C, C)
    if C.is_float:
        return _unary_math(dmath.absf, x)
    if not C.signed:
        return x
    if x.is_static():
        return C._make(C.from_py(abs(x.value)))
    return C._make(dmath.absi(x.value))


def _invert(x):
    C = type(x)
    if C.is_float:
        raise TypeError(f"operator ~ needs an integer, got {C.__name__}")
    if C is Boolean:
        return binary("xor", x, Boolean._make(True))
    return binary("xor", x, C._make(-1 if C.signed else (1 << C.width) - 1))


def select(cond, true_value, false_value):
    """``cond ? t : f``; a non-Boolean cond is tested for non-zero; the result has the common type.

    A Vector condition selects lane-wise; Vector choices under a scalar condition select whole vectors.
    """
    if getattr(cond, "_is_vector", False):
        return cond.select(true_value, false_value)
    c = norm_operand(cond)
    if c is None:
        raise TypeError(f"select condition must be a DSL scalar or Python bool, got {type(cond).__name__}")
    if type(c) is not Boolean:
        c = c.to(Boolean)
    t, f = norm_operand(true_value), norm_operand(false_value)
    if t is None or f is None:
        if getattr(true_value, "_is_vector", False) or getattr(false_value, "_is_vector", False):
            from .vector import select_whole

            return select_whole(c, true_value, false_value)
        raise TypeError("select choices must be DSL values or Python numbers")
    C = common_type(type(t), type(f))
    t, f = t.to(C), f.to(C)
    if c.is_static():
        return t if c.value else f
    if t.is_static() and f.is_static() and t.value == f.value and type(t.value) is type(f.value):
        return t
    return C._make(arith.select(c.value, t.ir_value(), f.ir_value()))


def _install():
    def make(kind):
        def fwd(self, other):
            return binary(kind, self, other)

        def rev(self, other):
            return binary(kind, other, self)

        fwd.__name__ = f"__{kind}__"
        rev.__name__ = f"__r{kind}__"
        return fwd, rev

    for kind in ARITH_KINDS | BIT_KINDS:
        fwd, rev = make(kind)
        setattr(Numeric, f"__{kind}__", fwd)
        setattr(Numeric, f"__r{kind}__", rev)
    for kind in CMP_KINDS:
        fwd, _ = make(kind)
        setattr(Numeric, f"__{kind}__", fwd)
    Numeric.__neg__ = _neg
    Numeric.__pos__ = lambda self: self
    Numeric.__abs__ = _abs
    Numeric.__invert__ = _invert
    Numeric.__divmod__ = lambda self, o: (binary("floordiv", self, o), binary("mod", self, o))
    Numeric.__rdivmod__ = lambda self, o: (binary("floordiv", o, self), binary("mod", o, self))


_install()
