"""``fx.Vector``: a register vector of ``numel`` lanes of one DSL scalar type, with value semantics.

A Vector wraps a flat IR ``vector<N x T>`` value; its logical ``shape`` (possibly nested, numel == N)
and its ``dtype`` (which carries signedness: ``Uint32`` over ``i32``) live in Python. A Vector is always
a run-time value. Contracts kept here (issue #3):

* ``len(v)`` is ``numel``; ``iter(v)`` yields exactly ``numel`` scalars (one ``vector.extract`` each),
  so ``list(v)``, unpacking, ``for``, ``enumerate``, ``zip``, ``reversed`` terminate at once.
* integer indexing is bounds-checked (negative counts from the end); slices give new Vectors
  (``vector.shuffle``); a run-time index gives ``vector.extractelement``; tuple coordinates index the
  nested shape row-major.
* builtins that need a Python truth value of a run-time comparison (``if v``, ``bool(v)``, ``x in v``,
  ``max(v)``, ``sorted(v)``) raise ``TypeError`` at once and name the Vector method to use instead.

Elementwise operators are the methods of :class:`VectorOperators` (a mixin of :class:`Vector`): the
scalars' type rules and op choice (:mod:`.numeric`) applied to whole vectors — both operands convert to
the common element type, shapes broadcast (a scalar to every lane, Vectors numpy-style over their
flattened shapes), one op is emitted; comparisons give Boolean vectors. ``Vector[dtype, shape]``
(:func:`VectorAlias`) is a cached subclass whose constructor fixes dtype and shape.
"""

from __future__ import annotations

import enum
import operator

from ...dialects import arith
from ...dialects import math as dmath
from ...dialects import vector as dvec
from ...ir import Value, VectorType
from . import shape as _shape
from .casts import cast_ir, check_rounding_mode
from .fastmath import fastmath_attrs
from .numeric import (
    Boolean,
    Float,
    Int32,
    Integer,
    Numeric,
    as_numeric,
    common_type,
    numeric_type_of,
    operand_types,
    resolve_dtype,
)
from .operators import ARITH_KINDS, emit_binary, int_pow, operator_mixin

__all__ = [
    "Vector", "VectorOperators", "VectorAlias", "ReductionOp", "REDUCTIONS", "splat_ir", "as_vector_operand",
    "vector_binary", "lanes_of", "to_dtype",
]  # fmt: skip


def splat_ir(x: Numeric, lanes: int) -> Value:
    """A ``vector<lanes x T>`` IR value with every lane ``x``: one constant for a compile-time ``x``,
    else ``vector.broadcast``."""
    t = VectorType(lanes, type(x).ir_type)
    if x.is_static():
        return arith.const(x.value, t)
    return dvec.broadcast(x.value, result_types=[t])


def as_vector_operand(x):
    """An operand of a Vector operation as a Vector or a Numeric (Python literals by value, raw IR
    values by type), or None when it is neither."""
    if isinstance(x, (Vector, Numeric)):
        return x
    if type(x) is Value:
        if isinstance(x.type, VectorType):
            return Vector(x)
        return numeric_type_of(x.type)._make(x)
    try:
        return as_numeric(x)
    except TypeError:
        trap = getattr(type(x), "_fly_raise", None)
        if trap is not None:  # a variable without a value on this path: its own error (FLY102/117/118)
            trap(x)
        return None


# ---------------------------------------------------------------------------------------------
# elementwise operators
# ---------------------------------------------------------------------------------------------


def vector_binary(kind: str, a, b, fastmath=None):
    """``a <kind> b`` where at least one operand is a Vector (NotImplemented for foreign operands).

    Raises:
        TypeError: as for scalars (bitwise on floats, arithmetic on fp8, integer ``**`` with a
            run-time or Vector exponent). ValueError: shapes that do not broadcast.
    """
    x, y = as_vector_operand(a), as_vector_operand(b)
    if x is None or y is None:
        return NotImplemented
    A, B = x.dtype, y.dtype
    if kind in ARITH_KINDS:
        A = Int32 if A is Boolean else A
        B = Int32 if B is Boolean else B
    C, R = operand_types(kind, A, B)
    if isinstance(x, Vector) and isinstance(y, Vector):
        shape = _shape.broadcast_shapes(x.shape, y.shape)
    else:
        shape = x.shape if isinstance(x, Vector) else y.shape
    xv = lanes_of(x, C, shape)
    if kind == "pow" and C.is_integer:
        if isinstance(y, Vector):
            raise TypeError("integer ** needs a compile-time scalar exponent, got a Vector")
        r = int_pow(xv, y, arith.muli)
        r = splat_ir(C._make(1), _shape.numel(shape)) if r is None else r
    else:
        r = emit_binary(kind, C, xv, lanes_of(y, C, shape), fastmath)
    return Vector._make(r, shape, R)


