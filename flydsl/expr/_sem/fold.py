"""Compile-time evaluation: an op applied to Python values through the op's own semantics.

A folded ``Int32(-7) % 2`` is ``-1`` because ``arith.remsi`` says so, not because Python's ``%`` does:
:func:`fold` runs the op's ``OpDef.evaluate`` (the interpreter's semantics) on 0-d arrays. The value
classes passed in only need ``ir_type``, ``width``, ``is_integer``, ``numpy_dtype`` and ``_py_from_np``.
"""

from __future__ import annotations

import numpy as np

from ... import ir

__all__ = ["wrap_int", "fold"]


def wrap_int(v: int, width: int, signed: bool) -> int:
    """``v`` modulo ``2**width``, as a signed value when ``signed``."""
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
        self.operands = [_TypedValue(t) for t in in_types]
        self.results = [_TypedValue(out_type)]


class _TypedValue:
    __slots__ = ("type",)

    def __init__(self, t):
        self.type = t


def fold(defn: ir.OpDef, out_cls, in_clss, values, **attrs):
    """``defn`` on compile-time ``values`` (Python values of the classes ``in_clss``) as a Python value of
    ``out_cls``, through the op's numpy semantics (one semantics)."""
    arrays = [
        np.asarray(wrap_int(v, c.width, True) if c.is_integer and c.width > 1 else v, dtype=c.numpy_dtype)
        for c, v in zip(in_clss, values)
    ]
    fop = _FoldOp(attrs, [c.ir_type for c in in_clss], out_cls.ir_type)
    with np.errstate(all="ignore"):
        r = defn.evaluate(fop, *arrays)
    return out_cls._py_from_np(np.asarray(r))
