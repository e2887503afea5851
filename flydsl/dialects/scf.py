"""``scf``: structured control flow — ``for``, ``if``, ``while`` with values carried in and out.

Every region has exactly one block and ends with ``scf.yield`` (``scf.condition`` for the
``before`` region of a while). The builders return the op with its empty blocks in place; the
caller fills them inside ``InsertionPoint(block)``.
"""

from __future__ import annotations

import re

from ..ir import Op, OpDef, Trait, Value, create, i1, register_format, register_parse_format
from ..ir.printer import GENERIC

T = Trait.TERMINATOR


def _types(vals):
    return [v.type for v in vals]


def _yield_check(block, expected, what) -> str | None:
    term = block.ops[-1] if block.ops else None
    if term is None or not term.defn.is_terminator:
        return f"{what} does not end with a terminator"
    got = _types(term.operands)
    if got != list(expected):
        return f"{what} yields ({', '.join(map(str, got))}) but ({', '.join(map(str, expected))}) is expected"
    return None


def _for_verify(op: Op):
    lb, ub, st = op.operands[:3]
    if not (lb.type is ub.type is st.type) or not lb.type.is_int_like:
        return f"bounds and step must share one integer type, got {lb.type}, {ub.type}, {st.type}"
    inits = op.operands[3:]
    if _types(inits) != _types(op.results):
        return "iter_args and results must have the same types"
    r = op.regions[0]
    if len(r.blocks) != 1:
        return "the body must have exactly one block"
    b = r.blocks[0]
    if _types(b.args) != [lb.type] + _types(inits):
        return "body block arguments must be (induction variable, iter_args...)"
    return _yield_check(b, _types(op.results), "the loop body")


for_ = OpDef(
    "scf.for",
    operands=-1,
    results=-1,
    regions=1,
    verify=_for_verify,
    doc="for iv in [lb, ub) step s, carrying iter_args; results are the final iter_args",
)


def _if_verify(op: Op):
    if op.operands[0].type is not i1:
        return f"condition must be i1, got {op.operands[0].type}"
    then_r, else_r = op.regions
    if len(then_r.blocks) != 1:
        return "the then region must have one block"
    msg = _yield_check(then_r.blocks[0], _types(op.results), "the then region")
    if msg:
        return msg
    if else_r.blocks:
        return _yield_check(else_r.blocks[0], _types(op.results), "the else region")
    if op.results:
        return "an if with results needs an else region"
    return None


if_ = OpDef(
    "scf.if",
    operands=1,
    results=-1,
    regions=2,
    verify=_if_verify,
    doc="run the then region if cond else the else region; results come from their yields",
)


def _while_verify(op: Op):
    before, after = op.regions
    if len(before.blocks) != 1 or len(after.blocks) != 1:
        return "both regions must have one block"
    bb, ab = before.blocks[0], after.blocks[0]
    if _types(bb.args) != _types(op.operands):
        return "before-region arguments must match the initial values"
    term = bb.ops[-1] if bb.ops else None
    if term is None or term.defn is not condition:
        return "the before region must end with scf.condition"
    fwd = _types(term.operands[1:])
    if fwd != _types(op.results) or _types(ab.args) != fwd:
        return "values forwarded by scf.condition must match the after-region arguments and the results"
    return _yield_check(ab, _types(op.operands), "the after region")


while_ = OpDef(
    "scf.while",
    operands=-1,
    results=-1,
    regions=2,
    verify=_while_verify,
    doc="before region computes (cond, values); while cond, after region maps values to the next inits",
)

yield_ = OpDef("scf.yield", operands=-1, results=0, traits=(T,), fmt="return", doc="region results")


def _cond_verify(op: Op):
    if not op.operands or op.operands[0].type is not i1:
        return "scf.condition takes an i1 condition first"
    return None


condition = OpDef(
    "scf.condition",
    operands=-1,
    results=0,
    traits=(T,),
    verify=_cond_verify,
    doc="end of a while's before region: (continue?, forwarded values...)",
)


def build_for(lb: Value, ub: Value, step: Value, inits=()) -> Op:
    """An ``scf.for`` whose body block has arguments (iv, *iter_args) and no ops yet."""
    inits = list(inits)
    op = create(for_, [lb, ub, step, *inits], _types(inits))
    op.regions[0].add_block([lb.type] + _types(inits))
    return op


def build_if(cond: Value, result_types=(), with_else: bool = True) -> Op:
    """An ``scf.if`` with empty then (and else) blocks."""
    op = create(if_, [cond], list(result_types))
    op.regions[0].add_block()
    if with_else or result_types:
        op.regions[1].add_block()
    return op


def build_while(inits, result_types) -> Op:
    """An ``scf.while`` with empty before (args = inits) and after (args = result types) blocks."""
    inits = list(inits)
    op = create(while_, inits, list(result_types))
    op.regions[0].add_block(_types(inits))
    op.regions[1].add_block(list(result_types))
    return op


__all__ = ["for_", "if_", "while_", "yield_", "condition", "build_for", "build_if", "build_while"]


# ---------------------------------------------------------------------------------------------
# MLIR's pretty syntax for scf ops (printer and parser twins)
# ---------------------------------------------------------------------------------------------


