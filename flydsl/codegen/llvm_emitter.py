"""IR → LLVM IR text: the generic emitter (module, functions, values, blocks, the op table).

Input: a ``builtin.module`` holding ``gpu.module``s, or one ``gpu.module``. Output: LLVM IR text for
the target's triple. Host-side ops (``func.func`` with ``gpu.launch_func``) are not device code and
are skipped.

Every op is lowered by one named function registered in :data:`EMITTERS` under the op's name
(``@emitter("arith.addi")``); the dispatcher looks the op up and calls it. Adding an op is one
function and one decorator. Before the emitter runs, the dispatcher checks the capabilities the op's
definition declares (``requires``, :mod:`flydsl.dialects.capabilities`) against the target, so an
instruction the GPU lacks is a :class:`CodegenError` at the op's line, never an LLVM abort. An emitter
reads operands with ``fe.val(v)``, appends instructions with ``fe.assign(...)``/``fe.emit(...)`` and
defines results with ``fe.define(result, text)``.

Structured control flow becomes basic blocks with phi nodes (see ``emit_control``); per-thread
allocations (``ptr.alloca``) are hoisted to the entry block so they stay static allocas.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..dialects.capabilities import requirements
from ..ir import Block, FunctionType, Op, PointerType, TmaDescType, Type, Value
from .backends import hooks_for
from .errors import CodegenError
from .kernel_info import KernelInfo, ParamSpec, param_kind
from .llvm_types import llvm_type, natural_align, store_size
from .target import Target

__all__ = [
    "EMITTERS",
    "emitter",
    "emit_llvm",
    "emit_module",
    "ModuleEmitter",
    "FunctionEmitter",
    "KernelInfo",
    "ParamSpec",
    "symbol",
    "ptx_identifier",
    "param_kind",
]

EMITTERS: dict[str, Callable[[FunctionEmitter, Op], None]] = {}

# ops that end a structured region; their parent's emitter consumes them
REGION_TERMINATORS = frozenset({"scf.yield", "scf.condition"})
# containers that hold no device code of their own
_SKIP_TOP = frozenset({"func.func"})


def emitter(*names: str):
    """Register the decorated function as the LLVM lowering of the named ops."""

    def deco(fn):
        for n in names:
            if n in EMITTERS:
                raise ValueError(f"two LLVM emitters for {n}")
            EMITTERS[n] = fn
        return fn

    return deco


_PLAIN_NAME = re.compile(r"^[A-Za-z$._][A-Za-z$._0-9]*$")
_PTX_INVALID = re.compile(r"[^A-Za-z0-9_$]")


def ptx_identifier(name: str) -> str:
    """A PTX-valid symbol for a function name (LLVM aborts on names PTX cannot spell)."""
    s = _PTX_INVALID.sub(lambda m: "_" if ord(m.group()) < 128 else f"_u{ord(m.group()):04x}", name)
    if not s or s[0].isdigit() or s[0] == "$":
        s = "_" + s
    return s


def symbol(name: str) -> str:
    """``@name``, quoted when the name has characters LLVM identifiers cannot hold."""
    if _PLAIN_NAME.match(name):
        return "@" + name
    return '@"' + name.replace("\\", "\\5C").replace('"', "\\22") + '"'


class ModuleEmitter:
    """Module-level state: declarations, globals, metadata, kernels, target requirements."""

    def __init__(self, target: Target):
        self.target = target
        self.hooks = hooks_for(target)
        self.decls: dict[str, str] = {}
        self.globals: list[str] = []
        self.global_names: set[str] = set()
        self.strings: dict[bytes, str] = {}
        self.md_nodes: dict[str, str] = {}
        self.md_lines: list[str] = []
        self.definitions: list[str] = []
        self.kernels: list[KernelInfo] = []
        self.functions: dict[str, Op] = {}
        self.fn_symbols: dict[str, str] = {}
        self.fn_smem: dict[str, list[tuple[str, int, int]]] = {}
        self.fn_calls: dict[str, set[str]] = {}
        self.fn_dyn_smem: set[str] = set()
        self.ptx_needs: dict[str, int] = {}
        self.libdevice_calls: set[str] = set()
        self.instructions = 0
        self._uid = 0

    # -- names and module items ------------------------------------------------------------------
    def unique(self, hint: str) -> str:
        self._uid += 1
        return f"__fly_{hint}_{self._uid}"

    def declare(self, name: str, ret: str, args: list[str], attrs: str = "") -> str:
        """Declare an external function or intrinsic once; returns ``@name``."""
        sym = symbol(name)
        if name not in self.decls:
            tail = f" {attrs}" if attrs else ""
            self.decls[name] = f"declare {ret} {sym}({', '.join(args)}){tail}"
        return sym

    def add_global(self, hint: str, body: str) -> str:
        """Add ``@<unique> = <body>``; returns the symbol."""
        name = self.unique(hint)
        sym = symbol(name)
        self.globals.append(f"{sym} = {body}")
        self.global_names.add(name)
        return sym

    def named_global(self, name: str, body: str) -> str:
        """A global with a fixed name, added once."""
        sym = symbol(name)
        if name not in self.global_names:
            self.globals.append(f"{sym} = {body}")
            self.global_names.add(name)
        return sym

    def string_constant(self, data: bytes, addrspace: int) -> tuple[str, int]:
        """A NUL-terminated constant byte string; returns (symbol, length including NUL)."""
        data = data + b"\x00"
        sym = self.strings.get(data)
        if sym is None:
            esc = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}" for b in data)
            sp = f" addrspace({addrspace})" if addrspace else ""
            sym = self.add_global("str", f'private unnamed_addr{sp} constant [{len(data)} x i8] c"{esc}", align 1')
            self.strings[data] = sym
        return sym, len(data)

    def metadata(self, key: str, body: str) -> str:
        """A numbered metadata node ``!N = body`` shared by key; returns ``!N``."""
        ref = self.md_nodes.get(key)
        if ref is None:
            ref = f"!{len(self.md_lines)}"
            self.md_lines.append(f"{ref} = {body}")
            self.md_nodes[key] = ref
        return ref

    def need_ptx(self, version: int, why: str) -> None:
        """Record that the PTX (or ISA) version must be at least ``version`` for ``why``."""
        if self.ptx_needs.get(why, 0) < version:
            self.ptx_needs[why] = version

    # -- output ----------------------------------------------------------------------------------
    def text(self) -> str:
        h = self.hooks
        parts = [
            "; generated by flydsl.codegen",
            f'target datalayout = "{h.datalayout}"',
            f'target triple = "{h.triple}"',
            "",
        ]
        parts.extend(self.globals)
        parts.append("")
        parts.extend(self.definitions)
        parts.extend(self.decls.values())
        parts.append("")
        parts.extend(self.md_lines)
        parts.append("")
        return "\n".join(parts)

    def finish_kernels(self) -> None:
        """Compute each kernel's static shared memory through its call graph."""
        for k in self.kernels:
            seen, stack, allocs, dyn = set(), [k.name], {}, False
            while stack:
                f = stack.pop()
                if f in seen:
                    continue
                seen.add(f)
                for sym, size, align in self.fn_smem.get(f, ()):
                    allocs[sym] = (size, align)
                dyn = dyn or f in self.fn_dyn_smem
                stack.extend(self.fn_calls.get(f, ()))
            total = 0
            for size, align in allocs.values():
                total = (total + align - 1) // align * align + size
            k.static_smem = total
            k.uses_dynamic_smem = dyn


