"""``vector``: building, reading and reshuffling 1-D vectors, and reductions.

Vectors in the IR are flat (``vector<N x T>``); a nested logical shape lives in the front end's
``fx.Vector``. In ``evaluate`` functions a vector is an array of shape ``(1|T, N)``.
"""

from __future__ import annotations

import numpy as np

from ..ir import Op, OpDef, Trait, VectorType, numpy_dtype, register_format, register_parse_format
from ._base import as_unsigned, from_unsigned
from .arith import ieee_maximum, ieee_maxnum, ieee_minimum, ieee_minnum

P = Trait.PURE


def _rows(*arrays):
    return max((a.shape[0] if a.ndim >= 1 else 1) for a in arrays)


def _scalar_col(x):
    """A scalar value (ndim <= 1) as a column (rows, 1)."""
    x = np.asarray(x)
    return x.reshape(-1, 1) if x.ndim == 1 else x.reshape(1, 1)


# -- broadcast ------------------------------------------------------------------------------------


def _broadcast_eval(op, x):
    n = op.results[0].type.numel
    col = _scalar_col(x)
    return np.repeat(col, n, axis=1) if col.shape[0] > 1 else np.broadcast_to(col, (1, n))


def _broadcast_verify(op):
    (x,) = op.operands
    t = op.results[0].type
    if not isinstance(t, VectorType) or isinstance(x.type, VectorType) or x.type is not t.elem:
        return f"broadcast takes a scalar of the result's element type, got {x.type} -> {t}"
    return None


broadcast = OpDef(
    "vector.broadcast",
    operands=1,
    traits=(P,),
    evaluate=_broadcast_eval,
    verify=_broadcast_verify,
    fmt="cast",
    doc="splat a scalar to every lane",
)

# -- static extract / insert ---------------------------------------------------------------------


def _pos_check(op, vec_t):
    p = op.attrs.get("position")
    if not isinstance(p, int) or not 0 <= p < vec_t.numel:
        return f"position {p!r} out of range for {vec_t}"
    return None


def _extract_eval(op, v):
    return v[:, op.attrs["position"]]


def _extract_infer(types, attrs):
    return [types[0].elem]


extract = OpDef(
    "vector.extract",
    operands=1,
    traits=(P,),
    attrs=("position",),
    infer=_extract_infer,
    evaluate=_extract_eval,
    verify=lambda op: _pos_check(op, op.operands[0].type),
    doc="read lane `position` (static)",
)


def _insert_eval(op, x, v):
    p = op.attrs["position"]
    rows = _rows(x, v)
    out = np.array(np.broadcast_to(v, (rows, v.shape[1])))
    out[:, p] = _scalar_col(x)[:, 0]
    return out


def _insert_verify(op):
    x, v = op.operands
    if not isinstance(v.type, VectorType) or x.type is not v.type.elem:
        return f"insert takes (element, vector), got ({x.type}, {v.type})"
    return _pos_check(op, v.type)


insert = OpDef(
    "vector.insert",
    operands=2,
    traits=(P,),
    attrs=("position",),
    infer=lambda types, attrs: [types[1]],
    evaluate=_insert_eval,
    verify=_insert_verify,
    doc="a copy of the vector with lane `position` replaced (static)",
)

# -- dynamic extract / insert --------------------------------------------------------------------


class VectorIndexError(IndexError):
    """A run-time vector index is out of range (the interpreter's check; undefined on the GPU)."""


def _dyn_index(idx, n):
    i = np.asarray(idx).astype(np.int64)
    if np.any((i < 0) | (i >= n)):
        bad = i[(i < 0) | (i >= n)].reshape(-1)[0]
        raise VectorIndexError(f"run-time vector index {int(bad)} out of range for a vector of {n} lanes")
    return i


def _extractelement_eval(op, v, idx):
    n = v.shape[1]
    i = _dyn_index(idx, n)
    rows = _rows(v, i)
    vb = np.broadcast_to(v, (rows, n))
    ib = np.broadcast_to(i.reshape(-1) if i.ndim else i.reshape(1), (rows,))
    return vb[np.arange(rows), ib]


extractelement = OpDef(
    "vector.extractelement",
    operands=2,
    traits=(P,),
    infer=_extract_infer,
    evaluate=_extractelement_eval,
    doc="read the lane given by a run-time index",
)


