"""Errors at the API boundary: any exception raised while tracing, compiling or launching, turned into a
located FlyDSL error (the user's file:line), ready to raise from the entry point that caught it."""

from __future__ import annotations

import sys

from ..utils.env import env
from . import errors as E
from .diagnostics import FlyDSLError, wrap_exception
from .errors import error
from .frames import frame_location, traceback_location, user_frame


def user_error(e: BaseException) -> FlyDSLError:
    """Any exception raised while tracing, compiling or launching, as a located DSL error."""
    if isinstance(e, RecursionError) and not isinstance(e, FlyDSLError):
        return error(E.TRACE_RECURSION, traceback_location(e.__traceback__), detail=str(e))
    name = getattr(e, "diag", None) or getattr(e, "fly_diag", None)
    diag = getattr(E, name, None) if isinstance(name, str) else None
    if isinstance(diag, E.Diag) and not isinstance(e, FlyDSLError):
        # a catalogued failure from a lower layer (runtime ArgError, fx protocol errors, fx.nvvm's FLY520)
        fields = dict(getattr(e, "fields", None) or {})
        fields.setdefault("name", "?")
        loc = getattr(e, "loc", None) or traceback_location(e.__traceback__)
        return error(diag, loc, **fields)
    err = wrap_exception(e)
    loc = getattr(e, "loc", None)
    if not isinstance(e, FlyDSLError) and isinstance(loc, tuple) and len(loc) == 3:
        err.loc = loc  # interpreter / codegen faults: the op's own line
    return err


def dsl_error(e: BaseException) -> FlyDSLError:
    """``e`` as a located DSL error, ready to ``raise`` from the API entry point that caught it.

    Located at the caller of the entry point when nothing closer is known. The internal traceback is
    dropped (``FLYDSL_DEBUG_SHOW_STACKTRACE=1`` keeps it as the error's cause).
    """
    err = user_error(e)
    if err.loc is None:
        f = user_frame(sys._getframe(1))
        err.loc = frame_location(f) if f is not None else None
    if env.debug_show_stacktrace:
        if err is not e:
            err.__cause__ = e
        return err
    err.__cause__ = None
    err.__suppress_context__ = True
    return err.with_traceback(None)
