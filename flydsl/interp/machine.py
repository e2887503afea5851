"""Region compilation and lock-step execution: the core of the interpreter.

Input: a function op (``gpu.func`` kernel or device function, ``func.func``). Output: a
:class:`FunctionCode` — every SSA value gets a slot in a flat environment list, every op becomes a
closure ``step(env, lanes)`` built once by the impl registered for its name (:data:`IMPLS`), and
each region becomes a :class:`RegionCode` (a list of steps plus the slots its terminator yields).
Running a region is a tight loop over its steps.

Values: a scalar is a numpy array of shape ``()``/``(1,)`` when uniform or ``(T,)`` per lane; a
vector is ``(1, N)`` or ``(T, N)`` (see :mod:`flydsl.dialects._base`); pointers are int64 (global
and generic: byte addresses; shared and local: byte offsets); a buffer resource is an int64
``(1|T, 2)`` array of ``(base, num_records)``. Values are never mutated in place.

Lanes: :class:`Lanes` is the state of one batch of blocks running in lock-step: geometry, the
active-lane mask (``None`` = all lanes active), the shared/local arenas and the launch's memory.
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from ..dialects.vector import VectorIndexError
from ..ir import BufferRsrcType, Op, PointerType, TmaDescType, Type, VectorType, numpy_dtype
from .errors import InterpError

__all__ = [
    "IMPLS",
    "impl",
    "Compiler",
    "FunctionCode",
    "RegionCode",
    "Lanes",
    "run_region",
    "value_dtype",
    "is_uniform",
    "merge",
    "lookup_symbol",
    "cached_code",
]

# op name -> builder(op, compiler) -> step(env, lanes)
IMPLS: dict[str, Callable] = {}


def impl(name: str):
    """Register the interpreter's builder for op ``name`` (one named function per op)."""

    def deco(fn):
        IMPLS[name] = fn
        return fn

    return deco


def value_dtype(t: Type) -> np.dtype:
    """numpy dtype of a runtime value of type ``t`` (pointers and buffer resources are int64)."""
    e = t.element_type if isinstance(t, VectorType) else t
    if isinstance(e, (PointerType, BufferRsrcType, TmaDescType)):
        return np.dtype(np.int64)
    return numpy_dtype(e)


def is_uniform(x: np.ndarray) -> bool:
    """True when a value is the same for every lane (shape ``()``, ``(1,)`` or ``(1, N)``)."""
    return x.ndim == 0 or x.shape[0] == 1


