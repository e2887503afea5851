"""The functions rewritten code calls by name, with FlyDSL's names and calling convention.

The rewrite (:mod:`.ast_rewrite`) turns each ``if``/``for``/``while``/``x if c else y``/``not`` of a
function into a call of one of these, looked up in the function's globals, where :func:`inject` puts
them (FlyDSL's ``ASTRewriter`` does the same: ``scf_if_dispatch``, ``scf_for_dispatch``, ... are then
visible in the module, and a wrapper assigned there sees every call). They adapt FlyDSL's convention to
:mod:`.dispatch`, which builds the ops (the same merge, promotion and checks for both callers):

* ``scf_if_dispatch(cond, then_fn, else_fn=None, *, result_names=, result_values=)`` (or FlyDSL's older
  ``state_names=``/``state_values=``): a branch function takes ``(names, *values)`` when it has a
  positional parameter more than there are values (or ``*args``), else ``(*values)``, and returns
  ``{name: new value}`` (a name left out keeps its value; None keeps them all; a tuple/list in
  ``names`` order, or the bare value of a single name, is accepted too);
* ``scf_ifexp_dispatch(cond, then_thunk, else_thunk)``: ``a if cond else b``;
* ``scf_for_dispatch(start, stop, step, body_fn, *, result_names=, result_values=)``:
  ``body_fn(iv, names, *values)``;
* ``scf_while_dispatch(before_fn, after_fn, *, result_names=, result_values=)``: ``before_fn`` returns
  the condition, ``after_fn`` the new values, both called like an ``if`` branch;
* ``scf_if_collect_results``/``scf_for_collect_results``/``scf_while_collect_results(names, locals())``:
  what a generated body returns, ``{name: value}`` (a name without a value is unbound);
* ``dsl_not_(x)``: ``not x``.

Each dispatch returns None for no names, the value for one, a tuple for several. The rewritten code
also passes ``site=``: the statement's location and analysis (see ``dispatch.Site``), so errors point
at the user's statement; its values go through unchanged (undefined names as the ``UNBOUND``
sentinel). A direct call (no ``site=``) locates errors at the caller's line, gives raw IR values back
as DSL values, and rejects a ``None`` carried through a run-time loop with ``TypeError``.
"""

from __future__ import annotations

import inspect
import sys

from ...expr._sem.vector import as_vector_operand
from ...ir import Value
from ..frames import frame_location, user_frame
from . import dispatch as _rt
from .carry import UNBOUND, map_leaves

__all__ = [
    "scf_if_dispatch",
    "scf_ifexp_dispatch",
    "scf_for_dispatch",
    "scf_while_dispatch",
    "collect_results",
    "dsl_not_",
    "REWRITE_GLOBALS",
    "RT",
    "LOC",
    "inject",
]

RT = "_fly_rt"  # the name under which rewritten code sees the rest of :mod:`.dispatch`
LOC = "_flydsl_loc"  # FlyDSL's name of the statement-location helper (``FallbackLocations``)


def _dsl(x):
    """A carried tree with raw IR values wrapped as DSL values (``i32`` → ``Int32``, vectors → Vector)."""
    return map_leaves(x, lambda v: as_vector_operand(v) if type(v) is Value else v)


def _same(x):
    return x


def _caller_site(kind: str, names) -> tuple:
    """The site of a direct call: the caller's location (errors point there) and the names."""
    f = user_frame(sys._getframe(2))
    file, line, col = frame_location(f) if f is not None else ("<unknown>", 0, 1)
    n = len(names)
    # lines_b of a loop is the text of a target that is not one name: none here (the helper has an iv)
    return (file, line, col, kind, tuple(names), (0,) * n, () if kind == "for" else (0,) * n, 0, ())


def _names_values(names, values, what: str):
    names, values = tuple(names or ()), tuple(values or ())
    if len(names) != len(values):
        raise ValueError(f"{what}: {len(names)} names but {len(values)} values")
    return names, tuple(_dsl(v) for v in values)


def _no_none(names, values, what: str) -> None:
    for n, v in zip(names, values):
        if v is None:
            raise TypeError(
                f"{what}: the loop-carried value '{n}' is None; a run-time loop carries DSL values "
                f"(initialize '{n}' with a value of the type it will hold)"
            )


def _takes_names(fn, n: int) -> bool:
    """FlyDSL's rule: a function with more positional parameters than values (or ``*args``) gets the names."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: give it the values only
        return False
    pos = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    return sum(p.kind in pos for p in params) >= n + 1


def _results(out, names, incoming, wrap, what: str) -> tuple:
    """A function's ``{name: value}`` (or tuple, or bare value) result in ``names`` order."""
    if out is None or not names:
        return tuple(incoming)
    if isinstance(out, dict):
        return tuple(wrap(out[n]) if n in out else v for n, v in zip(names, incoming))
    if isinstance(out, (list, tuple)) and len(out) == len(names):
        return tuple(wrap(v) for v in out)
    if len(names) == 1 and not isinstance(out, (list, tuple)):
        return (wrap(out),)
    got = type(out).__name__
    raise TypeError(f"{what} must return a dict of {{name: value}} (or a tuple of {len(names)}), got {got}")


def _adapt(fn, names, pass_names: bool, wrap, what: str, n_lead: int = 0):
    """The function :mod:`.dispatch` calls (``(*lead, *values) -> tuple``) over one in FlyDSL's convention."""
    k = len(names)

    def run(*vals):
        lead, incoming = vals[:n_lead], vals[len(vals) - k :] if k else ()
        out = fn(*lead, names, *incoming) if pass_names else fn(*lead, *incoming)
        return _results(out, names, incoming, wrap, what)

    return run


