"""``flydsl._mlir.dialects.vector``: broadcast, extract/insert, shuffle, bitcast, from_elements,
reduction over our ``vector`` ops (flat ``vector<N x T>``)."""

from __future__ import annotations

import enum

from ...dialects import vector as _v
from .. import ir
from ._ods import build

__all__ = [
    "CombiningKind", "broadcast", "extract", "insert", "extractelement", "insertelement", "shuffle",
    "bitcast", "from_elements", "reduction", "BroadcastOp", "ExtractOp", "InsertOp", "BitCastOp",
    "FromElementsOp", "ReductionOp", "ShuffleOp", "splat",
]  # fmt: skip


class CombiningKind(enum.Enum):
    ADD = "add"
    MUL = "mul"
    AND = "and"
    OR = "or"
    XOR = "xor"
    MAXSI = "maxsi"
    MINSI = "minsi"
    MAXUI = "maxui"
    MINUI = "minui"
    MAXNUMF = "maxnumf"
    MINNUMF = "minnumf"
    MAXIMUMF = "maximumf"
    MINIMUMF = "minimumf"


def _res(op):
    return ir.wrap(op.results[0])


def broadcast(vector, source, *, loc=None, ip=None):
    """``vector.broadcast`` of a scalar ``source`` to the vector type ``vector``."""
    return _res(build(_v.broadcast, [source], [vector], loc=loc, ip=ip))


splat = broadcast


def _position(static_position, dynamic_position):
    pos = list(static_position or [])
    dyn = list(dynamic_position or [])
    if dyn or len(pos) != 1:
        return None, dyn
    return int(pos[0]), dyn


def extract(vector, static_position=None, dynamic_position=None, *, loc=None, ip=None):
    """Lane ``static_position[0]`` (or the dynamic position) of a flat vector."""
    p, dyn = _position(static_position, dynamic_position)
    if p is None:
        return _res(build(_v.extractelement, [vector, dyn[0]], None, loc=loc, ip=ip))
    return _res(build(_v.extract, [vector], None, {"position": p}, loc=loc, ip=ip))


def insert(valueToStore, dest, static_position=None, dynamic_position=None, *, loc=None, ip=None):
    p, dyn = _position(static_position, dynamic_position)
    if p is None:
        return _res(build(_v.insertelement, [valueToStore, dest, dyn[0]], None, loc=loc, ip=ip))
    return _res(build(_v.insert, [valueToStore, dest], None, {"position": p}, loc=loc, ip=ip))


def extractelement(vector, position, *, loc=None, ip=None):
    return _res(build(_v.extractelement, [vector, position], None, loc=loc, ip=ip))


def insertelement(source, dest, position, *, loc=None, ip=None):
    return _res(build(_v.insertelement, [source, dest, position], None, loc=loc, ip=ip))


def shuffle(v1, v2, mask, *, loc=None, ip=None):
    return _res(build(_v.shuffle, [v1, v2], None, {"mask": [int(m) for m in mask]}, loc=loc, ip=ip))


def bitcast(result, source, *, loc=None, ip=None):
    return _res(build(_v.bitcast, [source], [result], loc=loc, ip=ip))


def from_elements(dest, elements, *, loc=None, ip=None):
    return _res(build(_v.from_elements, list(elements), [dest], loc=loc, ip=ip))


def reduction(dest, kind, vector, *, acc=None, fastmath=None, loc=None, ip=None):
    """``vector.reduction <kind>`` (``dest`` is the scalar result type, as MLIR's builder)."""
    k = kind.value if isinstance(kind, CombiningKind) else str(ir.attr_value(kind)).lower()
    ops = [vector] + ([acc] if acc is not None else [])
    attrs = {"kind": k}
    if fastmath is not None:
        attrs["fastmath"] = str(fastmath)
    return _res(build(_v.reduction, ops, [dest], attrs, loc=loc, ip=ip))


BroadcastOp, ExtractOp, InsertOp, BitCastOp = broadcast, extract, insert, bitcast
FromElementsOp, ReductionOp, ShuffleOp = from_elements, reduction, shuffle
