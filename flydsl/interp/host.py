"""Host functions: :func:`compile_host` turns a ``func.func`` (launch arithmetic, control flow, calls,
``gpu.launch_func``) into one generated Python function; :func:`run_host` runs it.

A host function runs on every kernel call, so it is compiled once, per function, into straight Python:
each op is one line that calls the op's scalar semantics (``OpDef.scalar_fn``: its scalar hook, the
one the compiler folds with; else its ``evaluate`` on 0-d arrays), ``scf.if``/``scf.for``/``scf.while``
become Python ``if``/``for``/``while``, ``func.call`` calls the callee's compiled function. A typical
launcher (``(n + 127) // 128`` and a launch) costs about a microsecond.

Values are host scalars (see :mod:`flydsl.ir.numpy_types`): integers and index values are Python ints
wrapped to their width (signed), ``i1`` is a bool, floats are numpy scalars of their type, pointers are
ints, vectors ``(1, N)`` arrays, buffer resources ``(base, num_records)`` tuples.

``gpu.launch_func`` calls ``launch(kernel, grid, block, smem, stream, args)`` with ``kernel`` the
symbol (a str), ``grid``/``block`` 3-tuples of ints, ``smem`` and ``stream`` ints, and ``args`` the
host values of the kernel arguments. A failure in an op is an :class:`InterpError` naming that op
(its source line); whatever a launch raises passes through, located at the launch's source line
(``e.loc``) unless it carries a location of its own.

The jit's cached calls run straight-line launchers as *launch plans* (:mod:`flydsl.runtime.launch_plan`:
the same scalar semantics, specialized further with value ranges); this executor runs every host
function, and is what a launch plan falls back to.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence

import numpy as np

from ..dialects.arith import float_round
from ..dialects.vector import PUNCTUATIONS
from ..ir import FloatType, Op, PointerType, VectorType, int_wrapper, to_array
from .errors import InterpError
from .impl_ptr import elem_size
from .machine import cached_code, lookup_symbol, value_dtype
from .printf import format_lane_values

__all__ = ["compile_host", "run_host", "build_host_function", "HOST_IMPLS"]

# op name -> writer(op, gen, indent) of the op's lines; every other op computes through its scalar_fn
HOST_IMPLS: dict[str, Callable] = {}


def _host(*names):
    def deco(fn):
        for n in names:
            HOST_IMPLS[n] = fn
        return fn

    return deco


def _width(t) -> int:
    return 64 if isinstance(t, PointerType) else t.bitwidth


def arg_converter(t) -> Callable:
    """A function turning a caller's argument into a host value of type ``t``."""
    if isinstance(t, FloatType):
        return lambda v: float_round(np.asarray(v, np.float64), t)[()]
    if isinstance(t, VectorType):
        return lambda v: np.asarray(v).astype(value_dtype(t)).reshape(1, t.numel)
    wrap = int_wrapper(_width(t))

    def conv(v):
        if isinstance(v, (float, np.floating)):
            raise InterpError(f"a float argument {v!r} for a parameter of type {t}")
        return wrap(int(v))

    return conv


class _Gen:
    """Writes the Python source of one host function; ``ns`` holds what the source refers to."""

    def __init__(self, fop: Op):
        self.fop = fop
        self.unsupported: list[str] = []  # ops with no host meaning (they raise when reached)
        self.lines: list[str] = []
        self.ns: dict = {"InterpError": InterpError, "_bad_step": _bad_step, "_no_launcher": _no_launcher}
        self.names: dict = {}
        self.line_ops: dict[int, Op] = {}  # line number (1-based) -> the op it computes
        self.passthrough: set[int] = set()  # lines whose exceptions are not ours (launch, calls)

    def emit(self, indent: int, text: str, op: Op | None = None, passthrough: bool = False) -> None:
        self.lines.append("    " * indent + text)
        if op is not None:
            self.line_ops[len(self.lines) + 1] = op  # +1: the ``def`` line comes first
            if passthrough:
                self.passthrough.add(len(self.lines) + 1)

    def bind(self, obj, prefix: str) -> str:
        name = f"{prefix}{len(self.ns)}"
        self.ns[name] = obj
        return name

    def define(self, v) -> str:
        n = self.names[v] = f"v{len(self.names)}"
        return n

    def ref(self, v) -> str:
        return self.names[v]

    def refs(self, vals) -> str:
        return ", ".join(self.names[v] for v in vals)

    def assign(self, indent: int, targets: list[str], exprs: list[str], op: Op | None = None) -> None:
        if targets:
            self.emit(indent, f"{', '.join(targets)}, = {', '.join(exprs)},", op)

    def block(self, block, indent: int) -> list[str]:
        """Write a block's ops (its arguments already named); returns the terminator's operand names."""
        ops = block.ops
        term = ops[-1] if ops and ops[-1].defn.is_terminator else None
        start = len(self.lines)
        for op in ops[:-1] if term is not None else ops:
            writer = HOST_IMPLS.get(op.defn.name)
            (writer or _scalar_op)(op, self, indent)
        if len(self.lines) == start:
            self.emit(indent, "pass")
        return [self.ref(v) for v in term.operands] if term is not None else []


