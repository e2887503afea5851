"""Host functions: :func:`compile_host` / :func:`run_host` execute a ``func.func`` that computes launch
parameters with scalar arithmetic and launches kernels with ``gpu.launch_func``.

A host function runs on every kernel call, so it is precompiled once into a list of closures over a
flat environment. Values are plain Python objects: integers, index values and pointers are Python
ints wrapped to their width (signed), i1 is bool, floats are numpy scalars of their type, vectors are
``(1, N)`` arrays, buffer resources ``(base, num_records)`` tuples. The common integer ops (add,
mul, div, rem, shifts, compares, select, casts, pointer offsets) have exact Python-int
implementations (a few hundred ns each); every other op with an ``evaluate`` runs through it on 0-d
arrays — the same semantics as on the device.

``gpu.launch_func`` calls ``launch(kernel, grid, block, smem, stream, args)`` with ``kernel`` the
symbol (a str), ``grid``/``block`` 3-tuples of ints, ``smem`` and ``stream`` ints, and ``args`` the
host values of the kernel arguments (ints for integers and pointers, numpy scalars for floats).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import numpy as np

from ..dialects.arith import float_round
from ..ir import FloatType, Op, PointerType, VectorType
from .errors import InterpError
from .impl_ptr import elem_size
from .machine import cached_code, lookup_symbol, value_dtype

__all__ = ["compile_host", "run_host", "HostFunction", "HOST_IMPLS"]

# op name -> builder(op, compiler) -> closure(env) | None
HOST_IMPLS: dict[str, Callable] = {}


def _host(*names):
    def deco(fn):
        for n in names:
            HOST_IMPLS[n] = fn
        return fn

    return deco


# -- value conversion -------------------------------------------------------------------------------


def _width(t) -> int:
    if isinstance(t, PointerType):
        return 64
    return t.bitwidth


def _wrapper(t):
    """Python int -> the signed value of ``t``'s width (i1: bool)."""
    w = _width(t)
    if w == 1:
        return lambda x: bool(x & 1)
    mask, half, full = (1 << w) - 1, 1 << (w - 1), 1 << w

    def wrap(x):
        x &= mask
        return x - full if x >= half else x

    return wrap


def to_host(t, a):
    """A numpy value of type ``t`` as a host value."""
    if isinstance(t, VectorType):
        return np.asarray(a).reshape(1, t.numel)
    if isinstance(t, FloatType):
        return np.asarray(a).reshape(()).astype(value_dtype(t))[()]
    a = np.asarray(a).reshape(())
    if a.dtype == np.bool_:
        return bool(a)
    return int(a)


def to_numpy(t, v) -> np.ndarray:
    """A host value of type ``t`` as a numpy value (0-d, or ``(1, N)`` for a vector)."""
    if isinstance(t, VectorType):
        return np.asarray(v).reshape(1, t.numel)
    if isinstance(t, FloatType):
        return np.asarray(v).astype(value_dtype(t))
    dt = value_dtype(t)
    if dt == np.bool_:
        return np.asarray(bool(v))
    return np.asarray(_wrapper(t)(int(v))).astype(dt)


def arg_converter(t) -> Callable:
    """A function turning a caller's argument into a host value of type ``t``."""
    if isinstance(t, FloatType):
        return lambda v: float_round(np.asarray(v, np.float64), t)[()]
    if isinstance(t, VectorType):
        return lambda v: np.asarray(v).astype(value_dtype(t)).reshape(1, t.numel)
    wrap = _wrapper(t)

    def conv(v):
        if isinstance(v, (float, np.floating)):
            raise InterpError(f"a float argument {v!r} for a parameter of type {t}")
        return wrap(int(v))

    return conv


# -- compiler ---------------------------------------------------------------------------------------


class _Block:
    __slots__ = ("steps", "arg_slots", "yields")

    def __init__(self, steps, arg_slots, yields):
        self.steps = steps
        self.arg_slots = arg_slots
        self.yields = yields


class _HostCompiler:
    def __init__(self, fop: Op, functions: dict):
        self.fop = fop
        self.slots: dict = {}
        self.consts: list = []
        self.functions = functions

    def slot(self, v) -> int:
        s = self.slots.get(v)
        if s is None:
            s = self.slots[v] = len(self.slots)
        return s

    def slots_of(self, vals) -> tuple:
        return tuple([self.slot(v) for v in vals])

    def block(self, block) -> _Block:
        ops = block.ops
        term = ops[-1] if ops and ops[-1].defn.is_terminator else None
        steps = []
        for op in ops[:-1] if term is not None else ops:
            b = HOST_IMPLS.get(op.defn.name)
            if b is None:
                b = _evaluate if op.defn.evaluate is not None else _unsupported
            fn = b(op, self)
            if fn is not None:
                steps.append((fn, op))
        return _Block(steps, self.slots_of(block.args), self.slots_of(term.operands) if term is not None else ())


