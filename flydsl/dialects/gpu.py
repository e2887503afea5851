"""``gpu``: kernels, thread/block ids, barriers, fences, warp shuffles and votes, printf, launches."""

from __future__ import annotations

import functools
import re

from ..ir import (
    FloatType,
    IndexType,
    IntegerType,
    Op,
    OpDef,
    PointerType,
    SymbolRef,
    Trait,
    Type,
    VectorType,
    i1,
    i32,
    i64,
    register_format,
    register_parse_format,
)
from .func import func_verify, return_verify

T, P, ISO, SYM = Trait.TERMINATOR, Trait.PURE, Trait.ISOLATED, Trait.SYMBOL

# ---------------------------------------------------------------------------------------------

module = OpDef(
    "gpu.module",
    operands=0,
    results=0,
    regions=1,
    traits=(ISO, SYM),
    attrs=("sym_name",),
    fmt="module",
    doc="device code: gpu.func kernels and device functions",
)


def _kernel_verify(op: Op):
    msg = func_verify(op)
    if msg:
        return msg
    kbs = op.attrs.get("known_block_size")
    if kbs is not None and (len(kbs) != 3 or any(not isinstance(x, int) or x <= 0 for x in kbs)):
        return f"known_block_size must be three positive ints, got {kbs}"
    if op.attrs.get("kernel") and op.attrs["function_type"].results:
        return "a kernel returns nothing"
    return None


func = OpDef(
    "gpu.func",
    operands=0,
    results=0,
    regions=1,
    traits=(ISO, SYM),
    attrs=("sym_name", "function_type"),
    verify=_kernel_verify,
    fmt="func",
    doc="a kernel (attribute kernel = true) or device function; known_block_size = [x, y, z]",
)
return_ = OpDef("gpu.return", operands=-1, results=0, traits=(T,), verify=return_verify, fmt="return")

DIMS = ("x", "y", "z")


def _dim_verify(op: Op):
    if op.attrs.get("dimension") not in DIMS:
        return f"dimension must be one of x, y, z, got {op.attrs.get('dimension')!r}"
    return None


def _sreg(name, doc):
    return OpDef(
        name,
        operands=0,
        traits=(P,),
        attrs=("dimension",),
        infer=lambda types, attrs: [i32],
        verify=_dim_verify,
        doc=doc,
    )


thread_id = _sreg("gpu.thread_id", "thread index within the block (i32)")
block_id = _sreg("gpu.block_id", "block index within the grid (i32)")
block_dim = _sreg("gpu.block_dim", "threads per block (i32)")
grid_dim = _sreg("gpu.grid_dim", "blocks per grid (i32)")
lane_id = OpDef("gpu.lane_id", operands=0, traits=(P,), infer=lambda t, a: [i32], doc="lane within the warp")

barrier = OpDef("gpu.barrier", operands=0, results=0, doc="block-wide barrier (all threads, memory ordered)")

FENCE_SCOPES = ("cta", "gpu", "sys")
fence = OpDef(
    "gpu.fence",
    operands=0,
    results=0,
    attrs=("scope",),
    verify=lambda op: None if op.attrs["scope"] in FENCE_SCOPES else f"scope must be one of {FENCE_SCOPES}",
    doc="memory fence at the given scope",
)

SHUFFLE_MODES = ("xor", "up", "down", "idx")


def _shuffle_verify(op: Op):
    v, off, width = op.operands
    if op.attrs.get("mode") not in SHUFFLE_MODES:
        return f"mode must be one of {', '.join(SHUFFLE_MODES)}"
    if off.type is not i32 or width.type is not i32:
        return "offset and width must be i32"
    if v.type.bitwidth > 64 or v.type.is_vector and v.type.bitwidth > 64:
        return f"shuffle moves values of at most 64 bits, got {v.type}"
    return None


shuffle = OpDef(
    "gpu.shuffle",
    operands=3,
    attrs=("mode",),
    infer=lambda types, attrs: [types[0]],
    verify=_shuffle_verify,
    doc="warp shuffle (value, offset, width): read `value` of another lane of the same warp segment",
)

VOTE_MODES = ("all", "any", "ballot")
vote = OpDef(
    "gpu.vote",
    operands=1,
    attrs=("mode",),
    infer=lambda types, attrs: [i32 if attrs["mode"] == "ballot" else i1],
    verify=lambda op: None if op.attrs["mode"] in VOTE_MODES else f"mode must be one of {VOTE_MODES}",
    doc="warp vote over an i1 predicate (ballot returns the i32 lane mask)",
)

# -- printf: its format is part of the op ---------------------------------------------------------------
#
# The format holds ``{}`` placeholders, one per operand, each with an optional Python format spec
# (``{:>8.3f}``, ``{:x}``, ``{:+d}``, ``{:e}``); ``{{`` and ``}}`` are literal braces. Each placeholder prints
# as the C conversion :func:`printf_conversion` maps it to: integers up to 32 bits with ``%d`` (promoted to
# i32; ``i1`` as 0/1), 64-bit integers and ``index`` with ``%lld``, floats (promoted to double) with
# ``%f``, pointers with ``%p``; ``<`` alignment is the ``-`` flag; sign, ``#``, ``0``, width and precision
# carry over; a vector prints as ``[a, b, …]`` with one conversion per lane. The front end checks a format
# with these functions, the verifier checks the op, and the LLVM back end and the interpreter both print
# through them.


