"""Scalar numeric types of the DSL: ``Int8 … Uint64``, ``Boolean``, ``Index``, ``Float16 … Float64``, fp8.

A ``Numeric`` holds either a Python value (compile-time: arithmetic folds on the host and emits no
IR) or an IR value (run-time: arithmetic emits ``arith`` ops). Types, promotion and folding follow
FlyDSL's ``docs/language/arithmetic_types.md``: literals normalize to ``Int32``/``Int64``/``Float32``/
``Boolean``; integer construction wraps modulo ``2**width`` like a C cast; the common type of two
operands follows the lattice in :func:`common_type`; ``/`` on integers gives a float; ``//`` floors
and ``%`` truncates (C remainder) for signed integers — folded and run-time alike.
"""

from __future__ import annotations

import math as _pymath

import numpy as np

from .. import ir
from ..dialects import arith
from ..ir import Value
from ..ir import types as irt

__all__ = [
    "Numeric",
    "Integer",
    "Float",
    "Boolean",
    "Index",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Uint8",
    "Uint16",
    "Uint32",
    "Uint64",
    "Float16",
    "BFloat16",
    "Float32",
    "Float64",
    "Float8E4M3FN",
    "Float8E5M2",
    "Float8E4M3FNUZ",
    "Float8E5M2FNUZ",
    "as_numeric",
    "common_type",
    "numeric_type_of",
    "is_dsl_value",
    "RuntimeValueError",
    "RUNTIME_VALUE_HINT",
]

RUNTIME_VALUE_HINT = (
    "It is a run-time value (known only when the kernel runs), so Python cannot use it here. "
    "Use `fx.const_expr(...)` for a compile-time test, `fx.range_constexpr` for an unrolled loop, "
    "`cond.select(a, b)` to pick a value, or an `if` on it inside the kernel (it becomes scf.if)."
)

# what to write instead, per Python protocol a run-time value was forced into
_PROTOCOL_FIX = {
    "bool": (
        "a Python bool (`if`, `while`, `and`/`or`/`not`, `bool()`)",
        "Use `fx.const_expr(...)` for a test known at compile time, `cond.select(a, b)` to pick a value, "
        "or write the `if`/`while` in a @flyc.kernel body (it becomes scf.if/scf.while). "
        'max()/min()/sorted()/`in` over a Vector compare lanes in Python: use v.reduce("max"), '
        'v.reduce("min"), fx.max/fx.min, or (v == x).reduce("or") instead.',
    ),
    "int": (
        "a Python int (`int()`)",
        "Its value exists only when the kernel runs: keep computing with it as a DSL value, or convert it "
        "with `.to(fx.Int64)`.",
    ),
    "float": (
        "a Python float (`float()`)",
        "Its value exists only when the kernel runs: keep computing with it as a DSL value, or convert it "
        "with `.to(fx.Float32)`.",
    ),
    "hash": (
        "a key of a Python dict or a member of a set (`d[x]`, `x in d`)",
        "Its value exists only when the kernel runs, so no Python dict can look it up: index a Vector or a "
        "tensor with it instead (a table of constants becomes `fx.Vector`/a tensor argument), or pick with "
        "`cond.select(a, b)`.",
    ),
    "format": (
        "a formatted Python string (a format spec such as `{x:04d}` or `format(x, ...)`)",
        'Its value exists only when the kernel runs: print it with `fx.printf("{}", x)`, which formats on the device.',
    ),
    "index": (
        "a Python index (list/tuple index, slice or `range()` bound)",
        "Index a Vector with it instead (`vec[i]` emits vector.extractelement), pick with `cond.select(a, b)`, "
        "or loop with `range(n)` in a @flyc.kernel body (it becomes scf.for); an unrolled "
        "`fx.range_constexpr` loop needs a compile-time bound.",
    ),
}


# protocols whose misuse has a catalogue entry (the name of the Diag in flydsl.compiler.errors)
_PROTOCOL_DIAG = {"hash": "RUNTIME_DICT_KEY", "format": "RUNTIME_FORMAT"}


class RuntimeValueError(TypeError, RuntimeError):
    """A run-time DSL value was used where Python needs a real value (``bool()``, ``int()``, an index…).

    It is both a ``TypeError`` (flydsl's contract) and a ``RuntimeError`` (what FlyDSL raises)."""


