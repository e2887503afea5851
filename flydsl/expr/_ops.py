"""Operators on DSL scalars (installed on :class:`Numeric`): arithmetic, bitwise, shifts, comparisons,
unary ops and ``select``. The semantic layer: operand normalization, the common type, the result
type, then either a host fold or one ``arith`` op.
"""

from __future__ import annotations

import operator

from ..dialects import arith
from ..dialects import math as dmath
from ..ir import Value
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

__all__ = ["binary", "select", "current_fastmath", "set_fastmath"]

_ARITH = frozenset(("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"))
_BITS = frozenset(("and", "or", "xor", "lshift", "rshift"))
_CMP = frozenset(("lt", "le", "gt", "ge", "eq", "ne"))

_fastmath_stack: list[str | None] = [None]


def current_fastmath() -> str | None:
    """The ambient fast-math flags (``with fx.fastmath(...)``), or None."""
    return _fastmath_stack[-1]


def set_fastmath(flags: str | None):
    _fastmath_stack.append(flags)


def _fm_attrs(C) -> dict:
    f = _fastmath_stack[-1]
    if f and C.is_float:
        return {"fastmath": f}
    return {}


_INT_SIGNED = {
    "add": arith.addi, "sub": arith.subi, "mul": arith.muli, "floordiv": arith.floordivsi, "mod": arith.remsi,
    "and": arith.andi, "or": arith.ori, "xor": arith.xori, "lshift": arith.shli, "rshift": arith.shrsi,
}  # fmt: skip
_INT_UNSIGNED = dict(_INT_SIGNED, floordiv=arith.divui, mod=arith.remui, rshift=arith.shrui)
_FLOAT = {"add": arith.addf, "sub": arith.subf, "mul": arith.mulf, "truediv": arith.divf, "mod": arith.remf}
_CMP_S = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"}
_CMP_U = {"lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge", "eq": "eq", "ne": "ne"}
_CMP_F = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}
_PY_FAST = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}
_PY_BITS = {"and": operator.and_, "or": operator.or_, "xor": operator.xor}


def _norm(x):
    if isinstance(x, Numeric):
        return x
    if getattr(x, "_is_vector", False):
        return None
    try:
        return as_numeric(x)
    except TypeError:
        return None


def _is_unsigned(C) -> bool:
    return C is Index or (C.is_integer and not C.signed)


def binary(kind: str, a, b):
    """``a <kind> b`` for DSL scalars (or NotImplemented when an operand is not one)."""
    a, b = _norm(a), _norm(b)
    if a is None or b is None:
        return NotImplemented
    if kind in _ARITH:
        if type(a) is Boolean:
            a = a.to(Int32)
        if type(b) is Boolean:
            b = b.to(Int32)
    C = common_type(type(a), type(b))
    if kind in _BITS and C.is_float:
        raise TypeError(
            f"operator {_SYMBOL[kind]} needs integers, got {type(a).__name__} and {type(b).__name__}; "
            "use .bitcast() to operate on a float's bits"
        )
    if kind == "truediv" and C.is_integer:
        C = Float32 if C.width <= 32 else Float64
    a = a.to(C)
    b = b.to(C)
    if kind == "pow":
        return _pow(a, b, C)
    av, bv = a._v, b._v
    static = type(av) is not Value and type(bv) is not Value
    if kind in _CMP:
        return _compare(kind, av, bv, C, static)
    if C.is_float:
        if kind == "floordiv":
            q = binary("truediv", a, b)
            return _unary_math(dmath.floor, q)
        defn = _FLOAT[kind]
        if static:
            f = _PY_FAST.get(kind)
            if f is not None:
                return C._make(C.from_py(f(av, bv)))
            return C._make(_fold(defn, C, [C, C], [av, bv]))
        return C._make(defn(a.ir_value(), b.ir_value(), **_fm_attrs(C)))
    defn = (_INT_UNSIGNED if _is_unsigned(C) else _INT_SIGNED)[kind]
    if static:
        f = _PY_FAST.get(kind) or _PY_BITS.get(kind)
        if f is not None and C is not Boolean:
            return C._make(C.from_py(f(av, bv)))
        return C._make(_fold(defn, C, [C, C], [av, bv]))
    return C._make(defn(a.ir_value(), b.ir_value()))