def _insertelement_eval(op, x, v, idx):
    n = v.shape[1]
    i = _dyn_index(idx, n)
    rows = _rows(x, v, i)
    out = np.array(np.broadcast_to(v, (rows, n)))
    ib = np.broadcast_to(i.reshape(-1) if i.ndim else i.reshape(1), (rows,))
    out[np.arange(rows), ib] = np.broadcast_to(_scalar_col(x)[:, 0], (rows,))
    return out


insertelement = OpDef(
    "vector.insertelement",
    operands=3,
    traits=(P,),
    infer=lambda types, attrs: [types[1]],
    evaluate=_insertelement_eval,
    doc="replace the lane given by a run-time index",
)

# -- shuffle, bitcast, from_elements ------------------------------------------------------------


def _shuffle_eval(op, a, b):
    rows = _rows(a, b)
    cat = np.concatenate([np.broadcast_to(a, (rows, a.shape[1])), np.broadcast_to(b, (rows, b.shape[1]))], axis=1)
    return cat[:, list(op.attrs["mask"])]


def _shuffle_infer(types, attrs):
    return [VectorType(len(attrs["mask"]), types[0].elem)]


def _shuffle_verify(op):
    a, b = op.operands
    if a.type.element_type is not b.type.element_type:
        return "both vectors must have one element type"
    n = a.type.numel + b.type.numel
    m = op.attrs["mask"]
    if not m or any(not isinstance(i, int) or not 0 <= i < n for i in m):
        return f"mask entries must be ints in [0, {n}), got {m}"
    return None


shuffle = OpDef(
    "vector.shuffle",
    operands=2,
    traits=(P,),
    attrs=("mask",),
    infer=_shuffle_infer,
    evaluate=_shuffle_eval,
    verify=_shuffle_verify,
    doc="lanes picked from the concatenation of two vectors",
)


def _vbitcast_eval(op, v):
    t = op.results[0].type
    return np.ascontiguousarray(v).view(numpy_dtype(t)).reshape(v.shape[0], t.numel)


def _vbitcast_verify(op):
    s, d = op.operands[0].type, op.results[0].type
    if not (isinstance(s, VectorType) and isinstance(d, VectorType)) or s.bitwidth != d.bitwidth:
        return f"vector.bitcast needs vectors of equal total width, got {s} -> {d}"
    if s.elem.bitwidth == 1 or d.elem.bitwidth == 1:
        return "vector.bitcast of i1 vectors: use arith.bitcast"
    return None


bitcast = OpDef(
    "vector.bitcast",
    operands=1,
    traits=(P,),
    evaluate=_vbitcast_eval,
    verify=_vbitcast_verify,
    fmt="cast",
    doc="reinterpret the bits of a vector as another vector of equal width",
)


def _from_elements_eval(op, *xs):
    rows = _rows(*xs)
    cols = [np.broadcast_to(_scalar_col(x), (rows, 1)) for x in xs]
    return np.concatenate(cols, axis=1).astype(numpy_dtype(op.results[0].type), copy=False)


def _from_elements_verify(op):
    t = op.results[0].type
    if not isinstance(t, VectorType) or t.numel != len(op.operands):
        return f"{len(op.operands)} elements do not make a {t}"
    if any(v.type is not t.elem for v in op.operands):
        return "every element must have the vector's element type"
    return None


from_elements = OpDef(
    "vector.from_elements",
    operands=-1,
    traits=(P,),
    infer=lambda types, attrs: [VectorType(len(types), types[0])],
    evaluate=_from_elements_eval,
    verify=_from_elements_verify,
    fmt="unary",
    doc="a vector of the given scalars, lane 0 first",
)

# -- reduction ----------------------------------------------------------------------------------

REDUCTION_KINDS = (
    "add", "mul", "and", "or", "xor", "maxsi", "minsi", "maxui", "minui",
    "maxnumf", "minnumf", "maximumf", "minimumf",
)  # fmt: skip

_RED_FN = {
    "add": np.add, "mul": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "maxsi": np.maximum, "minsi": np.minimum, "maxnumf": ieee_maxnum, "minnumf": ieee_minnum,
    "maximumf": ieee_maximum, "minimumf": ieee_minimum,  # arith's semantics: -0 < +0, as on NVIDIA GPUs
}  # fmt: skip