def merge(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Lane-wise ``cond ? a : b`` for values of any shape (``cond`` is a per-lane bool array)."""
    if a is b:
        return a
    if max(np.ndim(a), np.ndim(b)) == 2:
        cond = cond[:, None]
    return np.where(cond, a, b)


class RegionCode:
    """A compiled single-block region: steps ``(fn, free_slots|None, op, result_slots)``, arg and yield slots."""

    __slots__ = ("steps", "arg_slots", "yields", "term")

    def __init__(self, steps, arg_slots, yields, term):
        self.steps = steps
        self.arg_slots = arg_slots
        self.yields = yields
        self.term = term


class FunctionCode:
    """A compiled function: its environment prototype (constants filled in) and entry region."""

    __slots__ = ("op", "name", "proto", "body", "arg_slots", "arg_types")

    def __init__(self, op: Op):
        self.op = op
        self.name = str(op.attrs.get("sym_name", op.defn.name))
        self.proto: list = []
        self.body: RegionCode | None = None
        self.arg_slots: list[int] = []
        self.arg_types: list[Type] = []


def lookup_symbol(op: Op, name) -> Op:
    """The op named ``name`` (``sym_name``) visible from ``op``: searched in enclosing symbol tables."""
    key = str.__str__(name) if isinstance(name, str) else str(name)
    key = key.lstrip("@").split("::")[-1].lstrip("@")
    cur = op.parent_op
    while cur is not None:
        for r in cur.regions:
            for b in r.blocks:
                for o in b.ops:
                    if o.attrs.get("sym_name") == key and o.regions:
                        return o
        cur = cur.parent_op
    raise InterpError(f"symbol @{key} not found (the callee must be in an enclosing module)", op=op)


def _uses(op: Op, out: list) -> list:
    """Every value used by ``op`` or by ops nested in its regions."""
    out.extend(op.operands)
    for r in op.regions:
        for b in r.blocks:
            for o in b.ops:
                _uses(o, out)
    return out


class Compiler:
    """Compiles one function into closures. Shared state across functions lives in ``program``."""

    def __init__(self, program, fop: Op):
        self.program = program
        self.fop = fop
        self.slots: dict = {}
        self.consts: list[tuple[int, object]] = []
        self.const_slots: set[int] = set()

    def slot(self, v) -> int:
        s = self.slots.get(v)
        if s is None:
            s = len(self.slots)
            self.slots[v] = s
        return s

    def slots_of(self, vals) -> tuple:
        return tuple([self.slot(v) for v in vals])

    def constant(self, v, value) -> None:
        """Make ``v`` a constant of the environment prototype (computed once, never freed)."""
        s = self.slot(v)
        self.consts.append((s, value))
        self.const_slots.add(s)

    def function(self, fc: FunctionCode) -> FunctionCode:
        """Fill ``fc`` (created by the program first, so that recursive calls find it)."""
        fop = self.fop
        entry = fop.regions[0].blocks[0]
        fc.arg_slots = list(self.slots_of(entry.args))
        fc.arg_types = [a.type for a in entry.args]
        fc.body = self.block(entry)
        proto: list = [None] * len(self.slots)
        for s, value in self.consts:
            proto[s] = value
        fc.proto = proto
        return fc

    def region(self, region) -> RegionCode | None:
        return self.block(region.blocks[0]) if region.blocks else None

    def block(self, block) -> RegionCode:
        ops = block.ops
        term = ops[-1] if ops and ops[-1].defn.is_terminator else None
        body = ops[:-1] if term is not None else ops
        arg_slots = self.slots_of(block.args)
        last: dict = {}
        for i, op in enumerate(ops):
            for v in _uses(op, []):
                last[v] = i
        n_term = len(ops) - 1 if term is not None else -1
        frees: dict[int, list] = {}
        for i, op in enumerate(body):
            for r in op.results:
                j = last.get(r, i)
                if j != n_term:
                    frees.setdefault(j, []).append(r)
        for a in block.args:
            j = last.get(a)
            if j is not None and j != n_term:
                frees.setdefault(j, []).append(a)
        steps = []
        for i, op in enumerate(body):
            fn = self.build(op)
            if fn is None:
                continue
            fr = tuple(s for s in (self.slot(v) for v in frees.get(i, ())) if s not in self.const_slots)
            steps.append((fn, fr or None, op, self.slots_of(op.results)))
        yields = self.slots_of(term.operands) if term is not None else ()
        return RegionCode(steps, arg_slots, yields, term)

    def build(self, op: Op):
        """The step of ``op`` (None when the op was folded into the prototype)."""
        builder = IMPLS.get(op.defn.name)
        if builder is not None:
            return builder(op, self)
        if op.defn.evaluate is not None:
            return build_pure(op, self)
        return _unsupported(op)


def _unsupported(op: Op):
    def step(env, lanes):
        raise lanes.fault(op, f"op {op.defn.name} is not supported by the interpreter", None)

    return step


# -- compiled-code cache (ops have no weakref slot: key by id, keep the op alive, bounded) ----------

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 128
_CACHE_LOCK = threading.Lock()  # the LRU bookkeeping; two threads may build the same code (one wins)


def build_pure(op: Op, cc: Compiler):
    """A step computing ``op``'s single result with ``op.defn.evaluate`` (constants fold at compile time)."""
    ev = op.defn.evaluate
    ins = cc.slots_of(op.operands)
    if len(op.results) != 1:
        raise NotImplementedError(f"{op.defn.name}: evaluate-based ops have exactly one result")
    r = cc.slot(op.results[0])
    assert ev is not None  # the fallback of ops that have evaluate
    if not ins:
        cc.constant(op.results[0], ev(op))
        return None
    if len(ins) == 1:
        (a,) = ins

        def step1(env, lanes):
            env[r] = ev(op, env[a])

        return step1
    if len(ins) == 2:
        a, b = ins

        def step2(env, lanes):
            env[r] = ev(op, env[a], env[b])

        return step2
    if len(ins) == 3:
        a, b, c = ins

        def step3(env, lanes):
            env[r] = ev(op, env[a], env[b], env[c])

        return step3

    def stepn(env, lanes):
        env[r] = ev(op, *[env[i] for i in ins])

    return stepn


def cached_code(kind: str, op: Op, build: Callable):
    """``build(op)`` once per (kind, op); the IR must not be mutated after its first run."""
    key = (kind, id(op))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is op:
            _CACHE.move_to_end(key)
            return hit[1]
    # NOTE: compiling allocates many small objects and no cycles worth collecting; without the cyclic
    # GC rescanning the IR graph it runs twice as fast
    enabled = gc.isenabled()
    gc.disable()
    try:
        code = build(op)
    finally:
        if enabled:
            gc.enable()
    with _CACHE_LOCK:
        _CACHE[key] = (op, code)
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return code


def clear_cache() -> None:
    """Forget every compiled kernel and host function (after mutating IR in place)."""
    with _CACHE_LOCK:
        _CACHE.clear()


# -- execution ------------------------------------------------------------------------------------


def run_region(rc: RegionCode, env: list, lanes: Lanes) -> list:
    """Run a compiled region under ``lanes.mask``; returns the values its terminator yields."""
    if lanes.check:
        return _run_checked(rc, env, lanes)
    op = None
    try:
        for fn, free, op, _ in rc.steps:  # noqa: B007 - `op` names the failing op below
            fn(env, lanes)
            if free is not None:
                for s in free:
                    env[s] = None
    except InterpError:
        raise
    except Exception as e:
        raise _step_fault(lanes, op, e) from e
    return [env[s] for s in rc.yields]


def _run_checked(rc: RegionCode, env: list, lanes: Lanes) -> list:
    """Like :func:`run_region`, and check every result's dtype and shape against its IR type."""
    op = None
    try:
        for fn, free, op, outs in rc.steps:
            fn(env, lanes)
            for r, s in zip(op.results, outs):
                if env[s] is not None:
                    _check_value(op, r.type, env[s], lanes.T)
            if free is not None:
                for s in free:
                    env[s] = None
    except InterpError:
        raise
    except Exception as e:
        raise _step_fault(lanes, op, e) from e
    return [env[s] for s in rc.yields]


def _step_fault(lanes: Lanes, op: Op | None, e: Exception) -> InterpError:
    """The fault reported for an exception escaping ``op``'s step: a run-time vector index out of
    range is the user's error; anything else is an internal one."""
    if isinstance(e, VectorIndexError):
        return lanes.fault(op, str(e), None)
    return lanes.fault(op, f"internal error: {type(e).__name__}: {e}", None)


def _check_value(op: Op, t: Type, v, T: int) -> None:
    if not isinstance(v, np.ndarray | np.generic):
        raise AssertionError(f"{op.defn.name}: result is {type(v).__name__}, not a numpy value")
    want = value_dtype(t)
    if v.dtype != want:
        raise AssertionError(f"{op.defn.name}: result dtype {v.dtype} != {want} for {t}")
    shape = np.shape(v)
    rows_ok = not shape or shape[0] in (1, T)
    if isinstance(t, (VectorType, BufferRsrcType, TmaDescType)):
        n = t.numel if isinstance(t, VectorType) else 2 if isinstance(t, BufferRsrcType) else 16
        ok = len(shape) == 2 and rows_ok and shape[-1] == n
    else:
        ok = v.ndim <= 1 and rows_ok
    if not ok:
        raise AssertionError(f"{op.defn.name}: result shape {v.shape} is not valid for {t} with {T} lanes")


_GEO: OrderedDict = OrderedDict()


def _geometry_cache(key) -> dict:
    """Lane-geometry arrays (thread ids, shuffle sources, …) for one batch shape, kept across launches."""
    d = _GEO.get(key)
    if d is None:
        d = _GEO[key] = {}
        if len(_GEO) > 16:
            _GEO.popitem(last=False)
    else:
        _GEO.move_to_end(key)
    return d


class Lanes:
    """One batch of ``nb`` blocks of ``tpb`` threads running in lock-step (``T = nb * tpb`` lanes).

    Lane ``l`` is thread ``l % tpb`` (linearized x fastest, then y, then z) of block
    ``first + l // tpb`` (linearized the same way over the grid).
    """

    __slots__ = (
        "mask", "T", "tpb", "nb", "block", "grid", "first", "warp_size", "memory", "shared", "S",
        "local", "L", "program", "args", "arg_names", "printer", "check", "cache", "geo", "sched", "writes",
    )  # fmt: skip

    def __init__(self, program, *, nb, first, block, grid, warp_size, memory, args, arg_names, printer, check):
        self.mask = None
        self.tpb = block[0] * block[1] * block[2]
        self.nb = nb
        self.T = nb * self.tpb
        self.block = block
        self.grid = grid
        self.first = first
        self.warp_size = warp_size
        self.memory = memory
        self.program = program
        self.args = args
        self.arg_names = arg_names
        self.printer = printer
        self.check = check
        self.cache: dict = {}  # per batch (block ids)
        self.geo = _geometry_cache((block, nb, warp_size))  # shared by every batch of this shape
        self.shared = None
        self.S = 0
        self.local = None
        self.L = 0
        self.sched = None  # the warp scheduler when the kernel runs warp by warp (flydsl/interp/tasks.py)
        self.writes = 0  # stores and atomics so far: a loop whose state repeats without one never ends

    # -- geometry ----------------------------------------------------------------------------------

    def arange(self) -> np.ndarray:
        a = self.geo.get("arange")
        if a is None:
            a = self.geo["arange"] = np.arange(self.T, dtype=np.int64)
        return a

    def lane_block(self) -> np.ndarray:
        """Block index within the batch, per lane (int64)."""
        a = self.geo.get("lane_block")
        if a is None:
            a = self.geo["lane_block"] = self.arange() // self.tpb
        return a

    def tid(self) -> np.ndarray:
        """Linear thread index within the block, per lane (int64)."""
        a = self.geo.get("tid")
        if a is None:
            a = self.geo["tid"] = self.arange() % self.tpb
        return a

    def coords(self, lane: int) -> tuple:
        """``((bx, by, bz), (tx, ty, tz))`` of a lane of this batch."""
        bx, by, _ = self.block
        gx, gy, _ = self.grid
        t = lane % self.tpb
        b = self.first + lane // self.tpb
        return (b % gx, b // gx % gy, b // (gx * gy)), (t % bx, t // bx % by, t // (bx * by))

    def first_active(self, mask=None) -> int:
        """The first lane active under ``mask`` (default: the current mask), or -1."""
        m = self.mask if mask is None else mask
        if m is None:
            return 0
        nz = np.flatnonzero(m)
        return int(nz[0]) if nz.shape[0] else -1

    def dyn_region(self) -> tuple:
        """The dynamic shared memory as an allocation record ``(name, offset, nbytes, loc)``."""
        off = self.program.dyn_offset
        return ("dynamic shared memory", off, self.S - off, None)

    # -- faults ------------------------------------------------------------------------------------

    def fault(self, op, detail: str, lane: int | None) -> InterpError:
        """An :class:`InterpError` for ``op``; ``lane`` (batch lane index) names the faulting thread."""
        block = thread = None
        if lane is None:
            lane = self.first_active()
        if lane is not None and lane >= 0:
            block, thread = self.coords(int(lane))
        return InterpError(detail, kernel=self.program.name, op=op, block=block, thread=thread)
