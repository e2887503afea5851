"""``fly``: FlyDSL's layout dialect as it appears in a traced module — int tuples, layouts, tiles and
register tensors as IR values of ``!fly.*`` types (:class:`flydsl.ir.FlyType`), and ``fly.print``.

These ops *record* what the kernel built; they compute nothing. The algebra runs at trace time on the
Python objects (flydsl/layout), which also fix each result's type: the static part of the value in CuTe
notation, ``?`` for a run-time leaf. A constructor's operands are the run-time leaves of its result, in
order (``fly.make_int_tuple(%m) : (i32) -> !fly.int_tuple<(16,?)>``); every other op takes ``!fly`` values.

The ``fly-layout-lowering`` pass (flydsl/passes/fly_lowering.py) folds them away before anything
executes or compiles the module: ``fly.get_scalar`` becomes an ``arith.constant`` (static leaf) or the
run-time leaf it reads, ``fly.print`` becomes ``gpu.printf`` (kernels) or ``vector.print`` (host code),
and the rest, having no users left, is erased. The interpreter and codegen never see a ``fly`` op.
"""

from __future__ import annotations

from ..ir import FlyType, IndexType, IntegerType, Op, OpDef, Trait

__all__ = ["CONSTRUCTORS", "TRANSFORMS", "ALL", "static", "get_scalar", "print_", "by_name", "leaf_body"]

P = Trait.PURE


def _leaf_operand(t) -> bool:
    return isinstance(t, (IntegerType, IndexType))


def _verify_constructor(op: Op):
    for v in op.operands:
        if not _leaf_operand(v.type):
            return f"{op.defn.name}: operands are the run-time integer leaves of the result, got {v.type}"
    if len(op.results) != 1 or not isinstance(op.results[0].type, FlyType):
        return f"{op.defn.name} must produce one !fly value"
    if op.results[0].type.body.count("?") < len(op.operands):
        return f"{op.defn.name}: {len(op.operands)} run-time leaves but the type {op.results[0].type} has fewer '?'"
    return None


def _verify_transform(op: Op):
    for v in op.operands:
        if not isinstance(v.type, FlyType):
            return f"{op.defn.name} takes !fly values, got {v.type}"
    if len(op.results) != 1 or not isinstance(op.results[0].type, FlyType):
        return f"{op.defn.name} must produce one !fly value"
    return None


def leaf_body(t) -> str | None:
    """The leaf of an int tuple type with one leaf (``10`` of ``!fly.int_tuple<10>`` or ``<((10))>``), else None."""
    if not isinstance(t, FlyType) or t.mnemonic != "int_tuple" or "," in t.body:
        return None
    return t.body.strip("()")


def _verify_get_scalar(op: Op):
    (src,) = op.operands
    if leaf_body(src.type) is None:
        return f"fly.get_scalar reads an !fly.int_tuple with one leaf, got {src.type}"
    if not _leaf_operand(op.results[0].type):
        return f"fly.get_scalar produces an integer, got {op.results[0].type}"
    return None


#: ops whose operands are the run-time leaves of the value they build
CONSTRUCTORS = {
    n: OpDef(f"fly.{n}", results=1, traits=(P,), verify=_verify_constructor, doc=doc)
    for n, doc in (
        ("make_int_tuple", "an int tuple from its run-time leaves"),
        ("make_shape", "a shape from its run-time leaves"),
        ("make_stride", "a stride from its run-time leaves"),
        ("make_coord", "a coordinate from its run-time leaves"),
    )
}

static = OpDef(
    "fly.static",
    operands=0,
    traits=(P,),
    verify=lambda op: None if op.results[0].type.is_static else "fly.static needs a fully static !fly type",
    doc="a value whose whole content is its (static) type",
)

#: ops from !fly values to a !fly value (construction from parts, queries, the algebra, register tensors)
TRANSFORMS = {
    n: OpDef(f"fly.{n}", results=1, traits=(P,), verify=_verify_transform, doc=f"{n.replace('_', ' ')} (CuTe)")
    for n in (
        "make_layout", "make_ordered_layout", "make_identity_layout", "make_layout_like", "make_tile",
        "memref_alloca", "get_shape", "get_stride", "get", "select", "take", "group", "size", "cosize",
        "coalesce", "composition", "complement", "right_inverse", "left_inverse", "logical_divide",
        "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product",
        "flat_product", "blocked_product", "raked_product",
    )
}  # fmt: skip

get_scalar = OpDef(
    "fly.get_scalar", operands=1, traits=(P,), verify=_verify_get_scalar, doc="the integer of a leaf int tuple"
)

print_ = OpDef(
    "fly.print",
    results=0,
    attrs=("format",),
    doc="print values with a '{}' format (lowered to gpu.printf in kernels, vector.print on the host)",
)


#: every op of the dialect
ALL = (*CONSTRUCTORS.values(), static, *TRANSFORMS.values(), get_scalar, print_)


def by_name(name: str) -> OpDef:
    """The ``fly`` op ``name`` (without the ``fly.`` prefix)."""
    if name in CONSTRUCTORS:
        return CONSTRUCTORS[name]
    if name in TRANSFORMS:
        return TRANSFORMS[name]
    return {"static": static, "get_scalar": get_scalar, "print": print_}[name]