class FunctionEmitter:
    """Emits one function: maps IR values to LLVM operands and appends instructions."""

    def __init__(self, me: ModuleEmitter, fn_op: Op, name: str):
        self.m = me
        self.hooks = me.hooks
        self.target = me.target
        self.fn = fn_op
        self.name = name
        self.lines: list[str] = []
        self.entry_lines: list[str] = []
        self.vals: dict[Value, str] = {}
        self.block = "entry"
        self._n = 0
        self._labels = 0

    # -- values ----------------------------------------------------------------------------------
    def val(self, v: Value) -> str:
        """LLVM operand text of an IR value."""
        try:
            return self.vals[v]
        except KeyError:
            raise CodegenError(f"internal error: value {v!r} used before it was emitted") from None

    def typed(self, v: Value) -> str:
        """``<type> <operand>`` of an IR value."""
        return f"{llvm_type(v.type)} {self.val(v)}"

    def define(self, v: Value, text: str) -> None:
        self.vals[v] = text

    def tmp(self) -> str:
        self._n += 1
        return f"%v{self._n}"

    def assign(self, rhs: str) -> str:
        """Append ``%vN = rhs``; returns ``%vN``."""
        self._n += 1
        name = f"%v{self._n}"
        self.lines.append(f"  {name} = {rhs}")
        return name

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def entry_assign(self, rhs: str) -> str:
        """An instruction placed at the top of the entry block (static allocas)."""
        self._n += 1
        name = f"%v{self._n}"
        self.entry_lines.append(f"  {name} = {rhs}")
        return name

    # -- blocks ----------------------------------------------------------------------------------
    def label(self, hint: str = "bb") -> str:
        self._labels += 1
        return f"{hint}{self._labels}"

    def start(self, label: str) -> None:
        self.lines.append(f"{label}:")
        self.block = label

    def br(self, label: str) -> None:
        self.lines.append(f"  br label %{label}")

    def cbr(self, cond: str, then: str, other: str) -> None:
        self.lines.append(f"  br i1 {cond}, label %{then}, label %{other}")

    def placeholder(self) -> int:
        """Reserve a line (a phi whose incoming values are not known yet)."""
        self.lines.append("")
        return len(self.lines) - 1

    def fill(self, index: int, line: str) -> None:
        self.lines[index] = "  " + line

    # -- common instruction helpers -------------------------------------------------------------
    def call(
        self, name: str, ret: str, args: list[tuple[str, str]], attrs: str = "", decl_attrs: str = "", flags: str = ""
    ) -> str:
        """Call (declaring on first use) ``name``; returns the result (or "" for void). ``flags``: LLVM
        fast-math flags with a trailing space (``"reassoc "``), for calls returning a float."""
        sym = self.m.declare(name, ret, [t for t, _ in args], decl_attrs)
        arglist = ", ".join(f"{t} {v}" for t, v in args)
        tail = f" {attrs}" if attrs else ""
        if ret == "void":
            self.emit(f"call void {sym}({arglist}){tail}")
            return ""
        return self.assign(f"call {flags}{ret} {sym}({arglist}){tail}")

    def cast(self, kind: str, value: str, src: str, dst: str) -> str:
        if src == dst:
            return value
        return self.assign(f"{kind} {src} {value} to {dst}")

    # -- ops -------------------------------------------------------------------------------------
    def emit_op(self, op: Op) -> None:
        fn = EMITTERS.get(op.defn.name)
        if fn is None:
            raise CodegenError(
                f"no LLVM lowering for {op.defn.name} on {self.target.arch}",
                op=op,
                fix="this op must be lowered by a pass before codegen, or is not supported on this target",
            )
        try:
            if op.defn.requires is not None:  # the trace checked this too; IR may be built or retargeted by hand
                for feature in requirements(op):
                    self.hooks.require(op, feature)
            fn(self, op)
        except CodegenError as e:
            if e.op is None and e.loc is None:
                raise CodegenError(e.raw_message, op=op, fix=e.fix, llvm_line=e.llvm_line) from e
            raise
        except (KeyError, ValueError, TypeError, AttributeError, IndexError) as e:
            raise CodegenError(f"internal error while lowering: {type(e).__name__}: {e}", op=op) from e

    def emit_block(self, block: Block) -> Op | None:
        """Emit every op of ``block``; returns its region terminator (scf.yield/condition), unemitted."""
        for op in block.ops:
            if op.defn.name in REGION_TERMINATORS:
                return op
            self.emit_op(op)
        return None


