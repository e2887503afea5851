"""FlyDSL names that are spellings of what ``fx`` already has (``fx.as_ir_value``, ``fx.SyncScope``,
``fx.gather`` …): ``fx`` imports them (:data:`__all__`, kept out of ``fx.__all__``), and ``fx.typing`` and
``fx.vector`` forward them, so that FlyDSL's imports work unchanged. ``fx.arith``'s own spellings
(``ArithValue``, ``unwrap``, ``index``, ``as_ir_value``) live in :mod:`flydsl.expr.arith`."""

from __future__ import annotations

from ..ir import types as _t
from ..layout import IntTupleType, LayoutType, Swizzle, Tile, TileType
from ..layout.views import wrap
from ._gather import gather, scatter
from ._sem.numeric import resolve_dtype
from .arith import ArithValue, as_ir_value, index, unwrap
from .gpu import known_block_size

__all__ = [
    "as_ir_value", "ArithValue", "unwrap", "index", "SyncScope", "gather", "scatter", "ptr_load", "ptr_store",
    "static", "SwizzleType", "TileType", "IntTupleType", "known_block_size", "FX_NAMESPACE_FALLBACK",
]  # fmt: skip


class SyncScope:
    """Synchronization scopes of atomics and fences (LLVM names); ``Agent`` is the whole GPU."""

    System = ""
    SingleThread = "singlethread"
    Agent = "agent"
    Workgroup = "workgroup"
    Wavefront = "wavefront"


def ptr_load(ptr, result_type=None):
    """The value at ``ptr`` (of ``result_type``: a DSL type, an IR type, or a vector type for several
    consecutive elements; default: the pointee type)."""
    if result_type is None:
        return ptr.load()
    t = getattr(result_type, "ir_type", result_type)
    if isinstance(t, _t.VectorType):
        return ptr.load(t.numel, dtype=resolve_dtype(t.elem))
    return ptr.load(dtype=resolve_dtype(result_type))


def ptr_store(value, ptr) -> None:
    """Store ``value`` (a scalar, or a Vector of consecutive elements) at ``ptr``."""
    ptr.store(value)


def static(value):
    """The value a static type describes (FlyDSL's ``fx.static(type)``): ``TileType`` → a :class:`Tile`,
    ``IntTupleType`` → an ``IntTuple`` (a ``StaticInt`` for a leaf), ``LayoutType`` → the layout. Values
    (layouts, int tuples, tiles, swizzles: Python objects here) come back as they are.

    Raises:
        ValueError: an int-tuple or layout type with run-time (``?``) leaves: its value is not in the type.
    """
    t = type(value)
    if t is TileType:
        return Tile(value.modes)
    if t is IntTupleType or t is LayoutType:
        if not value.is_static:
            raise ValueError(f"fx.static: {value} has run-time leaves; its value is not in its type")
        return value.layout if t is LayoutType else wrap(value.value)
    return value


class SwizzleType:
    """``SwizzleType.get(mask_bits, base, shift)``: the swizzle ``Swizzle(mask_bits, base, shift)``."""

    @staticmethod
    def get(mask_bits: int, base: int, shift: int):
        return Swizzle(mask_bits, base, shift)


#: names ``fx.typing`` and ``fx.vector`` forward to ``fx`` (FlyDSL imports them from those modules)
FX_NAMESPACE_FALLBACK = True
