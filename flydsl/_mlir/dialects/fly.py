"""``flydsl._mlir.dialects.fly``: FlyDSL's ``fly`` dialect builders over our IR (flydsl/dialects/fly.py).

Two kinds of argument, as in FlyDSL code:

* IR values of ``!fly.*`` types (``fly.static(IntTupleType.get((10, 2)))``, ``fly.make_layout(s, stride=d)``):
  each builder records its ``fly`` op; the result's type — the static value — is computed here by the layout
  algebra (flydsl/layout) from the operands' types, as FlyDSL's type inference does. ``fly.get_scalar``
  gives an ``i32``; ``fly-layout-lowering`` folds it to a constant. These builders need static operands
  (a ``?`` leaf has no value in its type); run-time layouts are built with ``fx``.
* the Python layouts and int tuples of ``fx`` (``fly.coalesce(fx.make_layout(...))``): the ``fx`` function.

``extract_aligned_pointer_as_index`` gives a tensor's base pointer; ``IntTupleType``, ``LayoutType`` and
``TileType`` are the static types (flydsl/layout/types.py)."""

from __future__ import annotations

import functools

from ... import expr as _fx
from ... import layout as _L
from ...dialects import fly as _fly
from ...dialects import ptr as _p
from ...ir import Value as _Value
from ...ir import types as _t
from .. import ir
from .._mlir_libs._mlirDialectsFly import set_llvm_option_bool, set_llvm_option_int, set_llvm_option_str
from ._ods import build, unsupported

#: the layout algebra, on the Python layouts and int tuples that stand for the dialect's values here
LAYOUT_ALGEBRA = (
    "coalesce", "composition", "complement", "right_inverse", "left_inverse", "logical_divide", "zipped_divide",
    "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product", "blocked_product",
    "raked_product", "size", "cosize",
)  # fmt: skip

#: builders on !fly values: name -> the algebra on the static values (FlyDSL's keyword names)
_ON_VALUES = {
    "make_layout": lambda shape, stride=None: _L.make_layout(shape, stride=stride),
    "make_ordered_layout": lambda shape, order=None: _L.make_ordered_layout(shape, order),
    "make_identity_layout": _L.make_identity_layout,
    "get_shape": _L.shape, "get_stride": _L.stride, "size": _L.size, "cosize": _L.cosize,
    "get": lambda x, mode: _L.get(x, *(mode if isinstance(mode, (list, tuple)) else [mode])),
    "select": lambda x, indices: _L.select(x, indices),
    "take": lambda x, begin, end: _L.take(x, begin, end),
    "group": lambda x, begin, end: _L.group(x, begin, end),
    "coalesce": _L.coalesce, "composition": _L.composition, "right_inverse": _L.right_inverse,
    "left_inverse": _L.left_inverse,
    "complement": lambda x, codomain_size=None: _L.complement(x, codomain_size, overlap_ok=True),
    **{n: getattr(_L, n) for n in (
        "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product",
        "tiled_product", "flat_product", "blocked_product", "raked_product",
    )},
}  # fmt: skip

IntTupleType, LayoutType, TileType = _L.IntTupleType, _L.LayoutType, _L.TileType

__all__ = [
    "extract_aligned_pointer_as_index", "set_llvm_option_bool", "set_llvm_option_int", "set_llvm_option_str",
    "IntTupleType", "LayoutType", "TileType", "static", "make_int_tuple", "make_shape", "make_stride",
    "make_coord", "get_scalar", *LAYOUT_ALGEBRA, *_ON_VALUES,
]  # fmt: skip


def _is_fly_value(x) -> bool:
    return type(x) is _Value and isinstance(x.type, _t.FlyType)


def _static_of(v):
    """The static value of a !fly IR value (its type's body)."""
    try:
        return _L.parse_body(v.type.mnemonic, v.type.body)
    except ValueError as e:
        raise TypeError(f"{e}: build run-time layouts with fx (fx.make_layout, fx.size …)") from None


def _ir_type(t) -> _t.FlyType:
    if isinstance(t, _t.FlyType):
        return t
    if isinstance(t, (IntTupleType, LayoutType, TileType)):
        return _t.FlyType(t.mnemonic, t.body)
    raise TypeError(f"expected a !fly type (IntTupleType.get(...), LayoutType.get(...)), got {t!r}")


def _type_of(x) -> _t.FlyType:
    if isinstance(x, _L.Layout):
        return _t.FlyType("layout", _L.type_body(x))
    return _t.FlyType("int_tuple", _L.type_body(x))


def static(result_type, *, loc=None, ip=None):
    """``fly.static``: a value whose whole content is its static type."""
    return build(_fly.static, [], [_ir_type(result_type)], loc=loc, ip=ip).results[0]


def _constructor(kind: str):
    def fn(result_type, dyn_elems=(), *, loc=None, ip=None):
        """Build the int tuple of ``result_type`` from its run-time leaves ``dyn_elems`` (FlyDSL's signature)."""
        return build(_fly.CONSTRUCTORS[kind], list(dyn_elems), [_ir_type(result_type)], loc=loc, ip=ip).results[0]

    fn.__name__ = kind
    return fn


make_int_tuple, make_shape, make_stride, make_coord = (
    _constructor(k) for k in ("make_int_tuple", "make_shape", "make_stride", "make_coord")
)


def get_scalar(int_tuple, *, loc=None, ip=None):
    """``fly.get_scalar``: the ``i32`` of a leaf int tuple (an ``fx`` value: its single leaf)."""
    if not _is_fly_value(int_tuple):
        return _fx.get_scalar(int_tuple)
    return build(_fly.get_scalar, [int_tuple], [_t.i32], loc=loc, ip=ip).results[0]


def _builder(name: str):
    algebra = _ON_VALUES.get(name)

    @functools.wraps(getattr(_fx, name, algebra))
    def fn(*args, loc=None, ip=None, **kw):
        values = [a for a in (*args, *kw.values()) if _is_fly_value(a)]
        if not values:
            return getattr(_fx, name)(*args, **kw)
        conv = lambda a: _static_of(a) if _is_fly_value(a) else a  # noqa: E731
        result = algebra(*(conv(a) for a in args), **{k: conv(v) for k, v in kw.items()})
        return build(_fly.TRANSFORMS[name], values, [_type_of(result)], loc=loc, ip=ip).results[0]

    return fn


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


def __getattr__(name: str):
    if name in _ON_VALUES:
        fn = globals()[name] = _builder(name)
        return fn
    if name in LAYOUT_ALGEBRA:
        return getattr(_fx, name)
    if name.endswith("Type") or name[:1].islower():
        return unsupported(f"fly.{name}", "layouts and int tuples are Python objects folded at trace time")
    raise AttributeError(name)