class PrintfFormatError(ValueError):
    """A printf format the op cannot print."""


# Python format spec: [[fill]align][sign][#][0][width][.precision][type]
_SPEC = re.compile(
    r"^(?:(?P<fill>.)?(?P<align>[<>^=]))?(?P<sign>[-+ ])?(?P<alt>#)?(?P<zero>0)?(?P<width>\d+)?"
    r"(?:\.(?P<prec>\d+))?(?P<type>[bcdeEfFgGnosxX%]?)$"
)
_INT_CONV = set("dcxXo")
_FLOAT_CONV = set("eEfFgG")


@functools.lru_cache(maxsize=256)
def parse_printf_format(fmt: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(literals, specs)``: the text around the placeholders (braces unescaped) and each placeholder's spec
    (``""`` for ``{}``); ``len(literals) == len(specs) + 1``.

    Raises:
        PrintfFormatError: an unclosed ``{``, a placeholder with a name or index (``{0}``), a single ``}``.
    """
    lits, specs, cur, i, n = [], [], [], 0, len(fmt)
    while i < n:
        two = fmt[i : i + 2]
        if two in ("{{", "}}"):
            cur.append(two[0])
            i += 2
        elif fmt[i] == "{":
            j = fmt.find("}", i)
            if j < 0:
                raise PrintfFormatError(f"printf: unclosed '{{' in format {fmt!r}")
            name, _, spec = fmt[i + 1 : j].partition(":")
            if name.strip() or (j > i + 1 and fmt[i + 1] != ":"):
                raise PrintfFormatError(
                    f"printf: only '{{}}' placeholders are supported, got '{{{fmt[i + 1 : j]}}}' (printf formats use "
                    "{} or {:spec} placeholders, and {{ }} for braces)"
                )
            specs.append(spec)
            lits.append("".join(cur))
            cur = []
            i = j + 1
        elif fmt[i] == "}":
            raise PrintfFormatError(f"printf: a single '}}' in {fmt!r}; write '}}}}' for a brace")
        else:
            cur.append(fmt[i])
            i += 1
    lits.append("".join(cur))
    return tuple(lits), tuple(specs)


def printf_conversion(spec: str, t: Type) -> tuple[str, str]:
    """``(C conversion, vararg kind)`` of the placeholder ``{:spec}`` for one scalar of type ``t``: e.g.
    ``("%-8.3f", "f64")``; the kind is how the value is passed (``i32``, ``i64``, ``f64``, ``ptr``).

    Raises:
        PrintfFormatError: a spec without a C printf equivalent, or one that does not apply to ``t``.
    """
    m = _SPEC.match(spec)
    if m is None:
        raise PrintfFormatError(f"printf: cannot understand the format spec {{:{spec}}}")
    conv = m.group("type") or ""
    if conv in ("b", "n", "s", "%") or m.group("align") in ("^", "="):
        raise PrintfFormatError(f"printf: the spec {{:{spec}}} has no C printf equivalent")
    flags = ("-" if m.group("align") == "<" else "") + (m.group("sign") if m.group("sign") in ("+", " ") else "")
    flags += ("#" if m.group("alt") else "") + ("0" if m.group("zero") else "")
    width = m.group("width") or ""
    prec = "." + m.group("prec") if m.group("prec") is not None else ""
    if isinstance(t, PointerType):
        if conv and conv not in "xX":
            raise PrintfFormatError(f"printf: {{:{spec}}} does not apply to a pointer")
        return (f"%{flags}{width}p", "ptr") if not conv else (f"%{flags}{width}ll{conv}", "i64")
    if isinstance(t, FloatType):
        if conv in _INT_CONV:
            raise PrintfFormatError(f"printf: {{:{spec}}} is an integer format but the value is {t}")
        return f"%{flags}{width}{prec}{conv or 'f'}", "f64"
    if isinstance(t, (IntegerType, IndexType)):
        wide = t.bitwidth > 32
        if conv in _FLOAT_CONV:
            return f"%{flags}{width}{prec}{conv}", "f64"
        c = conv or "d"
        if c == "c":
            return f"%{flags}{width}c", "i32"
        return f"%{flags}{width}{prec}{'ll' if wide else ''}{c}", ("i64" if wide else "i32")
    raise PrintfFormatError(f"printf: cannot print a value of type {t}")


def check_printf(fmt: str, types: list) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``parse_printf_format(fmt)`` after checking it against the operand types (vectors: their elements).

    Raises:
        PrintfFormatError: a malformed format, a placeholder count that differs from the operand count, or
            a spec that does not apply to its operand.
    """
    lits, specs = parse_printf_format(fmt)
    if len(specs) != len(types):
        raise PrintfFormatError(f"printf: format {fmt!r} has {len(specs)} placeholders but {len(types)} operands")
    for spec, t in zip(specs, types):
        printf_conversion(spec, t.elem if isinstance(t, VectorType) else t)
    return lits, specs


def _printf_verify(op: Op):
    try:
        check_printf(op.attrs["format"], [v.type for v in op.operands])
    except PrintfFormatError as e:
        return str(e)
    return None


printf = OpDef(
    "gpu.printf",
    operands=-1,
    results=0,
    attrs=("format",),
    verify=_printf_verify,
    doc="device printf ({} placeholders, one per operand; see parse_printf_format)",
)


def _launch_verify(op: Op):
    if len(op.operands) < 8:
        return "launch_func takes grid(3), block(3), smem, stream, then kernel arguments"
    for v in op.operands[:7]:
        if v.type is not i32:
            return "grid, block and smem sizes must be i32"
    if op.operands[7].type is not i64:
        return "the stream must be an i64 handle"
    if not isinstance(op.attrs.get("kernel"), SymbolRef):
        return "kernel must be a symbol reference"
    return None


launch_func = OpDef(
    "gpu.launch_func",
    operands=-1,
    results=0,
    attrs=("kernel",),
    verify=_launch_verify,
    doc="host side: launch `kernel` with (gx, gy, gz, bx, by, bz, smem, stream, args...)",
)


def _kernel_module(op: Op, kernel: str) -> str | None:
    """The name of the ``gpu.module`` of the module ``op`` is in that defines ``kernel`` (None: not found)."""
    top = op
    while top.parent is not None and top.parent.parent_op is not None:
        top = top.parent.parent_op
    for region in top.regions:
        for block in region.blocks:
            for m in block.ops:
                if m.defn.name == "gpu.module" and any(
                    k.attrs.get("sym_name") == kernel for r in m.regions for b in r.blocks for k in b.ops
                ):
                    return m.attrs.get("sym_name")
    return None


def _print_launch(p, op: Op, indent: str) -> str:
    """MLIR's spelling: ``gpu.launch_func <%stream : i64> @kernels::@k blocks in (%gx, %gy, %gz) threads in
    (%bx, %by, %bz) : i32 dynamic_shared_memory_size %smem args(%a : T, ...)`` (the module part of the
    symbol only when the kernel is found in a ``gpu.module`` of the same module)."""
    ops = op.operands
    kernel = str.__str__(op.attrs["kernel"])
    mod = _kernel_module(op, kernel)
    sym = f"@{mod}::@{kernel}" if mod else f"@{kernel}"
    s = f"gpu.launch_func <{p.name(ops[7])} : {ops[7].type}> {sym}"
    s += f" blocks in ({p.names_of(ops[0:3])}) threads in ({p.names_of(ops[3:6])}) : {ops[0].type}"
    s += f" dynamic_shared_memory_size {p.name(ops[6])}"
    if len(ops) > 8:
        s += " args(" + ", ".join(f"{p.name(v)} : {v.type}" for v in ops[8:]) + ")"
    return s + p.attr_dict(op.attrs, ("kernel",))


def _parse_launch(ps, defn, nres: int) -> Op:
    ps.expect("<")
    stream = ps.operand()
    ps.expect(":")
    ps.type()
    ps.expect(">")
    kernel = ps.symbol()
    if ps.accept("::"):
        kernel = ps.symbol()  # the gpu.module's name is implied: kernels are looked up by name
    dims = []
    for word in ("blocks", "threads"):
        ps.expect(word)
        ps.expect("in")
        ps.expect("(")
        dims += ps.operand_list()
        ps.expect(")")
    ps.expect(":")
    ps.type()
    ps.expect("dynamic_shared_memory_size")
    smem = ps.operand()
    args = []
    if ps.accept("args"):
        ps.expect("(")
        while not ps.accept(")"):
            args.append(ps.operand())
            ps.expect(":")
            ps.type()
            ps.accept(",")
    attrs = {"kernel": SymbolRef(kernel), **ps.opt_attr_dict()}
    return Op(defn, [*dims, smem, stream, *args], [], attrs, 0)


register_format("gpu.launch_func", _print_launch)
register_parse_format("gpu.launch_func", _parse_launch)
launch_func.fmt = "gpu.launch_func"


def build_gpu_module(name: str = "kernels") -> Op:
    op = Op(module, [], [], {"sym_name": name}, 1)
    op.regions[0].add_block()
    return op


__all__ = [
    "module", "func", "return_", "thread_id", "block_id", "block_dim", "grid_dim", "lane_id", "barrier", "fence",
    "shuffle", "vote", "printf", "launch_func", "build_gpu_module", "DIMS", "SHUFFLE_MODES", "VOTE_MODES",
    "FENCE_SCOPES", "PrintfFormatError", "parse_printf_format", "printf_conversion", "check_printf",
]  # fmt: skip