def _param_text(fe: FunctionEmitter, t: Type, i: int, attrs: dict | None) -> str:
    if isinstance(t, TmaDescType):  # Hopper TMA descriptor: 128 bytes by value, read in place (emit_sm90)
        return f'ptr byval([{t.nbytes} x i8]) align {t.align} "nvvm.grid_constant" %a{i}'
    ty = llvm_type(t)
    extra = []
    if attrs and isinstance(t, PointerType):
        if attrs.get("noalias"):
            extra.append("noalias")
        if attrs.get("readonly"):
            extra.append("readonly")
        if attrs.get("writeonly"):
            extra.append("writeonly")
        a = attrs.get("align")
        if isinstance(a, int) and a > 0 and a & (a - 1) == 0:
            extra.append(f"align {a}")
    return f"{ty}{' ' + ' '.join(extra) if extra else ''} %a{i}"


def _return_type(ft: FunctionType) -> str:
    if not ft.results:
        return "void"
    if len(ft.results) == 1:
        return llvm_type(ft.results[0])
    return "{ " + ", ".join(llvm_type(t) for t in ft.results) + " }"


def emit_function(me: ModuleEmitter, fn_op: Op) -> None:
    """Emit one ``gpu.func`` (kernel or device function) as an LLVM definition."""
    name = fn_op.attrs["sym_name"]
    ft: FunctionType = fn_op.attrs["function_type"]
    is_kernel = bool(fn_op.attrs.get("kernel"))
    fe = FunctionEmitter(me, fn_op, name)
    arg_attrs = fn_op.attrs.get("arg_attrs") or [None] * len(ft.inputs)
    params = [_param_text(fe, t, i, arg_attrs[i] if i < len(arg_attrs) else None) for i, t in enumerate(ft.inputs)]
    if not fn_op.regions or not fn_op.regions[0].blocks:
        raise CodegenError(f"function {name} has no body", op=fn_op)
    if len(fn_op.regions[0].blocks) != 1:
        raise CodegenError(f"function {name} has several blocks; only structured control flow is supported", op=fn_op)
    entry = fn_op.regions[0].blocks[0]
    for i, a in enumerate(entry.args):
        fe.define(a, f"%a{i}")
    cc, fattrs = me.hooks.function_attributes(me, fn_op, is_kernel)
    fe.lines.append("entry:")
    term = fe.emit_block(entry)
    if term is not None:
        raise CodegenError(f"{term.defn.name} outside of a structured region", op=term)
    last = entry.ops[-1] if entry.ops else None
    if last is None or not last.defn.is_terminator:
        if ft.results:
            raise CodegenError(f"function {name} does not end with a return", op=fn_op)
        fe.emit("ret void")
    linkage = "" if is_kernel else "internal "
    sym = me.fn_symbols[name]
    head = f"define {linkage}{cc + ' ' if cc else ''}{_return_type(ft)} {symbol(sym)}({', '.join(params)})"
    if fattrs:
        head += " " + " ".join(fattrs)
    body = [head + " {", fe.lines[0]] + fe.entry_lines + fe.lines[1:] + ["}", ""]
    me.definitions.append("\n".join(body))
    me.instructions += len(fe.lines) + len(fe.entry_lines)
    if is_kernel:
        kbs = fn_op.attrs.get("known_block_size")
        info = KernelInfo(name=name, symbol=sym, block_size=tuple(kbs) if kbs else None)
        # a kernel that waits for the grids it depends on may start before they end (programmatic launch)
        info.pdl = any(o.defn.name == "nvvm.griddep_wait" for o in fn_op.walk())
        for i, t in enumerate(ft.inputs):
            info.params.append(
                ParamSpec(
                    name=f"a{i}",
                    ir_type=str(t),
                    llvm_type=llvm_type(t),
                    kind=param_kind(t),
                    size=store_size(t),
                    align=max(natural_align(t), 1),
                )
            )
        me.kernels.append(info)