def _neg(v: Vector) -> Vector:
    if v.dtype is Boolean:
        v = v.to(Int32)
    C = v.dtype
    if C.is_float:
        operand_types("sub", C, C)  # rejects fp8
        return Vector._make(arith.negf(v._v, **fastmath_attrs()), v.shape, C)
    return vector_binary("sub", C._make(0), v)


def _abs(v: Vector) -> Vector:
    C = v.dtype
    if C is Boolean:
        raise TypeError("abs() of a Boolean vector is undefined; convert it first: v.to(fx.Int32)")
    operand_types("sub", C, C)
    if C.is_float:
        return Vector._make(dmath.absf(v._v, **fastmath_attrs()), v.shape, C)
    if not C.signed:
        return Vector._make(v._v, v.shape, C)
    return Vector._make(dmath.absi(v._v), v.shape, C)


def _invert(v: Vector) -> Vector:
    C = v.dtype
    if C.is_float:
        raise TypeError(f"operator ~ needs integers, got a Vector of {C.__name__}")
    ones = True if C is Boolean else (-1 if C.signed else (1 << C.width) - 1)
    return vector_binary("xor", v, C._make(ones))


class VectorOperators(
    operator_mixin(
        "_VectorOperatorMethods",
        "Python's operators on Vectors, lane-wise (:func:`vector_binary`).",
        vector_binary,
        _neg,
        _abs,
        _invert,
    )
):
    """Python's operators on Vectors, lane-wise (:func:`vector_binary`), and ``select``/``reduce``."""

    __slots__ = ()

    def select(self, true_value, false_value):
        """Lane-wise ``self ? t : f``: a non-Boolean condition is tested ``!= 0`` per lane; scalar choices
        splat; choices convert to their common type.

        Raises:
            ValueError: a choice with a different number of lanes.
        """
        cond = self if self.dtype is Boolean else self.to(Boolean)
        t, f = as_vector_operand(true_value), as_vector_operand(false_value)
        if t is None or f is None:
            raise TypeError("select choices must be DSL values or Python numbers")
        for x in (t, f):
            if isinstance(x, Vector) and x.numel != cond.numel:
                raise ValueError(f"select: the condition has {cond.numel} lanes but a choice has {x.numel}")
        C = common_type(t.dtype, f.dtype)
        shape = cond.shape
        tv, fv = lanes_of(_reshaped(t, shape), C, shape), lanes_of(_reshaped(f, shape), C, shape)
        return Vector._make(arith.select(cond._v, tv, fv), shape, C)

    def reduce(self, op, init_val=None, reduction_profile=None, *, fastmath=None):
        """Combine all lanes into one scalar of ``dtype`` (``vector.reduction``, lane 0 first).

        Args:
            op: ``"add"``, ``"mul"``, ``"max"``, ``"min"`` (floats: max is maxnumf, min is minimumf; ints by
                signedness), ``"and"``/``"or"``/``"xor"`` (integers and Booleans), an ``fx.ReductionOp``, or
                an explicit ``vector.reduction`` kind (``"maximumf"``…).
            init_val: an accumulator combined with the result (converted to ``dtype``).
            reduction_profile: accepted for FlyDSL compatibility; unused.
            fastmath: fast-math flags for float reductions (op keyword > ``fx.fastmath`` block > default).

        Raises:
            TypeError: a non-string op, or an op undefined for the dtype. ValueError: an unknown op name.
        """
        if self.dtype.is_storage:
            operand_types("add", self.dtype, self.dtype)
        kind = _reduction_kind(op, self.dtype)
        operands = [self._v]
        if init_val is not None:
            operands.append(to_dtype(init_val, self.dtype).ir_value())
        attrs = fastmath_attrs(fastmath) if self.dtype.is_float else {}
        return self.dtype._make(dvec.reduction(*operands, kind=kind, **attrs))


