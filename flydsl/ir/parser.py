"""Parse the MLIR text this package prints back into IR (round trip; the disk cache stores IR as text).

Handles every format of :mod:`flydsl.ir.printer` (custom and generic forms), locations, nested
regions with scoped value names. Formats registered by dialects add their parser with
:func:`register_parse_format`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn

import numpy as np

from .core import Block, I32Array, IRError, Op, Region, SymbolRef, Value
from .numpy_types import numpy_dtype
from .opdef import OpDef, lookup_op
from .types import FunctionType, Type, VectorType, parse_type

__all__ = ["Parser", "parse_module", "parse_op_text", "register_parse_format", "ParseError"]


class ParseError(IRError):
    pass


_WS = re.compile(r"(?:\s|//[^\n]*)*")  # blanks and // comments, as MLIR


def _skip_ws(s: str, i: int) -> int:
    """The position of the first non-blank character at or after ``i``."""
    m = _WS.match(s, i)
    return m.end() if m is not None else i


_IDENT = re.compile(r"[A-Za-z_][\w.$-]*")
_SSA = re.compile(r"%[\w.$-]+(?:#\d+)?")
_INT = re.compile(r"-?\d+")
_NUM = re.compile(r"-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+|inf|nan)")
_STR = re.compile(r'"((?:[^"\\]|\\.)*)"')
_TYPE_START = re.compile(r"(?:i\d|index|f\d|bf16|tf32|vector<|!fly\.|\()")

PARSE_FORMATS: dict[str, Callable] = {}


def register_parse_format(name: str, fn: Callable) -> None:
    """``fn(ps: Parser, defn: OpDef, nres: int) -> Op``."""
    PARSE_FORMATS[name] = fn


class _Dense:
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items


def dense_to_array(d: _Dense, t: Type) -> np.ndarray:
    dt = numpy_dtype(t.element_type)
    if isinstance(d.items, (list, tuple)):
        arr = np.array(list(d.items), dtype=np.float64 if t.element_type.is_float else object).astype(dt)
        return arr.reshape(t.shape) if isinstance(t, VectorType) and len(t.shape) > 1 else arr
    return np.array(d.items, dtype=np.float64 if t.element_type.is_float else object).astype(dt)


class Parser:
    def __init__(self, text: str):
        self.s = text
        self.pos = 0
        self.scopes: list[dict[str, Value]] = [{}]

    # -- lexing --------------------------------------------------------------------------
    def ws(self) -> None:
        self.pos = _skip_ws(self.s, self.pos)

    def peek(self, lit: str) -> bool:
        self.ws()
        return self.s.startswith(lit, self.pos)

    def accept(self, lit: str) -> bool:
        if self.peek(lit):
            self.pos += len(lit)
            return True
        return False

    def expect(self, lit: str) -> None:
        if not self.accept(lit):
            self.error(f"expected '{lit}'")

    def error(self, msg: str) -> NoReturn:
        line = self.s.count("\n", 0, self.pos) + 1
        start = self.s.rfind("\n", 0, self.pos) + 1
        end = self.s.find("\n", self.pos)
        text = self.s[start : end if end >= 0 else len(self.s)]
        raise ParseError(f"line {line}: {msg}\n  {text}\n  {' ' * (self.pos - start)}^")

    def match(self, rx: re.Pattern) -> str | None:
        self.ws()
        m = rx.match(self.s, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group(0)

    def expect_match(self, rx: re.Pattern, what: str) -> str:
        """The text ``rx`` matches here (an error naming ``what`` when it does not)."""
        t = self.match(rx)
        if t is None:
            self.error(f"expected {what}")
        return t

    def ident(self) -> str:
        t = self.match(_IDENT)
        if t is None:
            self.error("expected an identifier")
        return t

    def string(self) -> str:
        self.ws()
        m = _STR.match(self.s, self.pos)
        if m is None:
            self.error("expected a string")
        self.pos = m.end()
        return bytes(m.group(1), "utf-8").decode("unicode_escape")

    def symbol(self) -> str:
        self.expect("@")
        if self.peek('"'):
            return self.string()
        return self.ident()

    def type(self) -> Type:
        self.ws()
        s, i, depth = self.s, self.pos, 0
        n = len(s)
        while i < n:
            ch = s[i]
            if ch in "<(":
                depth += 1
            elif ch in ">)":
                if depth == 0:
                    break
                depth -= 1
                if depth == 0 and ch == ")":
                    # a function type continues with "-> ..."
                    j = _skip_ws(s, i + 1)
                    if s.startswith("->", j):
                        i = j + 2
                        i = _skip_ws(s, i)
                        continue
            elif depth == 0 and ch in ",{}= \n\t":
                break
            i += 1
        text = s[self.pos : i]
        if not text:
            self.error("expected a type")
        try:
            t = parse_type(text)
        except ValueError as e:
            self.error(str(e))
        self.pos = i
        return t

    def type_list(self) -> list[Type]:
        """``(t, t)`` or a single bare type."""
        if self.accept("("):
            out: list[Type] = []
            if not self.accept(")"):
                out.append(self.type())
                while self.accept(","):
                    out.append(self.type())
                self.expect(")")
            return out
        return [self.type()]

    # -- values --------------------------------------------------------------------------
    def lookup(self, name: str) -> Value:
        for sc in reversed(self.scopes):
            v = sc.get(name)
            if v is not None:
                return v
        self.error(f"use of undefined value {name}")

    def operand(self) -> Value:
        t = self.match(_SSA)
        if t is None:
            self.error("expected an SSA value")
        return self.lookup(t)

    def operand_list(self, close: str = ")") -> list[Value]:
        out: list[Value] = []
        if self.peek(close):
            return out
        out.append(self.operand())
        while self.accept(","):
            out.append(self.operand())
        return out

    def define(self, name: str, v: Value) -> None:
        self.scopes[-1][name] = v

    # -- attributes ----------------------------------------------------------------------
    def attr_value(self):
        self.ws()
        s, p = self.s, self.pos
        ch = s[p : p + 1]
        if ch == '"':
            return self.string()
        if ch == "@":
            return SymbolRef(self.symbol())
        if ch == "[":
            self.pos += 1
            items: list = []
            if not self.accept("]"):
                items.append(self.attr_value())
                while self.accept(","):
                    items.append(self.attr_value())
                self.expect("]")
            return tuple(items)
        if ch == "{":
            return self.attr_dict()
        if s.startswith("array<i32", p):
            self.pos += 9
            items = []
            if self.accept(":"):
                items.append(int(self.match(_NUM)))
                while self.accept(","):
                    items.append(int(self.match(_NUM)))
            self.expect(">")
            return I32Array(items)
        if s.startswith("dense<", p):
            self.pos += 6
            if self.accept("["):
                items = []
                if not self.accept("]"):
                    items.append(self.attr_value())
                    while self.accept(","):
                        items.append(self.attr_value())
                    self.expect("]")
                d = _Dense(items)
            else:
                d = _Dense(self.attr_value())
            self.expect(">")
            return d
        for word, val in (("true", True), ("false", False), ("unit", None)):
            if s.startswith(word, p) and not (s[p + len(word) : p + len(word) + 1].isalnum()):
                self.pos += len(word)
                return val
        m = _NUM.match(s, p)
        if m is not None and not (ch == "i" or ch == "f"):
            self.pos = m.end()
            t = m.group(0)
            if t.lstrip("-").isdigit():
                return int(t)
            return float(t)
        if s.startswith("inf", p) or s.startswith("nan", p):
            self.pos += 3
            return float(s[p : p + 3])
        if _TYPE_START.match(s, p):
            return self.type()
        self.error("expected an attribute value")

    def attr_dict(self) -> dict:
        self.expect("{")
        out: dict = {}
        if self.accept("}"):
            return out
        while True:
            k = self.ident()
            self.expect("=")
            out[k] = self.attr_value()
            if not self.accept(","):
                break
        self.expect("}")
        return out

    def fastmath_attrs(self) -> dict:
        """`` fastmath<flags>`` (MLIR's spelling) and/or an attribute dict, as one attribute dict."""
        fm = None
        if self.accept("fastmath<"):
            end = self.s.index(">", self.pos)
            fm, self.pos = self.s[self.pos : end], end + 1
        attrs = self.opt_attr_dict()
        if fm is not None:
            attrs = {"fastmath": fm, **attrs}
        return attrs

    def opt_attr_dict(self) -> dict:
        return self.attr_dict() if self.peek("{") else {}

    # -- ops, blocks, regions --------------------------------------------------------------
    def op(self, block: Block | None) -> Op:
        self.ws()
        res_name, nres = None, 0
        if self.peek("%"):
            res_name = self.match(_SSA)
            nres = 1
            if self.accept(":"):
                nres = int(self.expect_match(_INT, "a result count"))
            self.expect("=")
        self.ws()
        if self.peek('"'):
            defn = lookup_op(self.string())
            op = PARSE_FORMATS["generic"](self, defn, nres)
        else:
            name = self.ident()
            if name == "module":
                name = "builtin.module"
            try:
                defn = lookup_op(name)
            except IRError as e:
                self.error(str(e))
            fn = PARSE_FORMATS.get(defn.fmt)
            if fn is None:
                self.error(f"no parser for format '{defn.fmt}' of {name}")
            op = fn(self, defn, nres)
        if self.peek("loc("):
            self.pos += 4
            f = self.string()
            self.expect(":")
            line = int(self.expect_match(_INT, "a line number"))
            self.expect(":")
            col = int(self.expect_match(_INT, "a column number"))
            self.expect(")")
            op.loc = (f, line, col)
        if len(op.results) != nres:
            self.error(f"{op.defn.name} has {len(op.results)} results, text names {nres}")
        if res_name is not None:
            if nres == 1:
                self.define(res_name, op.results[0])
            else:
                for i, r in enumerate(op.results):
                    self.define(f"{res_name}#{i}", r)
        if block is not None:
            block.append(op)
        return op

    def region(self, region: Region, entry_args=None) -> None:
        """Parse ``{ ... }`` into ``region``; ``entry_args`` = [(name, type)] from a signature."""
        self.expect("{")
        self.scopes.append({})
        block = None
        if entry_args is not None:
            block = region.add_block([t for _, t in entry_args])
            for (n, _), a in zip(entry_args, block.args):
                self.define(n, a)
        while not self.accept("}"):
            if self.peek("^"):
                self.pos += 1
                self.ident()
                args = []
                if self.accept("("):
                    while not self.accept(")"):
                        n = self.expect_match(_SSA, "a block argument")
                        self.expect(":")
                        args.append((n, self.type()))
                        self.accept(",")
                self.expect(":")
                block = region.add_block([t for _, t in args])
                for (n, _), a in zip(args, block.args):
                    self.define(n, a)
                continue
            if block is None:
                block = region.add_block()
            self.op(block)
        self.scopes.pop()


def parse_module(text: str) -> Op:
    """Parse one top-level op (normally ``module``) and verify the text is fully consumed."""
    ps = Parser(text)
    op = ps.op(None)
    ps.ws()
    if ps.pos != len(ps.s):
        ps.error("unexpected text after the top-level op")
    return op


def parse_op_text(text: str, values: dict[str, Value] | None = None) -> Op:
    """Parse a single op line, resolving operand names through ``values``."""
    ps = Parser(text)
    if values:
        ps.scopes[0].update(values)
    return ps.op(None)


# ---------------------------------------------------------------------------------------
# Format parsers (twins of the printer's formats).
# ---------------------------------------------------------------------------------------


def _mk(defn: OpDef, operands, result_types, attrs, nreg: int = 0) -> Op:
    return Op(defn, operands, result_types, attrs, nreg)


def _p_generic(ps: Parser, defn: OpDef, nres: int) -> Op:
    ps.expect("(")
    operands = ps.operand_list()
    ps.expect(")")
    op = _mk(defn, operands, (), {}, 0)
    if ps.accept("("):
        while True:
            r = Region(op)
            op.regions.append(r)
            ps.region(r)
            if not ps.accept(","):
                break
        ps.expect(")")
    op.attrs = ps.opt_attr_dict()
    ps.expect(":")
    ins = ps.type_list()
    ps.expect("->")
    outs = ps.type_list()
    if len(ins) != len(operands):
        ps.error(f"{defn.name}: {len(operands)} operands but {len(ins)} types")
    for v, t in zip(operands, ins):
        if v.type is not t:
            ps.error(f"{defn.name}: operand has type {v.type}, signature says {t}")
    op.results = [Value(t, op, i) for i, t in enumerate(outs)]
    _fix_dense(op)
    return op


def _fix_dense(op: Op) -> None:
    for k, v in op.attrs.items():
        if isinstance(v, _Dense):
            op.attrs[k] = dense_to_array(v, op.results[0].type)


def _p_binary(ps: Parser, defn: OpDef, nres: int) -> Op:
    a = ps.operand()
    ps.expect(",")
    b = ps.operand()
    attrs = ps.fastmath_attrs()
    ps.expect(":")
    t = ps.type()
    return _mk(defn, [a, b], [t], attrs)


def _p_unary(ps: Parser, defn: OpDef, nres: int) -> Op:
    ops = [ps.operand()]
    while ps.accept(","):
        ops.append(ps.operand())
    attrs = ps.fastmath_attrs()
    ps.expect(":")
    t = ps.type()
    return _mk(defn, ops, [t], attrs)


def _p_cast(ps: Parser, defn: OpDef, nres: int) -> Op:
    a = ps.operand()
    attrs = ps.opt_attr_dict()
    ps.expect(":")
    ps.type()
    if not ps.accept("to"):
        ps.error("expected 'to'")
    t = ps.type()
    return _mk(defn, [a], [t], attrs)


def _p_cmp(ps: Parser, defn: OpDef, nres: int) -> Op:
    pred = ps.ident()
    ps.expect(",")
    a = ps.operand()
    ps.expect(",")
    b = ps.operand()
    attrs = {"predicate": pred}
    attrs.update(ps.opt_attr_dict())
    ps.expect(":")
    ps.type()
    assert defn.infer is not None  # the "cmp" format is for ops whose result type follows the operands
    return _mk(defn, [a, b], defn.infer([a.type, b.type], attrs), attrs)


def _p_constant(ps: Parser, defn: OpDef, nres: int) -> Op:
    v = ps.attr_value()
    attrs = {"value": v}
    attrs.update(ps.opt_attr_dict())
    ps.expect(":")
    t = ps.type()
    op = _mk(defn, [], [t], attrs)
    _fix_dense(op)
    return op


def _p_return(ps: Parser, defn: OpDef, nres: int) -> Op:
    ops = []
    if ps.peek("%"):
        ops = [ps.operand()]
        while ps.accept(","):
            ops.append(ps.operand())
    attrs = ps.opt_attr_dict()
    if ops:
        ps.expect(":")
        for _ in ops:
            ps.type()
            ps.accept(",")
    return _mk(defn, ops, [], attrs)


def _p_func(ps: Parser, defn: OpDef, nres: int) -> Op:
    name = ps.symbol()
    ps.expect("(")
    args: list[tuple[str | None, Type]] = []
    while not ps.accept(")"):
        if ps.peek("%"):
            n = ps.match(_SSA)
            ps.expect(":")
            args.append((n, ps.type()))
        else:
            args.append((None, ps.type()))
        ps.accept(",")
    results: list[Type] = []
    if ps.accept("->"):
        results = ps.type_list()
    attrs = {"sym_name": name, "function_type": FunctionType([t for _, t in args], results)}
    if ps.accept("attributes"):
        attrs.update(ps.attr_dict())
    op = _mk(defn, [], [], attrs, 1)
    if ps.peek("{"):
        ps.scopes.append({})
        ps.region(op.regions[0], entry_args=args)
        ps.scopes.pop()
    return op


def _p_module(ps: Parser, defn: OpDef, nres: int) -> Op:
    attrs = {}
    if ps.peek("@"):
        attrs["sym_name"] = ps.symbol()
    if ps.accept("attributes"):
        attrs.update(ps.attr_dict())
    op = _mk(defn, [], [], attrs, 1)
    ps.region(op.regions[0])
    if not op.regions[0].blocks:
        op.regions[0].add_block()
    return op


for _n, _f in {
    "generic": _p_generic,
    "binary": _p_binary,
    "unary": _p_unary,
    "cast": _p_cast,
    "cmp": _p_cmp,
    "constant": _p_constant,
    "return": _p_return,
    "func": _p_func,
    "module": _p_module,
}.items():
    register_parse_format(_n, _f)
