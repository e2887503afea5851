"""Launch plans: the host function of a specialization as one generated Python function.

Most launchers compute their grid from a few integer arguments (``(n + 127) // 128``) and launch.
Running that through the interpreter's host-function machinery costs a few microseconds per call (one
closure per op, argument conversion, an environment list); a launch plan is the same computation as
straight-line Python (about a microsecond), built once per specialization.

Only straight-line host functions of scalar integer arithmetic, comparisons, selects, integer casts,
constants and ``gpu.launch_func`` get a plan; anything else (loops, branches, floats, calls) returns
None and the caller uses :func:`flydsl.interp.compile_host`. Integer semantics are the interpreter's
own (:data:`flydsl.interp.host._INT_BIN`: wrap-around at the result width, C division, …), so a plan and
the interpreter agree on every input (tests/unit/test_jit_launch_plan.py checks it).
"""

from __future__ import annotations

from ..interp.host import _INT_BIN
from ..ir import FloatType, IndexType, IntegerType, Op, PointerType
from .args import ArgError

__all__ = ["launch_plan", "located", "check_launch_dims"]

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_SIGNED_CASTS = ("arith.extsi", "arith.trunci", "arith.index_cast")
_UNSIGNED_CASTS = ("arith.extui", "arith.index_castui")


def _shl(x, n, w):
    n &= (1 << w) - 1
    return 0 if n >= w else x << n


def _shrui(x, n, w):
    n &= (1 << w) - 1
    return 0 if n >= w else (x & ((1 << w) - 1)) >> n


def _shrsi(x, n, w):
    return x >> min(n & ((1 << w) - 1), w - 1)


# the interpreter's shift semantics (flydsl.interp.host._shift): over-wide shifts give 0 (or the sign)
_SHIFTS = {"arith.shli": _shl, "arith.shrui": _shrui, "arith.shrsi": _shrsi}


def _width(t) -> int | None:
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType):
        return t.width
    return None


def located(e: BaseException, loc) -> BaseException:
    """``e`` with ``e.loc`` set to the launch's source location unless it already has one."""
    if getattr(e, "loc", None) is None:
        try:
            e.loc = loc
        except AttributeError:  # an exception type with __slots__: keep its own location
            pass
    return e


def check_launch_dims(grid, block) -> None:
    """Launch dimensions computed at run time must be at least 1 (FLY222 at the launch's line)."""
    for what, dims in (("grid", grid), ("block", block)):
        for d in dims:
            if d < 1:
                raise ArgError("LAUNCH_DIMS_RUNTIME", what=what, got=tuple(int(x) for x in dims))


def _bad_dims(grid, block, loc) -> BaseException:
    try:
        check_launch_dims(grid, block)
    except ArgError as e:
        return located(e, loc)
    raise AssertionError("launch dimensions flagged but valid")  # pragma: no cover