class Vector(VectorOperators):
    """A register vector with value semantics (``vector<N x dtype>`` in the IR).

    Args:
        value: a flat IR vector value, another Vector, or anything with ``ir_value()`` returning one; a
            list/tuple of scalars builds the vector (``from_elements``). Alias classes such as
            ``Float32x4`` also take one scalar and splat it.
        shape: the logical shape (int or nested tuple) with ``numel`` equal to the lane count; default:
            the value's (flat) shape.
        dtype: the element type (a Numeric class or scalar IR type) matching the IR element type;
            default: read from the IR type (signless integers read as signed).

    Raises:
        ValueError: shape or dtype that does not fit the value (or the alias).
        TypeError: a value that is not a vector.
    """

    __slots__ = ("_v", "_shape", "_dtype")
    __module__ = "flydsl.expr.vector"  # its public name
    _is_vector = True
    _alias_dtype = None
    _alias_shape = None
    ir_type = None  # set on alias classes (Float32x4.ir_type is vector<4xf32>)

    def __init__(self, value, shape=None, dtype=None):
        cls = type(self)
        if dtype is not None:
            dtype = resolve_dtype(dtype)
        if cls._alias_dtype is not None:
            value = self._alias_value(value, shape, dtype)
            shape, dtype = cls._alias_shape, cls._alias_dtype
        elif isinstance(value, (list, tuple)):
            value = Vector.from_elements(value, dtype)
        if isinstance(value, Vector):
            v, vshape, vdtype = value._v, value._shape, value._dtype
        else:
            if type(value) is not Value and hasattr(value, "ir_value"):
                value = value.ir_value()
            if type(value) is not Value or not isinstance(value.type, VectorType):
                raise TypeError(f"fx.Vector wraps an IR vector value, got {value!r}")
            if len(value.type.shape) != 1:
                raise ValueError(f"fx.Vector wraps flat vectors (vector<N x T>), got {value.type}")
            v, vshape, vdtype = value, (value.type.numel,), numeric_type_of(value.type.elem)
        if dtype is not None:
            if dtype.ir_type is not v.type.elem:
                raise ValueError(f"dtype {dtype.__name__} does not match the vector element type {v.type.elem}")
            vdtype = dtype
        if shape is not None:
            shape = _shape.canonical_shape(shape)
            if _shape.numel(shape) != v.type.numel:
                raise ValueError(f"shape {shape} has {_shape.numel(shape)} elements, but the value is {v.type}")
            vshape = shape
        self._v, self._shape, self._dtype = v, vshape, vdtype

    @classmethod
    def _alias_value(cls, value, shape, dtype):
        """What an alias (``Float32x4``) constructor argument denotes: a splat, a list or a vector."""
        ad, ashape = cls._alias_dtype, cls._alias_shape
        if shape is not None and _shape.canonical_shape(shape) != ashape:
            raise ValueError(f"{cls.__name__} expects shape {ashape}, got {shape!r}")
        if dtype is not None and dtype is not ad:
            raise ValueError(f"{cls.__name__} expects dtype {ad.__name__}, got {dtype.__name__}")
        if isinstance(value, (list, tuple)):
            if len(value) != _shape.numel(ashape):
                raise ValueError(f"{cls.__name__} takes {_shape.numel(ashape)} elements, got {len(value)}")
            return Vector.from_elements(value, ad)
        if isinstance(value, (bool, int, float, Numeric)):
            return Vector.filled(ashape, value, ad)
        if isinstance(value, Vector) and value._dtype is not ad:
            raise ValueError(f"{cls.__name__} expects dtype {ad.__name__}, got a Vector of {value._dtype.__name__}")
        if type(value) is Value and isinstance(value.type, VectorType):
            if value.type.numel != _shape.numel(ashape):
                raise ValueError(f"{cls.__name__} expects shape {ashape}, got a value of type {value.type}")
        elif isinstance(value, Vector) and value.numel != _shape.numel(ashape):
            raise ValueError(f"{cls.__name__} expects shape {ashape}, got a Vector of shape {value._shape}")
        return value

    @classmethod
    def _make(cls, v: Value, shape: tuple, dtype) -> Vector:
        """Wrap without checks (``shape`` canonical, ``dtype.ir_type`` is the element type)."""
        o = object.__new__(cls)
        o._v, o._shape, o._dtype = v, shape, dtype
        return o

    # -- properties ----------------------------------------------------------------------------
    @property
    def dtype(self) -> type[Numeric]:
        """The element type (a Numeric class)."""
        return self._dtype

    element_type = dtype

    @property
    def shape(self) -> tuple:
        """The logical shape (a tuple, possibly nested)."""
        return self._shape

    @property
    def numel(self) -> int:
        """The number of lanes."""
        return self._v.type.numel

    @property
    def signed(self) -> bool:
        """Signedness of an integer element type (False for floats)."""
        return bool(self._dtype.signed) if self._dtype.is_integer else False

    @property
    def type(self) -> VectorType:
        """The IR type ``vector<N x T>``."""
        return self._v.type

    @staticmethod
    def make_type(shape, dtype) -> VectorType:
        """The flat IR vector type of a logical shape and element type."""
        return VectorType(_shape.numel(_shape.canonical_shape(shape)), resolve_dtype(dtype).ir_type)

    def ir_value(self) -> Value:
        """The IR value (``vector<N x T>``)."""
        return self._v

    def is_static(self) -> bool:
        """Always False: a Vector is a run-time value."""
        return False

    def __fly_values__(self) -> list[Value]:
        """The DSL value protocol: the IR values carrying this vector (one)."""
        return [self._v]

    def __fly_rebuild__(self, values) -> Vector:
        """The DSL value protocol: the same kind of Vector (class, shape, dtype) over a new IR value."""
        return type(self)._make(values[0], self._shape, self._dtype)

    def __extract_to_ir_values__(self) -> list[Value]:
        """FlyDSL's name of :meth:`__fly_values__`."""
        return [self._v]

    @classmethod
    def __construct_from_ir_values__(cls, values) -> Vector:
        """FlyDSL's protocol: a 1-D Vector over ``values[0]`` (shape and dtype from its IR type)."""
        return Vector(values[0])

    def __repr__(self) -> str:
        return f"Vector({self._v.type} o {self._shape}, {self._dtype.__name__})"

    __str__ = __repr__
    __hash__ = object.__hash__  # __eq__ builds a Boolean vector

    # -- Python protocols: never fall into a hang ------------------------------------------------
    def __len__(self) -> int:
        return self._v.type.numel

    def __iter__(self):
        v, d = self._v, self._dtype
        for i in range(v.type.numel):
            yield d._make(dvec.extract(v, position=i))

    def __reversed__(self):
        v, d = self._v, self._dtype
        for i in range(v.type.numel - 1, -1, -1):
            yield d._make(dvec.extract(v, position=i))

    def __bool__(self):
        raise TypeError(
            "a Vector has no Python truth value (its lanes are known only when the kernel runs): "
            'reduce it to one Boolean with v.reduce("and") / v.reduce("or") (after a comparison), '
            "or choose lane-wise with cond.select(a, b)"
        )

    def __contains__(self, item):
        raise TypeError(
            '`x in vector` would compare lanes in Python at trace time; use (v == x).reduce("or") '
            "for a run-time Boolean"
        )

    def __index__(self):
        raise TypeError("a Vector is not a Python integer; index with a scalar, e.g. v[i]")

    def __int__(self):
        raise TypeError('a Vector is not a Python int; extract a lane (v[i]) or reduce it (v.reduce("add"))')

    def __float__(self):
        raise TypeError('a Vector is not a Python float; extract a lane (v[i]) or reduce it (v.reduce("add"))')

    def __setitem__(self, index, value):
        raise TypeError("a Vector is an immutable value; write v = v.insert(i, x) instead of v[i] = x")

    # -- element access ------------------------------------------------------------------------
    def _lane(self, i: int) -> int:
        n = self._v.type.numel
        if i < -n or i >= n:
            raise IndexError(f"vector index {i} out of range for a Vector of {n} elements")
        return i + n if i < 0 else i

    def __getitem__(self, index):
        """``v[i]`` (int: bounds-checked, negative from the end; run-time Numeric: extractelement),
        ``v[a:b:s]`` (a new Vector), ``v[(i, (j, k))]`` (coordinate over the nested shape; ``None`` keeps a
        mode: a sub-Vector), ``v[None]`` (v itself).

        Raises:
            IndexError: an index out of range. TypeError: an unsupported index type.
        """
        if index is None:
            return self
        if type(index) is int:
            return self._dtype._make(dvec.extract(self._v, position=self._lane(index)))
        if isinstance(index, slice):
            lanes = list(range(*index.indices(self._v.type.numel)))
            if not lanes:
                raise IndexError(f"slice {index} of a Vector of {self._v.type.numel} elements is empty")
            return self._gather(lanes, (len(lanes),))
        if isinstance(index, tuple):
            return self._coordinate(index)
        if isinstance(index, Numeric) or type(index) is Value:
            idx = as_numeric(index)
            if not idx.dtype.is_integer:
                raise TypeError(f"a Vector index must be an integer, got {idx.dtype.__name__}")
            if idx.is_static():
                return self[int(idx.value)]
            return self._dtype._make(dvec.extractelement(self._v, _index_value(idx)))
        try:
            i = operator.index(index)
        except TypeError:
            raise TypeError(
                f"unsupported Vector index type {type(index).__name__}: use an int, a slice, a tuple coordinate "
                "or a run-time integer"
            ) from None
        return self._dtype._make(dvec.extract(self._v, position=self._lane(i)))

    def _gather(self, lanes: list[int], shape: tuple) -> Vector:
        if lanes == list(range(self._v.type.numel)):
            return Vector._make(self._v, shape, self._dtype)
        return Vector._make(dvec.shuffle(self._v, self._v, mask=list(lanes)), shape, self._dtype)

    def _coordinate(self, coord: tuple):
        pairs = _shape.coord_pairs(self._shape, coord)
        dynamic = False
        norm = []
        for d, c in pairs:
            if c is None:
                norm.append((d, None))
                continue
            if isinstance(c, Numeric) or type(c) is Value:
                c = as_numeric(c)
                if not c.is_static():
                    dynamic = True
                    norm.append((d, c))
                    continue
                c = int(c.value)
            if not isinstance(c, int):
                raise TypeError(f"unsupported Vector coordinate entry {c!r}")
            if c < -d or c >= d:
                raise IndexError(f"vector coordinate {coord!r} out of range for a Vector of shape {self._shape}")
            norm.append((d, c + d if c < 0 else c))
        if dynamic:
            if any(c is None for _, c in norm):
                raise TypeError("a coordinate with a run-time entry cannot also slice (None)")
            flat = Int32._make(0)
            for d, c in norm:
                flat = flat * d + (c if isinstance(c, Numeric) else Int32._make(c))
            return self[flat]
        lanes = _shape.coord_positions(norm)
        if all(c is not None for _, c in norm):
            return self[lanes[0]]
        return self._gather(lanes, _shape.sliced_shape(self._shape, coord))

    def insert(self, index, value) -> Vector:
        """A new Vector with lane ``index`` replaced by ``value`` (converted to ``dtype``).

        Args:
            index: an int (bounds-checked, negative from the end) or a run-time integer.
            value: a scalar (Python number or DSL value).

        Raises:
            IndexError: a static index out of range.
        """
        x = to_dtype(value, self._dtype).ir_value()
        if isinstance(index, Numeric) or type(index) is Value:
            idx = as_numeric(index)
            if not idx.is_static():
                return Vector._make(dvec.insertelement(x, self._v, _index_value(idx)), self._shape, self._dtype)
            index = int(idx.value)
        return Vector._make(dvec.insert(x, self._v, position=self._lane(int(index))), self._shape, self._dtype)

    with_element = insert

    # -- conversions and reshaping ---------------------------------------------------------------
    def to(self, dtype, *, rounding_mode=None) -> Vector:
        """Elementwise conversion (the scalar ``.to()`` op choice per lane); same shape.

        Args:
            dtype: a Numeric class or scalar IR type (``ir.Value`` returns the Vector itself).
            rounding_mode: an ``fx.RoundingMode`` for float→float narrowing.

        Raises:
            TypeError: a rounding mode on a cast that is not float-to-float.
        """
        if dtype is Value or getattr(dtype, "_fly_value_view", False):  # ours, or flydsl._mlir.ir.Value
            return self
        if dtype in (int, float, bool):
            raise TypeError(f"a Vector has no Python {dtype.__name__} value")
        D = resolve_dtype(dtype)
        S = self._dtype
        mode = check_rounding_mode(S, D, rounding_mode, static=False)
        if S is D:
            return self
        return Vector._make(cast_ir(self._v, S, D, mode, lanes=self._v.type.numel), self._shape, D)

    def bitcast(self, dtype) -> Vector:
        """The same bits as a flat Vector of ``dtype``: lanes = numel·width / dtype.width.

        Raises:
            ValueError: the total width is not a multiple of ``dtype``'s width.
        """
        D = resolve_dtype(dtype)
        S = self._dtype
        bits = self._v.type.numel * S.width
        if bits % D.width:
            raise ValueError(f"cannot bitcast {bits} bits ({self._v.type}) into {D.__name__} lanes of {D.width} bits")
        n = bits // D.width
        t = VectorType(n, D.ir_type)
        if t is self._v.type:
            return Vector._make(self._v, (n,), D)
        op = arith.bitcast if Boolean in (S, D) else dvec.bitcast
        return Vector._make(op(self._v, result_types=[t]), (n,), D)

    def reshape(self, shape) -> Vector:
        """The same lanes under another logical shape of equal numel (no IR).

        Raises:
            ValueError: a different number of elements.
        """
        shape = _shape.canonical_shape(shape)
        if _shape.numel(shape) != self._v.type.numel:
            raise ValueError(f"cannot reshape a Vector of shape {self._shape} to {shape}: element counts differ")
        return Vector._make(self._v, shape, self._dtype)

    def broadcast_to(self, shape) -> Vector:
        """Broadcast numpy-style over the flattened shape (a 1-lane Vector to any shape).

        Raises:
            ValueError: shapes that do not broadcast.
        """
        shape = _shape.canonical_shape(shape)
        if shape == self._shape:
            return self
        return self._gather(_shape.broadcast_positions(self._shape, shape), shape)

    def shuffle(self, other, mask) -> Vector:
        """Lanes picked from the concatenation ``self ++ other`` (``vector.shuffle``).

        Args:
            other: a Vector with the same element type, or None for ``self``.
            mask: lane numbers in ``[0, numel + other.numel)``.

        Raises:
            TypeError: element types differ. IndexError: a mask entry out of range.
        """
        other = self if other is None else other
        if not isinstance(other, Vector):
            other = as_vector_operand(other)
        if not isinstance(other, Vector) or other._v.type.elem is not self._v.type.elem:
            raise TypeError(f"shuffle needs a second Vector of {self._dtype.__name__}, got {other!r}")
        mask = [int(m) for m in mask]
        n = self._v.type.numel + other._v.type.numel
        bad = [m for m in mask if not 0 <= m < n]
        if bad or not mask:
            raise IndexError(f"shuffle mask entries must be in [0, {n}), got {mask}")
        return Vector._make(dvec.shuffle(self._v, other._v, mask=mask), (len(mask),), self._dtype)

    # -- constructors ----------------------------------------------------------------------------
    @classmethod
    def from_elements(cls, elements, dtype=None) -> Vector:
        """A Vector of the given scalars, lane 0 first (one constant when all are compile-time).

        Args:
            elements: scalars (Python numbers, DSL scalars, raw IR scalars).
            dtype: element type; default: the first element's DSL type.

        Raises:
            ValueError: no elements.
        """
        elements = list(elements)
        if not elements:
            raise ValueError("Vector.from_elements needs at least one element")
        if dtype is None:
            first = as_vector_operand(elements[0])
            if not isinstance(first, Numeric):
                raise TypeError(f"Vector elements must be scalars, got {elements[0]!r}")
            dtype = type(first)
        dtype = resolve_dtype(dtype)
        vals = [to_dtype(e, dtype) for e in elements]
        t = VectorType(len(vals), dtype.ir_type)
        if all(x.is_static() for x in vals):
            v = arith.const([x.value for x in vals], t)
        else:
            v = dvec.from_elements(*[x.ir_value() for x in vals], result_types=[t])
        return cls._wrap_new(v, (len(vals),), dtype)

    @classmethod
    def filled(cls, shape, fill_value, dtype) -> Vector:
        """A Vector of ``shape`` with every lane ``fill_value`` converted to ``dtype``: a
        ``vector.broadcast`` of the scalar, as FlyDSL traces it (canonicalization folds a constant's
        broadcast into a dense constant)."""
        shape = _shape.canonical_shape(shape)
        dtype = resolve_dtype(dtype)
        x = to_dtype(fill_value, dtype)
        v = dvec.broadcast(x.ir_value(), result_types=[VectorType(_shape.numel(shape), dtype.ir_type)])
        return cls._wrap_new(v, shape, dtype)

    @classmethod
    def filled_like(cls, template: Vector, fill_value, dtype=None) -> Vector:
        """A Vector with ``template``'s shape (and dtype unless given), every lane ``fill_value``."""
        return cls.filled(template.shape, fill_value, template.dtype if dtype is None else dtype)

    @classmethod
    def zeros_like(cls, template: Vector, dtype=None) -> Vector:
        """``filled_like(template, 0, dtype)``."""
        return cls.filled_like(template, 0, dtype)

    @classmethod
    def _wrap_new(cls, v: Value, shape: tuple, dtype) -> Vector:
        # an alias class keeps its identity when the result fits it; otherwise a plain Vector
        if cls._alias_dtype is not None and (cls._alias_dtype is not dtype or cls._alias_shape != shape):
            cls = Vector
        return cls._make(v, shape, dtype)

    @classmethod
    def __class_getitem__(cls, params):
        """``Vector[dtype, shape]``: the alias class (see :func:`VectorAlias`)."""
        if cls._alias_dtype is not None:
            raise TypeError(f"{cls.__name__} is already specialized")
        if not isinstance(params, tuple) or len(params) != 2:
            raise TypeError(f"use Vector[dtype, lanes] (or Vector[dtype, shape]), got Vector[{params!r}]")
        return VectorAlias(*params)

    @classmethod
    def select_whole(cls, cond: Numeric, true_value, false_value):
        """``cond ? a : b`` on whole Vectors under a scalar Boolean condition (same shape after
        broadcasting a scalar choice); the result takes the true choice's class."""
        t, f = as_vector_operand(true_value), as_vector_operand(false_value)
        if t is None or f is None:
            raise TypeError("select choices must be DSL values or Python numbers")
        C = common_type(t.dtype, f.dtype)
        shape = t.shape if isinstance(t, Vector) else f.shape
        if isinstance(t, Vector) and isinstance(f, Vector) and t.numel != f.numel:
            raise ValueError(f"select choices have {t.numel} and {f.numel} lanes")
        if cond.is_static():
            chosen = t if cond.value else f
            if isinstance(chosen, Vector):
                return chosen.to(C)
            return Vector._make(splat_ir(chosen.to(C), _shape.numel(shape)), shape, C)
        r = arith.select(cond.ir_value(), lanes_of(t, C, shape), lanes_of(f, C, shape))
        out = type(t) if isinstance(t, Vector) and t.dtype is C and t.shape == shape else Vector
        return out._make(r, shape, C)

    @classmethod
    def apply_lanes(cls, defn, operands: list, C, R, attrs: dict) -> Vector:
        """``defn`` lane-wise on operands (Vectors and scalars, converted to ``C``; shapes broadcast),
        result element type ``R`` (the Vector half of :func:`flydsl.expr._sem.numeric.apply_op`)."""
        shape = None
        for o in operands:
            if isinstance(o, Vector):
                shape = o.shape if shape is None or shape == o.shape else _shape.broadcast_shapes(shape, o.shape)
        return Vector._make(defn(*[lanes_of(o, C, shape) for o in operands], **attrs), shape, R)