def _run(blk: _Block, env: list) -> list:
    op = None
    try:
        for fn, op in blk.steps:  # noqa: B007 - `op` names the failing op below
            fn(env)
    except InterpError:
        raise
    except Exception as e:
        if getattr(e, "loc", None) is not None:  # a launch's error, already located at the user's line
            raise
        raise InterpError(f"{type(e).__name__}: {e}", op=op) from e
    return [env[s] for s in blk.yields]


class HostFunction:
    """A compiled host function: ``fn(args, launch=None) -> list of results``."""

    __slots__ = ("op", "name", "proto", "body", "arg_slots", "arg_types", "arg_conv", "launch")

    def __init__(self, fop: Op, functions: dict | None = None):
        functions = {} if functions is None else functions
        functions[id(fop)] = self
        self.op = fop
        self.name = str(fop.attrs.get("sym_name", "?"))
        self.launch = None
        hc = _HostCompiler(fop, functions)
        entry = fop.regions[0].blocks[0]
        self.arg_types = [a.type for a in entry.args]
        self.arg_conv = [arg_converter(t) for t in self.arg_types]
        self.arg_slots = hc.slots_of(entry.args)
        self.body = hc.block(entry)
        proto = [None] * len(hc.slots)
        for s, v in hc.consts:
            proto[s] = v
        self.proto = proto

    def __call__(self, args: Sequence, launch: Callable | None = None) -> list:
        conv = self.arg_conv
        if len(args) != len(conv):
            raise InterpError(f"host function '{self.name}' takes {len(conv)} arguments, got {len(args)}")
        env = self.proto.copy()
        for s, c, v in zip(self.arg_slots, conv, args):
            env[s] = c(v)
        return self.invoke(env, launch or self.launch)

    def invoke(self, env: list, launch) -> list:
        saved = self.launch
        self.launch = launch
        try:
            return _run(self.body, env)
        finally:
            self.launch = saved


def compile_host(func_op: Op, launch: Callable | None = None) -> HostFunction:
    """The compiled (cached) host function; ``launch`` is the default launcher for its calls."""
    if func_op.defn.name != "func.func":
        raise TypeError(f"compile_host takes a func.func op, got {func_op.defn.name}")
    hf = cached_code("host", func_op, HostFunction)
    if launch is not None:
        hf.launch = launch
    return hf


def run_host(func_op: Op, args: Sequence, launch: Callable) -> list:
    """Execute host function ``func_op`` with ``args``; ``gpu.launch_func`` calls ``launch``."""
    return compile_host(func_op)(args, launch)


# -- op implementations -----------------------------------------------------------------------------


def _unsupported(op: Op, hc):
    def step(env):
        raise InterpError(f"op {op.defn.name} is not supported in host functions", op=op)

    return step


def _evaluate(op: Op, hc):
    """Any op with ``evaluate``: run on 0-d numpy values, convert back (constants fold now)."""
    ev = op.defn.evaluate
    ins = hc.slots_of(op.operands)
    in_t = [v.type for v in op.operands]
    rt = op.results[0].type
    r = hc.slot(op.results[0])
    if not ins:
        hc.consts.append((r, to_host(rt, ev(op))))
        return None

    def step(env):
        env[r] = to_host(rt, ev(op, *[to_numpy(t, env[i]) for t, i in zip(in_t, ins)]))

    return step


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


