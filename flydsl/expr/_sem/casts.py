"""The conversions of ``x.to(T)`` / ``T(x)``: which ``arith`` ops turn a value of type S into type D.

The op chain is chosen once, by :func:`cast_plan`, for compile-time scalars, run-time scalars and vectors
alike; compile-time values fold through the same ops' semantics (:func:`fold_cast`), so a folded cast
equals the run-time one (float→int truncates toward zero and saturates, NaN → 0, like the GPU). The
value classes S and D are only read for ``ir_type``, ``width``, ``signed``, ``is_integer``/``is_float``,
``numpy_dtype`` and ``_py_from_np``.
"""

from __future__ import annotations

import enum

import numpy as np

from ... import ir
from ...dialects import arith
from ...ir import Value, VectorType
from .fold import fold_ir, host_value

__all__ = ["RoundingMode", "check_rounding_mode", "cast_plan", "cast_ir", "fold_cast", "NONZERO"]

NONZERO = "nonzero"  # the step "!= 0" of a conversion to Boolean


class RoundingMode(str, enum.Enum):
    """IEEE-754 rounding modes for float→float ``.to(..., rounding_mode=)`` on run-time values.

    Members are strings (the IR spelling of the ``rounding`` attribute of ``arith.truncf``).
    """

    to_nearest_even = "to_nearest_even"
    downward = "downward"
    upward = "upward"
    toward_zero = "toward_zero"
    to_nearest_away = "to_nearest_away"

    def __str__(self) -> str:
        return self.value


_DIRECTED_RESULTS = frozenset((ir.f16, ir.bf16, ir.f32))


def check_rounding_mode(S, D, rounding_mode, static: bool):
    """Validate ``rounding_mode`` for a cast from ``S`` to ``D``; returns the mode's text or None.

    Raises:
        TypeError: a mode on a cast that is not float-to-float.
        ValueError: an unknown mode, a mode on a compile-time value, or a result type without directed
            rounding (fp8).
    """
    if rounding_mode is None:
        return None
    if not (S.is_float and D.is_float):
        raise TypeError(f"rounding_mode applies to float-to-float casts only, not {S.__name__} to {D.__name__}")
    try:
        mode = RoundingMode(rounding_mode).value
    except ValueError:
        names = ", ".join(m.value for m in RoundingMode)
        raise ValueError(f"unknown rounding mode {rounding_mode!r}; use fx.RoundingMode.<mode> ({names})") from None
    if static:
        raise ValueError(
            "rounding_mode needs a run-time value: a compile-time constant is narrowed on the host "
            "(round-to-nearest-even)"
        )
    if D.width < S.width or (D.width == S.width and D is not S):
        if D.ir_type not in _DIRECTED_RESULTS:
            raise ValueError(f"rounding_mode supports Float16, BFloat16 and Float32 results, not {D.__name__}")
    return mode


def cast_plan(S, D) -> list:
    """The steps converting ``S`` to ``D``: a list of ``(op, ir_type)`` (``op`` None: same bits, new type;
    :data:`NONZERO`: the ``!= 0`` test). Only ``truncf`` steps take a rounding mode."""
    if S is D:
        return []
    st, dt = S.ir_type, D.ir_type
    if dt is ir.i1:
        return [(NONZERO, dt)]
    s_signed = bool(S.signed) and st is not ir.i1  # Boolean widens as unsigned (true is 1)
    if S.is_integer and D.is_integer:
        if st is ir.index or dt is ir.index:
            if st is ir.i1:
                return [(arith.extui, ir.i32), (arith.index_cast, dt)]
            # index -> iN truncates or keeps the bits; iN -> index extends by the source's signedness
            return [(arith.index_cast if (st is ir.index or s_signed) else arith.index_castui, dt)]
        if st is dt:
            return [(None, dt)]
        if D.width > S.width:
            return [(arith.extsi if s_signed else arith.extui, dt)]
        return [(arith.trunci, dt)]
    if S.is_integer:  # -> float
        if st is ir.index:
            return [(arith.index_cast, ir.i64), (arith.sitofp, dt)]
        return [(arith.sitofp if s_signed else arith.uitofp, dt)]
    if D.is_integer:  # float ->
        if dt is ir.index:
            return [(arith.fptosi, ir.i64), (arith.index_cast, dt)]
        return [(arith.fptosi if D.signed else arith.fptoui, dt)]
    if D.width > S.width:
        return [(arith.extf, dt)]
    if D.width < S.width:
        return [(arith.truncf, dt)]
    # same width, different format (f16 <-> bf16, fp8 kinds): exactly through f32, one rounding
    return [(arith.extf, ir.f32), (arith.truncf, dt)]


def cast_ir(v: Value, S, D, rounding_mode=None, lanes=None) -> Value:
    """Build the cast of a run-time value (scalar, or a ``lanes``-wide vector) from ``S`` to ``D``."""
    cur = S.ir_type
    for op, t in cast_plan(S, D):
        rt = t if lanes is None else VectorType(lanes, t)
        if op == NONZERO:
            ct = cur if lanes is None else VectorType(lanes, cur)
            defn, pred = (arith.cmpf, "une") if cur.is_float else (arith.cmpi, "ne")
            v = defn(v, arith.const(0, ct), predicate=pred)
        elif op is not None:
            attrs = {"rounding": rounding_mode} if (op is arith.truncf and rounding_mode is not None) else {}
            v = op(v, result_types=[rt], **attrs)
        cur = t
    return v


def fold_cast(pv, S, D):
    """The compile-time conversion of the Python value ``pv`` of ``S`` to ``D``: the steps of
    :func:`cast_plan` through each op's scalar semantics."""
    v = host_value(S, pv)
    cur = S.ir_type
    for op, t in cast_plan(S, D):
        if op == NONZERO:
            v = bool(v != 0)
        elif op is not None:
            v = fold_ir(op, [cur], t, [v])
        cur = t
    return D._py_from_np(np.asarray(v))
