"""LLVM lowering of structured control flow (``scf``) and of calls and returns (``func``, ``gpu``).

No allocas: loop-carried and merged values become phi nodes.

``scf.for`` (signed compare, like MLIR's lowering)::

    pre:    br label %hdr
    hdr:    %iv = phi [lb, %pre], [%next, %latch]; %c = icmp slt %iv, ub; br %c, %body, %exit
    body:   ... ; %next = add %iv, step; br label %hdr      (the last body block is the latch)
    exit:   results = the header phis

``scf.if`` branches to then/else blocks that meet in a merge block with one phi per result.
``scf.while``: the *before* block starts with one phi per carried value and ends with the
``scf.condition`` branch; the *after* block receives the forwarded values directly (its only
predecessor is the before block) and loops back; the while's results are the forwarded values.
"""

from __future__ import annotations

from ..ir import Op
from .errors import CodegenError
from .llvm_emitter import FunctionEmitter, emitter, symbol
from .llvm_types import llvm_type


def _expect(term: Op | None, name: str, parent: Op) -> Op:
    if term is None or term.defn.name != name:
        raise CodegenError(f"region of {parent.defn.name} does not end with {name}", op=parent)
    return term


@emitter("scf.for")
def emit_for(fe: FunctionEmitter, op: Op) -> None:
    lb, ub, step = op.operands[:3]
    inits = op.operands[3:]
    body = op.regions[0].blocks[0]
    ity = llvm_type(lb.type)
    pre = fe.block
    hdr, blk, ext = fe.label("for.hdr"), fe.label("for.body"), fe.label("for.end")
    fe.br(hdr)
    fe.start(hdr)
    iv = fe.tmp()
    iv_slot = fe.placeholder()
    carried = [(fe.tmp(), fe.placeholder()) for _ in inits]
    cond = fe.assign(f"icmp slt {ity} {iv}, {fe.val(ub)}")
    fe.cbr(cond, blk, ext)
    fe.start(blk)
    fe.define(body.args[0], iv)
    for a, (name, _) in zip(body.args[1:], carried):
        fe.define(a, name)
    term = _expect(fe.emit_block(body), "scf.yield", op)
    nxt = fe.assign(f"add {ity} {iv}, {fe.val(step)}")
    latch = fe.block
    fe.br(hdr)
    fe.fill(iv_slot, f"{iv} = phi {ity} [{fe.val(lb)}, %{pre}], [{nxt}, %{latch}]")
    for (name, slot), init, y in zip(carried, inits, term.operands):
        ty = llvm_type(init.type)
        fe.fill(slot, f"{name} = phi {ty} [{fe.val(init)}, %{pre}], [{fe.val(y)}, %{latch}]")
    fe.start(ext)
    for r, (name, _) in zip(op.results, carried):
        fe.define(r, name)


@emitter("scf.if")
def emit_if(fe: FunctionEmitter, op: Op) -> None:
    cond = fe.val(op.operands[0])
    then_b = op.regions[0].blocks[0]
    else_b = op.regions[1].blocks[0] if op.regions[1].blocks else None
    tl, ml = fe.label("if.then"), fe.label("if.end")
    el = fe.label("if.else") if else_b is not None else ml
    pre = fe.block
    fe.cbr(cond, tl, el)
    fe.start(tl)
    t_term = fe.emit_block(then_b)
    t_vals = [fe.val(v) for v in t_term.operands] if t_term is not None else []
    t_end = fe.block
    fe.br(ml)
    e_vals, e_end = [], pre
    if else_b is not None:
        fe.start(el)
        e_term = fe.emit_block(else_b)
        e_vals = [fe.val(v) for v in e_term.operands] if e_term is not None else []
        e_end = fe.block
        fe.br(ml)
    fe.start(ml)
    for i, r in enumerate(op.results):
        ty = llvm_type(r.type)
        fe.define(r, fe.assign(f"phi {ty} [{t_vals[i]}, %{t_end}], [{e_vals[i]}, %{e_end}]"))


@emitter("scf.while")
def emit_while(fe: FunctionEmitter, op: Op) -> None:
    before = op.regions[0].blocks[0]
    after = op.regions[1].blocks[0]
    pre = fe.block
    bl, al, xl = fe.label("while.cond"), fe.label("while.body"), fe.label("while.end")
    fe.br(bl)
    fe.start(bl)
    carried = [(fe.tmp(), fe.placeholder()) for _ in op.operands]
    for a, (name, _) in zip(before.args, carried):
        fe.define(a, name)
    cond_op = _expect(fe.emit_block(before), "scf.condition", op)
    fwd = [fe.val(v) for v in cond_op.operands[1:]]
    fe.cbr(fe.val(cond_op.operands[0]), al, xl)
    fe.start(al)
    for a, v in zip(after.args, fwd):
        fe.define(a, v)
    y = _expect(fe.emit_block(after), "scf.yield", op)
    a_end = fe.block
    fe.br(bl)
    for (name, slot), init, nv in zip(carried, op.operands, y.operands):
        ty = llvm_type(init.type)
        fe.fill(slot, f"{name} = phi {ty} [{fe.val(init)}, %{pre}], [{fe.val(nv)}, %{a_end}]")
    fe.start(xl)
    for r, v in zip(op.results, fwd):
        fe.define(r, v)


@emitter("gpu.return", "func.return")
def emit_return(fe: FunctionEmitter, op: Op) -> None:
    vals = op.operands
    if not vals:
        fe.emit("ret void")
        return
    if len(vals) == 1:
        fe.emit(f"ret {fe.typed(vals[0])}")
        return
    sty = "{ " + ", ".join(llvm_type(v.type) for v in vals) + " }"
    acc = "poison"
    for i, v in enumerate(vals):
        acc = fe.assign(f"insertvalue {sty} {acc}, {fe.typed(v)}, {i}")
    fe.emit(f"ret {sty} {acc}")


@emitter("func.call")
def emit_call(fe: FunctionEmitter, op: Op) -> None:
    """Call a device function of the same module (results > 1 come back as a struct)."""
    callee = str.__str__(op.attrs["callee"])
    target = fe.m.functions.get(callee)
    if target is None:
        raise CodegenError(
            f"call to unknown device function @{callee}",
            fix="device functions must be gpu.func ops in the same gpu.module",
        )
    if target.attrs.get("kernel"):
        raise CodegenError(f"@{callee} is a kernel; kernels cannot be called from device code")
    fe.m.fn_calls.setdefault(fe.name, set()).add(callee)
    args = ", ".join(fe.typed(v) for v in op.operands)
    sym = symbol(fe.m.fn_symbols[callee])
    res = op.results
    if not res:
        fe.emit(f"call void {sym}({args})")
        return
    if len(res) == 1:
        fe.define(res[0], fe.assign(f"call {llvm_type(res[0].type)} {sym}({args})"))
        return
    sty = "{ " + ", ".join(llvm_type(r.type) for r in res) + " }"
    s = fe.assign(f"call {sty} {sym}({args})")
    for i, r in enumerate(res):
        fe.define(r, fe.assign(f"extractvalue {sty} {s}, {i}"))