_INT_BIN = {
    "arith.addi": lambda a, b, u: a + b,
    "arith.subi": lambda a, b, u: a - b,
    "arith.muli": lambda a, b, u: a * b,
    "arith.andi": lambda a, b, u: a & b,
    "arith.ori": lambda a, b, u: a | b,
    "arith.xori": lambda a, b, u: a ^ b,
    "arith.maxsi": lambda a, b, u: max(a, b),
    "arith.minsi": lambda a, b, u: min(a, b),
    "arith.maxui": lambda a, b, u: max(a & u, b & u),
    "arith.minui": lambda a, b, u: min(a & u, b & u),
    "arith.divsi": lambda a, b, u: -1 if b == 0 else _tdiv(a, b),
    "arith.remsi": lambda a, b, u: a if b == 0 else a - b * _tdiv(a, b),
    "arith.floordivsi": lambda a, b, u: -1 if b == 0 else a // b,
    "arith.ceildivsi": lambda a, b, u: -1 if b == 0 else -((-a) // b),
    "arith.divui": lambda a, b, u: u if (b & u) == 0 else (a & u) // (b & u),
    "arith.remui": lambda a, b, u: a if (b & u) == 0 else (a & u) % (b & u),
    "arith.ceildivui": lambda a, b, u: u if (b & u) == 0 else -(-(a & u) // (b & u)),
}


@_host(*_INT_BIN)
def _int_binary(op: Op, hc):
    t = op.results[0].type
    if isinstance(t, VectorType) or _width(t) == 1:
        return _evaluate(op, hc)
    f = _INT_BIN[op.defn.name]
    wrap = _wrapper(t)
    u = (1 << _width(t)) - 1
    a, b = hc.slots_of(op.operands)
    r = hc.slot(op.results[0])

    def step(env):
        env[r] = wrap(f(env[a], env[b], u))

    return step


@_host("arith.shli", "arith.shrsi", "arith.shrui")
def _shift(op: Op, hc):
    t = op.results[0].type
    if isinstance(t, VectorType) or _width(t) == 1:
        return _evaluate(op, hc)
    w = _width(t)
    u = (1 << w) - 1
    wrap = _wrapper(t)
    a, b = hc.slots_of(op.operands)
    r = hc.slot(op.results[0])
    kind = op.defn.name

    def step(env):
        x, n = env[a], env[b] & u
        if kind == "arith.shli":
            v = 0 if n >= w else x << n
        elif kind == "arith.shrui":
            v = 0 if n >= w else (x & u) >> n
        else:
            v = x >> min(n, w - 1)
        env[r] = wrap(v)

    return step


_CMP = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


@_host("arith.cmpi")
def _cmpi(op: Op, hc):
    t = op.operands[0].type
    if isinstance(t, VectorType) or _width(t) == 1:
        return _evaluate(op, hc)
    p = op.attrs["predicate"]
    f = _CMP[p if p in ("eq", "ne") else p[1:]]
    u = (1 << _width(t)) - 1 if p[0] == "u" else -1
    a, b = hc.slots_of(op.operands)
    r = hc.slot(op.results[0])

    def step(env):
        env[r] = f(env[a] & u, env[b] & u)

    return step


@_host("arith.select")
def _select(op: Op, hc):
    if isinstance(op.operands[0].type, VectorType):
        return _evaluate(op, hc)
    c, a, b = hc.slots_of(op.operands)
    r = hc.slot(op.results[0])

    def step(env):
        env[r] = env[a] if env[c] else env[b]

    return step


@_host("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui")
def _int_cast(op: Op, hc):
    st, rt = op.operands[0].type, op.results[0].type
    if isinstance(rt, VectorType):
        return _evaluate(op, hc)
    zext = op.defn.name == "arith.extui" or (op.defn.name == "arith.index_castui" and _width(st) < _width(rt))
    src_u = (1 << _width(st)) - 1 if zext else -1
    wrap = _wrapper(rt)
    sext_i1 = _width(st) == 1 and not zext
    a = hc.slot(op.operands[0])
    r = hc.slot(op.results[0])

    def step(env):
        x = int(env[a])
        env[r] = wrap(-x if sext_i1 else x & src_u)

    return step


@_host("ptr.add")
def _ptr_add(op: Op, hc):
    size = elem_size(op.operands[0].type.elem)
    p, o = hc.slots_of(op.operands)
    r = hc.slot(op.results[0])

    def step(env):
        env[r] = env[p] + int(env[o]) * size

    return step


@_host("ptr.cast", "ptr.to_int", "ptr.from_int")
def _ptr_same(op: Op, hc):
    a = hc.slot(op.operands[0])
    r = hc.slot(op.results[0])
    wrap = _wrapper(op.results[0].type)

    def step(env):
        env[r] = wrap(int(env[a]))

    return step


@_host("ptr.buffer_rsrc")
def _buffer_rsrc(op: Op, hc):
    """A buffer resource on the host: the tuple ``(base, num_records)`` (what ``run_kernel`` takes)."""
    b, n = hc.slots_of(op.operands)
    r = hc.slot(op.results[0])

    def step(env):
        env[r] = (int(env[b]), int(env[n]))

    return step


@_host("gpu.launch_func")
def _launch_func(op: Op, hc):
    ins = hc.slots_of(op.operands)
    kernel = op.attrs["kernel"]
    fn = hc.functions[id(hc.fop)]
    g, bl, sm, st, rest = ins[0:3], ins[3:6], ins[6], ins[7], ins[8:]

    def step(env):
        launch = fn.launch
        if launch is None:
            raise InterpError("gpu.launch_func needs a launcher: run_host(func, args, launch)", op=op)
        try:
            launch(
                kernel,
                (env[g[0]], env[g[1]], env[g[2]]),
                (env[bl[0]], env[bl[1]], env[bl[2]]),
                env[sm],
                env[st],
                [env[i] for i in rest],
            )
        except Exception as e:  # reported at the user's `.launch(...)` line unless it knows better
            if getattr(e, "loc", None) is None:
                try:
                    e.loc = op.loc
                except AttributeError:
                    pass
            raise

    return step


@_host("func.call")
def _call(op: Op, hc):
    callee = lookup_symbol(op, op.attrs["callee"])
    functions = hc.functions
    caller = functions[id(hc.fop)]
    ins = hc.slots_of(op.operands)
    outs = hc.slots_of(op.results)

    def step(env):
        f = functions.get(id(callee))
        if f is None:
            f = HostFunction(callee, functions)
        sub = f.proto.copy()
        for s, i in zip(f.arg_slots, ins):
            sub[s] = env[i]
        for s, v in zip(outs, f.invoke(sub, caller.launch)):
            env[s] = v

    return step


@_host("scf.if")
def _if(op: Op, hc):
    c = hc.slot(op.operands[0])
    then_b = hc.block(op.regions[0].blocks[0])
    else_b = hc.block(op.regions[1].blocks[0]) if op.regions[1].blocks else None
    outs = hc.slots_of(op.results)

    def step(env):
        blk = then_b if env[c] else else_b
        if blk is not None:
            for s, v in zip(outs, _run(blk, env)):
                env[s] = v

    return step


@_host("scf.for")
def _for(op: Op, hc):
    lb, ub, st = hc.slots_of(op.operands[:3])
    inits = hc.slots_of(op.operands[3:])
    body = hc.block(op.regions[0].blocks[0])
    iv, args = body.arg_slots[0], body.arg_slots[1:]
    outs = hc.slots_of(op.results)

    def step(env):
        vals = [env[i] for i in inits]
        s = env[st]
        if s <= 0:
            raise InterpError(f"scf.for step must be positive, got {s}", op=op)
        for i in range(env[lb], env[ub], s):
            env[iv] = i
            for a, v in zip(args, vals):
                env[a] = v
            vals = _run(body, env)
        for o, v in zip(outs, vals):
            env[o] = v

    return step


@_host("scf.while")
def _while(op: Op, hc):
    inits = hc.slots_of(op.operands)
    before = hc.block(op.regions[0].blocks[0])
    after = hc.block(op.regions[1].blocks[0])
    outs = hc.slots_of(op.results)

    def step(env):
        vals = [env[i] for i in inits]
        while True:
            for a, v in zip(before.arg_slots, vals):
                env[a] = v
            cond, *fwd = _run(before, env)
            if not cond:
                break
            for a, v in zip(after.arg_slots, fwd):
                env[a] = v
            vals = _run(after, env)
        for o, v in zip(outs, fwd):
            env[o] = v

    return step


@_host("gpu.printf")
def _printf(op: Op, hc):
    """``fx.printf`` in a ``@flyc.jit`` function: printed on the host at every call, formatted exactly as
    the device formats it (one line per call)."""
    from .printf import format_lane_values

    fmt = op.attrs["format"]
    ins = hc.slots_of(op.operands)
    types = [v.type for v in op.operands]
    kinds = []
    for t in types:
        e = t.elem if isinstance(t, VectorType) else t
        kinds.append((isinstance(t, VectorType), e, isinstance(e, PointerType)))

    def step(env):
        cols = []
        for s, t in zip(ins, types):
            v = env[s]
            cols.append(
                np.asarray(v, dtype=np.int64).reshape(1)
                if isinstance(t, PointerType)
                else np.asarray(to_numpy(t, v)).reshape((1, -1) if isinstance(t, VectorType) else (1,))
            )
        sys.stdout.write(format_lane_values(op, fmt, kinds, cols, 1)[0])

    return step
