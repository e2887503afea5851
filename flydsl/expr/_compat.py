"""FlyDSL names that are spellings of what ``fx`` already has (``fx.as_ir_value``, ``fx.arith.ArithValue``,
``fx.arith.unwrap``, ``fx.arith.index``, ``fx.SyncScope``), resolved lazily by ``fx``, ``fx.arith``,
``fx.typing`` and ``fx.vector`` so that FlyDSL's imports work unchanged."""

from __future__ import annotations

from ..ir import Value
from ..ir import types as _t
from ._gather import gather, scatter
from .gpu import known_block_size

__all__ = [
    "as_ir_value", "ArithValue", "unwrap", "index", "SyncScope", "gather", "scatter", "ptr_load", "ptr_store",
    "static", "SwizzleType", "known_block_size", "FX_NAMESPACE_FALLBACK",
]  # fmt: skip


def as_ir_value(value, *, keep_static=False):
    """The raw IR value of ``value`` (FlyDSL's canonical DSL → IR converter).

    ``None`` → ``None``; an IR value as is; a Python number or a compile-time fx number → an
    ``arith.constant`` (or the Python value itself with ``keep_static=True``); lists/tuples element-wise;
    anything with ``ir_value()`` → its IR value; anything else unchanged.
    """
    if value is None or type(value) is Value:
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(as_ir_value(v, keep_static=keep_static) for v in value)
    if isinstance(value, (bool, int, float)):
        if keep_static:
            return value
        from .numeric import as_numeric

        return as_numeric(value).ir_value()
    if getattr(value, "_is_numeric", False) and keep_static and value.is_static():
        return value.value
    if hasattr(value, "ir_value") and callable(value.ir_value):
        return value.ir_value()
    return value


def unwrap(val, *, type=None, index=False):  # noqa: A002
    """The raw IR value of ``val``; a Python number becomes ``arith.constant`` of ``type`` (or index)."""
    if isinstance(val, (bool, int, float)) and (type is not None or index):
        from .arith import constant

        return constant(val, type, index=index).ir_value()
    return as_ir_value(val)


class _ArithValueMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        if type(obj) is Value:
            t = obj.type
            return isinstance(t, (_t.IntegerType, _t.IndexType, _t.FloatType, _t.VectorType))
        if getattr(obj, "_is_vector", False):
            return True
        return getattr(obj, "_is_numeric", False) and not obj.is_static()

    def __call__(cls, value, signed=None):
        from .._mlir.ir import wrap

        return wrap(as_ir_value(value))


class ArithValue(metaclass=_ArithValueMeta):
    """A run-time scalar or vector value (FlyDSL's ``ArithValue``): ``isinstance`` holds for run-time fx
    numbers, Vectors and raw IR scalars/vectors; ``ArithValue(v)`` gives the fx value of ``v``."""


def index(value):
    """An ``index`` constant (``fx.arith.constant(value, index=True)``)."""
    from .arith import constant

    return constant(value, index=True)


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
    from ._convert import resolve_dtype

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
    """A compile-time value as is: layouts, int tuples, tiles and swizzles are Python objects here."""
    return value


class SwizzleType:
    """``SwizzleType.get(mask_bits, base, shift)``: the swizzle ``Swizzle(mask_bits, base, shift)``."""

    @staticmethod
    def get(mask_bits: int, base: int, shift: int):
        from ..layout import Swizzle

        return Swizzle(mask_bits, base, shift)


#: names ``fx.typing`` and ``fx.vector`` forward to ``fx`` (FlyDSL imports them from those modules)
FX_NAMESPACE_FALLBACK = True
