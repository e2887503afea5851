"""``flydsl._mlir.dialects.fly``: the parts of FlyDSL's ``fly`` dialect that kernel helpers call on
values. Layouts, int tuples and their types are Python objects of ``flydsl.layout`` here (folded at
trace time), not IR types; ``extract_aligned_pointer_as_index`` gives a tensor's base pointer, and the layout
algebra (``fly.coalesce``, ``fly.composition``, ``fly.logical_divide`` …) is ``fx``'s on those objects."""

from __future__ import annotations

from ... import expr as _fx
from ...dialects import ptr as _p
from ...ir import types as _t
from .. import ir
from ._ods import build, unsupported

#: the layout algebra, on the Python layouts and int tuples that stand for the dialect's values here
LAYOUT_ALGEBRA = (
    "coalesce", "composition", "complement", "right_inverse", "left_inverse", "logical_divide", "zipped_divide",
    "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product", "blocked_product",
    "raked_product", "size", "cosize",
)  # fmt: skip

__all__ = [
    "extract_aligned_pointer_as_index", "set_llvm_option_bool", "set_llvm_option_int", "set_llvm_option_str",
    *LAYOUT_ALGEBRA,
]  # fmt: skip


def extract_aligned_pointer_as_index(result_type, tensor, **kw):
    """The base pointer of ``tensor`` (an fx tensor or pointer), as ``result_type`` (an ``!llvm.ptr<N>``)."""
    base = getattr(tensor, "iterator", None)  # an fx.Tensor: its base pointer
    v = ir.unwrap(base if base is not None else tensor)
    t = ir._unwrap_type(result_type)
    if not isinstance(v.type, _t.PointerType):
        raise TypeError(f"extract_aligned_pointer_as_index needs a tensor in memory, got {v.type}")
    if v.type is t:
        return v
    if isinstance(t, _t.PointerType) and v.type.space != t.space and t.space not in (0, v.type.space):
        raise TypeError(f"cannot view a {v.type} as {t}")
    want = _t.PointerType(t.elem if isinstance(t, _t.PointerType) else _t.i8, v.type.space)
    return build(_p.cast, [v], [want]).results[0]


def _llvm_option(kind):
    def fn(name, value, *args, **kw):
        """Set an LLVM option in the innermost ``llvm_options`` block (``flydsl.compiler.llvm_options``)."""
        from ...compiler.llvm_options import set_option

        set_option(str(name), kind(value))

    return fn


set_llvm_option_bool = _llvm_option(bool)
set_llvm_option_int = _llvm_option(int)
set_llvm_option_str = _llvm_option(str)


def __getattr__(name: str):
    if name in LAYOUT_ALGEBRA:
        return getattr(_fx, name)
    if name.endswith("Type") or name[:1].islower():
        return unsupported(f"fly.{name}", "layouts and int tuples are Python objects folded at trace time")
    raise AttributeError(name)