class _Gen:
    def __init__(self, fop: Op, kernels: dict | None):
        self.names: dict = {}
        self.lines: list[str] = []
        self.ns: dict = {}
        self.args = fop.regions[0].blocks[0].args
        self.kernels = kernels

    def name(self, v) -> str:
        return self.names[v]

    def define(self, v, expr: str) -> None:
        n = f"v{len(self.names)}"
        self.names[v] = n
        self.lines.append(f"    {n} = {expr}")

    def wrap(self, expr: str, w: int) -> str:
        if w == 1:
            return f"bool(({expr}) & 1)"
        half = 1 << (w - 1)
        return f"((({expr}) + {half}) & {(1 << w) - 1}) - {half}"

    def op(self, o: Op) -> bool:
        n = o.defn.name
        if n == "arith.constant":
            v = o.attrs["value"]
            t = o.results[0].type
            if _width(t) is None and not isinstance(t, FloatType):
                return False
            try:
                lit = repr(bool(v) if _width(t) == 1 else (int(v) if _width(t) else float(v)))
            except (TypeError, ValueError):
                return False
            self.names[o.results[0]] = lit
            return True
        if n in _INT_BIN or n in _SHIFTS:
            w = _width(o.results[0].type)
            if w is None or w == 1:
                return False
            f = f"F_{n.replace('.', '_')}"
            # the binary ops take the result's mask, the shifts its width
            self.ns[f], last = (_INT_BIN[n], (1 << w) - 1) if n in _INT_BIN else (_SHIFTS[n], w)
            a, b = (self.name(x) for x in o.operands)
            self.define(o.results[0], self.wrap(f"{f}({a}, {b}, {last})", w))
            return True
        if n == "arith.cmpi":
            w = _width(o.operands[0].type)
            if w is None or w == 1:
                return False
            p = o.attrs["predicate"]
            u = (1 << w) - 1 if p[0] == "u" else -1
            a, b = (self.name(x) for x in o.operands)
            self.define(o.results[0], f"(({a}) & {u}) {_CMP[p if p in _CMP else p[1:]]} (({b}) & {u})")
            return True
        if n == "arith.select":
            if _width(o.results[0].type) is None:
                return False
            c, a, b = (self.name(x) for x in o.operands)
            self.define(o.results[0], f"({a} if {c} else {b})")
            return True
        if n in _SIGNED_CASTS + _UNSIGNED_CASTS:
            ws, wr = _width(o.operands[0].type), _width(o.results[0].type)
            if ws is None or wr is None or ws == 1:
                return False
            x = self.name(o.operands[0])
            if n in _UNSIGNED_CASTS and ws < wr:
                x = f"(({x}) & {(1 << ws) - 1})"
            self.define(o.results[0], self.wrap(x, wr))
            return True
        if n == "nvvm.tma_make_desc":  # a TMA descriptor (Hopper): the interpreter's cached maker
            from ..interp.impl_tma import desc_maker

            f = f"D{len(self.ns)}"
            self.ns[f] = desc_maker(o)
            self.define(o.results[0], f"{f}({', '.join(f'int({self.name(x)})' for x in o.operands)})")
            return True
        if n == "gpu.launch_func":
            v = [self.name(x) for x in o.operands]
            kname = str(o.attrs["kernel"])
            grid, block, rest = ", ".join(v[0:3]), ", ".join(v[3:6]), ", ".join(v[8:])
            loc = f"L{len(self.ns)}_"
            self.ns[loc], self.ns["LOCATED"] = o.loc, located
            if self.kernels is None:  # ``launch`` checks (the device's): its errors point at the user's line
                self.lines.append("    try:")
                self.lines.append(f"        launch({kname!r}, ({grid}), ({block}), {v[6]}, {v[7]}, [{rest}])")
                self.lines.append("    except Exception as e:")
                self.lines.append(f"        raise LOCATED(e, {loc})")
                return True
            computed = [x for x in v[0:6] if not x.lstrip("-").isdigit()]  # constants were checked while tracing
            if computed:  # a grid computed as 0: FLY222 at the user's `.launch(...)` line, before the driver
                self.ns["BAD_DIMS"] = _bad_dims
                self.lines.append(f"    if {' or '.join(f'{x} < 1' for x in computed)}:")
                self.lines.append(f"        raise BAD_DIMS(({grid}), ({block}), {loc})")
            fn = self.kernels.get(kname)
            if fn is None:
                return False
            f = f"K{len(self.ns)}_"
            inline = getattr(fn, "inline", None)
            if inline is not None:  # the launch's own lines in place of a call
                lines, ns = inline(f, v)
                self.ns.update(ns)
                self.lines.extend(lines)
                return True
            self.ns[f] = fn
            self.lines.append(f"    {f}({', '.join(v)})")
            return True
        return n == "func.return" and not o.operands


def launch_plan(fop: Op, kernels: dict | None = None):
    """``plan(args, launch)`` running host function ``fop``, or None when it is not straight-line.

    With ``kernels`` (kernel name -> ``launch(gx, gy, gz, bx, by, bz, smem, stream, *params)``), the plan
    is ``plan(*args)`` and calls each kernel's launch function directly: no argument list, no dispatch
    on the kernel's name (the cached call's path).
    """
    g = _Gen(fop, kernels)
    params = []
    for i, a in enumerate(g.args):
        if not isinstance(a.type, (PointerType, FloatType)) and _width(a.type) is None:
            return None
        g.names[a] = f"a{i}"
        params.append(f"a{i}")
    ops = fop.regions[0].blocks[0].ops
    computed = {v for o in ops if o.defn.name != "gpu.launch_func" for v in o.operands}
    for i, a in enumerate(g.args):  # integers used in arithmetic enter wrapped to their width
        w = _width(a.type)
        if w is not None and a in computed:
            g.lines.append(f"    a{i} = {g.wrap(f'int(a{i})', w)}")
    for o in ops:
        if not g.op(o):
            return None
    if kernels is None:
        head = "def plan(args, launch):\n" + (f"    ({', '.join(params)},) = args\n" if params else "")
    else:
        head = f"def plan({', '.join(params)}):\n"
    src = head + "\n".join(g.lines) + "\n    return None\n"
    exec(compile(src, f"<launch plan {fop.attrs.get('sym_name')}>", "exec"), g.ns)
    plan = g.ns["plan"]
    plan.source = src
    return plan
