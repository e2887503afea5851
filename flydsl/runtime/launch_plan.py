"""Launch plans: the host function of a specialization as one generated Python function.

Most launchers compute their grid from a few integer arguments (``(n + 127) // 128``) and launch.
Running that through the interpreter's host-function machinery costs a few microseconds per call (one
closure per op, argument conversion, an environment list); a launch plan is the same computation as
straight-line Python (about a microsecond), built once per specialization.

Only host functions of scalar integer arithmetic, comparisons, selects, integer casts, constants,
``gpu.launch_func`` and ``scf.if`` without results (a launch only for some arguments, e.g. a second kernel
for a problem's last rows) get a plan; anything else (loops, floats, calls, branches that yield values)
returns None and the caller uses :func:`flydsl.interp.compile_host` (the host executor). Integer semantics are
the ops' own scalar hooks, pasted in as source (:func:`flydsl.dialects.int_source` of
``scalar.source(op)``: wrap-around at the result width, C division, shifts past the width, …) — the
same ones the host executor and compile-time folding run — so a plan and the executor agree on every
input (tests/unit/test_jit_launch_plan.py checks it).
"""

from __future__ import annotations

import re

from ..dialects import int_source, scalar_source
from ..interp.impl_tma import desc_maker
from ..ir import FloatType, IndexType, IntegerType, Op, PointerType
from .args import ArgError

__all__ = ["launch_plan", "located", "check_launch_dims"]

_SIGNED_CASTS = ("arith.extsi", "arith.trunci", "arith.index_cast")
_UNSIGNED_CASTS = ("arith.extui", "arith.index_castui")


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


def _int_literal(expr: str) -> int | None:
    try:
        v = int(expr)
    except ValueError:
        return None
    return v if str(v) == expr else None


