"""DSL errors: one exception family, rendered at the user's line with a caret and a fix.

Every error raised while tracing a kernel reaches the user as a :class:`FlyDSLError` whose text is::

    /path/to/user.py:12:9: error: variable 'x' is Int32 in one branch and Float32 in the other ...
        x = 1.0
        ^
    fix: give 'x' one type in both branches, ...

Errors keep their Python category: a DSL type error is also a ``TypeError`` (``except TypeError``
still works), an error from the user's own code keeps its class (:func:`wrap_exception` derives a
class from both). The catalogue of user errors (ids, messages, fixes) is :mod:`flydsl.compiler.errors`.
``FLYDSL_DEBUG_SHOW_STACKTRACE=1`` keeps the internal traceback chained to the error.
"""

from __future__ import annotations

import linecache
import sys
import traceback
from dataclasses import dataclass, field

from ..ir import IRError
from ..utils.env import env
from .frames import FLYDSL_DIR, traceback_location

__all__ = [
    "FlyDSLError",
    "DSLTypeError",
    "DSLValueError",
    "DSLNameError",
    "DSLIndexError",
    "ControlFlowError",
    "TraceLimitError",
    "CompileError",
    "LaunchError",
    "render",
    "wrap_exception",
    "SourceFrame",
    "DiagRecord",
    "DSLCompileError",
    "GlobalChangedError",
    "install_excepthook",
]


def render(message: str, loc=None, fix: str | None = None, diag_id: str | None = None) -> str:
    """The user-facing text of an error: ``file:line:col: error[id]: message``, source, caret, fix."""
    tag = f"error[{diag_id}]" if diag_id else "error"
    lines = []
    if loc is not None and loc[0]:
        file, line, col = loc
        lines.append(f"{file}:{line}:{col}: {tag}: {message}")
        src = linecache.getline(file, line) if line else ""
        if src.strip():
            text = src.rstrip("\n").expandtabs(4)
            indent = len(text) - len(text.lstrip())
            lines.append("    " + text[indent:])
            lines.append("    " + " " * max(0, col - 1 - indent) + "^")
    else:
        lines.append(f"{tag}: {message}")
    if fix:
        lines.append(f"fix: {fix}")
    return "\n".join(lines)


class FlyDSLError(Exception):
    """Base of every error the DSL reports. ``loc`` is ``(file, line, col)``; ``fix`` a suggestion."""

    def __init__(self, message: str, loc=None, fix: str | None = None, diag_id: str | None = None):
        self.message = message
        self.loc = loc
        self.fix = fix
        self.diag_id = diag_id
        super().__init__(message)

    def with_location(self, loc):
        """Set the location if none is known yet (the first, innermost, location wins)."""
        if self.loc is None or not self.loc[0]:
            self.loc = loc
        return self

    def __str__(self) -> str:
        return render(self.message, self.loc, self.fix, self.diag_id)


class DSLTypeError(FlyDSLError, TypeError):
    """A value of the wrong kind (run-time value where Python needs a concrete one, type mismatch)."""


class DSLValueError(FlyDSLError, ValueError):
    """A value out of the accepted range (launch dimensions, shapes, Constexpr values)."""


class DSLNameError(FlyDSLError, NameError):
    """A variable used where it is not defined (only in one branch, only inside a kernel loop)."""


class DSLIndexError(FlyDSLError, IndexError):
    """An index out of range at trace time."""


class ControlFlowError(FlyDSLError):
    """A Python construct the kernel's run-time control flow cannot express (break in scf.for, ...)."""


class TraceLimitError(FlyDSLError, RuntimeError):
    """Tracing stopped: too many ops, too deep a recursion, or a compile-time loop that never ends."""


class CompileError(FlyDSLError, RuntimeError):
    """An internal failure (verifier, pass, code generation) — carries the op and its location."""

    def __init__(self, message: str, loc=None, fix: str | None = None, diag_id: str | None = None, op=None):
        super().__init__(message, loc, fix, diag_id)
        self.op = op


class GlobalChangedError(FlyDSLError, RuntimeError):
    """A compile-time global or closure value a jit function was compiled with changed (FlyDSL raises too)."""


class LaunchError(FlyDSLError, RuntimeError):
    """A kernel could not be launched (driver error, interpreter fault), naming kernel and argument."""


