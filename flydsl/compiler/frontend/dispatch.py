"""The run-time half of the AST rewrite: what the rewritten control flow calls while tracing.

The rewriter (:mod:`.ast_rewrite`) turns ``if``/``for i in range``/``while`` bodies into nested
functions that take the carried variables as parameters and return their final values, and calls
the functions here — through FlyDSL's helpers (:mod:`.helpers`) for those FlyDSL has, as ``_fly_rt``
for the others. Each one decides at trace time:

* a compile-time condition (a Python value or a static Numeric) runs the chosen branch / a Python
  loop — no IR;
* a run-time condition builds ``scf.if`` / ``scf.for`` / ``scf.while``: the bodies are traced into
  the region blocks, and the carried variables whose values differ between paths cross the region
  boundary as yielded values (see :mod:`.carry` for trees, promotion and the undefined sentinel).

``site`` is a constant tuple the rewriter emits: ``(file, line, col, kind, names, lines_a, lines_b,
n_target, mutated_only)`` — the statement's location, the carried names, the line where each is first
assigned in the then-branch/body (``lines_a``) and the else-branch (``lines_b``, 0 when not assigned),
and for loops which names are only mutated in the body (a tensor stored into is not a loop value).
"""

from __future__ import annotations

import builtins
import operator
from collections import namedtuple
from types import SimpleNamespace

from ...dialects import scf
from ...expr.numeric import Boolean, Index, Int32, Numeric, as_numeric, common_type
from ...ir import Block, InsertionPoint, Value, create, i1
from ...utils.env import env
from .. import errors as E
from ..errors import error
from .carry import (
    UNBOUND,
    Undefined,
    align_keys,
    copy_tree,
    describe,
    flatten,
    is_dsl_leaf,
    is_py_scalar,
    is_undefined,
    is_value_like,
    leaf_sig,
    leaf_values,
    loop_var_sentinel,
    promote_pair,
    rebuild_leaf,
    skeleton_text,
    unflatten,
)

__all__ = [
    "Site",
    "pre",
    "if_",
    "ifexp",
    "for_",
    "for_explicit",
    "range_",
    "range_bounds",
    "RangeSpec",
    "while_",
    "static_test",
    "py_iter",
    "and_",
    "or_",
    "not_",
    "cmp_chain",
    "classify",
    "to_i1",
]

Site = namedtuple("Site", "file line col kind names lines_a lines_b n_target mutated_only")


def _structure_change(site, kind, name, a, b):
    """FLY105: a carried variable's nesting (list/tuple/dict shape) differs between two places."""
    return error(
        E.STRUCTURE_CHANGE, _loc(site), name=name, kind=kind, site_line=site.line,
        a=skeleton_text(a), b=skeleton_text(b),
    )  # fmt: skip


def _loc(s) -> tuple:
    return (s.file, s.line, s.col)


def pre(local_vars: dict, names: tuple) -> tuple:
    """The current values of ``names`` (``UNBOUND`` for names without a value)."""
    return tuple([local_vars.get(n, UNBOUND) for n in names])


# ---------------------------------------------------------------------------------------------------
# conditions
# ---------------------------------------------------------------------------------------------------


def classify(c, kind: str = "if", loc=None):
    """``True``/``False`` for a compile-time condition, ``None`` for a run-time one."""
    if isinstance(c, Numeric):
        return bool(c._v) if c.is_static() else None
    if type(c) is Value:
        return None
    if getattr(c, "_is_vector", False):
        raise error(E.COND_NOT_SCALAR, loc, kind=kind, got=describe(c))
    return bool(c)


def to_i1(c) -> Value:
    """The ``i1`` IR value of a run-time condition (non-Boolean values are tested for non-zero)."""
    if type(c) is Value:
        if c.type is i1:
            return c
        c = as_numeric(c)
    if type(c) is not Boolean:
        c = c.to(Boolean)
    return c.ir_value()


