"""``gpu.printf`` on NVIDIA: ``vprintf(format, args)`` with the arguments packed into a struct.

``vprintf`` takes a generic pointer to the format (a constant-space string here) and a pointer to a
buffer holding each vararg at its natural alignment: i32 (4 bytes), i64/double/pointer (8 bytes).
The struct ``{ i32, double, … }`` has exactly that layout; it lives in an entry-block alloca.
"""

from __future__ import annotations

from ..ir import FloatType, IntegerType, Op
from .errors import format_location
from .llvm_types import is_fp8, llvm_type
from .printf_format import translate_format

__all__ = ["emit_printf"]

_KIND_TY = {"i32": "i32", "i64": "i64", "f64": "double", "ptr": "ptr"}


def _convert(hooks, fe, op: Op, value: str, t, kind: str) -> str:
    """Promote one scalar to its vararg type."""
    ty = llvm_type(t)
    if kind == "f64":
        if is_fp8(t):
            value = hooks.convert_fp8(fe, op, value, t, FloatType("f32"))
            ty = "float"
        if isinstance(t, FloatType) or is_fp8(t):
            return fe.cast("fpext", value, ty, "double")
        return fe.assign(f"sitofp {ty} {value} to double")
    if kind == "ptr":
        return fe.cast("addrspacecast", value, ty, "ptr")
    target = _KIND_TY[kind]
    if ty.startswith("ptr"):
        return fe.assign(f"ptrtoint {ty} {value} to i64")
    w = t.bitwidth
    if w == int(target[1:]):
        return value
    ext = "zext" if isinstance(t, IntegerType) and w == 1 else "sext"
    return fe.assign(f"{ext if w < int(target[1:]) else 'trunc'} {ty} {value} to {target}")


def emit_printf(hooks, fe, op: Op) -> None:
    fmt = op.attrs["format"]
    where = f"(at {format_location(op.loc)})" if op.loc else ""
    cfmt, args = translate_format(str(fmt), [v.type for v in op.operands], where)
    sym, length = fe.m.string_constant(cfmt.encode("utf-8"), hooks.const_addrspace)
    fptr = f"addrspacecast (ptr addrspace({hooks.const_addrspace}) {sym} to ptr)"
    vprintf = fe.m.declare("vprintf", "i32", ["ptr", "ptr"])
    if not args:
        fe.assign(f"call i32 {vprintf}(ptr {fptr}, ptr null)")
        return
    vals = []
    for a in args:
        v = op.operands[a.index]
        x = fe.val(v)
        if a.lane is not None:
            x = fe.assign(f"extractelement {llvm_type(v.type)} {x}, i64 {a.lane}")
        vals.append((_KIND_TY[a.kind], _convert(hooks, fe, op, x, a.from_type, a.kind)))
    sty = "{ " + ", ".join(t for t, _ in vals) + " }"
    buf = fe.entry_assign(f"alloca {sty}, align 8")
    for i, (t, x) in enumerate(vals):
        slot = fe.assign(f"getelementptr inbounds {sty}, ptr {buf}, i32 0, i32 {i}")
        fe.emit(f"store {t} {x}, ptr {slot}, align {4 if t == 'i32' else 8}")
    fe.assign(f"call i32 {vprintf}(ptr {fptr}, ptr {buf})")
