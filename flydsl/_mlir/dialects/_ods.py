"""Shared machinery of the ``flydsl._mlir.dialects`` facades: building one of our ops the way the
bindings' generated builders do (``loc=``, ``ip=``, operands that may be fx values) and the op-view
classes (``arith.AddFOp(a, b).result``) generated from a table of our op definitions."""

from __future__ import annotations

import contextlib

from ... import ir as _ir
from .. import ir

__all__ = ["build", "op_class", "snake_fn", "operands_of", "amd_only", "unsupported"]


def operands_of(values) -> list:
    return [ir.unwrap(v) for v in values]


def _where(loc, ip):
    stack = contextlib.ExitStack()
    if ip is not None:
        stack.enter_context(ip if isinstance(ip, ir.InsertionPoint) else ir.InsertionPoint(ip))
    if loc is not None and getattr(loc, "_loc", None) is not None:
        stack.enter_context(_ir.location(loc._loc))
    return stack


def build(defn: _ir.OpDef, operands, result_types=None, attrs=None, *, loc=None, ip=None) -> _ir.Op:
    """Build ``defn`` at the insertion point (``ip`` when given) and return the op."""
    from ...ir.builder import create

    attrs = {k: ir.attr_value(v) for k, v in (attrs or {}).items() if v is not None}
    rt = None if result_types is None else [ir._unwrap_type(t) for t in result_types]
    with _where(loc, ip):
        return create(defn, operands_of(operands), rt, attrs)


def op_class(class_name: str, defn: _ir.OpDef, signature: str, attr_names=()):
    """An op-view class for ``defn``. ``signature`` says how the positional arguments read:
    ``"operands"`` (all operands), ``"type,operands"`` (result type first: casts), ``"attr,operands"``
    (an attribute first: comparisons), ``"type,attr"`` (constants)."""

    def __init__(self, *args, loc=None, ip=None, **kw):
        attrs = {k: kw.pop(k) for k in list(kw) if k in attr_names or k == "fastmath"}
        if "fastmath" in attrs and attrs["fastmath"] is not None:
            attrs["fastmath"] = str(attrs["fastmath"])
        rt = None
        if signature == "type,operands":
            rt, args = [args[0]], args[1:]
        elif signature == "attr,operands":
            attrs[attr_names[0]], args = args[0], args[1:]
        elif signature == "type,attr":
            rt, attrs[attr_names[0]], args = [args[0]], args[1], ()
        args = (*args, *kw.values())  # keyword operands (lhs=, rhs=, in_=, value=), in order
        ir.OpView.__init__(self, build(defn, list(args), rt, attrs, loc=loc, ip=ip))

    return type(class_name, (ir.OpView,), {"__init__": __init__, "OPERATION_NAME": defn.name})


def snake_fn(cls):
    """The bindings' lower-case builder for an op class: returns the result (or results)."""

    def fn(*args, **kw):
        op = cls(*args, **kw)
        res = op.results
        if len(res) == 1:
            return res[0]
        return res if res else op

    fn.__name__ = cls.OPERATION_NAME.split(".", 1)[1]
    fn.__doc__ = f"build ``{cls.OPERATION_NAME}`` and return its result"
    return fn


def _user_loc():
    from ...compiler.frames import current_location

    return current_location()


def amd_only(name: str, what: str, alt: str = "fx.gemm / fx.copy / fx.gpu"):
    """A builder for an AMD-only operation: raises FLY501 at the user's line, naming the op and target."""

    def fn(*args, **kwargs):
        from ...compiler.errors import AMD_ONLY_OP, error
        from ...runtime.arch import get_rocm_arch

        raise error(AMD_ONLY_OP, _user_loc(), op=name, what=what, target=get_rocm_arch(), alt=alt)

    fn.__name__ = name.rsplit(".", 1)[-1]
    fn.__doc__ = f"AMD-only ({what}): raises FLY501 on this target"
    return fn


def unsupported(name: str, why: str):
    """A builder for an MLIR construct our IR has no counterpart of: raises FLY502 at the user's line."""

    def fn(*args, **kwargs):
        from ...compiler.errors import MLIR_UNSUPPORTED, error

        raise error(MLIR_UNSUPPORTED, _user_loc(), op=name, why=why)

    fn.__name__ = name.rsplit(".", 1)[-1]
    fn.__doc__ = f"not available here ({why}): raises FLY502"
    return fn