class _Gen:
    """Source lines of one host function. Local names start with ``prefix`` and the globals it adds to
    ``ns`` with ``prefix`` too, so the lines can be pasted into another generated function; argument ``i``
    is the expression ``args[i]`` (a name or a pure expression: it may be evaluated more than once).

    Integer values carry a range where one is known (constants, arguments the caller vouches for, and
    what interval arithmetic gives from them): a result that stays inside its width needs no wrap, a
    truncation that loses nothing is the value itself. ``x + c1 - c2`` folds into ``x + (c1 - c2)``
    (wrap-around arithmetic is exact modulo 2^width), ``x // 1`` is ``x``; definitions nothing reads
    are dropped at the end.
    """

    def __init__(self, fop: Op, kernels: dict | None, prefix: str, args: list[str]):
        self.names: dict = {}
        self.ranges: dict = {}  # value -> (lo, hi) of its (wrapped) integer
        self.affine: dict = {}  # value -> (base value, offset): value == base + offset modulo 2^width
        self.lines: list[str] = []
        self.defs: dict[str, list[int]] = {}  # local name -> indices of the lines that assign it
        self.ns: dict = {}
        self.prefix = prefix
        self.arg_values = fop.regions[0].blocks[0].args
        self.ops = fop.regions[0].blocks[0].ops
        self.arg_exprs = args
        self.kernels = kernels
        self.count = 0
        self.indent = ""  # inside ``scf.if`` branches: four more spaces per level

    def name(self, v) -> str:
        return self.names[v]

    def glob(self, key: str, value) -> str:
        n = f"{self.prefix}{key}"
        self.ns[n] = value
        return n

    def emit(self, name: str | None, line: str) -> None:
        if name is not None:
            self.defs.setdefault(name, []).append(len(self.lines))
        self.lines.append(self.indent + line)

    def alias(self, v, to) -> None:
        """``v`` is the value ``to`` itself."""
        self.names[v] = self.names[to]
        if to in self.ranges:
            self.ranges[v] = self.ranges[to]
        if to in self.affine:
            self.affine[v] = self.affine[to]

    def define(self, v, expr: str, w: int | None = None, rng=None) -> None:
        """``v = expr``; an integer of ``w`` bits is wrapped (two's complement) unless ``rng`` shows it fits."""
        n = f"{self.prefix}v{self.count}"
        self.count += 1
        self.names[v] = n
        self.emit(n, f"    {n} = {expr}")
        if w is None:
            return
        self.ranges[v] = self.wrap_in_place(n, w, rng)

    def wrap_in_place(self, n: str, w: int, rng=None):
        """Lines wrapping local ``n`` to ``w`` bits unless ``rng`` fits; the range it has afterwards."""
        if w == 1:
            self.emit(n, f"    {n} = {self.glob('bool', bool)}({n} & 1)")
            return (0, 1)
        half = 1 << (w - 1)
        if rng is not None and -half <= rng[0] and rng[1] < half:
            return rng
        # the test costs less than the arithmetic, and values almost always fit
        self.emit(n, f"    if not {-half} <= {n} <= {half - 1}:")
        self.emit(n, f"        {n} = (({n} + {half}) & {(1 << w) - 1}) - {half}")
        return (-half, half - 1)

    def helper(self, name: str, fn) -> str:
        return self.glob(name, fn)

    def source(self, o: Op, operands: list[str]) -> str:
        """The expression of ``o``'s scalar semantics on the named operands (its result not yet wrapped)."""
        src = scalar_source(o)
        assert src is not None  # tested by op()
        return int_source(src, operands, self.helper)

    def int_op(self, o: Op, n: str, w: int) -> None:
        x, y = o.operands
        a, b = self.name(x), self.name(y)
        la, lb = _int_literal(a), _int_literal(b)
        r = o.results[0]
        if n in ("arith.addi", "arith.subi") and (lb is not None or (la is not None and n == "arith.addi")):
            base, off = (y, la) if lb is None else (x, lb if n == "arith.addi" else -lb)
            base, off0 = self.affine.get(base, (base, 0))
            off += off0
            if off == 0:  # x + c - c: x itself
                self.alias(r, base)
                return
            rb = self.ranges.get(base)
            self.define(r, f"({self.name(base)} + {off})", w, rb and (rb[0] + off, rb[1] + off))
            self.affine[r] = (base, off)
            return
        if lb == 1 and n in ("arith.floordivsi", "arith.ceildivsi", "arith.divsi", "arith.muli"):
            self.alias(r, x)
            return
        self.define(r, self.source(o, [a, b]), w, _range_of(o, self.ranges.get(x), self.ranges.get(y), lb))

    def op(self, o: Op) -> bool:
        n = o.defn.name
        if n == "arith.constant":
            v = o.attrs["value"]
            t = o.results[0].type
            if _width(t) is None and not isinstance(t, FloatType):
                return False
            try:
                c = bool(v) if _width(t) == 1 else (int(v) if _width(t) else float(v))
            except (TypeError, ValueError):
                return False
            lit = repr(c)
            self.names[o.results[0]] = lit if not lit.startswith("-") else f"({lit})"
            if type(c) is int:
                self.ranges[o.results[0]] = (c, c)
            return True
        if n in ("arith.andi", "arith.ori", "arith.xori") and _width(o.results[0].type) == 1:
            op = {"arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}[n]
            self.define(o.results[0], f"({self.name(o.operands[0])} {op} {self.name(o.operands[1])})")
            return True
        if n.startswith("arith.") and n in _INT_BINARY:
            w = _width(o.results[0].type)
            if w is None or w == 1 or scalar_source(o) is None:
                return False
            self.int_op(o, n, w)
            return True
        if n == "scf.if":
            return not o.results and self.branch(o)
        if n == "arith.cmpi":
            if _width(o.operands[0].type) is None or scalar_source(o) is None:
                return False
            self.define(o.results[0], self.source(o, [self.name(x) for x in o.operands]))
            return True
        if n == "arith.select":
            w = _width(o.results[0].type)
            if w is None:
                return False
            cond, x, y = o.operands
            self.define(o.results[0], f"({self.name(x)} if {self.name(cond)} else {self.name(y)})")
            ra, rb = self.ranges.get(x), self.ranges.get(y)
            if ra and rb:
                self.ranges[o.results[0]] = (min(ra[0], rb[0]), max(ra[1], rb[1]))
            return True
        if n in _SIGNED_CASTS + _UNSIGNED_CASTS:
            ws, wr = _width(o.operands[0].type), _width(o.results[0].type)
            if ws is None or wr is None or ws == 1:
                return False
            src, r = o.operands[0], o.results[0]
            rng = self.ranges.get(src)
            fits = rng is not None and -(1 << (wr - 1)) <= rng[0] and rng[1] < (1 << (wr - 1))
            if (n in _SIGNED_CASTS and ws <= wr) or (fits and (n in _SIGNED_CASTS or rng[0] >= 0)):
                self.alias(r, src)  # sign extension, or a value its new width holds: the value itself
                return True
            rng = (0, (1 << ws) - 1) if n in _UNSIGNED_CASTS and ws < wr else None
            self.define(r, self.source(o, [self.name(src)]), wr, rng)
            return True
        if n == "nvvm.tma_make_desc":  # a TMA descriptor (Hopper): the interpreter's cached maker
            f = self.glob(f"D{len(self.ns)}", desc_maker(o))
            i = self.glob("int", int)
            self.define(o.results[0], f"{f}({', '.join(f'{i}({self.name(x)})' for x in o.operands)})")
            return True
        if n == "gpu.launch_func":
            v = [self.name(x) for x in o.operands]
            kname = str(o.attrs["kernel"])
            grid, block, rest = ", ".join(v[0:3]), ", ".join(v[3:6]), ", ".join(v[8:])
            loc, located_ = self.glob(f"L{len(self.ns)}_", o.loc), self.glob("LOCATED", located)
            if self.kernels is None:  # ``launch`` checks (the device's): its errors point at the user's line
                e = f"{self.prefix}e"
                self.emit(None, "    try:")
                self.emit(None, f"        launch({kname!r}, ({grid}), ({block}), {v[6]}, {v[7]}, [{rest}])")
                self.emit(None, f"    except Exception as {e}:")
                self.emit(None, f"        raise {located_}({e}, {loc})")
                return True
            # a grid computed as 0: FLY222 at the user's `.launch(...)` line, before the driver (constants were
            # checked while tracing; a value whose range starts at 1 needs no test)
            computed = [
                (x, r) for x, r in zip(v[0:6], (self.ranges.get(d) for d in o.operands[0:6])) if _int_literal(x) is None
            ]  # fmt: skip
            checked = [x for x, r in computed if r is None or r[0] < 1]
            if checked:
                bad = self.glob("BAD_DIMS", _bad_dims)
                self.emit(None, f"    if {' or '.join(f'{x} < 1' for x in checked)}:")
                self.emit(None, f"        raise {bad}(({grid}), ({block}), {loc})")
            fn = self.kernels.get(kname)
            if fn is None:
                return False
            f = f"{self.prefix}K{len(self.ns)}_"
            inline = getattr(fn, "inline", None)
            if inline is not None:  # the launch's own lines in place of a call
                lines, ns = inline(f, v, [self.ranges.get(x) for x in o.operands])
                self.ns.update(ns)
                for ln in lines:
                    self.emit(None, ln)
                return True
            self.ns[f] = fn
            self.emit(None, f"    {f}({', '.join(v)})")
            return True
        return n in ("func.return", "scf.yield") and not o.operands

    def branch(self, o: Op) -> bool:
        """``scf.if`` without results as a Python ``if`` (and ``else``) around its ops' lines."""
        self.emit(None, f"    if {self.name(o.operands[0])}:")
        for i, region in enumerate(o.regions):
            if i and not (region.blocks and len(region.blocks[0].ops) > 1):
                continue  # no else branch, or one that only yields
            if i:
                self.emit(None, "    else:")
            self.indent += "    "
            ok = all(self.op(x) for x in region.blocks[0].ops)
            self.emit(None, "    pass")
            self.indent = self.indent[:-4]
            if not ok:
                return False
        return True

    def build(self, exact: dict | None = None) -> bool:
        """The lines of the whole function (False: not straight-line). ``exact`` maps an argument index to
        ``(lo, hi)``: the caller guarantees an ``int`` in that range, so no conversion or wrap is needed
        when the range fits the argument's width."""
        ops = self.ops
        computed = {v for o in _walk(ops) if o.defn.name != "gpu.launch_func" for v in o.operands}
        for i, (a, expr) in enumerate(zip(self.arg_values, self.arg_exprs)):
            w = _width(a.type)
            rng = (exact or {}).get(i)
            half = 1 << (w - 1) if w else 0
            if w is not None and w > 1 and rng is not None and -half <= rng[0] and rng[1] < half:
                self.names[a] = expr
                self.ranges[a] = rng
                continue
            if w is None or a not in computed:
                self.names[a] = expr
                continue
            # integers used in arithmetic enter wrapped to their width
            n = f"{self.prefix}a{i}"
            self.names[a] = n
            self.emit(n, f"    {n} = {self.glob('int', int)}({expr})")
            self.ranges[a] = self.wrap_in_place(n, w)
        if not all(self.op(o) for o in ops):
            return False
        self.drop_unused()
        return True

    def drop_unused(self) -> None:
        """Remove the lines of local names no other line reads (values folded away)."""
        dead: set[int] = set()
        changed = True
        while changed:
            changed = False
            live = [ln for i, ln in enumerate(self.lines) if i not in dead]
            text = "\n".join(live)
            for name, idx in self.defs.items():
                if idx[0] in dead:
                    continue
                own = "\n".join(self.lines[i] for i in idx)
                if len(re.findall(rf"\b{name}\b", text)) == len(re.findall(rf"\b{name}\b", own)):
                    dead.update(idx)
                    changed = True
        self.lines = [ln for i, ln in enumerate(self.lines) if i not in dead]


def _walk(ops):
    """``ops`` and the ops nested in their regions."""
    for o in ops:
        yield o
        for region in o.regions:
            for block in region.blocks:
                yield from _walk(block.ops)


def _range_of(o: Op, ra, rb, lit: int | None):
    """The interval of ``o``'s result from the operands' intervals (None: unknown)."""
    if ra is None or rb is None:
        return None
    n = o.defn.name
    if n == "arith.addi":
        return (ra[0] + rb[0], ra[1] + rb[1])
    if n == "arith.subi":
        return (ra[0] - rb[1], ra[1] - rb[0])
    if n == "arith.muli":
        c = [x * y for x in ra for y in rb]
        return (min(c), max(c))
    if n in ("arith.maxsi", "arith.minsi"):
        f = max if n == "arith.maxsi" else min
        return (f(ra[0], rb[0]), f(ra[1], rb[1]))
    if lit is not None and lit > 0 and n in _DIVISIONS:  # monotonic in the dividend: the op at the ends
        div = o.defn.scalar_fn(o)
        return (div(ra[0], lit), div(ra[1], lit))
    return None


_DIVISIONS = ("arith.floordivsi", "arith.ceildivsi", "arith.divsi")
# the integer binary ops a plan computes (each through its scalar hook's source)
_INT_BINARY = frozenset((
    "arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori", "arith.xori", "arith.divsi",
    "arith.remsi", "arith.floordivsi", "arith.ceildivsi", "arith.divui", "arith.remui", "arith.ceildivui",
    "arith.shli", "arith.shrui", "arith.shrsi", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui",
))  # fmt: skip


def _plan_args(fop: Op) -> list[str] | None:
    """The plan's parameter names, or None when an argument is not an integer, a float or a pointer."""
    args = fop.regions[0].blocks[0].args
    if any(not isinstance(a.type, (PointerType, FloatType)) and _width(a.type) is None for a in args):
        return None
    return [f"a{i}" for i in range(len(args))]


def launch_plan(fop: Op, kernels: dict | None = None):
    """``plan(args, launch)`` running host function ``fop``, or None when it is not straight-line.

    With ``kernels`` (kernel name -> ``launch(gx, gy, gz, bx, by, bz, smem, stream, *params)``), the plan
    is ``plan(*args)`` and calls each kernel's launch function directly: no argument list, no dispatch
    on the kernel's name (the cached call's path). Such a plan also has ``inline(prefix, exprs, exact)``:
    its body as source lines (4-space indent) and their globals, argument ``i`` being ``exprs[i]``, for a
    generated caller (the jit's fast path) to paste in place of the call; ``exact`` as in
    :meth:`_Gen.build`.
    """
    params = _plan_args(fop)
    if params is None:
        return None
    g = _Gen(fop, kernels, "", params)
    if not g.build():
        return None
    if kernels is None:
        head = "def plan(args, launch):\n" + (f"    ({', '.join(params)},) = args\n" if params else "")
    else:
        head = f"def plan({', '.join(params)}):\n"
    src = head + "\n".join(g.lines) + "\n    return None\n"
    exec(compile(src, f"<flydsl launch plan {fop.attrs.get('sym_name')}>", "exec"), g.ns)
    plan = g.ns["plan"]
    plan.source = src
    if kernels is not None:

        def inline(prefix: str, exprs: list[str], exact: dict | None = None) -> tuple[list[str], dict]:
            gi = _Gen(fop, kernels, prefix, list(exprs))
            if not gi.build(exact):  # built once above: cannot fail now
                raise AssertionError("a launch plan that built once failed to build again")
            return gi.lines, gi.ns

        plan.inline = inline
    return plan