def _scalar_op(op: Op, g: _Gen, indent: int) -> None:
    """An op computed through its scalar semantics (constants are computed now)."""
    f = op.defn.scalar_fn(op) if len(op.results) == 1 else None
    if f is None:
        g.unsupported.append(op.defn.name)
        msg = g.bind(f"op {op.defn.name} is not supported in host functions", "M")
        g.emit(indent, f"raise InterpError({msg}, op={g.bind(op, 'OP')})", op)
        for r in op.results:
            g.define(r)
        return
    if not op.operands:
        value = f()
        literal = repr(value) if type(value) in (int, bool) else g.bind(value, "C")
        g.names[op.results[0]] = literal
        return
    fn = g.bind(f, "F")
    args = g.refs(op.operands)
    g.emit(indent, f"{g.define(op.results[0])} = {fn}({args})", op)


def _bad_step(step, op) -> InterpError:
    return InterpError(f"scf.for step must be positive, got {step}", op=op)


def _no_launcher(op) -> InterpError:
    return InterpError("gpu.launch_func needs a launcher: run_host(func, args, launch)", op=op)


def _arg_line(g: _Gen, a, name: str) -> None:
    """Convert an argument the function computes on to a host value of its type (ints inline: they are
    the common case of a launch's arithmetic)."""
    t = a.type
    if isinstance(t, (FloatType, VectorType, PointerType)) or t.bitwidth == 1:
        g.emit(2, f"{name} = {g.bind(arg_converter(t), 'A')}({name})")
        return
    w = t.bitwidth
    half, mask = 1 << (w - 1), (1 << w) - 1
    g.emit(2, f"if type({name}) is not int:")
    g.emit(3, f"{name} = {g.bind(arg_converter(t), 'A')}({name})")
    g.emit(2, f"{name} = (({name} + {half}) & {mask}) - {half}")


def build_host_function(fop: Op) -> Callable:
    """The Python function ``host(args, launch=None) -> list of results`` of host function ``fop``, with its
    source as ``host.source`` and the ops it cannot run (they raise when reached) as ``host.unsupported``."""
    name = str(fop.attrs.get("sym_name", "?"))
    filename = f"<host function {name}>"
    g = _Gen(fop)
    entry = fop.regions[0].blocks[0]
    params = [g.define(a) for a in entry.args]
    computed = _computed_args(entry)
    n = len(params)
    g.emit(1, f"if len(args) != {n}:")
    msg = f"host function '{name}' takes {n} arguments, got {{len(args)}}"
    g.emit(2, f"raise InterpError(f{msg!r})")
    g.emit(1, "try:")
    if params:
        g.emit(2, f"{', '.join(params)}, = args")
    for a, p in zip(entry.args, params):
        if a in computed:  # pass-through arguments reach the launcher as the caller gave them
            _arg_line(g, a, p)
    results = g.block(entry, 2)
    g.emit(2, f"return [{', '.join(results)}]")
    g.emit(1, "except Exception as e:")
    g.emit(2, "err = _fault(e)")
    g.emit(2, "if err is e:")
    g.emit(3, "raise")
    g.emit(2, "raise err from e")
    g.ns["_fault"] = functools.partial(_fault, filename, g.line_ops, g.passthrough)
    source = "def host(args, launch=None):\n" + "\n".join(g.lines) + "\n"
    exec(compile(source, filename, "exec"), g.ns)  # noqa: S102 - our own generated code
    host = g.ns["host"]
    host.source, host.op, host.unsupported = source, fop, g.unsupported
    return host