def static_test(test, site):
    """The test of an ``if``/``while`` that contains ``return``/``break``/``continue``: must be static."""
    s = Site(*site)
    r = classify(test, s.kind, _loc(s))
    if r is None:
        if s.names == "else":
            raise error(E.LOOP_ELSE, _loc(s), kind=s.kind)
        if s.kind == "if" and s.names == "raise":
            raise error(E.RAISE_IN_RUNTIME_IF, _loc(s))
        if s.kind == "if":
            after = "return it" if s.names == "return" else "leave the loop"
            raise error(E.JUMP_IN_RUNTIME_IF, _loc(s), stmt=s.names, after=after)
        raise error(E.JUMP_IN_RUNTIME_LOOP, _loc(s), stmt=s.names, kind=s.kind)
    return r


def py_iter(it, site):
    """The iterable of a ``for`` that must stay a Python loop (break/continue/return/else inside)."""
    if isinstance(it, RangeSpec):
        s = Site(*site)
        if s.names == "else":
            raise error(E.LOOP_ELSE, _loc(s), kind="for")
        raise error(E.JUMP_IN_RUNTIME_LOOP, _loc(s), stmt=s.names, kind="for")
    return it


# ---------------------------------------------------------------------------------------------------
# merging the paths of an scf.if
# ---------------------------------------------------------------------------------------------------


def _static_equal(a, b) -> bool:
    ta = type(a)
    if ta is not type(b):
        return False
    if isinstance(a, Numeric):
        return a.is_static() and b.is_static() and a._v == b._v
    if is_dsl_leaf(a):
        return False
    try:
        return (a == b) is True
    except Exception:
        return False


class _Merge:
    """Plan for the leaves of one scf.if: which are kept and which are yielded (per branch)."""

    def __init__(self, site):
        self.site = site
        self.yield_a: list = []
        self.yield_b: list = []
        self.trees: list = []  # per name: ("keep", value) | ("tree", skel, [leaf | index into yields])

    def add(self, name: str, a, b, line_a: int, line_b: int):
        if a is b:
            self.trees.append(("keep", a))
            return
        ua, ub = is_undefined(a), is_undefined(b)
        if ua or ub:
            self.trees.append(("keep", self._one_branch(name, a, b, ua, ub, line_a, line_b)))
            return
        la, pa, lb, pb = [], [], [], []
        sa, sb = flatten(a, name, la, pa), flatten(align_keys(b, a), name, lb, pb)
        if sa != sb:
            raise _structure_change(self.site, self.site.kind, name, sa, sb)
        leaves = [self._leaf(path, x, y) for path, x, y in zip(pa, la, lb)]
        self.trees.append(("tree", sa, leaves))

    def _one_branch(self, name, a, b, ua, ub, line_a, line_b):
        if ua and ub:
            return a if a is not UNBOUND else b
        u = a if ua else b
        if u is not UNBOUND:
            return u  # a more specific sentinel from a nested construct
        s = self.site
        return Undefined(E.DEFINED_IN_ONE_BRANCH, name=name, site_line=s.line, def_line=line_a if ub else line_b)

    def _leaf(self, path, a, b):
        if a is b or _static_equal(a, b):
            return ("keep", a)
        s = self.site
        for x, y in ((a, b), (b, a)):
            if x is None:
                if is_dsl_leaf(y) or is_py_scalar(y):
                    raise error(E.CARRIED_NONE, _loc(s), name=path, kind=s.kind, site_line=s.line, b=describe(y))
        dsl_a = is_dsl_leaf(a) or is_py_scalar(a)
        dsl_b = is_dsl_leaf(b) or is_py_scalar(b)
        if not (dsl_a and dsl_b):
            obj = a if not dsl_a else b
            raise error(
                E.PYTHON_VALUE_DIFFERS,
                _loc(s),
                name=path,
                kind=s.kind,
                site_line=s.line,
                a=type(obj).__name__,
                b=f"{_short(a)} on one path, {_short(b)} on the other",
            )
        a2, b2, ok = promote_pair(a, b)
        if not ok:
            raise error(E.BRANCH_TYPE_MISMATCH, _loc(s), name=path, a=describe(a), b=describe(b), want=_suggest(a, b))
        self.yield_a.append(a2)
        self.yield_b.append(b2)
        return ("yield", len(self.yield_a) - 1)

    def emit_yield(self, block: Block, which: list) -> tuple[list, list]:
        """Materialize ``which`` at the end of ``block`` and yield it; returns (values, count per leaf)."""
        with InsertionPoint(block):
            per_leaf = [leaf_values(leaf) for leaf in which]
            vals = [v for vs in per_leaf for v in vs]
            scf.yield_(*vals)
        return vals, [len(vs) for vs in per_leaf]

    def results(self, op_results: list, counts: list) -> list:
        rebuilt, pos = [], 0
        for proto, n in zip(self.yield_a, counts):
            rebuilt.append(rebuild_leaf(proto, op_results[pos : pos + n]))
            pos += n
        out = []
        for entry in self.trees:
            if entry[0] == "keep":
                out.append(entry[1])
                continue
            _, skel, leaves = entry
            new = iter([x[1] if x[0] == "keep" else rebuilt[x[1]] for x in leaves])
            out.append(unflatten(skel, new))
        return out