def to_dtype(x, dtype) -> Numeric:
    """A scalar operand converted to ``dtype`` (Python literals directly, by value)."""
    if isinstance(x, (bool, int, float)):
        return dtype(x)
    n = as_vector_operand(x)
    if not isinstance(n, Numeric):
        raise TypeError(f"expected a scalar for a {dtype.__name__} lane, got {x!r}")
    return n.to(dtype)


def _index_value(idx: Numeric) -> Value:
    """A run-time lane index as an integer IR value (Boolean widened; Index and iN kept)."""
    if not idx.dtype.is_integer:
        raise TypeError(f"a Vector index must be an integer, got {idx.dtype.__name__}")
    if idx.dtype is Boolean:
        idx = idx.to(Int32)
    return idx.ir_value()


def lanes_of(x, C, shape) -> Value:
    """An operand as a ``vector<numel(shape) x C>`` IR value (scalars splat, vectors converted)."""
    if isinstance(x, Vector):
        x = x.to(C)
        return x._v if x.numel == _shape.numel(shape) else x.broadcast_to(shape)._v
    return splat_ir(x.to(C), _shape.numel(shape))


def _reshaped(x, shape):
    return x.reshape(shape) if isinstance(x, Vector) and x.shape != shape else x


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------


class ReductionOp(enum.Enum):
    """Reductions of ``Vector.reduce`` (strings ``"add"``, ``"mul"``, ``"max"``, ``"min"``, ``"and"``,
    ``"or"``, ``"xor"`` work too)."""

    ADD = "add"
    MUL = "mul"
    MAX = "max"
    MIN = "min"
    AND = "and"
    OR = "or"
    XOR = "xor"


