"""flydsl.expr (``fx``): the kernel author's API, with FlyDSL's names.

Scalars (``Int32``, ``Float32``, …), ``Vector`` and its aliases (``Float32x4``), ``Pointer``, the ``T``
type namespace, the submodules ``fx.arith``, ``fx.math``, ``fx.gpu`` (and ``fx.buffer_ops``, imported on
first use), and their most used functions at top level as FlyDSL exports them (``fx.max``, ``fx.exp``,
``fx.thread_idx``, ``fx.shuffle_xor``, ``fx.printf``…).
"""

from __future__ import annotations

import importlib

from . import (
    _ops,  # noqa: F401  (installs the scalar operators)
    _vector_ops,  # noqa: F401  (installs the Vector operators)
    arith,
    gpu,
    math,
)
from ._convert import RoundingMode
from ._fastmath import FastMathFlags, fastmath
from ._static import const_expr, range_constexpr
from ._vector_alias import (
    ALIAS_NAMES,
    VectorAlias,
    alias_by_name,
    empty_like,
    full,
    full_like,
    ones_like,
    zeros_like,
)
from ._vector_ops import ReductionOp
from .arith import ceildiv, max, maximumf, maxnumf, min, minimumf, minnumf
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
from .vector import Vector

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
]  # fmt: skip

globals().update({_name: alias_by_name(_name) for _name in ALIAS_NAMES})

# submodules imported on first use (fx.buffer_ops); the layout engine adds "rocdl" here
_LAZY_SUBMODULES = {"buffer_ops": ".buffer_ops"}


def __getattr__(name: str):
    mod = _LAZY_SUBMODULES.get(name)
    if mod is not None:
        m = importlib.import_module(mod, __name__)
        globals()[name] = m
        return m
    alias = alias_by_name(name)  # Float32x5, Int8x64, … beyond the predefined aliases
    if alias is not None:
        return alias
    raise AttributeError(f"module 'flydsl.expr' has no attribute {name!r}")
