"""``flydsl._mlir.dialects.gpu``: thread/block ids, barrier, printf over our ``gpu`` ops.

Ids are ``index`` values as in MLIR (our ops produce ``i32``; the facade casts, which folds away)."""

from __future__ import annotations

import enum

from ...dialects import arith as _a
from ...dialects import gpu as _g
from ...dialects import printf_c as _printf_c
from ...ir import index as _index
from .. import ir
from ._ods import build, unsupported

__all__ = [
    "Dimension", "thread_id", "block_id", "block_dim", "grid_dim", "lane_id", "barrier", "printf", "ReturnOp",
    "BarrierOp", "AsyncTokenType", "ThreadIdOp", "BlockIdOp", "BlockDimOp", "GridDimOp", "LaneIdOp",
]  # fmt: skip


class Dimension(enum.IntEnum):
    x = 0
    y = 1
    z = 2


def _dim(d) -> str:
    if isinstance(d, str):
        return d
    return Dimension(int(ir.attr_value(d))).name


def _sreg(defn):
    def fn(dimension="x", *, upper_bound=None, loc=None, ip=None):
        op = build(defn, [], None, {"dimension": _dim(dimension)}, loc=loc, ip=ip)
        cast = build(_a.index_cast, [op.results[0]], [_index], loc=loc, ip=ip)
        return ir.wrap(cast.results[0])

    fn.__name__ = defn.name.split(".")[1]
    fn.__doc__ = f"``{defn.name}`` as an index value"
    return fn


thread_id = _sreg(_g.thread_id)
block_id = _sreg(_g.block_id)
block_dim = _sreg(_g.block_dim)
grid_dim = _sreg(_g.grid_dim)
ThreadIdOp, BlockIdOp, BlockDimOp, GridDimOp = thread_id, block_id, block_dim, grid_dim


def lane_id(*, upper_bound=None, loc=None, ip=None):
    op = build(_g.lane_id, [], None, loc=loc, ip=ip)
    return ir.wrap(build(_a.index_cast, [op.results[0]], [_index], loc=loc, ip=ip).results[0])


LaneIdOp = lane_id


def barrier(*, loc=None, ip=None) -> None:
    build(_g.barrier, [], [], loc=loc, ip=ip)


BarrierOp = barrier


def printf(format, args=(), *, loc=None, ip=None) -> None:  # noqa: A002
    """``gpu.printf`` with a C printf format, as MLIR's (``%-8.3f``, ``%lld``, ``%%``; FlyDSL's ``fx.printf``
    takes ``{}``). Like MLIR's, it prints exactly the format (no newline is added)."""
    fmt = _printf_c.c_to_braces(str(ir.attr_value(format)))
    operands = [ir.unwrap(a) for a in args]
    _g.check_printf(fmt, [v.type for v in operands])
    build(_g.printf, operands, [], {"format": fmt}, loc=loc, ip=ip)


class ReturnOp(ir.OpView):
    """``gpu.return``: the end of a ``gpu.func`` body."""

    OPERATION_NAME = "gpu.return"

    def __init__(self, operands=(), *, loc=None, ip=None):
        super().__init__(build(_g.return_, list(operands), [], loc=loc, ip=ip))


class AsyncTokenType:
    """``!gpu.async.token``: our launches take the stream as an operand; there are no async tokens."""

    get = staticmethod(unsupported("gpu.AsyncTokenType", "async tokens (launches take the stream directly)"))