def _reduction_eval(op, v, *acc):
    kind = op.attrs["kind"]
    dt = v.dtype
    if kind in ("maxui", "minui"):
        t = op.operands[0].type
        u = as_unsigned(v, t)
        r = (np.max if kind == "maxui" else np.min)(u, axis=1)
        return from_unsigned(r, op.results[0].type)
    fn = _RED_FN[kind]
    is_float = dt.kind == "f" or dt.itemsize <= 2 and dt.kind not in "iub"
    if dt == np.bool_ and kind in ("add", "mul"):
        fn = np.bitwise_xor if kind == "add" else np.bitwise_and
    # sequential, lane 0 first: the order LLVM's ordered reductions use
    r = v[:, 0]
    for i in range(1, v.shape[1]):
        r = fn(r, v[:, i])
        if is_float:
            r = r.astype(dt)
    if acc:
        r = fn(acc[0], r)
    return np.asarray(r).astype(dt)


def _reduction_verify(op):
    if op.attrs.get("kind") not in REDUCTION_KINDS:
        return f"unknown reduction kind {op.attrs.get('kind')!r}; expected one of {', '.join(REDUCTION_KINDS)}"
    if len(op.operands) not in (1, 2):
        return "reduction takes a vector and an optional accumulator"
    return None


reduction = OpDef(
    "vector.reduction",
    operands=-1,
    traits=(P,),
    attrs=("kind",),
    infer=_extract_infer,
    evaluate=_reduction_eval,
    verify=_reduction_verify,
    doc="combine all lanes (sequentially from lane 0) with `kind`",
)


# MLIR's punctuation after a printed value or string
PUNCTUATIONS = {"newline": "\n", "no_punctuation": "", "comma": ", ", "open": "( ", "close": " )"}


def _print_verify(op: Op):
    if op.attrs.get("punctuation") not in PUNCTUATIONS:
        return f"punctuation must be one of {', '.join(PUNCTUATIONS)}"
    has_str = "string" in op.attrs
    if len(op.operands) + has_str > 1:
        return "vector.print prints one value or one string"
    return None


print_ = OpDef(
    "vector.print",
    operands=-1,
    results=0,
    attrs=("punctuation",),
    verify=_print_verify,
    doc="host code: print a scalar, a vector as ( a, b ), or the `string` attribute, then `punctuation` "
    "(MLIR's vector.print; fly.print in host functions lowers to it)",
)


def _print_reduction(p, op, indent: str) -> str:
    """MLIR's spelling: ``vector.reduction <add>, %v[, %acc][ fastmath<...>] : vector<8xf32> into f32``."""
    names = ", ".join(p.name(v) for v in op.operands)
    fm = op.attrs.get("fastmath")
    spelled = type(fm) is str and fm and all(c.isalpha() or c == "," for c in fm)
    rest = p.attr_dict(op.attrs, skip=("kind", "fastmath") if spelled else ("kind",))
    fmt = f" fastmath<{fm}>" if spelled else ""
    return (
        f"vector.reduction <{op.attrs['kind']}>, {names}{fmt}{rest} : {op.operands[0].type} into {op.results[0].type}"
    )


def _parse_reduction(ps, defn, nres: int):
    ps.expect("<")
    kind = ps.ident()
    ps.expect(">")
    ops = []
    while ps.accept(","):
        ops.append(ps.operand())
    attrs = {"kind": kind, **ps.fastmath_attrs()}
    ps.expect(":")
    ps.type()
    if not ps.accept("into"):
        ps.error("expected 'into'")
    return Op(defn, ops, [ps.type()], attrs, 0)


def _register_formats():
    register_format("vector.reduction", _print_reduction)
    register_parse_format("vector.reduction", _parse_reduction)
    reduction.fmt = "vector.reduction"


_register_formats()

__all__ = [
    "print_",
    "PUNCTUATIONS",
    "broadcast",
    "extract",
    "insert",
    "extractelement",
    "insertelement",
    "shuffle",
    "bitcast",
    "from_elements",
    "reduction",
    "REDUCTION_KINDS",
    "VectorIndexError",
]
