"""``fx.arith``: typed arithmetic functions (FlyDSL names) over DSL scalars, Vectors and raw IR values.

* ``max``/``min``: variadic (nested lists too), one common type, NaN-propagating for floats
  (``arith.maximumf``/``minimumf``, ``-0.0 < +0.0``), ``maxsi``/``maxui`` for integers.
* ``maxnumf``/``minnumf`` (libm ``fmax``/``fmin``: the non-NaN operand wins), ``maximumf``/``minimumf``.
* ``ceildiv``: integer division rounding up without the ``(a + b - 1) // b`` overflow.
* ``cmpi``/``cmpf``/``select``/``constant``/``index_cast`` and one function per ``arith`` op
  (``addf``, ``muli``, ``extf`` …) for code written against MLIR's builders.

Every function accepts DSL values, raw IR values and Python literals and returns DSL values
(``Numeric`` or ``Vector``); all-compile-time operands fold through the op's own semantics.
"""

from __future__ import annotations

import enum

from ..dialects import arith as _d
from ..ir import Type, VectorType
from ._convert import RoundingMode, resolve_dtype
from ._fastmath import FastMathFlags, fastmath, fastmath_attrs
from ._ops import select
from .numeric import Boolean, Index, Int32, Numeric, _fold, as_numeric, common_type, numeric_type_of
from .vector import Vector, _lanes_of, as_vector_operand

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


def _apply2(defn, C, x, y, attrs: dict, R=None):
    """``defn(x, y)`` on operands already of type ``C`` (scalars fold when both are compile-time)."""
    R = R or C
    if isinstance(x, Numeric) and isinstance(y, Numeric):
        if x.is_static() and y.is_static():
            return R._make(_fold(defn, R, [C, C], [x.value, y.value], **attrs))
        return R._make(defn(x.ir_value(), y.ir_value(), **attrs))
    shape = x.shape if isinstance(x, Vector) else y.shape
    if isinstance(x, Vector) and isinstance(y, Vector) and x.shape != y.shape:
        from ._shape import broadcast_shapes

        shape = broadcast_shapes(x.shape, y.shape)
    return Vector._make(defn(_lanes_of(x, C, shape), _lanes_of(y, C, shape), **attrs), shape, R)


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
        acc = _apply2(defn, C, acc, v.to(C), attrs)
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


def _float_pair(name: str, a, b):
    x, y = _dsl(a, name), _dsl(b, name)
    C = common_type(x.dtype, y.dtype)
    if not C.is_float or C.is_storage:
        raise TypeError(f"{name} needs float operands, got {x.dtype.__name__} and {y.dtype.__name__}")
    return C, x.to(C), y.to(C)


def _named_float(defn, name: str, doc: str):
    def fn(a, b, *, fastmath=None):
        C, x, y = _float_pair(name, a, b)
        return _apply2(defn, C, x, y, fastmath_attrs(fastmath))

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
    return _apply2(_d.ceildivsi if C.signed else _d.ceildivui, C, x, y, {})


# -- comparisons, select, constants --------------------------------------------------------------


def _same_type_pair(name: str, a, b):
    """Operands of a raw binary op: one type; a Python literal takes the other operand's type."""
    if isinstance(a, (bool, int, float)) and not isinstance(b, (bool, int, float)):
        y = _dsl(b, name)
        return y.dtype, _dsl(y.dtype(a), name), y
    if isinstance(b, (bool, int, float)) and not isinstance(a, (bool, int, float)):
        x = _dsl(a, name)
        return x.dtype, x, _dsl(x.dtype(b), name)
    x, y = _dsl(a, name), _dsl(b, name)
    if x.dtype.ir_type is not y.dtype.ir_type:
        raise TypeError(f"{name} needs operands of one type, got {x.dtype.__name__} and {y.dtype.__name__}")
    return x.dtype, x, y


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
    return _apply2(_d.cmpi, C, x, y, {"predicate": _predicate(predicate, _d.CMPI_PREDICATES, "cmpi")}, Boolean)


def cmpf(predicate, lhs, rhs):
    """Float comparison with an explicit predicate (``"olt"``, ``"une"``, ``CmpFPredicate.ord``…).

    Returns:
        Boolean (a Boolean Vector for vector operands).
    """
    C, x, y = _same_type_pair("arith.cmpf", lhs, rhs)
    if not C.is_float:
        raise TypeError(f"arith.cmpf compares floats, got {C.__name__}; use cmpi")
    return _apply2(_d.cmpf, C, x, y, {"predicate": _predicate(predicate, _d.CMPF_PREDICATES, "cmpf")}, Boolean)


def constant(value, type=None, *, index=False):  # noqa: A002
    """A constant of ``type`` (an IR type such as ``T.f32``/``T.f32x4`` or a Numeric class; default: the
    literal's DSL type; ``index=True``: Index).

    Returns:
        A compile-time Numeric (it folds; the IR constant is made when a run-time op needs it), or a
        Vector for a vector type (every lane ``value``, or one value per lane from a list).
    """
    if isinstance(type, VectorType):
        from .vector import Vector as _V

        D = numeric_type_of(type.elem)
        if isinstance(value, (list, tuple)):
            return _V.from_elements(value, D)
        return _V.filled(type.numel, value, D)
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
        return _apply2(defn, C, x, y, fastmath_attrs(fastmath) if is_float else {})

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
                return D._make(_fold(defn, D, [S], [v.value]))
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


_COMPAT_NAMES = ("ArithValue", "unwrap", "index")


def __getattr__(name: str):
    """FlyDSL's ``fx.arith`` also has ``ArithValue``, ``unwrap``, ``index`` and the MLIR arith builders
    (``ConstantOp``, ``IndexCastOp``, ``CmpIPredicate`` …): resolved on first use."""
    import importlib

    if name in _COMPAT_NAMES:
        return getattr(importlib.import_module("._compat", __package__), name)
    raw = importlib.import_module("..._mlir.dialects.arith", __name__)
    if name in raw.__all__:
        return getattr(raw, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