# name -> vector.reduction kind for (float, signed integer, unsigned integer, Boolean); FlyDSL's choice:
# float max is maxnumf (NaN-ignoring) but float min is minimumf (NaN-propagating)
REDUCTIONS = {
    "add": ("add", "add", "add", None),
    "mul": ("mul", "mul", "mul", None),
    "max": ("maxnumf", "maxsi", "maxui", None),
    "min": ("minimumf", "minsi", "minui", None),
    "and": (None, "and", "and", "and"),
    "or": (None, "or", "or", "or"),
    "xor": (None, "xor", "xor", "xor"),
}


def _reduction_kind(op, dtype) -> str:
    if isinstance(op, ReductionOp):
        op = op.value
    elif isinstance(getattr(op, "value", None), str):  # an enum of kind names (MLIR's vector.CombiningKind)
        op = op.value
    if not isinstance(op, str):
        raise TypeError(f"reduce op must be a string or fx.ReductionOp, got {type(op).__name__}")
    key = op.lower()
    if key in dvec.REDUCTION_KINDS and key not in REDUCTIONS:
        return key  # an explicit kind (maximumf, maxnumf, minsi…)
    row = REDUCTIONS.get(key)
    if row is None:
        raise ValueError(f"unknown reduction kind {op!r}; expected one of {', '.join(REDUCTIONS)}")
    col = 3 if dtype is Boolean else (0 if dtype.is_float else (1 if dtype.signed else 2))
    kind = row[col]
    if kind is None:
        hint = 'use "and"/"or"/"xor" or .to(fx.Int32) first' if dtype is Boolean else "it needs integers"
        raise TypeError(f'reduce("{key}") is not defined for {dtype.__name__} vectors: {hint}')
    return kind


