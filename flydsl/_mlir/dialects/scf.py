"""``flydsl._mlir.dialects.scf``: ``IfOp``, ``ForOp``, ``WhileOp``, ``YieldOp``, ``ConditionOp`` over our
``scf`` ops (the structured control flow FlyDSL's pre-AST-rewrite kernels build by hand)."""

from __future__ import annotations

from ... import ir as _ir
from ...dialects import scf as _s
from .. import ir
from ._ods import build

__all__ = ["IfOp", "ForOp", "WhileOp", "YieldOp", "ConditionOp", "yield_", "condition", "if_", "for_"]


class IfOp(ir.OpView):
    """``scf.IfOp(cond, result_types=[], hasElse=False)``; ``then_block``/``else_block``."""

    OPERATION_NAME = "scf.if"

    def __init__(self, cond, results_=None, *, hasElse=False, loc=None, ip=None):
        op = build(_s.if_, [cond], list(results_ or []), loc=loc, ip=ip)
        op.regions[0].add_block()
        if hasElse or results_:
            op.regions[1].add_block()
        super().__init__(op)

    @property
    def then_block(self) -> _ir.Block:
        return self._op.regions[0].blocks[0]

    @property
    def else_block(self) -> _ir.Block:
        r = self._op.regions[1]
        return r.blocks[0] if r.blocks else r.add_block()


class ForOp(ir.OpView):
    """``scf.ForOp(lb, ub, step, iter_args)``; ``induction_variable``, ``inner_iter_args``, ``body``."""

    OPERATION_NAME = "scf.for"

    def __init__(self, lower_bound, upper_bound, step, iter_args=None, *, loc=None, ip=None):
        inits = [ir.unwrap(v) for v in (iter_args or [])]
        lb = ir.unwrap(lower_bound)
        op = build(_s.for_, [lb, upper_bound, step, *inits], [v.type for v in inits], loc=loc, ip=ip)
        op.regions[0].add_block([lb.type] + [v.type for v in inits])
        super().__init__(op)

    @property
    def body(self) -> _ir.Block:
        return self._op.regions[0].blocks[0]

    @property
    def induction_variable(self):
        return self.body.args[0]

    @property
    def inner_iter_args(self) -> list:
        return list(self.body.args[1:])


class WhileOp(ir.OpView):
    """``scf.WhileOp(result_types, inits)``; ``before``/``after`` regions (add their blocks)."""

    OPERATION_NAME = "scf.while"

    def __init__(self, results_, inits, *, loc=None, ip=None):
        super().__init__(build(_s.while_, list(inits), list(results_), loc=loc, ip=ip))

    @property
    def before(self) -> _ir.Region:
        return self._op.regions[0]

    @property
    def after(self) -> _ir.Region:
        return self._op.regions[1]


class YieldOp(ir.OpView):
    OPERATION_NAME = "scf.yield"

    def __init__(self, results_=(), *, loc=None, ip=None):
        super().__init__(build(_s.yield_, list(results_), [], loc=loc, ip=ip))


class ConditionOp(ir.OpView):
    OPERATION_NAME = "scf.condition"

    def __init__(self, condition, args=(), *, loc=None, ip=None):
        super().__init__(build(_s.condition, [condition, *args], [], loc=loc, ip=ip))


def yield_(results_=(), **kw):
    YieldOp(results_, **kw)


def condition(cond, args=(), **kw):
    ConditionOp(cond, args, **kw)


def if_(cond, results_=None, *, hasElse=False, **kw):
    return IfOp(cond, results_, hasElse=hasElse, **kw)


def for_(lower_bound, upper_bound, step, iter_args=None, **kw):
    return ForOp(lower_bound, upper_bound, step, iter_args, **kw)