def _device_modules(top: Op) -> list[Op]:
    if top.defn.name == "gpu.module":
        return [top]
    found = []
    for r in top.regions:
        for b in r.blocks:
            for o in b.ops:
                if o.defn.name == "gpu.module":
                    found.append(o)
                elif o.defn.name not in _SKIP_TOP and o.regions:
                    found.extend(_device_modules(o))
    return found


def emit_module(top: Op, target: Target) -> ModuleEmitter:
    """Lower every device function under ``top``; returns the filled :class:`ModuleEmitter`."""
    me = ModuleEmitter(target)
    me.hooks.begin_module(me)
    mods = _device_modules(top)
    if not mods:
        raise CodegenError("no gpu.module to compile (kernels live in a gpu.module)", op=top)
    fns = []
    for gm in mods:
        for b in gm.regions[0].blocks:
            for o in b.ops:
                if o.defn.name == "gpu.func":
                    name = o.attrs["sym_name"]
                    if name in me.functions:
                        raise CodegenError(f"two device functions are named {name}", op=o)
                    me.functions[name] = o
                    fns.append(o)
                    sym = ptx_identifier(name)
                    while sym in me.fn_symbols.values():
                        sym += "_"
                    me.fn_symbols[name] = sym
                elif o.defn.name not in ("gpu.module_end",):
                    raise CodegenError(f"unexpected {o.defn.name} at gpu.module level", op=o)
    for f in fns:
        emit_function(me, f)
    me.finish_kernels()
    return me


def emit_llvm(module_or_gpu_module: Op, target: Target | None = None) -> str:
    """LLVM IR text of every ``gpu.func`` under the given ``builtin.module`` or ``gpu.module``.

    Raises:
        CodegenError: an op cannot be lowered for ``target`` (names the op, its source line, a fix).
    """
    return emit_module(module_or_gpu_module, target or Target()).text()