def _print_for(p, op: Op, indent: str) -> str:
    if op.attrs:  # the pretty form has no room for attributes
        return GENERIC(p, op, indent)
    lb, ub, st = op.operands[:3]
    body = op.regions[0].blocks[0]
    p.define_block_args(body)
    s = f"scf.for {p.name(body.args[0])} = {p.name(lb)} to {p.name(ub)} step {p.name(st)}"
    if len(op.operands) > 3:
        pairs = ", ".join(f"{p.name(a)} = {p.name(v)}" for a, v in zip(body.args[1:], op.operands[3:]))
        s += f" iter_args({pairs}) -> ({', '.join(str(r.type) for r in op.results)})"
    s += f" : {lb.type} "
    return s + p.region_text(op.regions[0], indent, print_entry_args=False)


def _print_if(p, op: Op, indent: str) -> str:
    if op.attrs:
        return GENERIC(p, op, indent)
    s = f"scf.if {p.name(op.operands[0])}"
    if op.results:
        s += f" -> ({', '.join(str(r.type) for r in op.results)})"
    s += " " + p.region_text(op.regions[0], indent, print_entry_args=False)
    if op.regions[1].blocks:
        s += " else " + p.region_text(op.regions[1], indent, print_entry_args=False)
    return s


def _print_while(p, op: Op, indent: str) -> str:
    if op.attrs:
        return GENERIC(p, op, indent)
    before = op.regions[0].blocks[0]
    p.define_block_args(before)
    pairs = ", ".join(f"{p.name(a)} = {p.name(v)}" for a, v in zip(before.args, op.operands))
    ins = ", ".join(str(v.type) for v in op.operands)
    outs = ", ".join(str(r.type) for r in op.results)
    s = f"scf.while ({pairs}) : ({ins}) -> ({outs}) "
    s += p.region_text(op.regions[0], indent, print_entry_args=False)
    return s + " do " + p.region_text(op.regions[1], indent, print_entry_args=True)


def _print_condition(p, op: Op, indent: str) -> str:
    s = f"scf.condition({p.name(op.operands[0])})"
    if len(op.operands) > 1:
        s += " " + p.names_of(op.operands[1:]) + " : " + ", ".join(str(v.type) for v in op.operands[1:])
    return s


def _parse_pairs(ps):
    names, vals = [], []
    ps.expect("(")
    while not ps.accept(")"):
        names.append(ps.match(_SSA_RX))
        ps.expect("=")
        vals.append(ps.operand())
        ps.accept(",")
    return names, vals


def _parse_for(ps, defn, nres) -> Op:
    iv = ps.match(_SSA_RX)
    ps.expect("=")
    lb = ps.operand()
    ps.expect("to")
    ub = ps.operand()
    ps.expect("step")
    st = ps.operand()
    names, vals, results = [], [], []
    if ps.accept("iter_args"):
        names, vals = _parse_pairs(ps)
        ps.expect("->")
        results = ps.type_list()
    ps.expect(":")
    ivt = ps.type()
    op = Op(for_, [lb, ub, st, *vals], results, {}, 1)
    ps.region(op.regions[0], entry_args=[(iv, ivt)] + [(n, v.type) for n, v in zip(names, vals)])
    return op


def _parse_if(ps, defn, nres) -> Op:
    c = ps.operand()
    results = ps.type_list() if ps.accept("->") else []
    op = Op(if_, [c], results, {}, 2)
    ps.region(op.regions[0])
    if not op.regions[0].blocks:
        op.regions[0].add_block()
    if ps.accept("else"):
        ps.region(op.regions[1])
        if not op.regions[1].blocks:
            op.regions[1].add_block()
    return op


def _parse_while(ps, defn, nres) -> Op:
    names, vals = _parse_pairs(ps)
    ps.expect(":")
    ps.type_list()
    ps.expect("->")
    outs = ps.type_list()
    op = Op(while_, vals, outs, {}, 2)
    ps.region(op.regions[0], entry_args=[(n, v.type) for n, v in zip(names, vals)])
    if not ps.accept("do"):
        ps.error("expected 'do'")
    ps.region(op.regions[1])
    return op


def _parse_condition(ps, defn, nres) -> Op:
    ps.expect("(")
    c = ps.operand()
    ps.expect(")")
    rest = []
    if ps.peek("%"):
        rest = [ps.operand()]
        while ps.accept(","):
            rest.append(ps.operand())
        ps.expect(":")
        for _ in rest:
            ps.type()
            ps.accept(",")
    return Op(condition, [c, *rest], [], {}, 0)


_SSA_RX = re.compile(r"%[\w.$-]+(?:#\d+)?")


def _register_formats():
    """The custom assembly of the region ops (printed and parsed as MLIR's scf dialect does)."""
    for name, pr, pa, d in (
        ("scf.for", _print_for, _parse_for, for_),
        ("scf.if", _print_if, _parse_if, if_),
        ("scf.while", _print_while, _parse_while, while_),
        ("scf.condition", _print_condition, _parse_condition, condition),
    ):
        register_format(name, pr)
        register_parse_format(name, pa)
        d.fmt = name


_register_formats()
