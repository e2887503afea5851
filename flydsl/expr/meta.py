"""Tracing metadata helpers (FlyDSL's ``flydsl.expr.meta``).

* :func:`tracing_context` / :func:`tracing_option` — ambient key/value options scoped to a ``with``
  block (an explicit ``None`` shadows an outer value; keys the inner scope does not set stay visible).
  The jit does not read them; kernel helpers may use them to pass settings down a call tree.
* :func:`dsl_loc_tracing` — a decorator for helper functions that build ops: every op the helper
  builds gets the location of the line that *called* the helper (the user's line), not a line inside
  the helper. Calls nested inside an already-located helper keep the outer location.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading

from .. import ir

__all__ = ["tracing_context", "tracing_option", "dsl_loc_tracing", "capture_user_location"]

_tls = threading.local()


def _frames() -> list:
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


@contextlib.contextmanager
def tracing_context(func=None, **options):
    """Push a frame of ambient options (``tracing_option(key)`` reads them) for the ``with`` block.

    Args:
        func: the traced function the frame belongs to (kept for introspection; optional).
        **options: the settings; every key given is set, ``None`` included.
    """
    stack = _frames()
    stack.append((func, dict(options)))
    try:
        yield
    finally:
        stack.pop()


def tracing_option(key, default=None):
    """The innermost value of ``key`` among the active :func:`tracing_context` frames, else ``default``."""
    for _, options in reversed(getattr(_tls, "stack", None) or ()):
        if key in options:
            return options[key]
    return default


def capture_user_location(depth: int = 1):
    """``(file, line, col)`` of the frame ``depth`` levels above the caller."""
    f = sys._getframe(depth + 1)
    col = 0
    try:
        pos = list(f.f_code.co_positions())[f.f_lasti // 2]
        col = (pos[2] or 0) + 1
    except (AttributeError, IndexError, TypeError):
        pass
    return (f.f_code.co_filename, f.f_lineno, col)


def dsl_loc_tracing(fn):
    """Decorate an op-building helper so its ops carry the caller's source location."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(_tls, "active", False):
            return fn(*args, **kwargs)
        loc = capture_user_location(1)
        _tls.active = True
        try:
            with ir.location(loc):
                return fn(*args, **kwargs)
        finally:
            _tls.active = False

    return wrapper
