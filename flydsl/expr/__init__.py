"""flydsl.expr (``fx``): the kernel author's API, with FlyDSL's names.

Scalars (``Int32``, ``Float32``, …), ``Vector`` and its aliases (``Float32x4``), ``Pointer``, the ``T``
type namespace, the submodules ``fx.arith``, ``fx.math``, ``fx.gpu``, ``fx.buffer_ops``, ``fx.rocdl``, ``fx.nvvm``, and
their most used functions at top level as FlyDSL exports them (``fx.max``, ``fx.exp``, ``fx.thread_idx``,
``fx.shuffle_xor``, ``fx.printf``…).

This package is the user surface: each submodule defines ``fx`` names (signatures, docstrings, argument
checks) over the semantic layer :mod:`flydsl.expr._sem` (typed values, promotion, op construction),
which user code never imports. This file only gathers names; importing it runs no other code.
"""

from __future__ import annotations

from . import arith, buffer_ops, gpu, math, nvvm, rocdl
from ._compat import (  # noqa: F401 - FlyDSL's other spellings (not in __all__; fx.typing/fx.vector forward them)
    FX_NAMESPACE_FALLBACK,
    ArithValue,
    SwizzleType,
    SyncScope,
    as_ir_value,
    gather,
    index,
    known_block_size,
    ptr_load,
    ptr_store,
    scatter,
    static,
    unwrap,
)
from ._compat import __all__ as COMPAT_NAMES  # noqa: F401
from ._sem.casts import RoundingMode
from ._sem.fastmath import FastMathFlags, fastmath
from .arith import ceildiv, max, maximumf, maxnumf, min, minimumf, minnumf
from .copy import (
    CopyAtom,
    CopyOp,
    ThrCopy,
    TiledCopy,
    UniversalCopy,
    UniversalCopy8b,
    UniversalCopy16b,
    UniversalCopy32b,
    UniversalCopy64b,
    UniversalCopy128b,
    copy,
    copy_atom_call,
    make_copy_atom,
    make_tiled_copy,
    make_tiled_copy_tv,
)
from .copy_atomic import (
    AtomicOp,
    UniversalAtomic,
    UniversalAtomicAdd,
    UniversalAtomicAnd,
    UniversalAtomicMax,
    UniversalAtomicMin,
    UniversalAtomicOr,
)
from .gpu import (
    alloc_shared,
    barrier,
    block_dim,
    block_id,
    block_idx,
    fence,
    get_dyn_shared,
    grid_dim,
    lane_id,
    num_warp_threads,
    printf,
    shuffle,
    shuffle_down,
    shuffle_idx,
    shuffle_up,
    shuffle_xor,
    thread_id,
    thread_idx,
    vote_all,
    vote_any,
    vote_ballot,
    warp_size,
)
from .irtypes import T, Types
from .layout_api import (
    Basis,
    ComposedLayout,
    E,
    IntTuple,
    Layout,
    Swizzle,
    append,
    block_product,
    blocked_product,
    ceil_div,
    coalesce,
    complement,
    composed_get_inner,
    composed_get_offset,
    composed_get_outer,
    composition,
    coprofile,
    coshape,
    cosize,
    crd2idx,
    depth,
    dice,
    downcast,
    elem_less,
    flat_divide,
    flat_product,
    get,
    get_,
    get_1d_coord,
    get_flat_coord,
    get_hier_coord,
    get_layout,
    get_leaves,
    get_scalar,
    get_shape,
    get_stride,
    group,
    idx2crd,
    int_tuple_add,
    int_tuple_div,
    int_tuple_mod,
    int_tuple_mul,
    int_tuple_product,
    int_tuple_product_each,
    int_tuple_product_like,
    int_tuple_sub,
    left_inverse,
    logical_divide,
    logical_product,
    make_composed_layout,
    make_coord,
    make_identity_layout,
    make_int_tuple,
    make_layout,
    make_layout_like,
    make_layout_tv,
    make_ordered_layout,
    make_shape,
    make_stride,
    make_tile,
    prepend,
    raked_product,
    rank,
    recast_layout,
    right_inverse,
    select,
    shape_div,
    size,
    slice,
    take,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    upcast,
    zipped_divide,
    zipped_product,
)
from .math import (
    absf,
    absi,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cbrt,
    ceil,
    copysign,
    cos,
    cosh,
    ctlz,
    ctpop,
    cttz,
    erf,
    erfc,
    exp,
    exp2,
    expm1,
    floor,
    fma,
    isfinite,
    isinf,
    isnan,
    log,
    log1p,
    log2,
    log10,
    powf,
    roundeven,
    rsqrt,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
)
from .mma import (  # tensor-core MMA atoms (docs/mma.md)
    MmaAtom,
    MmaOp,
    ThrMma,
    TiledMma,
    UniversalFMA,
    gemm,
    make_mma_atom,
    make_tiled_copy_A,
    make_tiled_copy_B,
    make_tiled_copy_C,
    make_tiled_mma,
    mma_atom_call,
)
from .numeric import (
    BFloat16,
    Boolean,
    Float,
    Float8E4M3FN,
    Float8E4M3FNUZ,
    Float8E5M2,
    Float8E5M2FNUZ,
    Float16,
    Float32,
    Float64,
    Index,
    Int8,
    Int16,
    Int32,
    Int64,
    Integer,
    Numeric,
    RuntimeValueError,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    as_numeric,
)
from .pointer import (
    Pointer,
    as_dsl_value,
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_exchange,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xor,
    inttoptr,
    ptrtoint,
)
from .primitive import const_expr, range_constexpr
from .smem import Arena, SharedAllocator
from .struct import Align, Array, Storage, Struct, Union, struct, union
from .tensor import (
    AddressSpace,
    LayoutType,
    MemRefType,
    Tensor,
    add_offset,
    get_iter,
    make_fragment_layout_like,
    make_fragment_like,
    make_identity_tensor,
    make_rmem_tensor,
    make_tensor,
    make_view,
    memref_alloca,
    memref_load,
    memref_load_vec,
    memref_store,
    memref_store_vec,
    recast_iter,
)
from .typing import Constexpr, Stream
from .vector import (
    ALIAS_NAMES,
    ReductionOp,
    Vector,
    VectorAlias,
    alias_by_name,
    empty_like,
    full,
    full_like,
    ones_like,
    zeros_like,
)