def _build_if(cond: Value, then_blk: Block, else_blk: Block, merge: _Merge) -> list:
    vals_a, counts = merge.emit_yield(then_blk, merge.yield_a)
    vals_b, _ = merge.emit_yield(else_blk, merge.yield_b)
    types = [v.type for v in vals_a]
    if types != [v.type for v in vals_b]:
        s = merge.site
        raise error(
            E.BRANCH_TYPE_MISMATCH,
            _loc(s),
            name="a carried value",
            a=types,
            b=[v.type for v in vals_b],
            want="one type",
        )
    op = create(scf.if_, [cond], types)
    _attach(op.regions[0], then_blk)
    if types or len(else_blk.ops) > 1:
        _attach(op.regions[1], else_blk)
    return merge.results(op.results, counts)


def _attach(region, block: Block) -> None:
    block.parent = region
    region.blocks.append(block)


def if_(test, then_fn, else_fn, site, pre_vals):
    """An ``if`` statement: returns the final values of the carried names."""
    s = Site(*site)
    c = classify(test, "if", _loc(s))
    if c is not None:
        fn = then_fn if c else else_fn
        out = pre_vals if fn is None else fn(*pre_vals)
        return _static_unbound(out, s, s.lines_b if c else s.lines_a)
    cond = to_i1(test)
    then_blk, else_blk = Block(), Block()
    with InsertionPoint(then_blk):
        out_a = then_fn(*[copy_tree(v) for v in pre_vals])
    if else_fn is not None:
        with InsertionPoint(else_blk):
            out_b = else_fn(*[copy_tree(v) for v in pre_vals])
    else:
        out_b = pre_vals
    merge = _Merge(s)
    for name, a, b, pre, la, lb in zip(s.names, out_a, out_b, pre_vals, s.lines_a, s.lines_b):
        # dicts keep the key order they had before the `if` (FlyDSL's: matched by key, rebuilt in entry order)
        merge.add(name, align_keys(a, pre), b, la, lb)
    return tuple(_build_if(cond, then_blk, else_blk, merge))


def _static_unbound(out, s, other_lines):
    """After a compile-time branch: names only the other branch assigns are undefined (with its line)."""
    if not any(v is UNBOUND for v in out):
        return out
    res = list(out)
    for i, v in enumerate(res):
        if v is UNBOUND and other_lines[i]:
            res[i] = Undefined(E.UNDEFINED_STATIC, name=s.names[i], def_line=other_lines[i])
    return tuple(res)


def ifexp(test, a_fn, b_fn, site):
    """``a if test else b``."""
    s = Site(*site)
    c = classify(test, "if", _loc(s))
    if c is not None:
        return a_fn() if c else b_fn()
    cond = to_i1(test)
    then_blk, else_blk = Block(), Block()
    with InsertionPoint(then_blk):
        a = a_fn()
    with InsertionPoint(else_blk):
        b = b_fn()
    merge = _Merge(s)
    merge.add("the value of `... if ... else ...`", a, b, 0, 0)
    return _build_if(cond, then_blk, else_blk, merge)[0]


