"""Scalar numeric types of the DSL (``Int8 … Uint64``, ``Boolean``, ``Index``, ``Float16 … Float64``, fp8),
their operators, the promotion lattice and conversions.

A ``Numeric`` holds either a Python value (compile-time: arithmetic folds on the host and emits no
IR) or an IR value (run-time: arithmetic emits ``arith`` ops). Types, promotion and folding follow
FlyDSL's ``docs/language/arithmetic_types.md``: literals normalize to ``Int32``/``Int64``/``Float32``/
``Boolean``; integer construction wraps modulo ``2**width`` like a C cast; the common type of two
operands follows the lattice in :func:`common_type`; ``/`` on integers gives a float; ``//`` floors
and ``%`` truncates (C remainder) for signed integers — folded and run-time alike.

The operators are the methods of :class:`ScalarOperators`, a mixin of :class:`Numeric`: each states the
type rule (:func:`operand_types`), then folds (:func:`fold_binary`, through the op's own semantics) or
emits one op (:func:`emit_binary`). ``fx.Vector`` applies the same two functions lane-wise, so a scalar
and a vector of the same dtypes always produce the same element type and the same op.
"""

from __future__ import annotations

import math as _pymath

import numpy as np

from ... import ir
from ...dialects import arith
from ...dialects import gpu as _g
from ...dialects import math as dmath
from ...ir import Value
from ...ir import types as irt
from .c_abi import scalar_slot
from .casts import cast_ir, check_rounding_mode, fold_cast
from .context import current_target
from .errors import RuntimeValueError, StaticValueProtocol, runtime_value_error
from .fastmath import fastmath_attrs
from .fold import fold, wrap_int
from .operators import (
    ARITH_KINDS,
    BIT_KINDS,
    CMP_KINDS,
    SYMBOL,
    emit_binary,
    fold_binary,
    int_pow,
    operator_mixin,
)

__all__ = [
    "Numeric", "Integer", "Float", "Boolean", "Index", "Int8", "Int16", "Int32", "Int64", "Uint8", "Uint16",
    "Uint32", "Uint64", "Float16", "BFloat16", "Float32", "Float64", "Float8E4M3FN", "Float8E5M2",
    "Float8E4M3FNUZ", "Float8E5M2FNUZ", "ScalarOperators", "as_numeric", "common_type", "numeric_type_of",
    "int_type", "is_dsl_value", "resolve_dtype", "RuntimeValueError", "binary", "select", "operand_types",
    "norm_operand", "apply_op", "math_operand", "float_binary", "same_type_pair", "shuffle_i32",
]  # fmt: skip

# ---------------------------------------------------------------------------------------------
# binary operators: the type rule, then a fold or one op
# ---------------------------------------------------------------------------------------------


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


def _operand(x):
    """An operand of a named-op method: a DSL scalar or Vector (Python literals and raw scalars by value)."""
    return x if getattr(x, "_is_vector", False) else as_numeric(x)


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


def _mul(x, y):
    return binary("mul", x, y)


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
        r = int_pow(a, b, _mul)
        return C._make(1) if r is None else r
    av, bv = a._v, b._v
    if type(av) is not Value and type(bv) is not Value:
        return R._make(fold_binary(kind, C, R, av, bv))
    return R._make(emit_binary(kind, C, a.ir_value(), b.ir_value()))


