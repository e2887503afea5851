"""CuTe layout algebra in pure Python, on static ints and traced integers alike.

Input: shapes, strides, coordinates and tilers as nested tuples whose leaves are Python ints
(static, folded here) or traced integers (run-time values, combined only through operators).
Output: :class:`Layout`, :class:`ComposedLayout`, indices and coordinates. See docs/layout.md.

Names follow CuTe; FlyDSL's spellings (``int_tuple_add``, ``get_``, ``get_scalar``, ...) are
provided as well.
"""

from .access import (
    append,
    crd2idx,
    depth,
    dice,
    get,
    get_,
    get_1d_coord,
    get_flat_coord,
    get_hier_coord,
    get_leaves,
    get_scalar,
    group,
    idx2crd,
    prepend,
    rank,
    select,
    shape,
    size,
    slice,
    slice_and_offset,
    stride,
    take,
)
from .algebra import (
    blocked_product,
    coalesce,
    complement,
    composition,
    downcast,
    filter,
    flat_divide,
    flat_product,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout_tv,
    max_common_layout,
    max_common_vector,
    raked_product,
    recast_layout,
    right_inverse,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    upcast,
    zipped_divide,
    zipped_product,
)
from .inttuple import (
    Basis,
    E,
    ceil_div,
    compact_col_major,
    compact_row_major,
    compatible,
    congruent,
    elem_less,
    elem_scale,
    equal,
    flatten,
    format_int_tuple,
    has_none,
    inner_product,
    int_tuple_add,
    int_tuple_div,
    int_tuple_mod,
    int_tuple_mul,
    int_tuple_sub,
    is_dynamic,
    is_int,
    is_static,
    is_tuple,
    make_int_tuple,
    prefix_product,
    product,
    product_each,
    product_like,
    repeat_like,
    shape_div,
    suffix_product,
    transform_leaf,
    unflatten,
    weakly_compatible,
    weakly_congruent,
)
from .layout import (
    ComposedLayout,
    Layout,
    coprofile,
    coshape,
    cosize,
    filter_zeros,
    make_composed_layout,
    make_coord,
    make_identity_layout,
    make_layout,
    make_layout_like,
    make_ordered_layout,
    make_shape,
    make_stride,
    make_tile,
)
from .swizzle import Swizzle
from .tile import Tile
from .types import IntTupleType, LayoutType, TileType, parse_body, type_body
from .views import IntTuple, StaticInt

#: The immutable value types of this package (an IntTuple is a tuple). A static instance is a compile-time
#: constant whose ``repr`` is its value, the same in every process (the jit keys them by it).
VALUE_TYPES = (Layout, ComposedLayout, Swizzle, Tile, Basis, StaticInt)

# FlyDSL spellings of the same functions.
int_tuple_product = product
int_tuple_product_each = product_each
int_tuple_product_like = product_like
get_shape = shape
get_stride = stride
block_product = blocked_product


def composed_get_inner(layout):
    """The inner map (Swizzle or layout) of a ComposedLayout."""
    return layout.inner


def composed_get_offset(layout):
    """The offset of a ComposedLayout."""
    return layout.offset


def composed_get_outer(layout):
    """The outer layout of a ComposedLayout."""
    return layout.outer


__all__ = [
    # types
    "Layout",
    "ComposedLayout",
    "Swizzle",
    "Tile",
    "IntTuple",
    "StaticInt",
    "IntTupleType",
    "LayoutType",
    "TileType",
    "type_body",
    "parse_body",
    "Basis",
    "E",
    # IntTuple
    "is_tuple",
    "is_int",
    "is_static",
    "is_dynamic",
    "has_none",
    "make_int_tuple",
    "format_int_tuple",
    "flatten",
    "unflatten",
    "product",
    "product_each",
    "product_like",
    "inner_product",
    "prefix_product",
    "suffix_product",
    "compact_col_major",
    "compact_row_major",
    "shape_div",
    "ceil_div",
    "elem_less",
    "elem_scale",
    "congruent",
    "weakly_congruent",
    "compatible",
    "weakly_compatible",
    "equal",
    "transform_leaf",
    "repeat_like",
    "int_tuple_add",
    "int_tuple_sub",
    "int_tuple_mul",
    "int_tuple_div",
    "int_tuple_mod",
    "int_tuple_product",
    "int_tuple_product_each",
    "int_tuple_product_like",
    "get_scalar",
    "get_leaves",
    # construction
    "make_shape",
    "make_stride",
    "make_coord",
    "make_layout",
    "make_ordered_layout",
    "make_identity_layout",
    "make_layout_like",
    "make_composed_layout",
    "make_tile",
    # queries and structure
    "size",
    "cosize",
    "coshape",
    "coprofile",
    "rank",
    "depth",
    "shape",
    "stride",
    "get_shape",
    "get_stride",
    "get",
    "get_",
    "select",
    "group",
    "take",
    "append",
    "prepend",
    "slice",
    "slice_and_offset",
    "dice",
    "filter_zeros",
    "composed_get_inner",
    "composed_get_offset",
    "composed_get_outer",
    # mapping
    "crd2idx",
    "idx2crd",
    "get_hier_coord",
    "get_flat_coord",
    "get_1d_coord",
    # algebra
    "coalesce",
    "filter",
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "block_product",
    "raked_product",
    "tile_to_shape",
    "upcast",
    "downcast",
    "recast_layout",
    "make_layout_tv",
    "max_common_layout",
    "max_common_vector",
]