# ---------------------------------------------------------------------------------------------------
# loops
# ---------------------------------------------------------------------------------------------------


class RangeSpec:
    """``range(...)`` in a kernel: the bounds of an ``scf.for`` (i32, or index with ``init=``)."""

    __slots__ = ("args", "init")

    def __init__(self, args, init=None):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range expected 1 to 3 arguments, got {len(args)}")
        self.args = args
        self.init = init

    def bounds(self, dtype, loc):
        """``(lb, ub, step, iv_of)``: IR bounds of a positive-step loop and the map k -> user iv."""
        a = self.args
        start, stop, step = (0, a[0], 1) if len(a) == 1 else (a[0], a[1], a[2] if len(a) == 3 else 1)
        start, stop, step = (_bound(x, w, dtype, loc) for x, w in ((start, "start"), (stop, "stop"), (step, "step")))
        if step.is_static() and step._v == 0:
            raise error(E.RANGE_STEP_ZERO, loc)
        if step.is_static() and step._v < 0:
            # run k over [0, trip) and map it to start + k * step
            neg = dtype._make(-step._v)
            trip = (start - stop + neg - dtype._make(1)) // neg
            trip = _max0(trip, dtype)
            return dtype._make(0), trip, dtype._make(1), lambda k: start + k * step
        return start, stop, step, None


def _max0(x, dtype):
    return (x > dtype._make(0)).select(x, dtype._make(0)) if not x.is_static() else dtype._make(max(0, x._v))


def _bound(x, what, dtype, loc):
    if isinstance(x, bool) or (isinstance(x, Numeric) and not type(x).is_integer):
        raise error(E.RANGE_BOUND_TYPE, loc, what=what, got=describe(x))
    if isinstance(x, int):
        return dtype(x)
    if type(x) is Value:
        x = as_numeric(x)
    if isinstance(x, Numeric):
        return x if type(x) is dtype else x.to(dtype)
    if hasattr(x, "__index__"):
        return dtype(operator.index(x))
    raise error(E.RANGE_BOUND_TYPE, loc, what=what, got=describe(x))


def range_bounds(*args, **kwargs) -> tuple:
    """``(start, stop, step)`` of a kernel loop's ``range(*args)`` (FlyDSL's loop dispatch takes the three);
    ``TypeError`` as ``range`` for other arguments."""
    if kwargs:
        raise TypeError(f"range() takes no keyword arguments other than init=, got {', '.join(kwargs)}")
    a = RangeSpec(args).args
    return (0, a[0], 1) if len(a) == 1 else (a[0], a[1], a[2] if len(a) == 3 else 1)


def range_(rng, *args, init=None):
    """``range(...)`` as written in a rewritten function: a kernel loop unless ``range`` is shadowed."""
    if rng is not builtins.range:
        return rng(*args) if init is None else rng(*args, init=init)
    return RangeSpec(args, init)


_CONTAINERS = (list, dict, SimpleNamespace)


