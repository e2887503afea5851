"""``flydsl._mlir.dialects.func``: ``FuncOp``, ``ReturnOp``, ``CallOp`` over our ``func`` ops."""

from __future__ import annotations

from ... import ir as _ir
from ...dialects import func as _f
from .. import ir
from ._ods import build

__all__ = ["FuncOp", "ReturnOp", "CallOp", "func", "return_", "call"]


class FuncOp(ir.OpView):
    """``func.FuncOp(name, FunctionType)`` inserted at the insertion point; ``add_entry_block()``."""

    OPERATION_NAME = "func.func"
    _defn = _f.func

    def __init__(self, name, type, *, visibility=None, body_builder=None, loc=None, ip=None):
        if isinstance(type, tuple):  # FuncOp(name, (inputs, results))
            type = _ir.FunctionType(list(type[0]), list(type[1]))
        attrs = {"sym_name": str(name), "function_type": ir._unwrap_type(type)}
        if visibility is not None:
            attrs["sym_visibility"] = str(visibility)
        op = _ir.Op(self._defn, [], [], attrs, 1)
        ip_obj = ip if ip is not None else ir.InsertionPoint.current
        block = ip_obj.block if ip_obj is not None else _ir.current_block()
        if block is None:
            raise ValueError("func.FuncOp needs an insertion point (with ir.InsertionPoint(module.body))")
        op.parent = block
        block.ops.append(op)
        super().__init__(op)
        if body_builder is not None:
            entry = self.add_entry_block()
            with ir.InsertionPoint(entry):
                body_builder(self)

    @property
    def type(self):
        return self._op.attrs["function_type"]

    @property
    def name(self):
        return self._op.attrs["sym_name"]

    @property
    def body(self) -> _ir.Region:
        return self._op.regions[0]

    def add_entry_block(self, arg_locs=None) -> _ir.Block:
        if self._op.regions[0].blocks:
            raise IndexError("the function already has an entry block")
        return self._op.regions[0].add_block(list(self.type.inputs))

    @property
    def entry_block(self) -> _ir.Block:
        return self._op.regions[0].blocks[0]

    @property
    def arguments(self) -> list:
        return list(self.entry_block.args)


class ReturnOp(ir.OpView):
    OPERATION_NAME = "func.return"

    def __init__(self, operands=(), *, loc=None, ip=None):
        super().__init__(build(_f.return_, list(operands), [], loc=loc, ip=ip))


class CallOp(ir.OpView):
    OPERATION_NAME = "func.call"

    def __init__(self, result_types, callee, operands=(), *, loc=None, ip=None):
        name = getattr(callee, "name", callee)
        attrs = {"callee": _ir.SymbolRef(str(ir.attr_value(name)))}
        super().__init__(build(_f.call, list(operands), list(result_types), attrs, loc=loc, ip=ip))


def func(name, type, **kw):
    return FuncOp(name, type, **kw)


def return_(operands=(), **kw):
    return ReturnOp(operands, **kw)


def call(result_types, callee, operands=(), **kw):
    res = CallOp(result_types, callee, operands, **kw).results
    return res[0] if len(res) == 1 else res
