"""``flydsl._mlir.dialects.builtin``: ``ModuleOp`` and ``UnrealizedConversionCastOp``."""

from __future__ import annotations

from ... import ir as _ir
from .. import ir
from ._ods import unsupported

__all__ = ["ModuleOp", "UnrealizedConversionCastOp", "module"]


class ModuleOp(ir.OpView):
    OPERATION_NAME = "builtin.module"

    def __init__(self, *, loc=None, ip=None):
        op = _ir.new_module()
        blk = ip.block if ip is not None else _ir.current_block()
        if blk is not None:
            op.parent = blk
            blk.ops.append(op)
        super().__init__(op)

    @property
    def body(self) -> _ir.Block:
        return self._op.regions[0].blocks[0]


def module(**kw) -> ModuleOp:
    return ModuleOp(**kw)


# NOTE: FlyDSL casts a stream pointer to !gpu.async.token this way; our launches take the stream
# as an operand, so there is no token type to cast to.
UnrealizedConversionCastOp = unsupported(
    "builtin.unrealized_conversion_cast", "launches take the stream as an operand; there is no token type to cast to"
)
