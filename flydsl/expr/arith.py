"""``fx.arith``: typed arithmetic functions (FlyDSL names) over DSL scalars, Vectors and raw IR values.

* ``max``/``min``: variadic (nested lists too), one common type, NaN-propagating for floats
  (``arith.maximumf``/``minimumf``, ``-0.0 < +0.0``), ``maxsi``/``maxui`` for integers.
* ``maxnumf``/``minnumf`` (libm ``fmax``/``fmin``: the non-NaN operand wins), ``maximumf``/``minimumf``.
* ``ceildiv``: integer division rounding up without the ``(a + b - 1) // b`` overflow.
* ``cmpi``/``cmpf``/``select``/``constant``/``index_cast`` and one function per ``arith`` op
  (``addf``, ``muli``, ``extf`` …) for code written against MLIR's builders.

Every function accepts DSL values, raw IR values and Python literals and returns DSL values
(``Numeric`` or ``Vector``) — except, as in FlyDSL, ``maxnumf``/``minnumf``/``maximumf``/``minimumf``/
``shrui`` (and every ``fx.math`` function), which return raw IR values when their first operand is one.
All-compile-time operands fold through the op's own semantics.
"""

from __future__ import annotations

import enum

from ..dialects import arith as _d
from ..ir import Type, Value, VectorType
from ..ir import types as _t
from ._sem.casts import RoundingMode
from ._sem.fastmath import FastMathFlags, fastmath, fastmath_attrs
from ._sem.fold import fold
from ._sem.numeric import (
    Boolean,
    Index,
    Int32,
    Numeric,
    apply_op,
    as_numeric,
    common_type,
    float_binary,
    numeric_type_of,
    resolve_dtype,
    same_type_pair,
    select,
)
from ._sem.vector import Vector, as_vector_operand
from .math import raw_like_exemplar

__all__ = [
    "max", "min", "maxnumf", "minnumf", "maximumf", "minimumf", "ceildiv", "cmpi", "cmpf", "select",
    "constant", "index_cast", "index_castui", "fastmath", "FastMathFlags", "RoundingMode", "CmpIPredicate",
    "CmpFPredicate",
    "addi", "subi", "muli", "divsi", "divui", "floordivsi", "ceildivsi", "ceildivui", "remsi", "remui",
    "andi", "ori", "xori", "shli", "shrui", "shrsi", "maxsi", "minsi", "maxui", "minui",
    "addf", "subf", "mulf", "divf", "remf", "negf",
    "extf", "truncf", "extsi", "extui", "trunci", "sitofp", "uitofp", "fptosi", "fptoui", "bitcast",
]  # fmt: skip

CmpIPredicate = enum.Enum("CmpIPredicate", {p: p for p in _d.CMPI_PREDICATES}, type=str)
CmpIPredicate.__doc__ = 'Predicates of ``cmpi`` (``CmpIPredicate.slt`` == ``"slt"``).'
CmpFPredicate = enum.Enum("CmpFPredicate", {p: p for p in _d.CMPF_PREDICATES}, type=str)
CmpFPredicate.__doc__ = "Predicates of ``cmpf`` (``o*`` ordered, ``u*`` unordered)."


def _dsl(x, fn: str):
    v = as_vector_operand(x)
    if v is None:
        raise TypeError(f"{fn}: expected a DSL value, an IR value or a Python number, got {type(x).__name__}")
    return v


def _flatten(args) -> list:
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(_flatten(a))
        else:
            out.append(a)
    return out


# -- max / min -----------------------------------------------------------------------------------

_EXTREME = {"max": (_d.maximumf, _d.maxsi, _d.maxui), "min": (_d.minimumf, _d.minsi, _d.minui)}


def _extreme(name: str, operands, fm):
    vals = [_dsl(x, f"fx.{name}") for x in _flatten(operands)]
    if not vals:
        raise ValueError(f"fx.{name} needs at least one operand")
    types = []
    for v in vals:
        t = v.dtype
        if t is Index:
            raise TypeError(f"fx.{name} does not support Index operands; cast them to fx.Int64 first")
        if t.is_storage:
            raise TypeError(f"fx.{name} does not support the narrow storage float {t.__name__}; convert it first")
        types.append(Int32 if t is Boolean else t)
    C = types[0]
    for t in types[1:]:
        C = common_type(C, t)
    if len(vals) == 1:
        v = vals[0]
        return v if v.dtype is C else v.to(C)
    fdefn, sdefn, udefn = _EXTREME[name]
    defn = fdefn if C.is_float else (sdefn if C.signed and C is not Index else udefn)
    attrs = fastmath_attrs(fm) if C.is_float else {}
    acc = vals[0].to(C)
    for v in vals[1:]:
        acc = apply_op(defn, [acc, v.to(C)], C, C, attrs)
    return acc


