"""``flydsl.compiler.ast_rewriter``: FlyDSL's names for the control-flow rewrite and its dispatch helpers.

``ASTRewriter.transform(fn)`` returns ``fn`` with its ``if``/``for``/``while``/``and``/``or``/``not``
rewritten into trace-time dispatch (our :func:`~flydsl.compiler.frontend.rewrite_function`): called
while a kernel is traced, run-time conditions become ``scf`` ops; called as plain Python, static
conditions behave as Python. FlyDSL kernel helpers apply it to functions they call from kernels.

The dispatch helpers, with FlyDSL's calling convention, build one structured op from Python callables —
the same merge, promotion and checks as the rewritten code (:mod:`~flydsl.compiler.frontend.dispatch`):

* ``ReplaceIfWithDispatch.scf_if_dispatch(cond, then_fn, else_fn, state_names=, state_values=)``: the
  branch functions take the state values and return ``{name: new value}``; with ``result_names=``/
  ``result_values=`` instead they take ``(names, *values)``. A compile-time ``cond`` runs one branch and
  builds no op; a run-time one builds ``scf.if`` carrying the values that differ between the branches.
* ``ReplaceIfWithDispatch.scf_ifexp_dispatch(cond, then_thunk, else_thunk)``: ``a if cond else b``.
* ``InsertEmptyYieldForSCFFor.scf_for_dispatch(start, stop, step, body_fn, result_names=, result_values=)``:
  ``body_fn(iv, names, *values)`` returns ``{name: new value}``; ``scf.for`` carries the values.
* ``CanonicalizeWhile.scf_while_dispatch(before_fn, after_fn, result_names=, result_values=)``:
  ``before_fn(names, *values)`` is the condition, ``after_fn(names, *values)`` the body.

Each returns None for no values, the value for one, a tuple for several. Carried values are trees of lists,
tuples, dicts and namespaces whose leaves are DSL values, raw IR values (given back as DSL values) or
Python numbers (promoted to the other path's type, or to ``Int32``/``Float32`` in a loop). A run-time
loop cannot carry ``None`` (``TypeError``); types or structures that differ between paths are FLY101/
FLY104/FLY105 (``TypeError``: "does not match the region entry"). FlyDSL's transformer classes themselves
(``visit_*``) and its globals-injected dispatch names are internals of its rewrite and are not provided.
"""

from __future__ import annotations

import sys

from ..expr._sem.vector import as_vector_operand
from ..ir import Value
from ..utils.env import env
from .frames import frame_location, user_frame
from .frontend import dispatch as _rt
from .frontend import rewrite_function
from .frontend.carry import map_leaves

__all__ = ["ASTRewriter", "ReplaceIfWithDispatch", "InsertEmptyYieldForSCFFor", "CanonicalizeWhile"]


class ASTRewriter:
    """``ASTRewriter.transform(fn)``: the control-flow rewrite of one function."""

    @classmethod
    def transform(cls, f):
        """``f`` with its control flow rewritten (``f`` itself when its source cannot be read). With
        ``FLYDSL_DEBUG_ENABLE_DEBUG_INFO=1`` each top-level statement also gives the raw ops it builds its
        own location (FlyDSL's ``FallbackLocations``; ``flydsl._mlir._locations``)."""
        if not env.debug_enable_debug_info:
            return rewrite_function(f)
        from .._mlir._locations import fallback_location  # cycle: the facade is built on the compiler

        return rewrite_function(f, statement_loc=fallback_location)


def __getattr__(name: str):
    """``FallbackLocations``: the facade's (:mod:`flydsl._mlir._locations`), resolved on first use."""
    if name == "FallbackLocations":
        from .._mlir._locations import FallbackLocations  # cycle: the facade is built on the compiler

        return FallbackLocations
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _dsl(x):
    """A carried tree with raw IR values wrapped as DSL values (``i32`` → ``Int32``, vectors → Vector)."""
    return map_leaves(x, lambda v: as_vector_operand(v) if type(v) is Value else v)


def _site(kind: str, names) -> tuple:
    """The dispatch site of a helper call: the caller's location (errors point there) and the names."""
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


def _no_lead(vals) -> tuple:
    return ()


def _body(fn, names, pass_names: bool, lead=_no_lead):
    """Our dispatch's branch/body function over FlyDSL's: call ``fn`` (on ``lead(vals)``, then ``names`` when
    ``pass_names``, then the carried values) and read its ``{name: value}`` result back in ``names`` order (a
    name it leaves out keeps its incoming value; None keeps them all)."""

    def run(*vals):
        incoming = vals[len(vals) - len(names) :]
        args = (*lead(vals), names) if pass_names else lead(vals)
        out = fn(*args, *incoming)
        if out is None:
            return tuple(incoming)
        if not isinstance(out, dict):
            raise TypeError(f"a dispatch function must return a dict of {{name: value}}, got {type(out).__name__}")
        return tuple(_dsl(out[n]) if n in out else v for n, v in zip(names, incoming))

    return run


def _pack(values, names):
    values = tuple(values)
    if not names:
        return None
    return values[0] if len(names) == 1 else values


class ReplaceIfWithDispatch:
    """FlyDSL's ``if`` dispatch helpers (see the module docstring)."""

    @staticmethod
    def scf_if_dispatch(
        cond, then_fn, else_fn=None, *, state_names=None, state_values=None, result_names=None, result_values=None
    ):
        """``if cond: then_fn else: else_fn`` over the carried values; returns their final values."""
        pass_names = result_names is not None
        if pass_names:
            names, values = _names_values(result_names, result_values, "scf_if_dispatch")
        else:
            names, values = _names_values(state_names, state_values, "scf_if_dispatch")
        site = _site("if", names)
        a = _body(then_fn, names, pass_names)
        b = _body(else_fn, names, pass_names) if else_fn is not None else None
        return _pack(_rt.if_(cond, a, b, site, values), names)

    @staticmethod
    def scf_ifexp_dispatch(cond, then_fn, else_fn):
        """``then_fn() if cond else else_fn()``: one branch at compile time, else an ``scf.if`` yielding
        one value."""
        site = _site("if", ("<ifexp>",))
        return _rt.ifexp(cond, lambda: _dsl(then_fn()), lambda: _dsl(else_fn()), site)


class InsertEmptyYieldForSCFFor:
    """FlyDSL's ``for`` dispatch helper (see the module docstring)."""

    @staticmethod
    def scf_for_dispatch(start, stop, step, body_fn, *, result_names=(), result_values=()):
        """``for iv in range(start, stop, step)`` carrying ``result_values``; returns their final values."""
        names, values = _names_values(result_names, result_values, "scf_for_dispatch")
        _no_none(names, values, "scf_for_dispatch")
        site = _site("for", names)
        body = _body(body_fn, names, True, lambda vals: (vals[0],))
        it = _rt.RangeSpec((start, stop, step))
        return _pack(_rt.for_(it, body, site, values), names)


class CanonicalizeWhile:
    """FlyDSL's ``while`` dispatch helper (see the module docstring)."""

    @staticmethod
    def scf_while_dispatch(before_fn, after_fn, *, result_names=(), result_values=()):
        """``while before_fn(...): after_fn(...)`` carrying ``result_values``; returns their final values."""
        names, values = _names_values(result_names, result_values, "scf_while_dispatch")
        site = _site("while", names)

        def cond(*vals):
            return before_fn(names, *vals)

        _no_none(names, values, "scf_while_dispatch")
        body = _body(after_fn, names, True)
        return _pack(_rt.while_(cond, body, site, values), names)
