"""The ``builtin`` dialect: ``module``, the IR's top-level container."""

from __future__ import annotations

from .core import Op, Trait
from .opdef import OpDef

__all__ = ["ModuleOp", "new_module"]

ModuleOp = OpDef(
    "builtin.module",
    operands=0,
    results=0,
    regions=1,
    traits=(Trait.ISOLATED,),
    fmt="module",
    doc="top-level container of functions and GPU modules",
)


def new_module(**attrs) -> Op:
    """An empty ``module`` op (not inserted anywhere) with one empty block."""
    op = Op(ModuleOp, [], [], dict(attrs), 1)
    op.regions[0].add_block()
    return op