# ---------------------------------------------------------------------------------------------
# unary operators and select
# ---------------------------------------------------------------------------------------------


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
        return apply_op(dmath.absf, [x], C, C, fastmath_attrs())
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

    A Vector condition selects lane-wise; Vector choices under a scalar condition select whole vectors
    (the Vector class's ``select_whole``).
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
        for v in (true_value, false_value):
            if getattr(v, "_is_vector", False):
                return type(v).select_whole(c, true_value, false_value)
        raise TypeError("select choices must be DSL values or Python numbers")
    C = common_type(type(t), type(f))
    t, f = t.to(C), f.to(C)
    if c.is_static():
        return t if c.value else f
    if t.is_static() and f.is_static() and t.value == f.value and type(t.value) is type(f.value):
        return t
    return C._make(arith.select(c.value, t.ir_value(), f.ir_value()))


# ---------------------------------------------------------------------------------------------
# the operators (a mixin: Python looks operators up on the class)
# ---------------------------------------------------------------------------------------------


ScalarOperators = operator_mixin(
    "ScalarOperators",
    "Python's operators on DSL scalars: ``a <op> b`` is :func:`binary` (NotImplemented for operands that are "
    "not scalars, so a Vector's reflected operator takes over); ``-a``, ``abs(a)``, ``~a`` as above.",
    binary,
    _neg,
    _abs,
    _invert,
)


# ---------------------------------------------------------------------------------------------
# Numeric: data, construction, the Python protocol, conversions
# ---------------------------------------------------------------------------------------------


class _NumericMeta(type):
    @property
    def log_width(cls) -> int:
        """``ceil(log2(width))``."""
        return max(0, (cls.width - 1).bit_length())

    @property
    def zero(cls):
        """The Python zero of the type (``0``, ``0.0`` or ``False``)."""
        if cls is Boolean:
            return False
        return 0.0 if cls.is_float else 0

    def __str__(cls) -> str:
        return cls.__name__


class Numeric(ScalarOperators, StaticValueProtocol, metaclass=_NumericMeta):
    """Base of every DSL scalar. ``Type(x)`` constructs or converts (C-cast semantics for ints)."""

    __slots__ = ("_v",)
    width: int = 0
    signed: bool | None = None
    ir_type: ir.Type = None  # type: ignore[assignment]
    numpy_dtype: np.dtype = None  # type: ignore[assignment]
    is_integer = False
    is_float = False
    is_storage = False  # narrow floats (fp8): conversions only, no arithmetic
    _is_numeric = True
    _is_vector = False

    def __init__(self, x=None):
        cls = type(self)
        if x is None:
            x = 0
        if isinstance(x, Numeric):
            self._v = x.to(cls)._v
        elif type(x) is Value:
            if x.type is cls.ir_type:
                self._v = x
            else:
                self._v = numeric_type_of(x.type)(x).to(cls)._v
        elif isinstance(x, (bool, int, float, np.generic)):
            self._v = cls.from_py(x)
        elif getattr(x, "_is_vector", False):
            raise TypeError(f"cannot convert a Vector to the scalar {cls.__name__}; use .to() on the vector")
        elif hasattr(x, "ir_value") and callable(x.ir_value):
            v = x.ir_value()
            self._v = numeric_type_of(v.type)(v).to(cls)._v
        else:
            raise TypeError(f"cannot make a {cls.__name__} from {type(x).__name__} {x!r}")

    # -- construction helpers --------------------------------------------------------------
    @classmethod
    def from_py(cls, x):
        raise NotImplementedError

    @classmethod
    def _py_from_np(cls, a: np.ndarray):
        raise NotImplementedError

    @classmethod
    def _make(cls, v):
        """Wrap an already-normalized Python value or an IR value of ``cls.ir_type`` (no checks)."""
        o = object.__new__(cls)
        o._v = v
        return o

    @staticmethod
    def from_ir_type(t: ir.Type) -> type[Numeric]:
        """The Numeric class of an IR scalar type (``i32`` → ``Int32``; signless integers read as signed).

        Raises:
            TypeError: no DSL scalar type has that IR type (vectors, pointers, i128…).
        """
        return numeric_type_of(t)

    @staticmethod
    def from_python_value(v) -> Numeric:
        """Same as :func:`as_numeric`."""
        return as_numeric(v)

    # -- queries -----------------------------------------------------------------------------
    def is_static(self) -> bool:
        """Whether the value is known at compile time (a Python value) rather than at run time."""
        return type(self._v) is not Value

    @property
    def value(self):
        """The Python value (compile-time) or the IR value (run-time)."""
        return self._v

    @property
    def dtype(self) -> type[Numeric]:
        return type(self)

    @property
    def type(self) -> ir.Type:
        return type(self).ir_type

    def ir_value(self) -> Value:
        """The IR value, materializing an ``arith.constant`` for a compile-time value."""
        v = self._v
        if type(v) is Value:
            return v
        return arith.constant(value=v, result_types=[type(self).ir_type])

    def __fly_values__(self) -> list[Value]:
        """The DSL value protocol: the IR values that carry this value (one)."""
        return [self.ir_value()]

    def __fly_rebuild__(self, values):
        """The DSL value protocol: a run-time value of this type from the IR values of :meth:`__fly_values__`."""
        return type(self)._make(values[0])

    def __c_abi_spec__(self) -> list:
        """FlyDSL's C-ABI protocol: ``[(ctype, fill)]``, how a host function receives a value of this type."""
        return [scalar_slot(type(self))]

    def __repr__(self) -> str:
        if self.is_static():
            return f"{type(self).__name__}({self._v!r})"
        return f"{type(self).__name__}(<run-time {type(self).ir_type}>)"

    def __hash__(self) -> int:
        v = self._v
        if type(v) is Value:  # a dict would look it up by identity: a silent miss (FLY122)
            raise runtime_value_error(type(self).__name__, "hash")
        return hash((type(self), v))

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        return format(self._static_or_raise("format"), spec)

    # -- conversions -------------------------------------------------------------------------
    def to(self, dtype, *, rounding_mode=None):
        """Value-preserving conversion to ``dtype`` (a Numeric class, ``int``/``float``/``bool`` or an
        ``ir.Type``; ``ir.Value`` gives the materialized IR value)."""
        if dtype is int or dtype is float or dtype is bool:
            if rounding_mode is not None:
                raise TypeError("rounding_mode applies to float-to-float casts only")
            return dtype(self._static_or_raise(dtype.__name__))
        if dtype is Value:
            return self.ir_value()
        D = resolve_dtype(dtype)
        S = type(self)
        v = self._v
        static = type(v) is not Value
        mode = check_rounding_mode(S, D, rounding_mode, static)
        if S is D:
            return self
        if static:
            if S.is_float and D.is_integer and D is not Boolean and (_pymath.isnan(v) or _pymath.isinf(v)):
                err = ValueError if _pymath.isnan(v) else OverflowError
                raise err(f"cannot convert {v} to {D.__name__}")
            return D._make(fold_cast(v, S, D))
        return D._make(cast_ir(v, S, D, mode))

    def bitcast(self, dtype):
        """Reinterpret the bits as ``dtype`` (same width).

        Raises:
            TypeError: a width mismatch or a dtype that is not a DSL type.
        """
        D = resolve_dtype(dtype)
        S = type(self)
        if D.width != S.width:
            raise TypeError(f"bitcast needs equal widths: {S.__name__} is {S.width} bits, {D.__name__} is {D.width}")
        if S is D:
            return self
        v = self._v
        if S.ir_type is D.ir_type:
            return D._make(v if type(v) is Value else D.from_py(v))
        if type(v) is not Value:
            return D._make(D._py_from_np(np.asarray(v, dtype=S.numpy_dtype).view(D.numpy_dtype)))
        return D._make(arith.bitcast(v, result_types=[D.ir_type]))

    def select(self, true_value, false_value):
        """``self ? true_value : false_value`` (a non-Boolean condition is tested for non-zero)."""
        return select(self, true_value, false_value)

    def with_signedness(self, signed: bool):
        """The integer type of the same width with the given signedness, same bits."""
        cls = type(self)
        if not cls.is_integer or cls is Boolean:
            raise TypeError(f"{cls.__name__} has no signedness")
        target = _INT_BY[(cls.width, bool(signed))]
        return target._make(self._v if type(self._v) is Value else wrap_int(self._v, cls.width, signed))

    # -- FlyDSL's named-op methods (fx.arith / fx.math / fx.gpu on this value) ---------------------
    def maximumf(self, other, *, fastmath=None):
        """``fx.arith.maximumf(self, other)``."""
        return float_binary(arith.maximumf, "maximumf", self, _operand(other), fastmath)

    def minimumf(self, other, *, fastmath=None):
        """``fx.arith.minimumf(self, other)``."""
        return float_binary(arith.minimumf, "minimumf", self, _operand(other), fastmath)

    def addf(self, other, *, fastmath=None):
        """``fx.arith.addf(self, other)``."""
        C, x, y = same_type_pair("arith.addf", self, other)
        if not C.is_float:
            raise TypeError(f"arith.addf takes float operands, got {C.__name__}")
        return apply_op(arith.addf, [x, y], C, C, fastmath_attrs(fastmath))

    def shrui(self, other):
        """Logical shift right whatever the signedness: ``fx.arith.shrui(self, other)``."""
        C, x, y = same_type_pair("arith.shrui", self, other)
        if C.is_float:
            raise TypeError(f"arith.shrui takes integer operands, got {C.__name__}")
        return apply_op(arith.shrui, [x, y], C, C, {})

    def exp2(self, *, fastmath=None):
        """``fx.math.exp2(self)``."""
        v = math_operand(self, "exp2", True)
        return apply_op(dmath.exp2, [v], v.dtype, v.dtype, fastmath_attrs(fastmath))

    def shuffle_xor(self, offset, width=None):
        """``fx.gpu.shuffle_xor(self, offset, width)``."""
        return self.shuffle(offset, width, "xor")

    def shuffle(self, offset, width=None, mode: str = "xor"):
        """This value read from another lane of the warp (``gpu.shuffle``; see ``fx.gpu.shuffle``): 8-bit
        and Boolean values travel as 32 bits; a compile-time value is the same in every lane and is
        returned as is."""
        if mode not in _g.SHUFFLE_MODES:
            raise ValueError(f"invalid shuffle mode {mode!r}; expected one of ({', '.join(_g.SHUFFLE_MODES)})")
        if self.is_static():
            return self
        w = current_target().warp_size if width is None else width
        d = type(self)
        if d is Boolean:
            return self.to(Int32).shuffle(offset, w, mode) != 0
        if d.width < 16:
            bits = _INT_BY[(d.width, True)]
            return self.bitcast(bits).to(Int32).shuffle(offset, w, mode).to(bits).bitcast(d)
        return d._make(_g.shuffle(self._v, shuffle_i32(offset, "offset"), shuffle_i32(w, "width"), mode=mode))


def shuffle_i32(x, what: str) -> Value:
    """A shuffle offset or width as an ``i32`` IR value."""
    n = norm_operand(x)
    if n is None or not n.dtype.is_integer:
        raise TypeError(f"shuffle {what} must be an integer, got {x!r}")
    return n.to(Int32).ir_value()


class Integer(Numeric):
    """Base of the integer types (``Int8`` … ``Uint64``, ``Boolean``, ``Index``)."""

    __slots__ = ()
    is_integer = True

    def unpack(self):
        """FlyDSL's int-tuple leaf helper: a size or leaf shape known only at run time is this value
        (``fx.size(t).unpack()``, ``layout.shape.unpack()`` of a rank-1 layout), as a ``StaticInt`` is its int."""
        return self

    @classmethod
    def from_py(cls, x):
        if isinstance(x, (float, np.floating)):
            return _int_from_float(float(x), cls.__name__, cls.width, bool(cls.signed))
        return wrap_int(int(x), cls.width, bool(cls.signed))

    @classmethod
    def _py_from_np(cls, a):
        return wrap_int(int(a), cls.width, bool(cls.signed))


def _int_from_float(x: float, name: str, width: int, signed: bool) -> int:
    """A Python float to an integer type as the GPU converts (``fptosi``/``fptoui``): toward zero,
    saturating at the type's bounds. NaN and infinities have no integer value here."""
    if _pymath.isnan(x):
        raise ValueError(f"cannot convert float NaN to {name}")
    if _pymath.isinf(x):
        raise OverflowError(f"cannot convert float {x} to {name}")
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    return min(max(int(x), lo), hi)


class Boolean(Integer):
    """``i1``. Normalizes to True/False; widens to ``Int32`` in arithmetic."""

    __slots__ = ()
    width = 1
    signed = True
    ir_type = irt.i1
    numpy_dtype = np.dtype(np.bool_)

    @classmethod
    def from_py(cls, x):
        if isinstance(x, (float, np.floating)) and (_pymath.isnan(x) or _pymath.isinf(x)):
            raise ValueError(f"cannot convert {x} to Boolean")
        return bool(x)

    @classmethod
    def _py_from_np(cls, a):
        return bool(a)


class Index(Integer):
    """MLIR ``index`` (64-bit, treated as unsigned in the lattice)."""

    __slots__ = ()
    width = 64
    signed = False
    ir_type = irt.index
    numpy_dtype = np.dtype(np.int64)

    @classmethod
    def from_py(cls, x):
        # stored signed (numpy int64); unsigned ops reinterpret the bits
        if isinstance(x, (float, np.floating)):
            return _int_from_float(float(x), "Index", 64, True)
        return wrap_int(int(x), 64, True)

    @classmethod
    def _py_from_np(cls, a):
        return wrap_int(int(a), 64, True)


class Float(Numeric):
    """Base of the float types (``Float16`` … ``Float64`` and the fp8 storage types)."""

    __slots__ = ()
    is_float = True

    @classmethod
    def from_py(cls, x):
        # the rounding of a run-time ``truncf``: correctly rounded (bf16 too), fp8 saturating
        with np.errstate(all="ignore"):
            r = arith.float_round(np.asarray(float(x), dtype=np.float64), cls.ir_type)
            return float(np.asarray(r).astype(np.float64))

    @classmethod
    def _py_from_np(cls, a):
        with np.errstate(all="ignore"):
            return float(np.asarray(a).astype(cls.numpy_dtype).astype(np.float64))


def _int_cls(name, width, signed):
    t = irt.IntegerType(width)
    doc = f"{'Signed' if signed else 'Unsigned'} {width}-bit integer (IR type {t})."
    attrs = {"__slots__": (), "width": width, "signed": signed, "ir_type": t, "numpy_dtype": ir.numpy_dtype(t)}
    return type(name, (Integer,), {**attrs, "__doc__": doc, "__module__": "flydsl.expr.numeric"})


def _float_cls(name, t):
    storage = t.width == 8
    kind = "narrow storage float: convert with .to() before arithmetic" if storage else "float"
    attrs = {"__slots__": (), "width": t.width, "ir_type": t, "numpy_dtype": ir.numpy_dtype(t), "is_storage": storage}
    return type(name, (Float,), {**attrs, "__doc__": f"{t.width}-bit {kind} (IR type {t}).",
                                 "__module__": "flydsl.expr.numeric"})  # fmt: skip


Int8 = _int_cls("Int8", 8, True)
Int16 = _int_cls("Int16", 16, True)
Int32 = _int_cls("Int32", 32, True)
Int64 = _int_cls("Int64", 64, True)
Uint8 = _int_cls("Uint8", 8, False)
Uint16 = _int_cls("Uint16", 16, False)
Uint32 = _int_cls("Uint32", 32, False)
Uint64 = _int_cls("Uint64", 64, False)
Float16 = _float_cls("Float16", irt.f16)
BFloat16 = _float_cls("BFloat16", irt.bf16)
Float32 = _float_cls("Float32", irt.f32)
Float64 = _float_cls("Float64", irt.f64)
Float8E4M3FN = _float_cls("Float8E4M3FN", irt.f8E4M3FN)
Float8E5M2 = _float_cls("Float8E5M2", irt.f8E5M2)
Float8E4M3FNUZ = _float_cls("Float8E4M3FNUZ", irt.f8E4M3FNUZ)
Float8E5M2FNUZ = _float_cls("Float8E5M2FNUZ", irt.f8E5M2FNUZ)
for _c in (Numeric, Integer, Float, Boolean, Index):
    _c.__module__ = "flydsl.expr.numeric"  # the user-facing module (reprs, pickles, docs)

_INT_BY = {(c.width, c.signed): c for c in (Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64)}
_BY_IR_TYPE: dict[ir.Type, type[Numeric]] = {
    c.ir_type: c
    for c in (
        Boolean,
        Int8,
        Int16,
        Int32,
        Int64,
        Index,
        Float16,
        BFloat16,
        Float32,
        Float64,
        Float8E4M3FN,
        Float8E5M2,
        Float8E4M3FNUZ,
        Float8E5M2FNUZ,
    )  # fmt: skip
}


def numeric_type_of(t: ir.Type) -> type[Numeric]:
    """The Numeric class of an IR scalar type (signless integers read as signed)."""
    try:
        return _BY_IR_TYPE[t]
    except KeyError:
        raise TypeError(f"no DSL scalar type for IR type {t}") from None


def int_type(width: int, signed: bool) -> type[Numeric]:
    """The integer class of ``width`` (8, 16, 32, 64) and signedness."""
    return _INT_BY[(width, bool(signed))]


def is_dsl_value(x) -> bool:
    return getattr(x, "_is_numeric", False) or getattr(x, "_is_vector", False)


def as_numeric(x) -> Numeric:
    """Python literals → ``Int32``/``Int64``/``Float32``/``Boolean``; IR values → their type;
    Numerics pass through."""
    if isinstance(x, Numeric):
        return x
    if isinstance(x, bool) or isinstance(x, np.bool_):
        return Boolean._make(bool(x))
    if isinstance(x, (int, np.integer)):
        x = int(x)
        if -(1 << 31) <= x < (1 << 31):
            return Int32._make(x)
        if -(1 << 63) <= x < (1 << 64):
            return Int64._make(wrap_int(x, 64, True))
        raise OverflowError(f"integer literal {x} does not fit in 64 bits")
    if isinstance(x, (float, np.floating)):
        return Float32._make(Float32.from_py(x))
    if type(x) is Value:
        return numeric_type_of(x.type)._make(x)
    raise TypeError(f"expected a DSL number or a Python int/float/bool, got {type(x).__name__} {x!r}")


def resolve_dtype(dtype) -> type[Numeric]:
    """A Numeric class from a Numeric class or a scalar ``ir.Type`` (``T.f32``).

    Raises:
        TypeError: anything else (a vector type, a Python type, an instance…).
    """
    if isinstance(dtype, type) and issubclass(dtype, Numeric):
        return dtype
    if isinstance(dtype, ir.Type) and not isinstance(dtype, ir.VectorType):
        return numeric_type_of(dtype)
    raise TypeError(f"expected a DSL numeric type (e.g. fx.Float32) or a scalar IR type (T.f32), got {dtype!r}")


# ---------------------------------------------------------------------------------------------
# the promotion lattice
# ---------------------------------------------------------------------------------------------

_FLOAT_RANK = {Float16: 1, BFloat16: 1, Float32: 2, Float64: 3}
_FLOAT_BY_WIDTH = {16: Float16, 32: Float32, 64: Float64}


def _float_covering(width: int):
    for w in (16, 32, 64):
        if w >= width:
            return _FLOAT_BY_WIDTH[w]
    return Float64


def common_type(a: type[Numeric], b: type[Numeric]) -> type[Numeric]:
    """The type two operands convert to (FlyDSL's interoperability table)."""
    if a is b:
        return a
    if a.is_float and b.is_float:
        ra, rb = _FLOAT_RANK.get(a, 0), _FLOAT_RANK.get(b, 0)
        if a.width != b.width:
            wider = a if a.width > b.width else b
            return wider if wider in _FLOAT_RANK else _float_covering(wider.width)
        if ra != rb:
            return a if ra > rb else b
        return Float32  # f16 + bf16 (or two different fp8 kinds): neither holds the other
    if a.is_float or b.is_float:
        f, i = (a, b) if a.is_float else (b, a)
        if f not in _FLOAT_RANK:  # fp8 storage types combine as their covering float
            f = _float_covering(max(f.width, 16))
        if f.width >= i.width:
            return f
        return _float_covering(i.width)
    # two integers
    if a is Boolean:
        return b
    if b is Boolean:
        return a
    if a is Index or b is Index:
        other = b if a is Index else a
        return Index if other.width <= 64 else other
    if a.signed == b.signed:
        return a if a.width >= b.width else b
    u, s = (a, b) if not a.signed else (b, a)
    return u if u.width >= s.width else s


# ---------------------------------------------------------------------------------------------
# named ops (fx.arith.*, fx.math.*) on scalars; Vector operands go to the Vector class
# ---------------------------------------------------------------------------------------------


def apply_op(defn, operands: list, C, R, attrs: dict):
    """``defn`` on ``operands`` (DSL scalars or Vectors) converted to ``C``, result type ``R``; folds when
    every operand is a compile-time scalar. With a Vector operand, the Vector class applies it lane-wise
    (its ``apply_lanes``)."""
    for o in operands:
        if getattr(o, "_is_vector", False):
            return type(o).apply_lanes(defn, operands, C, R, attrs)
    ops = [o if type(o) is C else o.to(C) for o in operands]
    if all(type(o._v) is not Value for o in ops):
        return R._make(fold(defn, R, [C] * len(ops), [o._v for o in ops], **attrs))
    return R._make(defn(*[o.ir_value() for o in ops], **attrs))


def math_operand(v, name: str, want_float: bool):
    """Check a ``fx.math.<name>`` operand (a DSL scalar or Vector) and return it.

    Raises:
        TypeError: an integer (or fp8) operand of a float function, a float or Boolean one of an integer
            function.
    """
    t = v.dtype
    if want_float:
        if not t.is_float:
            raise TypeError(f"fx.math.{name} needs a float, got {t.__name__}; convert with .to(fx.Float32)")
        if t.is_storage:
            raise TypeError(f"fx.math.{name}: {t.__name__} is a narrow storage float; convert with .to(fx.Float32)")
    elif not t.is_integer or t is Boolean:
        raise TypeError(f"fx.math.{name} needs an integer, got {t.__name__}")
    return v


def float_binary(defn, name: str, x, y, fastmath):
    """``defn(x, y)`` for the named float ops (``maxnumf``, ``maximumf``…): both operands convert to their
    common type, which must be a float.

    Raises:
        TypeError: non-float (or fp8) operands.
    """
    C = common_type(x.dtype, y.dtype)
    if not C.is_float or C.is_storage:
        raise TypeError(f"{name} needs float operands, got {x.dtype.__name__} and {y.dtype.__name__}")
    return apply_op(defn, [x.to(C), y.to(C)], C, C, fastmath_attrs(fastmath))


def same_type_pair(name: str, a, b):
    """Operands of a raw binary op (``fx.arith.addi``…): one type; a Python literal takes the other
    operand's type. Returns ``(type, a, b)`` as DSL values.

    Raises:
        TypeError: operands of two different types.
    """
    if isinstance(a, (bool, int, float)) and not isinstance(b, (bool, int, float)):
        y = _named_operand(b, name)
        return y.dtype, _named_operand(y.dtype(a), name), y
    if isinstance(b, (bool, int, float)) and not isinstance(a, (bool, int, float)):
        x = _named_operand(a, name)
        return x.dtype, x, _named_operand(x.dtype(b), name)
    x, y = _named_operand(a, name), _named_operand(b, name)
    if x.dtype.ir_type is not y.dtype.ir_type:
        raise TypeError(f"{name} needs operands of one type, got {x.dtype.__name__} and {y.dtype.__name__}")
    return x.dtype, x, y


def _named_operand(x, name: str):
    if isinstance(x, Numeric) or getattr(x, "_is_vector", False):
        return x
    try:
        return as_numeric(x)
    except TypeError:
        got = type(x).__name__
        raise TypeError(f"{name}: expected a DSL value, an IR value or a Python number, got {got}") from None