def _compare(kind, av, bv, C, static):
    if C.is_float:
        defn, pred = arith.cmpf, _CMP_F[kind]
    else:
        defn, pred = arith.cmpi, (_CMP_U if _is_unsigned(C) else _CMP_S)[kind]
    if static:
        return Boolean._make(_fold(defn, Boolean, [C, C], [av, bv], predicate=pred))
    a = av if type(av) is Value else C._make(av).ir_value()
    b = bv if type(bv) is Value else C._make(bv).ir_value()
    return Boolean._make(defn(a, b, predicate=pred))


def _pow(a, b, C):
    if C.is_float:
        if a.is_static() and b.is_static():
            return C._make(_fold(dmath.powf, C, [C, C], [a._v, b._v]))
        return C._make(dmath.powf(a.ir_value(), b.ir_value(), **_fm_attrs(C)))
    if not b.is_static():
        raise TypeError(
            "integer ** needs a compile-time exponent; for a run-time exponent convert to a float "
            "first: x.to(fx.Float32) ** e"
        )
    e = b._v
    if e < 0:
        raise ValueError(f"integer ** with a negative exponent ({e})")
    if a.is_static():
        return C._make(C.from_py(pow(a._v, e, 1 << C.width)))
    result, base = None, a
    while e:
        if e & 1:
            result = base if result is None else binary("mul", result, base)
        e >>= 1
        if e:
            base = binary("mul", base, base)
    return C._make(1) if result is None else result


def _unary_math(defn, x):
    C = type(x)
    if x.is_static():
        return C._make(_fold(defn, C, [C], [x._v]))
    return C._make(defn(x.ir_value(), **_fm_attrs(C)))


def _neg(x):
    x = x.to(Int32) if type(x) is Boolean else x
    C = type(x)
    if C.is_float:
        if x.is_static():
            return C._make(-x._v)
        return C._make(arith.negf(x._v))
    return binary("sub", C._make(0), x)


def _abs(x):
    x = x.to(Int32) if type(x) is Boolean else x
    C = type(x)
    if C.is_float:
        return _unary_math(dmath.absf, x)
    if not C.signed:
        return x
    if x.is_static():
        return C._make(C.from_py(abs(x._v)))
    return C._make(dmath.absi(x._v))


def _invert(x):
    C = type(x)
    if C.is_float:
        raise TypeError(f"operator ~ needs an integer, got {C.__name__}")
    if C is Boolean:
        return binary("xor", x, Boolean._make(True))
    return binary("xor", x, C._make(-1 if C.signed else (1 << C.width) - 1))


def select(cond, true_value, false_value):
    """``cond ? t : f``; a non-Boolean cond is tested for non-zero; the result has the common type."""
    c = _norm(cond)
    if c is None:
        raise TypeError(f"select condition must be a DSL scalar or Python bool, got {type(cond).__name__}")
    if type(c) is not Boolean:
        c = c.to(Boolean)
    t, f = _norm(true_value), _norm(false_value)
    if t is None or f is None:
        vec = true_value if getattr(true_value, "_is_vector", False) else false_value
        if getattr(vec, "_is_vector", False):
            return type(vec).select_scalar_cond(c, true_value, false_value)
        raise TypeError("select choices must be DSL values or Python numbers")
    C = common_type(type(t), type(f))
    t, f = t.to(C), f.to(C)
    if c.is_static():
        return t if c._v else f
    if t.is_static() and f.is_static() and t._v == f._v and type(t._v) is type(f._v):
        return t
    return C._make(arith.select(c._v, t.ir_value(), f.ir_value()))


_SYMBOL = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
    "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>",
    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
}  # fmt: skip


def _install():
    def make(kind):
        def fwd(self, other):
            return binary(kind, self, other)

        def rev(self, other):
            return binary(kind, other, self)

        fwd.__name__ = f"__{kind}__"
        rev.__name__ = f"__r{kind}__"
        return fwd, rev

    for kind in _ARITH | _BITS:
        fwd, rev = make(kind)
        setattr(Numeric, f"__{kind}__", fwd)
        setattr(Numeric, f"__r{kind}__", rev)
    for kind in _CMP:
        fwd, _ = make(kind)
        setattr(Numeric, f"__{kind}__", fwd)
    Numeric.__neg__ = _neg
    Numeric.__pos__ = lambda self: self
    Numeric.__abs__ = _abs
    Numeric.__invert__ = _invert
    Numeric.__divmod__ = lambda self, o: (binary("floordiv", self, o), binary("mod", self, o))
    Numeric.__rdivmod__ = lambda self, o: (binary("floordiv", o, self), binary("mod", o, self))


_install()