__all__ = [
    # scalar types
    "Numeric", "Integer", "Float", "Boolean", "Index", "Int8", "Int16", "Int32", "Int64", "Uint8", "Uint16",
    "Uint32", "Uint64", "Float16", "BFloat16", "Float32", "Float64", "Float8E4M3FN", "Float8E5M2",
    "Float8E4M3FNUZ", "Float8E5M2FNUZ", "as_numeric", "as_dsl_value", "RuntimeValueError",
    # conversions and fast math
    "RoundingMode", "FastMathFlags", "fastmath",
    # types, vectors, pointers
    "T", "Types", "Vector", "VectorAlias", "ReductionOp", "full", "full_like", "zeros_like", "ones_like",
    "empty_like", *ALIAS_NAMES, "Pointer", "inttoptr", "ptrtoint",
    "atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_exchange",
    "atomic_cas",
    # submodules
    "arith", "math", "gpu", "buffer_ops",
    # typed arithmetic and math at top level
    "max", "min", "ceildiv", "maxnumf", "minnumf", "maximumf", "minimumf",
    "absf", "absi", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos",
    "cosh", "ctlz", "ctpop", "cttz", "erf", "erfc", "exp", "exp2", "expm1", "floor", "fma", "isfinite", "isinf",
    "isnan", "log", "log1p", "log2", "log10", "powf", "roundeven", "rsqrt", "sin", "sinh", "sqrt", "tan", "tanh",
    "trunc",
    # gpu
    "thread_idx", "block_idx", "block_dim", "grid_dim", "thread_id", "block_id", "lane_id", "barrier", "fence",
    "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down", "shuffle_idx", "vote_any", "vote_all",
    "vote_ballot", "warp_size", "num_warp_threads", "printf", "alloc_shared", "get_dyn_shared",
    # compile-time control
    "const_expr", "range_constexpr",
    # layouts (flydsl.layout with FlyDSL's names, on layouts and tensors)
    "Layout", "ComposedLayout", "Swizzle", "Basis", "E", "IntTuple", "make_shape", "make_stride", "make_coord",
    "make_int_tuple", "make_layout", "make_ordered_layout", "make_identity_layout", "make_layout_like",
    "make_composed_layout", "make_tile", "make_layout_tv", "size", "cosize", "coshape", "coprofile", "rank", "depth",
    "get_shape", "get_stride", "get_layout", "get", "get_", "get_scalar", "get_leaves", "select", "group", "take",
    "append", "prepend", "slice", "dice", "coalesce", "composition", "complement", "right_inverse", "left_inverse",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product",
    "tiled_product", "flat_product", "blocked_product", "block_product", "raked_product", "tile_to_shape", "upcast",
    "downcast", "recast_layout", "crd2idx", "idx2crd", "get_hier_coord", "get_flat_coord", "get_1d_coord",
    "elem_less", "ceil_div", "shape_div", "int_tuple_add", "int_tuple_sub", "int_tuple_mul", "int_tuple_div",
    "int_tuple_mod", "int_tuple_product", "int_tuple_product_each", "int_tuple_product_like", "composed_get_inner",
    "composed_get_offset", "composed_get_outer",
    # tensors
    "Constexpr", "Stream",
    "Tensor", "make_view", "make_tensor", "make_rmem_tensor", "make_fragment_like", "make_identity_tensor",
    "get_iter", "AddressSpace", "MemRefType", "LayoutType", "memref_alloca", "memref_load", "memref_store",
    "memref_load_vec", "memref_store_vec", "make_fragment_layout_like", "add_offset", "recast_iter",
    # copies
    "CopyOp", "CopyAtom", "TiledCopy", "ThrCopy", "UniversalCopy", "UniversalCopy8b", "UniversalCopy16b",
    "UniversalCopy32b", "UniversalCopy64b", "UniversalCopy128b", "make_copy_atom", "make_tiled_copy",
    "make_tiled_copy_tv", "copy", "copy_atom_call", "rocdl", "AtomicOp", "UniversalAtomic", "UniversalAtomicAdd",
    "UniversalAtomicMax", "UniversalAtomicMin", "UniversalAtomicAnd", "UniversalAtomicOr",
    # MMA atoms (flydsl/expr/mma.py) and NVIDIA operations (fx.nvvm)
    "MmaOp", "MmaAtom", "TiledMma", "ThrMma", "UniversalFMA", "make_mma_atom", "make_tiled_mma", "gemm",
    "mma_atom_call", "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "nvvm",
    # shared memory and composite storage
    "SharedAllocator", "Arena", "struct", "union", "Struct", "Union", "Array", "Align", "Storage",
]  # fmt: skip


def __getattr__(name: str):
    """The vector aliases ``fx.<Dtype>x<N>`` (``fx.Float32x4``, ``fx.Int8x64``…): any lane count, one cached
    class each (:func:`flydsl.expr.vector.alias_by_name`)."""
    alias = alias_by_name(name)
    if alias is not None:
        return alias
    raise AttributeError(f"module 'flydsl.expr' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(ALIAS_NAMES))