def runtime_value_error(type_name: str, protocol: str) -> RuntimeValueError:
    """The error for forcing a run-time ``type_name`` value into a Python ``protocol`` (see _PROTOCOL_FIX)."""
    what, fix = _PROTOCOL_FIX[protocol]
    e = RuntimeValueError(
        f"cannot use a run-time {type_name} as {what}: its value is known only when the kernel runs. {fix}"
    )
    diag = _PROTOCOL_DIAG.get(protocol)
    if diag is not None:  # catalogued (flydsl.compiler.errors): the compiler reports it with its FLY id
        e.diag, e.fields = diag, {"type": type_name}
    return e


def _wrap_int(v: int, width: int, signed: bool) -> int:
    mask = (1 << width) - 1
    v &= mask
    if signed and v >> (width - 1):
        v -= 1 << width
    return v


class _FoldOp:
    """Stands in for an Op when running a dialect's ``evaluate`` on compile-time values."""

    __slots__ = ("attrs", "operands", "results")

    def __init__(self, attrs, in_types, out_type):
        self.attrs = attrs
        self.operands = [_TV(t) for t in in_types]
        self.results = [_TV(out_type)]


class _TV:
    __slots__ = ("type",)

    def __init__(self, t):
        self.type = t


def _fold(defn: ir.OpDef, out_cls, in_clss, values, **attrs):
    """Evaluate ``defn`` on compile-time values through its numpy semantics (one semantics)."""
    arrays = [
        np.asarray(_wrap_int(v, c.width, True) if c.is_integer and c.width > 1 else v, dtype=c.numpy_dtype)
        for c, v in zip(in_clss, values)
    ]
    fop = _FoldOp(attrs, [c.ir_type for c in in_clss], out_cls.ir_type)
    with np.errstate(all="ignore"):
        r = defn.evaluate(fop, *arrays)
    return out_cls._py_from_np(np.asarray(r))


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


class Numeric(metaclass=_NumericMeta):
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

    def __repr__(self) -> str:
        if self.is_static():
            return f"{type(self).__name__}({self._v!r})"
        return f"{type(self).__name__}(<run-time {type(self).ir_type}>)"

    # -- Python protocol: only compile-time values become Python values -------------------------
    def _static_or_raise(self, protocol: str):
        if type(self._v) is Value:
            raise runtime_value_error(type(self).__name__, protocol)
        return self._v

    def __bool__(self) -> bool:
        return bool(self._static_or_raise("bool"))

    def __int__(self) -> int:
        return int(self._static_or_raise("int"))

    def __index__(self) -> int:
        v = self._static_or_raise("index")
        if not isinstance(v, (int, bool)):
            raise TypeError(f"a {type(self).__name__} is not an integer index")
        return int(v)

    def __float__(self) -> float:
        return float(self._static_or_raise("float"))

    def __hash__(self) -> int:
        v = self._v
        if type(v) is Value:  # a dict would look it up by identity: a silent miss (FLY122)
            raise runtime_value_error(type(self).__name__, "hash")
        return hash((type(self), v))

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        return format(self._static_or_raise("format"), spec)

    def __iter__(self):
        raise TypeError(f"a {type(self).__name__} is a scalar and cannot be iterated")

    def __len__(self):
        raise TypeError(f"a {type(self).__name__} is a scalar and has no len()")

    # -- conversions -------------------------------------------------------------------------
    def to(self, dtype, *, rounding_mode=None):
        """Value-preserving conversion to ``dtype`` (a Numeric class, ``int``/``float``/``bool`` or an
        ``ir.Type``)."""
        return _convert.convert(self, dtype, rounding_mode)

    def bitcast(self, dtype):
        """Reinterpret the bits as ``dtype`` (same width)."""
        return _convert.bitcast(self, dtype)

    def select(self, true_value, false_value):
        """``self ? true_value : false_value`` (a non-Boolean condition is tested for non-zero)."""
        return _ops.select(self, true_value, false_value)

    # -- FlyDSL's named-op proxies (compatibility) ------------------------------------------
    def maximumf(self, other, *, fastmath=None):
        """``fx.arith.maximumf(self, other)``."""
        from . import arith as _arith

        return _arith.maximumf(self, other, fastmath=fastmath)

    def minimumf(self, other, *, fastmath=None):
        """``fx.arith.minimumf(self, other)``."""
        from . import arith as _arith

        return _arith.minimumf(self, other, fastmath=fastmath)

    def addf(self, other, *, fastmath=None):
        """``fx.arith.addf(self, other)``."""
        from . import arith as _arith

        return _arith.addf(self, other, fastmath=fastmath)

    def shrui(self, other):
        """Logical shift right whatever the signedness: ``fx.arith.shrui(self, other)``."""
        from . import arith as _arith

        return _arith.shrui(self, other)

    def exp2(self, *, fastmath=None):
        """``fx.math.exp2(self)``."""
        from . import math as _math

        return _math.exp2(self, fastmath=fastmath)

    def shuffle_xor(self, offset, width=None):
        """``fx.gpu.shuffle_xor(self, offset, width)``."""
        from . import gpu as _gpu

        return _gpu.shuffle_xor(self, offset, width)

    def with_signedness(self, signed: bool):
        """The integer type of the same width with the given signedness, same bits."""
        cls = type(self)
        if not cls.is_integer or cls is Boolean:
            raise TypeError(f"{cls.__name__} has no signedness")
        target = _INT_BY[(cls.width, bool(signed))]
        return target._make(self._v if type(self._v) is Value else _wrap_int(self._v, cls.width, signed))


