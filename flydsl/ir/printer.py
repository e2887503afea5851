"""Print IR as MLIR text.

Each op prints through the format its ``OpDef.fmt`` names. The formats in this module cover every
op kind of the IR (generic, binary, unary, cast, cmp, constant, return, func, module); dialects may
register prettier ones with :func:`register_format`. Every format has a parser twin in
:mod:`flydsl.ir.parser`, so printed text round-trips (``generic=True`` forces the generic form).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .core import Block, I32Array, Op, Region, SymbolRef, Value
from .types import Type

__all__ = ["Printer", "print_op", "format_attr", "register_format", "FORMATS", "format_loc"]

# format name -> print function(p: Printer, op: Op, indent: str) -> str (text after "%r = ")
FORMATS: dict[str, Callable] = {}


def register_format(name: str, printer: Callable) -> None:
    FORMATS[name] = printer


def _fmt_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(float(x))
    return r


def format_attr(v) -> str:
    """An attribute value in MLIR-like syntax."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, SymbolRef):
        return "@" + str.__str__(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _fmt_float(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, Type):
        return str(v)
    if isinstance(v, I32Array):
        return "array<i32" + "".join(f"{',' if i else ':'} {int(x)}" for i, x in enumerate(v)) + ">"
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return "dense<" + _scalar_repr(v) + ">"
        return "dense<[" + ", ".join(_scalar_repr(x) for x in v.reshape(-1)) + "]>"
    if isinstance(v, np.generic):
        return _scalar_repr(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {format_attr(x)}" for k, x in v.items()) + "}"
    if v is None:
        return "unit"
    raise TypeError(f"cannot print attribute value {v!r} of type {type(v).__name__}")


def _scalar_repr(x) -> str:
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return "true" if bool(x) else "false"
    if x.dtype.kind in "iu":
        return str(int(x))
    return _fmt_float(float(x))


def format_loc(loc) -> str:
    f, line, col = loc
    return f' loc("{f}":{line}:{col})'


def _outside_name(v: Value) -> str:
    """A name for a value defined outside what is being printed (an op printed on its own)."""
    if isinstance(v.owner, Block):
        return f"%arg{v.index}"
    owner = v.owner
    return f"%<{owner.defn.name}#{v.index}>" if owner is not None else "%<undefined>"


class Printer:
    """Stateful printer: assigns ``%N`` names per isolated region (function)."""

    __slots__ = ("names", "next_id", "next_arg", "locs", "generic")

    def __init__(self, locs: bool = False, generic: bool = False):
        self.names: dict[Value, str] = {}
        self.next_id = 0
        self.next_arg = 0
        self.locs = locs
        self.generic = generic

    # -- names -------------------------------------------------------------------------
    def name(self, v: Value) -> str:
        n = self.names.get(v)
        if n is None:
            return _outside_name(v)
        return n

    def names_of(self, vals) -> str:
        nm = self.names
        return ", ".join([nm.get(v) or _outside_name(v) for v in vals])

    def define_results(self, op: Op) -> str:
        res = op.results
        if not res:
            return ""
        base = f"%{self.next_id}"
        self.next_id += 1
        if len(res) == 1:
            self.names[res[0]] = base
            return base + " = "
        for i, r in enumerate(res):
            self.names[r] = f"{base}#{i}"
        return f"{base}:{len(res)} = "

    def define_block_args(self, block: Block) -> None:
        for a in block.args:
            self.names[a] = f"%arg{self.next_arg}"
            self.next_arg += 1

    # -- ops ---------------------------------------------------------------------------
    def op_text(self, op: Op, indent: str = "") -> str:
        fmt = GENERIC if self.generic else FORMATS.get(op.defn.fmt, GENERIC)
        prefix = self.define_results(op)
        body = fmt(self, op, indent)
        text = indent + prefix + body
        if self.locs and op.loc is not None:
            text += format_loc(op.loc)
        return text

    def region_text(self, region: Region, indent: str, print_entry_args: bool = True) -> str:
        """``{ ... }`` with the region's blocks; entry block arguments printed when asked."""
        inner = indent + "  "
        lines = ["{"]
        for bi, block in enumerate(region.blocks):
            if bi > 0 or (print_entry_args and block.args):
                self.define_block_args(block)
                args = ", ".join(f"{self.names[a]}: {a.type}" for a in block.args)
                lines.append(f"{indent}^bb{bi}" + (f"({args})" if args else "") + ":")
            for o in block.ops:
                lines.append(self.op_text(o, inner))
        lines.append(indent + "}")
        return "\n".join(lines)

    def attr_dict(self, attrs: dict, skip=()) -> str:
        items = [(k, v) for k, v in attrs.items() if k not in skip]
        if not items:
            return ""
        return " {" + ", ".join(f"{k} = {format_attr(v)}" for k, v in items) + "}"


def print_op(op: Op, locs: bool = False, generic: bool = False) -> str:
    """MLIR text of ``op`` and everything nested in it."""
    return Printer(locs=locs, generic=generic).op_text(op)


# ---------------------------------------------------------------------------------------
# Formats. Each returns the text after the results' "%N = " prefix.
# ---------------------------------------------------------------------------------------


def GENERIC(p: Printer, op: Op, indent: str) -> str:
    s = '"' + op.defn.name + '"(' + p.names_of(op.operands) + ")"
    if op.regions:
        saved = p.next_arg
        s += " (" + ", ".join(p.region_text(r, indent, True) for r in op.regions) + ")"
        p.next_arg = saved
    s += p.attr_dict(op.attrs)
    ins = ", ".join(str(v.type) for v in op.operands)
    outs = ", ".join(str(r.type) for r in op.results)
    return s + f" : ({ins}) -> ({outs})"


def _fastmath(p: Printer, op: Op) -> str:
    """MLIR's spelling of the fast-math flags (`` fastmath<fast>``) and the other attributes."""
    fm = op.attrs.get("fastmath")
    if type(fm) is not str or not fm or not all(c.isalpha() or c == "," for c in fm):
        return p.attr_dict(op.attrs)
    return f" fastmath<{fm}>{p.attr_dict(op.attrs, skip=('fastmath',))}"


def _binary(p: Printer, op: Op, indent: str) -> str:
    a, b = op.operands
    return f"{op.defn.name} {p.name(a)}, {p.name(b)}{_fastmath(p, op)} : {op.results[0].type}"


def _unary(p: Printer, op: Op, indent: str) -> str:
    names = p.names_of(op.operands)
    return f"{op.defn.name} {names}{_fastmath(p, op)} : {op.results[0].type}"


def _cast(p: Printer, op: Op, indent: str) -> str:
    (a,) = op.operands
    return f"{op.defn.name} {p.name(a)}{p.attr_dict(op.attrs)} : {a.type} to {op.results[0].type}"


def _cmp(p: Printer, op: Op, indent: str) -> str:
    a, b = op.operands
    pred = op.attrs["predicate"]
    return f"{op.defn.name} {pred}, {p.name(a)}, {p.name(b)}{p.attr_dict(op.attrs, ('predicate',))} : {a.type}"


def _constant(p: Printer, op: Op, indent: str) -> str:
    v = op.attrs["value"]
    return f"{op.defn.name} {format_attr(v)}{p.attr_dict(op.attrs, ('value',))} : {op.results[0].type}"


def _return(p: Printer, op: Op, indent: str) -> str:
    if not op.operands:
        return op.defn.name + p.attr_dict(op.attrs)
    types = ", ".join(str(v.type) for v in op.operands)
    return f"{op.defn.name} {p.names_of(op.operands)}{p.attr_dict(op.attrs)} : {types}"


def _func(p: Printer, op: Op, indent: str) -> str:
    # Functions are isolated: names restart at 0.
    saved = (p.next_id, p.next_arg)
    p.next_id = 0
    p.next_arg = 0
    ftype = op.attrs["function_type"]
    region = op.regions[0]
    entry = region.blocks[0] if region.blocks else None
    if entry is not None:
        p.define_block_args(entry)
        args = ", ".join(f"{p.names[a]}: {a.type}" for a in entry.args)
    else:
        args = ", ".join(str(t) for t in ftype.inputs)
    s = f"{op.defn.name} @{op.attrs['sym_name']}({args})"
    if ftype.results:
        s += " -> (" + ", ".join(map(str, ftype.results)) + ")"
    extra = p.attr_dict(op.attrs, ("sym_name", "function_type"))
    if extra:
        s += " attributes" + extra
    if entry is not None:
        s += " " + p.region_text(region, indent, print_entry_args=False)
    p.next_id, p.next_arg = saved
    return s


def _module(p: Printer, op: Op, indent: str) -> str:
    name = "module" if op.defn.name == "builtin.module" else op.defn.name
    s = name
    if "sym_name" in op.attrs:
        s += f" @{op.attrs['sym_name']}"
    extra = p.attr_dict(op.attrs, ("sym_name",))
    if extra:
        s += " attributes" + extra
    body = op.regions[0]
    inner = indent + "  "
    lines = [s + " {"]
    for o in body.block.ops:
        lines.append(p.op_text(o, inner))
    lines.append(indent + "}")
    return "\n".join(lines)


for _n, _f in {
    "generic": GENERIC,
    "binary": _binary,
    "unary": _unary,
    "cast": _cast,
    "cmp": _cmp,
    "constant": _constant,
    "return": _return,
    "func": _func,
    "module": _module,
}.items():
    register_format(_n, _f)
