"""Recording layout values in the traced IR as FlyDSL's ``fly`` dialect does (flydsl/dialects/fly.py).

The layout algebra runs on Python objects at trace time; these functions add the *record* of what the kernel
built to the module — ``fly.make_int_tuple(%m) : (i32) -> !fly.int_tuple<(16,?)>``,
``fly.make_layout(%s, %d) : (...) -> !fly.layout<(16,?):(1,?)>``, ``fly.memref_alloca`` of a register
tensor — so the traced IR (``source_ir``, ``00_origin.mlir``) reads like FlyDSL's. Nothing uses the records:
``fly-layout-lowering`` erases them before the interpreter or codegen runs, so they cost one op each at
trace time and nothing after. Outside a trace (no insertion point) nothing is recorded.
"""

from __future__ import annotations

from ...dialects import fly as _fly
from ...ir import FlyType, Value, builder
from ...layout import Basis, Layout, type_body
from ...layout.inttuple import _leaves, format_int_tuple

__all__ = ["recording", "int_tuple", "layout", "tile", "from_parts", "ordered_layout", "memref"]


def recording() -> bool:
    """True inside a trace (there is an insertion point to record at)."""
    return builder.current_block() is not None


def _dynamic_leaves(t) -> list[Value]:
    out = []
    for x in _leaves(t, []):
        if type(x) is Basis:
            x = x.value
        if type(x) is int or x is None:
            continue
        v = x if type(x) is Value else getattr(x, "ir_value", None)
        if v is None:
            continue
        out.append(v if type(v) is Value else v())
    return out


def int_tuple(t, kind: str = "make_int_tuple") -> Value | None:
    """Record the int tuple ``t`` (plain nested tuple, leaves as :mod:`flydsl.layout` holds them) built by
    ``fx.<kind>``; returns its ``!fly.int_tuple`` value (None outside a trace)."""
    if builder.current_block() is None:
        return None
    return _fly.CONSTRUCTORS[kind](*_dynamic_leaves(t), result_types=[FlyType("int_tuple", format_int_tuple(t))])


def layout(lay) -> Value | None:
    """Record ``lay`` as ``fly.static`` (a static layout) or ``fly.make_layout`` of its shape and stride."""
    if builder.current_block() is None:
        return None
    if lay.is_static:
        return _fly.static(result_types=[FlyType("layout", type_body(lay))])
    return from_parts("make_layout", lay, int_tuple(lay._shape), int_tuple(lay._stride))


def tile(t) -> Value | None:
    """Record the static tile ``t`` as ``fly.static : !fly.tile<[8|64]>`` (FlyDSL's ``make_tile``); a tile with
    run-time modes has no type of its own in FlyDSL and is not recorded."""
    if builder.current_block() is None or not t.is_static:
        return None
    return _fly.static(result_types=[FlyType("tile", str(t))])


def from_parts(kind: str, result, *parts) -> Value | None:
    """Record ``fly.<kind>(parts…)`` whose result is the layout (or int tuple) ``result``."""
    if builder.current_block() is None or any(p is None for p in parts):
        return None
    mnemonic = "layout" if isinstance(result, Layout) else "int_tuple"
    return _fly.TRANSFORMS[kind](*parts, result_types=[FlyType(mnemonic, type_body(result))])


def ordered_layout(out: Layout, shape, order) -> Value | None:
    """Record ``fly.make_ordered_layout(shape, order)`` giving ``out`` (``order`` None: column-major)."""
    if builder.current_block() is None:
        return None
    if order is None:
        order = tuple(range(len(shape))) if type(shape) is tuple else 0
    return from_parts("make_ordered_layout", out, int_tuple(shape), int_tuple(order))


def memref(lay_value: Value | None, lay, elem_type, space: str) -> Value | None:
    """Record a tensor of ``elem_type`` in ``space`` (``register`` …) over the recorded layout ``lay_value``:
    ``!fly.memref<f32, register, (2,3):(1,2)>``."""
    if lay_value is None or builder.current_block() is None:
        return None
    ty = FlyType("memref", f"{elem_type}, {space}, {type_body(lay)}")
    return _fly.TRANSFORMS["memref_alloca"](lay_value, result_types=[ty])
