"""``flydsl._mlir.dialects.arith``: the arith dialect's builders (``arith.addf(a, b)``,
``arith.ConstantOp(T.i32(), 0)``, ``arith.CmpIOp(CmpIPredicate.slt, a, b)``) over our ``arith`` ops.

Results are fx values (``Float32``, ``Int32``, ``Vector`` …), as FlyDSL's auto-wrapped ``ArithValue``;
operands may be fx values or raw IR values.
"""

from __future__ import annotations

import enum

from ...dialects import arith as _a
from ...expr._sem.fastmath import FastMathFlags
from .. import ir
from ._ods import build, op_class, snake_fn

__all__ = ["CmpIPredicate", "CmpFPredicate", "FastMathFlags", "IntegerOverflowFlags", "constant", "ConstantOp"]


class CmpIPredicate(enum.IntEnum):
    eq = 0
    ne = 1
    slt = 2
    sle = 3
    sgt = 4
    sge = 5
    ult = 6
    ule = 7
    ugt = 8
    uge = 9


class CmpFPredicate(enum.IntEnum):
    AlwaysFalse = 0
    OEQ = 1
    OGT = 2
    OGE = 3
    OLT = 4
    OLE = 5
    ONE = 6
    ORD = 7
    UEQ = 8
    UGT = 9
    UGE = 10
    ULT = 11
    ULE = 12
    UNE = 13
    UNO = 14
    AlwaysTrue = 15


class IntegerOverflowFlags(enum.IntFlag):
    none = 0
    nsw = 1
    nuw = 2


def _pred(p, names) -> str:
    """Our predicate name for an enum member, an int or a name."""
    if isinstance(p, str):
        return p.lower()
    return names[int(ir.attr_value(p))]


# MLIR class name -> (our op, how the positional arguments read)
_BINARY = {
    "AddIOp": _a.addi, "SubIOp": _a.subi, "MulIOp": _a.muli, "DivSIOp": _a.divsi, "DivUIOp": _a.divui,
    "FloorDivSIOp": _a.floordivsi, "CeilDivSIOp": _a.ceildivsi, "CeilDivUIOp": _a.ceildivui,
    "RemSIOp": _a.remsi, "RemUIOp": _a.remui, "AndIOp": _a.andi, "OrIOp": _a.ori, "XOrIOp": _a.xori,
    "ShLIOp": _a.shli, "ShRUIOp": _a.shrui, "ShRSIOp": _a.shrsi, "MaxSIOp": _a.maxsi, "MinSIOp": _a.minsi,
    "MaxUIOp": _a.maxui, "MinUIOp": _a.minui, "AddFOp": _a.addf, "SubFOp": _a.subf, "MulFOp": _a.mulf,
    "DivFOp": _a.divf, "RemFOp": _a.remf, "MaximumFOp": _a.maximumf, "MinimumFOp": _a.minimumf,
    "MaxNumFOp": _a.maxnumf, "MinNumFOp": _a.minnumf, "NegFOp": _a.negf, "SelectOp": _a.select,
}  # fmt: skip
_CASTS = {
    "ExtSIOp": _a.extsi, "ExtUIOp": _a.extui, "TruncIOp": _a.trunci, "SIToFPOp": _a.sitofp,
    "UIToFPOp": _a.uitofp, "FPToSIOp": _a.fptosi, "FPToUIOp": _a.fptoui, "ExtFOp": _a.extf,
    "TruncFOp": _a.truncf, "BitcastOp": _a.bitcast, "IndexCastOp": _a.index_cast,
    "IndexCastUIOp": _a.index_castui,
}  # fmt: skip

for _name, _defn in _BINARY.items():
    _cls = op_class(_name, _defn, "operands")
    globals()[_name] = _cls
    globals()[_defn.name.split(".", 1)[1]] = snake_fn(_cls)
    __all__ += [_name, _defn.name.split(".", 1)[1]]
for _name, _defn in _CASTS.items():
    _cls = op_class(_name, _defn, "type,operands")
    globals()[_name] = _cls
    globals()[_defn.name.split(".", 1)[1]] = snake_fn(_cls)
    __all__ += [_name, _defn.name.split(".", 1)[1]]


class CmpIOp(ir.OpView):
    OPERATION_NAME = "arith.cmpi"

    def __init__(self, predicate, lhs, rhs, *, loc=None, ip=None):
        p = _pred(predicate, _a.CMPI_PREDICATES)
        super().__init__(build(_a.cmpi, [lhs, rhs], None, {"predicate": p}, loc=loc, ip=ip))


class CmpFOp(ir.OpView):
    OPERATION_NAME = "arith.cmpf"

    def __init__(self, predicate, lhs, rhs, *, fastmath=None, loc=None, ip=None):
        p = _pred(predicate, _a.CMPF_PREDICATES)
        super().__init__(build(_a.cmpf, [lhs, rhs], None, {"predicate": p}, loc=loc, ip=ip))


class ConstantOp(ir.OpView):
    """``arith.ConstantOp(result_type, value)``: value an int/float/bool or an IntegerAttr/FloatAttr/
    DenseElementsAttr (a splat or one value per lane for a vector type)."""

    OPERATION_NAME = "arith.constant"

    def __init__(self, result, value, *, loc=None, ip=None):
        t = ir._unwrap_type(result)
        v = ir.attr_value(value)
        super().__init__(build(_a.constant, [], [t], {"value": _a.normalize_constant(v, t)}, loc=loc, ip=ip))

    @property
    def value(self):
        return self._op.attrs["value"]


cmpi = snake_fn(CmpIOp)
cmpf = snake_fn(CmpFOp)
constant = snake_fn(ConstantOp)
__all__ += ["CmpIOp", "CmpFOp", "cmpi", "cmpf"]