class _Carry:
    """The carried names of a loop: trees, their leaves, and the region's block arguments."""

    def __init__(self, site, names, values, kind, mutated_only=()):
        self.site = site
        self.kind = kind
        self.names = names
        self.entries = []  # per name: None (not carried) | _PASS (same object throughout) | (skel, leaves, ...)
        self.inits: list[Value] = []
        flags = list(mutated_only) + [False] * (len(names) - len(mutated_only))
        for name, v, only in zip(names, values, flags):
            if is_undefined(v):
                self.entries.append(None)
            elif only and not _holds_container(v):
                self.entries.append(_PASS)  # stored into / methods called, never rebound: not a loop value
            else:
                self.entries.append(self._prepare(name, v))

    def _prepare(self, name, v):
        leaves, paths = [], []
        skel = flatten(v, name, leaves, paths)
        mask = []
        for i, x in enumerate(leaves):
            if is_py_scalar(x):
                x = leaves[i] = as_numeric(x)
            dsl = is_dsl_leaf(x)
            mask.append(dsl)
            if dsl:
                vals = leaf_values(x)
                self.inits.extend(vals)
                mask[-1] = len(vals)
        return skel, leaves, paths, mask

    def rebuild(self, block_args, pre_vals) -> list:
        out, pos = [], 0
        for entry, v in zip(self.entries, pre_vals):
            if entry is None or entry is _PASS:
                out.append(v)
                continue
            skel, leaves, _, mask = entry
            new = []
            for x, n in zip(leaves, mask):
                if n:
                    new.append(rebuild_leaf(x, block_args[pos : pos + n]))
                    pos += n
                else:
                    new.append(x)
            out.append(unflatten(skel, iter(new)))
        return out

    def yield_values(self, out_vals, lines) -> list:
        """Check the body's final values against the carried trees; materialize what is yielded."""
        s = self.site
        vals = []
        for name, entry, v, line in zip(self.names, self.entries, out_vals, lines):
            if entry is None or entry is _PASS:
                continue
            skel, leaves, paths, mask = entry
            got, _ = [], []
            if is_undefined(v):
                raise error(E.DEFINED_IN_ONE_BRANCH, _loc(s), name=name, site_line=s.line, def_line=line)
            gskel = flatten(align_keys(v, unflatten(skel, iter(leaves))), name, got, _)
            if gskel != skel:
                raise _structure_change(s, self.kind, name, skel, gskel)
            for path, x, y, n in zip(paths, leaves, got, mask):
                if n:
                    vals.extend(self._leaf_yield(path, x, y, n))
                elif not (x is y or _static_equal(x, y)):
                    self._static_changed(path, x, y)
        return vals

    def _leaf_yield(self, path, x, y, n):
        s = self.site
        if is_py_scalar(y) and isinstance(x, Numeric) and (type(y) is not float or type(x).is_float):
            y = type(x)(y)
        if y is None:
            raise error(
                E.PYTHON_VALUE_DIFFERS,
                _loc(s),
                name=path,
                kind=self.kind,
                site_line=s.line,
                a="None",
                b=f"{describe(x)} before the loop, None at the end of the body",
            )
        vals = leaf_values(y) if is_dsl_leaf(y) and leaf_sig(x) == leaf_sig(y) else None
        if vals is None or len(vals) != n:
            raise error(
                E.LOOP_TYPE_CHANGE, _loc(s), name=path, kind=self.kind, site_line=s.line, a=describe(x), b=describe(y)
            )
        return vals

    def _static_changed(self, path, x, y):
        s = self.site
        if x is None and (is_dsl_leaf(y) or is_py_scalar(y)):
            raise error(E.CARRIED_NONE, _loc(s), name=path, kind=self.kind, site_line=s.line, b=describe(y))
        raise error(
            E.PYTHON_VALUE_DIFFERS,
            _loc(s),
            name=path,
            kind=self.kind,
            site_line=s.line,
            a=type(x).__name__,
            b=f"{_short(x)} before the loop, {_short(y)} at the end of the body",
        )

    def after(self, results, pre_vals, body_out, lines) -> list:
        """The names' values after the loop: rebuilt results; body-local names become sentinels."""
        out = self.rebuild(results, pre_vals)
        s = self.site
        for i, entry in enumerate(self.entries):
            if entry is None and body_out is not None and not is_undefined(body_out[i]):
                out[i] = Undefined(
                    E.DEFINED_IN_LOOP, name=self.names[i], kind=self.kind, site_line=s.line, def_line=lines[i]
                )
        return out


def _suggest(a, b) -> str:
    """The DSL type to recommend when two paths disagree (their common type, when both are numbers)."""
    try:
        ta, tb = type(as_numeric(a)), type(as_numeric(b))
    except TypeError:
        return "the type you need"
    return f"fx.{common_type(ta, tb).__name__}"


