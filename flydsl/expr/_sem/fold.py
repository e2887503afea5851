"""Compile-time evaluation: an op applied to Python values through the op's own semantics.

A folded ``Int32(-7) % 2`` is ``-1`` because ``arith.remsi`` says so, not because Python's ``%`` does:
:func:`fold` runs the op's scalar semantics (``OpDef.scalar_fn``: its scalar hook, which a property test
holds equal to ``evaluate``, the interpreter's semantics) on host scalars. The value classes passed in
only need ``ir_type``, ``width``, ``is_integer``, ``numpy_dtype`` and ``_py_from_np``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ... import ir

__all__ = ["wrap_int", "fold", "fold_ir", "host_value"]


def wrap_int(v: int, width: int, signed: bool) -> int:
    """``v`` modulo ``2**width``, as a signed value when ``signed``."""
    mask = (1 << width) - 1
    v &= mask
    if signed and v >> (width - 1):
        v -= 1 << width
    return v


class _FoldOp:
    """Stands in for an Op when asking a dialect for an op's semantics on compile-time values."""

    __slots__ = ("attrs", "operands", "results")

    def __init__(self, attrs, in_types, out_type):
        self.attrs = attrs
        self.operands = [_TypedValue(t) for t in in_types]
        self.results = [_TypedValue(out_type)]


class _TypedValue:
    __slots__ = ("type",)

    def __init__(self, t):
        self.type = t


_FNS: dict[tuple, Callable] = {}


def fold_ir(defn: ir.OpDef, in_types: list, out_type: ir.Type, values: list, **attrs):
    """``defn`` on host scalars ``values`` of ``in_types`` (see :mod:`flydsl.ir.numpy_types`); the result
    as a host scalar of ``out_type``."""
    try:
        key = (defn, tuple(in_types), out_type, tuple(sorted(attrs.items())))
        f = _FNS.get(key)
    except TypeError:  # an unhashable attribute value
        key, f = None, None
    if f is None:
        f = defn.scalar_fn(_FoldOp(attrs, in_types, out_type))
        if key is not None:
            _FNS[key] = f
    return f(*values)


def host_value(cls, v):
    """The Python value ``v`` of the DSL type ``cls`` as a host scalar (signed ints, bool, numpy floats)."""
    if cls.is_integer:
        if cls.width == 1:
            return bool(v)
        return v if cls.signed or cls.ir_type is ir.index else wrap_int(v, cls.width, True)
    return np.asarray(v, dtype=cls.numpy_dtype)[()]


_CLS_FNS: dict[tuple, Callable] = {}


def fold(defn: ir.OpDef, out_cls, in_clss, values, **attrs):
    """``defn`` on compile-time ``values`` (Python values of the classes ``in_clss``) as a Python value of
    ``out_cls``, through the op's scalar semantics (one semantics)."""
    key = (defn, out_cls, *in_clss, *attrs.items())
    f = _CLS_FNS.get(key)
    if f is None:
        f = _CLS_FNS[key] = defn.scalar_fn(_FoldOp(attrs, [c.ir_type for c in in_clss], out_cls.ir_type))
    r = f(*[host_value(c, v) for c, v in zip(in_clss, values)])
    if out_cls.is_float:
        return float(r)
    return r if out_cls.signed and out_cls.width > 1 else out_cls._py_from_np(r)