# ---------------------------------------------------------------------------------------------
# Vector[dtype, shape]
# ---------------------------------------------------------------------------------------------

_ALIASES: dict[tuple, type] = {}
_ABSTRACT = (Numeric, Integer, Float)


def VectorAlias(dtype, shape) -> type:
    """The Vector subclass of element type ``dtype`` and logical ``shape`` (cached: one class per pair).

    Its constructor takes one scalar (splat), a list/tuple of ``numel`` scalars, or a vector value of that
    type. Operations on an alias return plain ``Vector``s except identity operations (``+v``,
    ``v.to(v.dtype)``, ``v.broadcast_to(v.shape)``, ``v[None]``) and the alias's own constructors.

    Args:
        dtype: a concrete Numeric class (``fx.Float32``…).
        shape: an int or a nested tuple/list of positive ints.

    Returns:
        ``Float32x4`` for ``(Float32, 4)``; ``Vector[Float32, (2, 2)]`` for a multi-mode shape.

    Raises:
        TypeError: an abstract or non-Numeric dtype, or a shape that is not positive ints at every level.
    """
    if not (isinstance(dtype, type) and issubclass(dtype, Numeric)) or dtype in _ABSTRACT:
        raise TypeError(f"Vector[dtype, lanes] needs a concrete Numeric dtype (e.g. fx.Float32), got {dtype!r}")
    canon = _shape.canonical_shape(shape)
    key = (dtype, canon)
    cls = _ALIASES.get(key)
    if cls is None:
        n = _shape.numel(canon)
        name = f"{dtype.__name__}x{n}" if canon == (n,) else f"Vector[{dtype.__name__}, {canon!r}]"
        doc = f"A Vector of {n} {dtype.__name__} lanes, shape {canon}."
        body = {"__slots__": (), "__module__": "flydsl.expr", "__qualname__": name, "__doc__": doc}
        body.update(_alias_dtype=dtype, _alias_shape=canon, ir_type=VectorType(n, dtype.ir_type))
        cls = _ALIASES.setdefault(key, type(name, (Vector,), body))
    return cls