def max(*operands, fastmath=None):  # noqa: A001
    """The largest operand: ``fx.max(a, b, ...)`` or ``fx.max([a, (b, c)])``.

    Operands convert to one common type (Boolean widens to Int32; scalars broadcast over Vectors).
    Floats use ``arith.maximumf`` (a NaN operand gives NaN; ``-0.0 < +0.0``), integers ``maxsi``/``maxui``.

    Returns:
        A Numeric (compile-time when every operand is) or a Vector.

    Raises:
        ValueError: no operand. TypeError: Index or narrow storage-float (fp8) operands.
    """
    return _extreme("max", operands, fastmath)


def min(*operands, fastmath=None):  # noqa: A001
    """The smallest operand; as :func:`max` with ``arith.minimumf``/``minsi``/``minui``."""
    return _extreme("min", operands, fastmath)


def _named_float(defn, name: str, doc: str):
    def fn(a, b, *, fastmath=None):
        return float_binary(defn, name, _dsl(a, name), _dsl(b, name), fastmath)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


maxnumf = _named_float(
    _d.maxnumf,
    "maxnumf",
    "libm ``fmax``: the larger float; when exactly one operand is NaN the other one.\n\n"
    "Args: a, b: floats (scalars or Vectors); fastmath: flags for this op.\nRaises: TypeError: non-float operands.",
)
minnumf = _named_float(_d.minnumf, "minnumf", "libm ``fmin``: the smaller float, ignoring a single NaN.")
maximumf = _named_float(_d.maximumf, "maximumf", "IEEE ``maximum``: NaN-propagating, ``-0.0 < +0.0``.")
minimumf = _named_float(_d.minimumf, "minimumf", "IEEE ``minimum``: NaN-propagating, ``-0.0 < +0.0``.")


# -- ceildiv -------------------------------------------------------------------------------------