def _adapt_generated(fn, names, what: str):
    """:func:`_adapt` for a body the rewrite generated: ``fn(names, *values)`` returning every name."""
    k = len(names)

    def run(*vals):
        out = fn(names, *vals)
        if type(out) is dict and len(out) == k:  # scf_*_collect_results(names, locals())
            return tuple([out[n] for n in names])
        return _results(out, names, vals, _same, what)

    return run


def _adapt_generated_loop(fn, names):
    """:func:`_adapt_generated` for a loop body: ``fn(iv, names, *values)``."""
    k = len(names)

    def run(iv, *vals):
        out = fn(iv, names, *vals)
        if type(out) is dict and len(out) == k:
            return tuple([out[n] for n in names])
        return _results(out, names, vals, _same, "for-body")

    return run


def _pack(values, names):
    n = len(names)
    if n == 0:
        return None
    return values[0] if n == 1 else tuple(values)


def scf_if_dispatch(
    cond,
    then_fn,
    else_fn=None,
    *,
    result_names=(),
    result_values=(),
    state_names=(),
    state_values=(),
    auto_else=False,
    site=None,
):
    """``if cond: then_fn else: else_fn`` over the carried values; returns their final values. A
    compile-time ``cond`` runs one branch and builds no op; a run-time one builds ``scf.if`` yielding the
    values that differ between the branches. ``auto_else`` (FlyDSL's marker of a generated else) changes
    nothing: a missing else keeps the values."""
    if not result_names and state_names:
        result_names, result_values = state_names, state_values
    if site is None:
        names, values = _names_values(result_names, result_values, "scf_if_dispatch")
        site, wrap = _caller_site("if", names), _dsl
        a = _adapt(then_fn, names, _takes_names(then_fn, len(names)), wrap, "then-branch")
        b = _adapt(else_fn, names, _takes_names(else_fn, len(names)), wrap, "else-branch") if else_fn else None
    else:
        names, values = result_names, result_values
        a = _adapt_generated(then_fn, names, "then-branch")
        b = _adapt_generated(else_fn, names, "else-branch") if else_fn is not None else None
    return _pack(_rt.if_(cond, a, b, site, values), names)


def scf_ifexp_dispatch(cond, then_fn, else_fn, *, site=None):
    """``then_fn() if cond else else_fn()``: one side at compile time, else an ``scf.if`` yielding one value."""
    if site is None:
        site = _caller_site("if", ("<ifexp>",))
        return _rt.ifexp(cond, lambda: _dsl(then_fn()), lambda: _dsl(else_fn()), site)
    return _rt.ifexp(cond, then_fn, else_fn, site)


def scf_for_dispatch(start, stop, step, body_fn, *, result_names=(), result_values=(), site=None):
    """``for iv in range(start, stop, step)`` (``scf.for``, i32 induction variable) carrying the values;
    returns their final values."""
    if site is None:
        names, values = _names_values(result_names, result_values, "scf_for_dispatch")
        _no_none(names, values, "scf_for_dispatch")
        body = _adapt(body_fn, names, True, _dsl, "for-body", n_lead=1)
        site = _caller_site("for", names)
    else:
        names, values, body = result_names, result_values, _adapt_generated_loop(body_fn, result_names)
    return _pack(_rt.for_(_rt.RangeSpec((start, stop, step)), body, site, values), names)


def scf_while_dispatch(before_fn, after_fn, *, result_names=(), result_values=(), site=None):
    """``while before_fn(...): after_fn(...)`` carrying the values (a Python loop while the condition is
    static, else ``scf.while``); returns their final values."""
    if site is None:
        names, values = _names_values(result_names, result_values, "scf_while_dispatch")
        _no_none(names, values, "scf_while_dispatch")
        site = _caller_site("while", names)
        pass_before, pass_after = _takes_names(before_fn, len(names)), _takes_names(after_fn, len(names))
        body = _adapt(after_fn, names, pass_after, _dsl, "while-body")
    else:
        names, values, pass_before = result_names, result_values, True
        body = _adapt_generated(after_fn, names, "while-body")

    def cond(*vals):
        return before_fn(names, *vals) if pass_before else before_fn(*vals)

    return _pack(_rt.while_(cond, body, site, values), names)


def collect_results(names, local_vars: dict) -> dict:
    """``{name: value}`` of a generated body's final ``locals()`` (``UNBOUND`` for a name without one)."""
    return {n: local_vars.get(n, UNBOUND) for n in names}


dsl_not_ = _rt.not_

# the names rewritten code calls (``_fly_rt``: the rest of :mod:`.dispatch`, which has no FlyDSL counterpart)
REWRITE_GLOBALS = {
    "scf_if_dispatch": scf_if_dispatch,
    "scf_ifexp_dispatch": scf_ifexp_dispatch,
    "scf_if_collect_results": collect_results,
    "scf_for_dispatch": scf_for_dispatch,
    "scf_for_collect_results": collect_results,
    "scf_while_dispatch": scf_while_dispatch,
    "scf_while_collect_results": collect_results,
    "dsl_not_": dsl_not_,
    RT: _rt,
}


def inject(globals_: dict, statement_loc=None) -> None:
    """Put the helpers into a rewritten function's globals (``statement_loc`` as ``_flydsl_loc`` when given).
    Existing bindings of these names are replaced, as FlyDSL's rewriter does."""
    globals_.update(REWRITE_GLOBALS)
    if statement_loc is not None:
        globals_[LOC] = statement_loc
