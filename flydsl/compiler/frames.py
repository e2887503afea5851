"""Where is the user? Python frames and code objects inside and outside the flydsl package.

Every op gets the source location of the innermost frame that is not flydsl's own code (the user's
kernel line, or the helper the user called), and every error is reported at that same frame. Code
objects are classified once and remembered, so the per-op cost is a few dictionary lookups.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import warnings
from types import CodeType, FrameType, TracebackType

import flydsl

__all__ = [
    "FLYDSL_DIR",
    "is_internal",
    "is_user_path",
    "user_frame",
    "frame_location",
    "current_location",
    "traceback_location",
    "column_of",
    "warn_at_user",
]

FLYDSL_DIR = os.path.dirname(os.path.abspath(flydsl.__file__)) + os.sep

_internal: dict[CodeType, bool] = {}
_positions: dict[CodeType, list] = {}


def _library_dirs() -> tuple:
    paths = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.abspath(p) + os.sep for p in paths if p and not FLYDSL_DIR.startswith(os.path.abspath(p)))


_LIBRARY_DIRS = _library_dirs()
_SITE = ("site-packages" + os.sep, "dist-packages" + os.sep)


def is_user_path(filename: str) -> bool:
    """A file of the user's (not flydsl, the standard library or an installed package; not frozen)."""
    if filename.startswith("<"):  # "<flydsl ...>": code flydsl generates (dispatchers, launch plans)
        return not filename.startswith(("<frozen", "<flydsl"))
    p = os.path.abspath(filename)
    return not (p.startswith(FLYDSL_DIR) or any(s in p for s in _SITE) or p.startswith(_LIBRARY_DIRS))


def is_internal(code: CodeType) -> bool:
    """True for code that is not the user's: flydsl itself, the standard library, installed packages."""
    r = _internal.get(code)
    if r is None:
        r = _internal[code] = not is_user_path(code.co_filename)
    return r


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame at or above ``frame`` whose code is not flydsl's."""
    internal = _internal
    while frame is not None:
        code = frame.f_code
        r = internal.get(code)
        if r is None:
            r = is_internal(code)
        if not r:
            return frame
        frame = frame.f_back
    return None


def column_of(code: CodeType, lasti: int) -> tuple[int | None, int]:
    """(line, 1-based column) of the instruction at byte offset ``lasti`` (column 1 if unknown)."""
    pos = _positions.get(code)
    if pos is None:
        try:
            pos = list(code.co_positions())  # Python >= 3.11
        except AttributeError:  # pragma: no cover - Python 3.10
            pos = []
        _positions[code] = pos
    k = lasti // 2
    if 0 <= k < len(pos):
        line, _, col, _ = pos[k]
        return line, (col + 1 if col is not None else 1)
    return None, 1


def frame_location(frame: FrameType) -> tuple:
    """``(filename, line, column)`` of the instruction ``frame`` is executing."""
    code = frame.f_code
    line, col = column_of(code, frame.f_lasti)
    return (code.co_filename, line if line is not None else frame.f_lineno, col)


def current_location():
    """The location provider installed while tracing: the user's (file, line, col) or None."""
    f = user_frame(sys._getframe(2))
    if f is None:
        return None
    return frame_location(f)


def traceback_location(tb: TracebackType | None) -> tuple | None:
    """The location of the innermost user frame of a traceback (None if it has none)."""
    loc = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not is_internal(code):
            line, col = column_of(code, tb.tb_lasti)
            loc = (code.co_filename, line if line is not None else tb.tb_lineno, col)
        tb = tb.tb_next
    return loc


def warn_at_user(text: str, category: type = RuntimeWarning) -> None:
    """``warnings.warn`` located at the innermost user frame (the user's call), not inside flydsl."""
    f = user_frame(sys._getframe(1))
    if f is None:
        warnings.warn(text, category, stacklevel=2)
    else:
        warnings.warn_explicit(text, category, f.f_code.co_filename, f.f_lineno, f.f_globals.get("__name__"))