_WRAPPED: dict[type, type] = {}


def _wrapper_class(cls: type) -> type:
    """``FlyDSLError`` + ``cls`` (so ``except cls`` still catches the re-raised error)."""
    w = _WRAPPED.get(cls)
    if w is None:
        try:
            w = type(cls.__name__, (FlyDSLError, cls), {"__module__": cls.__module__})
            w("probe")  # some exception classes cannot be constructed from one message
        except Exception:
            w = FlyDSLError
        _WRAPPED[cls] = w
    return w


def wrap_exception(exc: BaseException, fix: str | None = None) -> FlyDSLError:
    """``exc`` as a DSL error located at the innermost user frame of its traceback.

    A ``FlyDSLError`` only gains a location if it has none. Other exceptions become an instance of
    a class derived from both ``FlyDSLError`` and their own class, with the same message.
    """
    loc = traceback_location(exc.__traceback__)
    if isinstance(exc, FlyDSLError):
        return exc.with_location(loc)
    if isinstance(exc, IRError) and exc.loc is not None:
        loc = exc.loc
    msg = str(exc) if str(exc) else type(exc).__name__
    if isinstance(exc, KeyError) and exc.args:
        msg = f"KeyError: {exc.args[0]!r}"
    cls = _wrapper_class(type(exc))
    err = cls.__new__(cls)
    FlyDSLError.__init__(err, msg, loc, fix)
    err.args = (msg,)
    err.original = exc
    return err


# -- FlyDSL's structured compile diagnostics ------------------------------------------------------


@dataclass
class SourceFrame:
    """One source position of a diagnostic: ``col``/``end_col`` are 0-based columns of ``line``."""

    filename: str
    line: int
    col: int = 0
    end_col: int | None = None


@dataclass
class DiagRecord:
    """A diagnostic: its message and the chain of source frames, innermost first."""

    message: str
    chain: list = field(default_factory=list)


def _render_frame(f: SourceFrame) -> list[str]:
    out = [f'  File "{f.filename}", line {f.line}']
    src = linecache.getline(f.filename, f.line).rstrip("\n").expandtabs(4)
    if src.strip():
        indent = len(src) - len(src.lstrip())
        out.append("    " + src[indent:])
        width = max(1, (f.end_col if f.end_col is not None else f.col + 1) - f.col)
        out.append("    " + " " * max(0, f.col - indent) + "^" * width)
    return out


class DSLCompileError(FlyDSLError, RuntimeError):
    """A compile failure with FlyDSL's structured diagnostics (``DiagRecord`` list); ``str()`` shows each
    diagnostic's message and its source chain outermost first, with the code and a caret under it."""

    def __init__(self, message: str, diagnostics=None, loc=None):
        super().__init__(message, loc)
        self.diagnostics = list(diagnostics or [])

    def __str__(self) -> str:
        shown = [d for d in self.diagnostics if d.message]
        if not shown:
            return self.message
        lines = [self.message]
        for d in shown:
            lines.append(d.message)
            if d.chain:
                lines.append("DSL Traceback (most recent operation last):")
                for f in reversed(d.chain):
                    lines.extend(_render_frame(f))
        return "\n".join(lines)


def _is_framework_file(filename: str) -> bool:
    """True for flydsl's own source files (hidden from the user's traceback by the excepthook)."""
    return not filename or filename.startswith("<") or filename.startswith(FLYDSL_DIR)


_dsl_excepthook_installed = False


def install_excepthook() -> None:
    """Make uncaught :class:`FlyDSLError`\\ s print the user's frames only, then the error (idempotent).
    ``FLYDSL_DEBUG_SHOW_STACKTRACE=1`` keeps Python's full traceback; other exceptions are untouched."""
    global _dsl_excepthook_installed
    mod = sys.modules[__name__]
    if mod._dsl_excepthook_installed:
        return
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if env.debug_show_stacktrace or not isinstance(exc, FlyDSLError):
            return previous(exc_type, exc, tb)
        frames = [f for f in traceback.extract_tb(tb) if not mod._is_framework_file(f.filename)]
        text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
        sys.stderr.write(text + "-" * 60 + "\n" + f"{exc_type.__name__}: {exc}\n")

    sys.excepthook = hook
    mod._dsl_excepthook_installed = True