def ceildiv(a, b):
    """Integer division rounding toward +infinity (``arith.ceildivsi``/``ceildivui``), never overflowing
    an intermediate ``a + b - 1``.

    Returns:
        The common integer type; compile-time when both operands are.

    Raises:
        TypeError: float, Boolean or Index operands. ZeroDivisionError: a compile-time zero divisor.
        OverflowError: compile-time ``MIN // -1`` for signed types.
    """
    x, y = _dsl(a, "fx.ceildiv"), _dsl(b, "fx.ceildiv")
    for t in (x.dtype, y.dtype):
        if t is Boolean:
            raise TypeError("fx.ceildiv does not support Boolean operands")
        if t is Index:
            raise TypeError("fx.ceildiv does not support Index operands; cast them to fx.Int64 first")
        if not t.is_integer:
            raise TypeError(f"fx.ceildiv requires integer operands, got {t.__name__}")
    C = common_type(x.dtype, y.dtype)
    x, y = x.to(C), y.to(C)
    if isinstance(x, Numeric) and isinstance(y, Numeric) and x.is_static() and y.is_static():
        p, q = x.value, y.value
        if not C.signed:
            p, q = p % (1 << C.width), q % (1 << C.width)
        if q == 0:
            raise ZeroDivisionError("fx.ceildiv by a compile-time zero")
        if C.signed and p == -(1 << (C.width - 1)) and q == -1:
            raise OverflowError(f"fx.ceildiv({p}, -1) overflows {C.__name__}")
        return C._make(C.from_py(-(-p // q)))
    return apply_op(_d.ceildivsi if C.signed else _d.ceildivui, [x, y], C, C, {})


# -- comparisons, select, constants --------------------------------------------------------------


def _same_type_pair(name: str, a, b):
    """Operands of a raw binary op: one type; a Python literal takes the other operand's type."""
    return same_type_pair(name, _raw_operand(a, name), _raw_operand(b, name))


def _raw_operand(x, name: str):
    return x if isinstance(x, (bool, int, float)) else _dsl(x, name)


def _predicate(p, valid, name) -> str:
    p = p.value if isinstance(p, enum.Enum) else p
    if p not in valid:
        raise ValueError(f"{name}: unknown predicate {p!r}; expected one of {', '.join(valid)}")
    return p


def cmpi(predicate, lhs, rhs):
    """Integer comparison with an explicit predicate (``"slt"``, ``CmpIPredicate.uge``…).

    Returns:
        Boolean (a Boolean Vector for vector operands).
    """
    C, x, y = _same_type_pair("arith.cmpi", lhs, rhs)
    if C.is_float:
        raise TypeError(f"arith.cmpi compares integers, got {C.__name__}; use cmpf")
    return apply_op(_d.cmpi, [x, y], C, Boolean, {"predicate": _predicate(predicate, _d.CMPI_PREDICATES, "cmpi")})


def cmpf(predicate, lhs, rhs):
    """Float comparison with an explicit predicate (``"olt"``, ``"une"``, ``CmpFPredicate.ord``…).

    Returns:
        Boolean (a Boolean Vector for vector operands).
    """
    C, x, y = _same_type_pair("arith.cmpf", lhs, rhs)
    if not C.is_float:
        raise TypeError(f"arith.cmpf compares floats, got {C.__name__}; use cmpi")
    return apply_op(_d.cmpf, [x, y], C, Boolean, {"predicate": _predicate(predicate, _d.CMPF_PREDICATES, "cmpf")})


def constant(value, type=None, *, index=False):  # noqa: A002
    """A constant of ``type`` (an IR type such as ``T.f32``/``T.f32x4`` or a Numeric class; default: the
    literal's DSL type; ``index=True``: Index).

    Returns:
        A compile-time Numeric (it folds; the IR constant is made when a run-time op needs it), or a
        Vector for a vector type (every lane ``value``, or one value per lane from a list).
    """
    if isinstance(type, VectorType):
        D = numeric_type_of(type.elem)
        if isinstance(value, (list, tuple)):
            return Vector.from_elements(value, D)
        return Vector.filled(type.numel, value, D)
    if index:
        D = Index
    elif type is None:
        return as_numeric(value)
    else:
        D = resolve_dtype(type)
    return D(value)


# -- one function per arith op -------------------------------------------------------------------


def _binary_op(name: str, defn, is_float: bool):
    def fn(lhs, rhs, *, fastmath=None):
        C, x, y = _same_type_pair(f"arith.{name}", lhs, rhs)
        if C.is_float != is_float:
            kind = "float" if is_float else "integer"
            raise TypeError(f"arith.{name} takes {kind} operands, got {C.__name__}")
        return apply_op(defn, [x, y], C, C, fastmath_attrs(fastmath) if is_float else {})

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"``arith.{name}`` on two operands of one type (a Python literal takes the other's type): "
        f"{defn.doc or name}.\n\nReturns: a DSL value of the operands' type (compile-time when both are)."
    )
    return fn


addi = _binary_op("addi", _d.addi, False)
subi = _binary_op("subi", _d.subi, False)
muli = _binary_op("muli", _d.muli, False)
divsi = _binary_op("divsi", _d.divsi, False)
divui = _binary_op("divui", _d.divui, False)
floordivsi = _binary_op("floordivsi", _d.floordivsi, False)
ceildivsi = _binary_op("ceildivsi", _d.ceildivsi, False)
ceildivui = _binary_op("ceildivui", _d.ceildivui, False)
remsi = _binary_op("remsi", _d.remsi, False)
remui = _binary_op("remui", _d.remui, False)
andi = _binary_op("andi", _d.andi, False)
ori = _binary_op("ori", _d.ori, False)
xori = _binary_op("xori", _d.xori, False)
shli = _binary_op("shli", _d.shli, False)
shrui = _binary_op("shrui", _d.shrui, False)
shrsi = _binary_op("shrsi", _d.shrsi, False)
maxsi = _binary_op("maxsi", _d.maxsi, False)
minsi = _binary_op("minsi", _d.minsi, False)
maxui = _binary_op("maxui", _d.maxui, False)
minui = _binary_op("minui", _d.minui, False)
addf = _binary_op("addf", _d.addf, True)
subf = _binary_op("subf", _d.subf, True)
mulf = _binary_op("mulf", _d.mulf, True)
divf = _binary_op("divf", _d.divf, True)
remf = _binary_op("remf", _d.remf, True)


def negf(x, *, fastmath=None):
    """``arith.negf``: flip the sign of a float (scalar or Vector)."""
    v = _dsl(x, "arith.negf")
    if not v.dtype.is_float:
        raise TypeError(f"arith.negf takes a float, got {v.dtype.__name__}")
    if isinstance(v, Numeric) and v.is_static():
        return -v
    r = _d.negf(v.ir_value(), **fastmath_attrs(fastmath))
    return v.dtype._make(r) if isinstance(v, Numeric) else Vector._make(r, v.shape, v.dtype)


def _cast_op(name: str, defn):
    def fn(result_type, value):
        v = _dsl(value, f"arith.{name}")
        rt = result_type
        if isinstance(rt, VectorType):
            rt = rt.elem
        D = resolve_dtype(rt) if not isinstance(rt, Type) else numeric_type_of(rt)
        S = v.dtype
        if isinstance(v, Numeric):
            if v.is_static():
                return D._make(fold(defn, D, [S], [v.value]))
            return D._make(defn(v.ir_value(), result_types=[D.ir_type]))
        return Vector._make(defn(v.ir_value(), result_types=[VectorType(v.numel, D.ir_type)]), v.shape, D)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"``arith.{name}(result_type, value)``: {defn.doc or name}. ``result_type`` is an IR type (scalar, or "
        "the vector type for a Vector) or a Numeric class.\n\nReturns: a DSL value of the result type."
    )
    return fn


extf = _cast_op("extf", _d.extf)
truncf = _cast_op("truncf", _d.truncf)
extsi = _cast_op("extsi", _d.extsi)
extui = _cast_op("extui", _d.extui)
trunci = _cast_op("trunci", _d.trunci)
sitofp = _cast_op("sitofp", _d.sitofp)
uitofp = _cast_op("uitofp", _d.uitofp)
fptosi = _cast_op("fptosi", _d.fptosi)
fptoui = _cast_op("fptoui", _d.fptoui)
bitcast = _cast_op("bitcast", _d.bitcast)
index_cast = _cast_op("index_cast", _d.index_cast)
index_castui = _cast_op("index_castui", _d.index_castui)


# -- FlyDSL's spellings: as_ir_value, unwrap, ArithValue, index ---------------------------------------


def as_ir_value(value, *, keep_static=False):
    """The raw IR value of ``value`` (FlyDSL's canonical DSL → IR converter).

    ``None`` → ``None``; an IR value as is; a Python number or a compile-time fx number → an
    ``arith.constant`` (or the Python value itself with ``keep_static=True``); lists/tuples element-wise;
    anything with ``ir_value()`` → its IR value; anything else unchanged.
    """
    if value is None or type(value) is Value:
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(as_ir_value(v, keep_static=keep_static) for v in value)
    if isinstance(value, (bool, int, float)):
        if keep_static:
            return value
        return as_numeric(value).ir_value()
    if getattr(value, "_is_numeric", False) and keep_static and value.is_static():
        return value.value
    if hasattr(value, "ir_value") and callable(value.ir_value):
        return value.ir_value()
    return value


def unwrap(val, *, type=None, index=False):  # noqa: A002
    """The raw IR value of ``val``; a Python number becomes ``arith.constant`` of ``type`` (or index)."""
    if isinstance(val, (bool, int, float)) and (type is not None or index):
        return constant(val, type, index=index).ir_value()
    return as_ir_value(val)


class _ArithValueMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        if type(obj) is Value:
            t = obj.type
            return isinstance(t, (_t.IntegerType, _t.IndexType, _t.FloatType, _t.VectorType))
        if getattr(obj, "_is_vector", False):
            return True
        return getattr(obj, "_is_numeric", False) and not obj.is_static()

    def __call__(cls, value, signed=None):
        from .._mlir.ir import wrap  # cycle: flydsl._mlir is a facade built on fx

        return wrap(as_ir_value(value))


class ArithValue(metaclass=_ArithValueMeta):
    """A run-time scalar or vector value (FlyDSL's ``ArithValue``): ``isinstance`` holds for run-time fx
    numbers, Vectors and raw IR scalars/vectors; ``ArithValue(v)`` gives the fx value of ``v``."""


def index(value):
    """An ``index`` constant (``fx.arith.constant(value, index=True)``)."""
    return constant(value, index=True)


# FlyDSL's result-wrapping functions: a raw IR first operand gives a raw IR result (the other
# functions give DSL values for raw operands, as documented above)
for _name in ("maxnumf", "minnumf", "maximumf", "minimumf", "shrui"):
    globals()[_name] = raw_like_exemplar(globals()[_name])


def __getattr__(name: str):
    """FlyDSL's ``fx.arith`` also has the MLIR arith builders (``ConstantOp``, ``IndexCastOp``,
    ``CmpIPredicate`` …): those of :mod:`flydsl._mlir.dialects.arith`, resolved on first use."""
    from .._mlir.dialects import arith as raw  # cycle: flydsl._mlir is a facade built on fx

    if name in raw.__all__:
        return getattr(raw, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
