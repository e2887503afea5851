"""Compile-time control helpers the front end's AST rewrite recognizes: ``fx.const_expr`` and
``fx.range_constexpr``."""

from __future__ import annotations

__all__ = ["const_expr", "range_constexpr"]


def const_expr(x):
    """Mark ``x`` as a compile-time expression: ``if fx.const_expr(cond):`` / ``while fx.const_expr(c):``
    stay Python control flow (no scf.if/scf.while). Returns ``x`` unchanged."""
    return x


def range_constexpr(*args) -> range:
    """``range(*args)`` unrolled at trace time: ``for i in fx.range_constexpr(4):`` runs the body four
    times in Python (``i`` is a Python int). The bounds must be compile-time values.

    Raises:
        TypeError: a run-time bound (use ``range(n)`` in a kernel for a device loop).
    """
    return range(*args)