_PASS = "pass"


def _holds_container(v) -> bool:
    """A value whose mutation must be carried: a list/dict/namespace, a value-like leaf (register
    tensor), or a tuple holding one."""
    if type(v) in _CONTAINERS or is_value_like(v):
        return True
    return isinstance(v, tuple) and any(_holds_container(x) for x in v)


def _short(x) -> str:
    r = repr(x)
    return r if len(r) <= 40 else r[:37] + "..."


def for_(it: RangeSpec, body_fn, site, pre_vals):
    """``for target in range(...)``: ``scf.for``.

    Returns the final values of ``names``; the first ``n_target`` are the loop target's names.
    """
    s = Site(*site)
    if s.lines_b:  # the target's text when it is not a single name
        raise error(E.LOOP_TARGET, _loc(s), target=s.lines_b)
    nt = s.n_target
    lb, ub, step, iv_of = it.bounds(Int32, _loc(s))
    carry = _Carry(s, s.names[nt:], pre_vals[nt:], "for", s.mutated_only[nt:])
    op = scf.build_for(lb.ir_value(), ub.ir_value(), step.ir_value(), carry.inits)
    body = op.regions[0].blocks[0]
    with InsertionPoint(body):
        iv = Int32._make(body.args[0])
        if iv_of is not None:
            iv = iv_of(iv)
        inner = carry.rebuild(body.args[1:], pre_vals[nt:])
        out = body_fn(iv, *([UNBOUND] * nt), *inner)
        scf.yield_(*carry.yield_values(out[nt:], s.lines_a[nt:]))
    after = carry.after(op.results, pre_vals[nt:], out[nt:], s.lines_a[nt:])
    targets = [_loop_var_after(n, old, lb, ub, step, iv_of, s.line) for n, old in zip(s.names[:nt], pre_vals[:nt])]
    return (*targets, *after)


