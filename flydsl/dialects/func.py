"""``func``: host functions, returns and calls."""

from __future__ import annotations

from ..ir import FunctionType, Op, OpDef, Trait

T, ISO, SYM = Trait.TERMINATOR, Trait.ISOLATED, Trait.SYMBOL


def func_verify(op: Op):
    ft = op.attrs["function_type"]
    if not isinstance(ft, FunctionType):
        return "function_type must be a function type"
    r = op.regions[0]
    if r.blocks:
        args = [a.type for a in r.blocks[0].args]
        if args != list(ft.inputs):
            return "entry block arguments do not match the function type"
    return None


def return_verify(op: Op):
    fn = op.parent_op
    if fn is None or "function_type" not in fn.attrs:
        return None
    want = list(fn.attrs["function_type"].results)
    got = [v.type for v in op.operands]
    if want != got:
        return f"returns ({', '.join(map(str, got))}) but the function returns ({', '.join(map(str, want))})"
    return None


func = OpDef(
    "func.func",
    operands=0,
    results=0,
    regions=1,
    traits=(ISO, SYM),
    attrs=("sym_name", "function_type"),
    verify=func_verify,
    fmt="func",
    doc="a host-side function",
)
return_ = OpDef("func.return", operands=-1, results=0, traits=(T,), verify=return_verify, fmt="return")
call = OpDef("func.call", operands=-1, results=-1, attrs=("callee",), doc="call a function by symbol")


def build_func(defn: OpDef, name: str, arg_types, result_types=(), **attrs) -> Op:
    """A function op (func.func or gpu.func), not inserted anywhere, with its entry block."""
    ft = FunctionType(list(arg_types), list(result_types))
    op = Op(defn, [], [], {"sym_name": name, "function_type": ft, **attrs}, 1)
    op.regions[0].add_block(list(arg_types))
    return op


__all__ = ["func", "return_", "call", "build_func", "func_verify", "return_verify"]
