"""Elementwise operators, lane-wise ``select`` and ``reduce`` of ``fx.Vector``.

The type rules and op choice are the scalars' (:mod:`flydsl.expr._ops`): an operator on a Vector and a
scalar, or two Vectors, converts both to the common element type, broadcasts the shapes (a scalar to
every lane, Vectors numpy-style over their flattened shapes) and emits one op on whole vectors.
Comparisons give Boolean vectors.
"""

from __future__ import annotations

import enum

from ..dialects import arith
from ..dialects import math as dmath
from ..dialects import vector as dvec
from . import _shape
from ._fastmath import fastmath_attrs
from ._ops import ARITH_KINDS, BIT_KINDS, CMP_KINDS, emit_binary, int_pow, operand_types
from .numeric import Boolean, Int32, common_type
from .vector import Vector, _lanes_of, _to_dtype, as_vector_operand, splat_ir

__all__ = ["vector_binary", "ReductionOp", "REDUCTIONS"]


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
    xv = _lanes_of(x, C, shape)
    if kind == "pow" and C.is_integer:
        if isinstance(y, Vector):
            raise TypeError("integer ** needs a compile-time scalar exponent, got a Vector")
        r = int_pow(xv, y, arith.muli)
        r = splat_ir(C._make(1), _shape.numel(shape)) if r is None else r
    else:
        r = emit_binary(kind, C, xv, _lanes_of(y, C, shape), fastmath)
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


def _select(self: Vector, true_value, false_value) -> Vector:
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
    r = arith.select(cond._v, _lanes_of(_reshaped(t, shape), C, shape), _lanes_of(_reshaped(f, shape), C, shape))
    return Vector._make(r, shape, C)


def _reshaped(x, shape):
    return x.reshape(shape) if isinstance(x, Vector) and x.shape != shape else x


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


def _reduce(self: Vector, op, init_val=None, reduction_profile=None, *, fastmath=None):
    """Combine all lanes into one scalar of ``dtype`` (``vector.reduction``, lane 0 first).

    Args:
        op: ``"add"``, ``"mul"``, ``"max"``, ``"min"`` (floats: max is maxnumf, min is minimumf; ints by
            signedness), ``"and"``/``"or"``/``"xor"`` (integers and Booleans), an ``fx.ReductionOp``, or an
            explicit ``vector.reduction`` kind (``"maximumf"``…).
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
        operands.append(_to_dtype(init_val, self.dtype).ir_value())
    attrs = fastmath_attrs(fastmath) if self.dtype.is_float else {}
    return self.dtype._make(dvec.reduction(*operands, kind=kind, **attrs))


def _install():
    def make(kind):
        def fwd(self, other):
            return vector_binary(kind, self, other)

        def rev(self, other):
            return vector_binary(kind, other, self)

        fwd.__name__, rev.__name__ = f"__{kind}__", f"__r{kind}__"
        return fwd, rev

    for kind in ARITH_KINDS | BIT_KINDS:
        fwd, rev = make(kind)
        setattr(Vector, f"__{kind}__", fwd)
        setattr(Vector, f"__r{kind}__", rev)
    for kind in CMP_KINDS:
        setattr(Vector, f"__{kind}__", make(kind)[0])
    Vector.__neg__ = _neg
    Vector.__pos__ = lambda self: self
    Vector.__abs__ = _abs
    Vector.__invert__ = _invert
    Vector.__divmod__ = lambda self, o: (vector_binary("floordiv", self, o), vector_binary("mod", self, o))
    Vector.__rdivmod__ = lambda self, o: (vector_binary("floordiv", o, self), vector_binary("mod", o, self))
    Vector.select = _select
    Vector.reduce = _reduce


_install()