def _loop_var_after(name, old, lb, ub, step, iv_of, site_line):
    """The loop variable after a run-time ``for`` (FlyDSL's semantics): the last iteration's value, or the
    value it had before the loop when the loop runs zero times. A name without a value before the loop
    stays undefined after it (FLY118 where it is used)."""
    if old is UNBOUND or is_undefined(old):
        return loop_var_sentinel(name, site_line)
    if isinstance(old, bool) or not (isinstance(old, int) or (isinstance(old, Numeric) and type(old).is_integer)):
        return loop_var_sentinel(name, site_line)
    one = type(lb)._make(1)
    last = lb + ((ub - lb - one) // step) * step  # lb < ub and step > 0 here: the last k of [lb, ub)
    if iv_of is not None:
        last = iv_of(last)
    before = old if isinstance(old, Numeric) else type(last)(old)
    if type(before) is not type(last):
        before = before.to(type(last))
    return (lb < ub).select(last, before)


def for_explicit(it, body_fn, site):
    """``for iv, state in range(a, b, s, init=[...]): ... results = yield [...]`` (explicit iter_args)."""
    s = Site(*site)
    if not isinstance(it, RangeSpec):
        raise error(E.EXPLICIT_YIELD, _loc(s))
    init = list(it.init)
    names = tuple(f"init[{k}]" for k in range(len(init)))
    lb, ub, step, iv_of = it.bounds(Index, _loc(s))
    carry = _Carry(s, names, init, "for")
    op = scf.build_for(lb.ir_value(), ub.ir_value(), step.ir_value(), carry.inits)
    body = op.regions[0].blocks[0]
    with InsertionPoint(body):
        iv = Index._make(body.args[0])
        if iv_of is not None:
            iv = iv_of(iv)
        out = body_fn(iv, carry.rebuild(body.args[1:], init))
        if out is None:
            raise error(E.EXPLICIT_YIELD, _loc(s))
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(out) != len(init):
            raise error(E.EXPLICIT_YIELD_ARITY, _loc(s), site_line=s.line, a=len(init), b=len(out))
        scf.yield_(*carry.yield_values(out, [0] * len(init)))
    return carry.rebuild(op.results, init)


def while_(cond_fn, body_fn, site, pre_vals):
    """``while test:`` — a Python loop while the test is static, else ``scf.while``."""
    s = Site(*site)
    scratch = Block()
    with InsertionPoint(scratch):
        c0 = cond_fn(*pre_vals)
    c = classify(c0, "while", _loc(s))
    if c is not None:
        return _static_while(c, cond_fn, body_fn, s, pre_vals)
    carry = _Carry(s, s.names, pre_vals, "while", s.mutated_only)
    op = scf.build_while(carry.inits, [v.type for v in carry.inits])
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    with InsertionPoint(before):
        test = cond_fn(*carry.rebuild(before.args, pre_vals))
        classify(test, "while", _loc(s))
        scf.condition(to_i1(test), *before.args)
    with InsertionPoint(after):
        out = body_fn(*carry.rebuild(after.args, pre_vals))
        scf.yield_(*carry.yield_values(out, s.lines_a))
    return tuple(carry.after(op.results, pre_vals, out, s.lines_a))


def _static_while(c, cond_fn, body_fn, s, vals):
    limit = env.trace_max_ops
    n = 0
    while c:
        vals = body_fn(*vals)
        n += 1
        if n > limit:
            raise error(E.STATIC_LOOP_LIMIT, _loc(s), n=n)
        c = classify(cond_fn(*vals), "while", _loc(s))
        if c is None:
            raise error(E.WHILE_TURNED_DYNAMIC, _loc(s), n=n)
    return vals


# ---------------------------------------------------------------------------------------------------
# and / or / not / chained comparisons
# ---------------------------------------------------------------------------------------------------


def _as_bool(x) -> Numeric:
    if type(x) is Value:
        x = as_numeric(x)
    return x if type(x) is Boolean else x.to(Boolean)


def _short_circuit(a, rest, kind: str, decisive: bool, combine):
    """``a and/or b ...`` left to right: Python semantics while the left side is static, i1 logic after.

    ``decisive`` is the truth value that ends the chain (``False`` for ``and``, ``True`` for ``or``): a
    static left side with that value is the result, the other static value hands over to the right
    side; a run-time left side is combined with the right one by ``combine`` on ``Boolean``s.
    """
    for fn in rest:
        c = classify(a, kind)
        if c is decisive:
            return a
        b = fn()
        if c is not None:
            a = b
            continue
        cb = classify(b, kind)
        if cb is None:
            a = combine(_as_bool(a), _as_bool(b))
        elif cb is decisive:
            return Boolean(decisive)
        else:
            a = _as_bool(a)
    return a


def and_(a, *rest):
    """``a and b and ...``: Python semantics while the left side is static, i1 logic after."""
    return _short_circuit(a, rest, "and", False, operator.and_)


def or_(a, *rest):
    """``a or b or ...``: Python semantics while the left side is static, i1 logic after."""
    return _short_circuit(a, rest, "or", True, operator.or_)


def not_(a):
    """``not a``: Python's for static values, an i1 negation for run-time ones."""
    c = classify(a, "not")
    if c is not None:
        return not c if not isinstance(a, Numeric) else Boolean(not c)
    return ~_as_bool(a)


_CMP = {
    "Eq": operator.eq,
    "NotEq": operator.ne,
    "Lt": operator.lt,
    "LtE": operator.le,
    "Gt": operator.gt,
    "GtE": operator.ge,
    "Is": operator.is_,
    "IsNot": operator.is_not,
    "In": lambda a, b: a in b,
    "NotIn": lambda a, b: a not in b,
}


def cmp_chain(a, ops, *rest):
    """``a op1 b op2 c ...`` evaluating each operand once, left to right, short-circuiting."""
    result = None
    for op, fn in zip(ops, rest):
        b = fn()
        r = _CMP[op](a, b)
        result = r if result is None else and_(result, lambda r=r: r)
        if classify(result, "and") is False:
            return result
        a = b
    return result