class Integer(Numeric):
    """Base of the integer types (``Int8`` … ``Uint64``, ``Boolean``, ``Index``)."""

    __slots__ = ()
    is_integer = True

    @classmethod
    def from_py(cls, x):
        if isinstance(x, (float, np.floating)):
            return _int_from_float(float(x), cls.__name__, cls.width, bool(cls.signed))
        return _wrap_int(int(x), cls.width, bool(cls.signed))

    @classmethod
    def _py_from_np(cls, a):
        return _wrap_int(int(a), cls.width, bool(cls.signed))


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
        return _wrap_int(int(x), 64, True)

    @classmethod
    def _py_from_np(cls, a):
        return _wrap_int(int(a), 64, True)


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
    return type(
        name,
        (Integer,),
        {
            "__slots__": (),
            "width": width,
            "signed": signed,
            "ir_type": t,
            "numpy_dtype": ir.numpy_dtype(t),
            "__doc__": f"{'Signed' if signed else 'Unsigned'} {width}-bit integer (IR type {t}).",
        },
    )


def _float_cls(name, t):
    storage = t.width == 8
    kind = "narrow storage float: convert with .to() before arithmetic" if storage else "float"
    return type(
        name,
        (Float,),
        {
            "__slots__": (),
            "width": t.width,
            "ir_type": t,
            "numpy_dtype": ir.numpy_dtype(t),
            "is_storage": storage,
            "__doc__": f"{t.width}-bit {kind} (IR type {t}).",
        },
    )


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

for _c in (Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float16, BFloat16, Float32, Float64):
    _c.__module__ = __name__
for _c in (Float8E4M3FN, Float8E5M2, Float8E4M3FNUZ, Float8E5M2FNUZ):
    _c.__module__ = __name__

_INT_BY = {(c.width, c.signed): c for c in (Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64)}
_BY_IR_TYPE: dict[ir.Type, type[Numeric]] = {
    irt.i1: Boolean,
    irt.i8: Int8,
    irt.i16: Int16,
    irt.i32: Int32,
    irt.i64: Int64,
    irt.index: Index,
    irt.f16: Float16,
    irt.bf16: BFloat16,
    irt.f32: Float32,
    irt.f64: Float64,
    irt.f8E4M3FN: Float8E4M3FN,
    irt.f8E5M2: Float8E5M2,
    irt.f8E4M3FNUZ: Float8E4M3FNUZ,
    irt.f8E5M2FNUZ: Float8E5M2FNUZ,
}


def numeric_type_of(t: ir.Type) -> type[Numeric]:
    """The Numeric class of an IR scalar type (signless integers read as signed)."""
    try:
        return _BY_IR_TYPE[t]
    except KeyError:
        raise TypeError(f"no DSL scalar type for IR type {t}") from None


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
            return Int64._make(_wrap_int(x, 64, True))
        raise OverflowError(f"integer literal {x} does not fit in 64 bits")
    if isinstance(x, (float, np.floating)):
        return Float32._make(Float32.from_py(x))
    if type(x) is Value:
        return numeric_type_of(x.type)._make(x)
    raise TypeError(f"expected a DSL number or a Python int/float/bool, got {type(x).__name__} {x!r}")


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


# conversions and operators need the classes above; imported last to close the cycle
from . import _convert, _ops  # noqa: E402