def _fault(filename: str, line_ops: dict, passthrough: set, e: Exception) -> Exception:
    """``e`` as the caller sees it: an InterpError naming the op that failed, unless it came out of a
    launch or a callee (those pass through, a launch's located at its line unless located already)."""
    line = None
    tb = e.__traceback__
    while tb is not None:  # the innermost line of the function's own code
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    op = line_ops.get(line)
    if op is None:
        return e
    if line in passthrough:
        if op.defn.name == "gpu.launch_func" and getattr(e, "loc", None) is None:
            try:  # reported at the user's `.launch(...)` line
                e.loc = op.loc  # type: ignore[attr-defined]
            except AttributeError:  # an exception type with __slots__: keep it as it is
                pass
        return e
    if isinstance(e, InterpError):
        if e.op is None:
            e.op, e.loc = op, op.loc
        return e
    return InterpError(f"{type(e).__name__}: {e}", op=op)


def _computed_args(entry) -> set:
    """The entry-block arguments used by an op other than a launch (launchers convert what they pass)."""
    out: set = set()
    for op in entry.ops:
        _uses(op, out)
    return out


def _uses(op: Op, out: set) -> None:
    if op.defn.name != "gpu.launch_func":
        out.update(op.operands)
    for r in op.regions:
        for b in r.blocks:
            for o in b.ops:
                _uses(o, out)


def compile_host(func_op: Op) -> Callable:
    """The compiled (cached) host function of ``func_op``: ``fn(args, launch=None) -> list of results``."""
    if func_op.defn.name != "func.func":
        raise TypeError(f"compile_host takes a func.func op, got {func_op.defn.name}")
    return cached_code("host", func_op, build_host_function)


def run_host(func_op: Op, args: Sequence, launch: Callable | None) -> list:
    """Execute host function ``func_op`` with ``args``; ``gpu.launch_func`` calls ``launch``."""
    return compile_host(func_op)(args, launch)


# -- ops with a host meaning of their own ---------------------------------------------------------


@_host("ptr.add")
def _ptr_add(op: Op, g: _Gen, indent: int) -> None:
    p, o = (g.ref(x) for x in op.operands)
    g.emit(indent, f"{g.define(op.results[0])} = {p} + {o} * {elem_size(PointerType.of(op.operands[0]).elem)}", op)


@_host("ptr.cast", "ptr.to_int", "ptr.from_int")
def _ptr_same(op: Op, g: _Gen, indent: int) -> None:
    wrap = g.bind(int_wrapper(_width(op.results[0].type)), "W")
    g.emit(indent, f"{g.define(op.results[0])} = {wrap}(int({g.ref(op.operands[0])}))", op)


@_host("ptr.buffer_rsrc")
def _buffer_rsrc(op: Op, g: _Gen, indent: int) -> None:
    """A buffer resource on the host: the tuple ``(base, num_records)`` (what ``run_kernel`` takes)."""
    b, n = (g.ref(v) for v in op.operands)
    g.emit(indent, f"{g.define(op.results[0])} = (int({b}), int({n}))", op)


@_host("gpu.launch_func")
def _launch_func(op: Op, g: _Gen, indent: int) -> None:
    v = [g.ref(x) for x in op.operands]
    grid, block, rest = ", ".join(v[0:3]), ", ".join(v[3:6]), ", ".join(v[8:])
    g.emit(indent, "if launch is None:")
    g.emit(indent + 1, f"raise _no_launcher({g.bind(op, 'OP')})")
    kernel = repr(str(op.attrs["kernel"]))
    g.emit(indent, f"launch({kernel}, ({grid}), ({block}), {v[6]}, {v[7]}, [{rest}])", op, passthrough=True)


class _Callee:
    """A ``func.call`` target, compiled on its first call (so a function may call itself)."""

    __slots__ = ("op", "fn")

    def __init__(self, op: Op):
        self.op = op
        self.fn: Callable | None = None

    def __call__(self, args: list, launch) -> list:
        fn = self.fn
        if fn is None:
            fn = self.fn = compile_host(self.op)
        return fn(args, launch)


