"""``flydsl.compiler.ast_rewriter``: FlyDSL's names for the control-flow rewrite and its dispatch helpers.

``ASTRewriter.transform(f)`` rewrites ``f``'s ``if``/``for``/``while``/``x if c else y``/``not``/``and``/
``or`` with our front end (:mod:`~flydsl.compiler.frontend.ast_rewrite`, the rewrite every kernel and jit
function gets) and, as FlyDSL's does, mutates ``f`` in place: ``f.__code__`` becomes the rewritten body and
the helpers it calls are put into ``f.__globals__`` under FlyDSL's names — ``scf_if_dispatch``,
``scf_ifexp_dispatch``, ``scf_if_collect_results``, ``scf_for_dispatch``, ``scf_for_collect_results``,
``scf_while_dispatch``, ``scf_while_collect_results``, ``dsl_not_`` (and ``_flydsl_loc`` with debug info);
our own ``_fly_rt`` holds the rest (``and``/``or``/chained comparisons, whose right sides we pass as
thunks, the explicit ``range(..., init=)`` loop, the undefined-variable sentinel). A wrapper assigned to
one of those globals sees every call the rewritten code makes. When the rewrite stops reading one of
``f``'s closure variables, a new function is returned instead (as FlyDSL's). Called while a kernel is
traced, run-time conditions become ``scf`` ops; called as plain Python, static conditions behave as Python.

The helpers are also the classes' static methods, with FlyDSL's calling convention
(:mod:`~flydsl.compiler.frontend.helpers` documents it): ``ReplaceIfWithDispatch.scf_if_dispatch``/
``.scf_ifexp_dispatch``, ``InsertEmptyYieldForSCFFor.scf_for_dispatch``, ``CanonicalizeWhile.
scf_while_dispatch``, ``RewriteBoolOps.dsl_not_``; each class's ``rewrite_globals()`` gives the names it
contributes and ``ASTRewriter.rewrite_globals`` all of them. Carried values are trees of lists, tuples,
dicts and namespaces whose leaves are DSL values, raw IR values or Python numbers (promoted to the other
path's type, or to ``Int32``/``Float32`` in a loop); types or structures that differ between paths are
FLY101/FLY104/FLY105 (``TypeError``: "does not match the region entry"). ``_collect_assigned_vars`` is the
analysis that picks the carried variables. FlyDSL's transformer passes themselves (``visit_*``) are not
provided: the rewrite is one pass here.
"""

from __future__ import annotations

from ..utils.env import env
from .frontend import helpers as _h
from .frontend.ast_rewrite import rewrite_in_place
from .frontend.scope import collect_assigned_vars as _collect_assigned_vars

__all__ = [
    "ASTRewriter",
    "RewriteBoolOps",
    "ReplaceIfWithDispatch",
    "InsertEmptyYieldForSCFFor",
    "CanonicalizeWhile",
    "_collect_assigned_vars",
]


class RewriteBoolOps:
    """``not x`` → ``dsl_not_(x)`` (``and``/``or`` keep their right side lazy: ``_fly_rt.and_``/``or_``)."""

    dsl_not_ = staticmethod(_h.dsl_not_)

    @classmethod
    def rewrite_globals(cls) -> dict:
        return {"dsl_not_": _h.dsl_not_}


class ReplaceIfWithDispatch:
    """``if`` and ``x if c else y`` → ``scf_if_dispatch`` / ``scf_ifexp_dispatch``."""

    scf_if_dispatch = staticmethod(_h.scf_if_dispatch)
    scf_ifexp_dispatch = staticmethod(_h.scf_ifexp_dispatch)
    _collect_result_dict = staticmethod(_h.collect_results)

    @classmethod
    def rewrite_globals(cls) -> dict:
        return {
            "scf_if_dispatch": _h.scf_if_dispatch,
            "scf_ifexp_dispatch": _h.scf_ifexp_dispatch,
            "scf_if_collect_results": _h.collect_results,
        }


class InsertEmptyYieldForSCFFor:
    """``for i in range(...)`` → ``scf_for_dispatch``."""

    scf_for_dispatch = staticmethod(_h.scf_for_dispatch)

    @classmethod
    def rewrite_globals(cls) -> dict:
        return {"scf_for_dispatch": _h.scf_for_dispatch, "scf_for_collect_results": _h.collect_results}


class CanonicalizeWhile:
    """``while c`` → ``scf_while_dispatch``."""

    scf_while_dispatch = staticmethod(_h.scf_while_dispatch)

    @classmethod
    def rewrite_globals(cls) -> dict:
        return {"scf_while_dispatch": _h.scf_while_dispatch, "scf_while_collect_results": _h.collect_results}


class ASTRewriter:
    """``ASTRewriter.transform(fn)``: the control-flow rewrite of one function, in place."""

    rewrite_globals = dict(_h.REWRITE_GLOBALS)  # every name the rewritten code calls

    @classmethod
    def transform(cls, f):
        """``f`` with its control flow rewritten, in place where its closure allows (see the module
        docstring); ``f`` unchanged when its source cannot be read. With ``FLYDSL_DEBUG_ENABLE_DEBUG_INFO=1``
        each top-level statement also gives the raw ops it builds its own location (FlyDSL's
        ``FallbackLocations``; ``flydsl._mlir._locations``)."""
        if not env.debug_enable_debug_info:
            return rewrite_in_place(f)
        from .._mlir._locations import fallback_location  # cycle: the facade is built on the compiler

        return rewrite_in_place(f, statement_loc=fallback_location)


def __getattr__(name: str):
    """``FallbackLocations``: the facade's (:mod:`flydsl._mlir._locations`), resolved on first use."""
    if name == "FallbackLocations":
        from .._mlir._locations import FallbackLocations  # cycle: the facade is built on the compiler

        return FallbackLocations
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