@_host("func.call")
def _call(op: Op, g: _Gen, indent: int) -> None:
    callee = g.bind(_Callee(lookup_symbol(op, op.attrs["callee"])), "CALL")
    call = f"{callee}([{g.refs(op.operands)}], launch)"
    outs = [g.define(r) for r in op.results]
    g.emit(indent, f"{', '.join(outs)}, = {call}" if outs else call, op, passthrough=True)


@_host("scf.if")
def _if(op: Op, g: _Gen, indent: int) -> None:
    outs = [g.define(r) for r in op.results]
    g.emit(indent, f"if {g.ref(op.operands[0])}:", op)
    g.assign(indent + 1, outs, g.block(op.regions[0].blocks[0], indent + 1))
    if op.regions[1].blocks:
        g.emit(indent, "else:")
        g.assign(indent + 1, outs, g.block(op.regions[1].blocks[0], indent + 1))


@_host("scf.for")
def _for(op: Op, g: _Gen, indent: int) -> None:
    lb, ub, st = (g.ref(v) for v in op.operands[:3])
    body = op.regions[0].blocks[0]
    iv, *carried = [g.define(a) for a in body.args]
    g.emit(indent, f"if {st} <= 0:", op)
    g.emit(indent + 1, f"raise _bad_step({st}, {g.bind(op, 'OP')})", op)
    g.assign(indent, carried, [g.ref(v) for v in op.operands[3:]])
    g.emit(indent, f"for {iv} in range({lb}, {ub}, {st}):", op)
    g.assign(indent + 1, carried, g.block(body, indent + 1))
    g.assign(indent, [g.define(r) for r in op.results], carried)


@_host("scf.while")
def _while(op: Op, g: _Gen, indent: int) -> None:
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    bargs = [g.define(a) for a in before.args]
    aargs = [g.define(a) for a in after.args]
    outs = [g.define(r) for r in op.results]
    g.assign(indent, bargs, [g.ref(v) for v in op.operands])
    g.emit(indent, "while True:", op)
    cond, *fwd = g.block(before, indent + 1)
    g.emit(indent + 1, f"if not {cond}:")
    g.assign(indent + 2, outs, fwd)
    g.emit(indent + 2, "break")
    g.assign(indent + 1, aargs, fwd)
    g.assign(indent + 1, bargs, g.block(after, indent + 1))


@_host("gpu.printf")
def _printf(op: Op, g: _Gen, indent: int) -> None:
    """``fx.printf`` in a ``@flyc.jit`` function: printed on the host at every call, formatted exactly as
    the device formats it (one line per call)."""
    fmt = op.attrs["format"]
    types = [v.type for v in op.operands]
    kinds = []
    for t in types:
        e = t.elem if isinstance(t, VectorType) else t
        kinds.append((isinstance(t, VectorType), e, isinstance(e, PointerType)))

    def show(*values):
        shapes = [(1, -1) if isinstance(t, VectorType) else (1,) for t in types]
        cols = [np.asarray(to_array(t, v)).reshape(sh) for t, v, sh in zip(types, values, shapes)]
        sys.stdout.write(format_lane_values(op, fmt, kinds, cols, 1)[0])

    g.emit(indent, f"{g.bind(show, 'P')}({g.refs(op.operands)})", op)


def _vector_print_text(t, v) -> str:
    """MLIR's runtime spelling of a printed value: integers in decimal, floats as ``%g``, vectors ``( a, b )``."""
    e = t.elem if isinstance(t, VectorType) else t
    one = (lambda x: format(float(x), "g")) if isinstance(e, FloatType) else (lambda x: str(int(x)))
    if isinstance(t, VectorType):
        return "( " + ", ".join(one(x) for x in np.asarray(v).reshape(-1)) + " )"
    return one(v)


@_host("vector.print")
def _vector_print(op: Op, g: _Gen, indent: int) -> None:
    """``vector.print`` (``fx.printf`` in a host function): the value or string, then the punctuation."""
    tail = PUNCTUATIONS[op.attrs["punctuation"]]
    if not op.operands:
        text = op.attrs.get("string", "") + tail
        g.emit(indent, f"{g.bind(lambda: sys.stdout.write(text), 'P')}()", op)
        return
    t = op.operands[0].type

    def show(value):
        sys.stdout.write(_vector_print_text(t, to_array(t, value)) + tail)

    g.emit(indent, f"{g.bind(show, 'P')}({g.refs(op.operands)})", op)
