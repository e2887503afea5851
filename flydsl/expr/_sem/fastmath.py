"""Fast-math flags: ``fx.FastMathFlags``, the ``with fx.fastmath(...)`` context and their precedence.

Fast-math flags relax IEEE-754 semantics of *run-time* float ops (compile-time folds are exact and
emit nothing). The flags of one op come from, highest first:

1. the op's explicit ``fastmath=`` keyword (``fastmath="none"`` switches them off for that op);
2. the innermost ``with fx.fastmath(...)`` block;
3. the compilation default (``flyc.compile`` hint ``fastmath``, else ``"fast"`` when
   ``fast_fp_math=True``: see :func:`default_from_hints`), which the compiler stores in the trace
   context (``with compile_default(flags):`` sets it for a block).

The open blocks and the default belong to the trace in progress (:mod:`.context`): a trace started inside
a ``with fx.fastmath(...)`` block of another one does not see it.

In the IR the flags are the op attribute ``fastmath`` holding the canonical text (``"fast"``,
``"reassoc,contract"``); no attribute means none.
"""

from __future__ import annotations

import enum
from functools import reduce

from .context import context

__all__ = ["FastMathFlags", "fastmath", "parse_fastmath", "resolve_fastmath", "compile_default", "default_from_hints"]


class FastMathFlags(enum.Flag):
    """LLVM fast-math flags. Combine with ``|``; ``fast`` is every flag, ``none`` is no flag."""

    none = 0
    reassoc = enum.auto()
    nnan = enum.auto()
    ninf = enum.auto()
    nsz = enum.auto()
    arcp = enum.auto()
    contract = enum.auto()
    afn = enum.auto()
    fast = reassoc | nnan | ninf | nsz | arcp | contract | afn

    def __str__(self) -> str:
        """The canonical attribute text: ``"fast"``, ``"none"`` or the flags in LLVM order, comma-separated."""
        if self == FastMathFlags.fast:
            return "fast"
        if not self:
            return "none"
        return ",".join(m.name for m in _ORDER if m in self)


_ORDER = (
    FastMathFlags.reassoc,
    FastMathFlags.nnan,
    FastMathFlags.ninf,
    FastMathFlags.nsz,
    FastMathFlags.arcp,
    FastMathFlags.contract,
    FastMathFlags.afn,
)
_BY_NAME = dict(FastMathFlags.__members__)  # iteration would skip "none" and "fast"


def parse_fastmath(spec) -> FastMathFlags:
    """Normalize a flag specification.

    Args:
        spec: a :class:`FastMathFlags` value, a string (``"fast"``, ``"none"``, ``"nnan,ninf"``; ``|``
            and spaces also separate), or a list/tuple/set of either.

    Returns:
        The combined :class:`FastMathFlags`.

    Raises:
        ValueError: an unknown flag name. TypeError: a value of another kind.
    """
    if isinstance(spec, FastMathFlags):
        return spec
    if isinstance(spec, str):
        names = [n for n in spec.replace("|", ",").replace(" ", ",").split(",") if n]
        out = FastMathFlags.none
        for n in names:
            flag = _BY_NAME.get(n)
            if flag is None:
                raise ValueError(f"unknown fast-math flag {n!r}; known: {', '.join(_BY_NAME)}")
            out |= flag
        return out
    if isinstance(spec, (list, tuple, set, frozenset)):
        return reduce(lambda a, b: a | parse_fastmath(b), spec, FastMathFlags.none)
    raise TypeError(f"fastmath flags must be fx.FastMathFlags, a string or a list of them, got {spec!r}")


class fastmath:
    """``with fx.fastmath(flags):`` sets the ambient flags of every run-time float op built inside.

    Args:
        flags: anything :func:`parse_fastmath` accepts (``fx.FastMathFlags.fast``, ``"contract"``…).

    Nested blocks override outer ones; leaving a block restores the enclosing setting. An op's own
    ``fastmath=`` keyword still wins over the block.
    """

    __slots__ = ("flags", "_scopes")

    def __init__(self, flags):
        self.flags = parse_fastmath(flags)

    def __enter__(self) -> FastMathFlags:
        self._scopes = context().fastmath_scopes  # the trace's own list (innermost block last)
        self._scopes.append(self.flags)
        return self.flags

    def __exit__(self, *exc) -> None:
        self._scopes.pop()


class compile_default:
    """``with compile_default(flags):`` — the compiler's per-trace default (lowest precedence).

    Args:
        flags: a flag specification or None (no default). See :func:`default_from_hints`.
    """

    __slots__ = ("flags", "_ctx", "_prev")

    def __init__(self, flags):
        self.flags = None if flags is None else parse_fastmath(flags)

    def __enter__(self):
        ctx = self._ctx = context()
        self._prev = ctx.fastmath_default
        ctx.fastmath_default = self.flags
        return self.flags

    def __exit__(self, *exc) -> None:
        self._ctx.fastmath_default = self._prev


def default_from_hints(hints: dict) -> FastMathFlags | None:
    """The compilation default from ``flyc.compile`` hints: ``fastmath`` if present, else ``fast``
    when ``fast_fp_math`` is true, else None."""
    if hints.get("fastmath") is not None:
        return parse_fastmath(hints["fastmath"])
    if hints.get("fast_fp_math"):
        return FastMathFlags.fast
    return None


def resolve_fastmath(explicit=None) -> str | None:
    """The ``fastmath`` attribute text for a new run-time float op, or None for no flags.

    Args:
        explicit: the op's ``fastmath=`` keyword (None when not given).
    """
    if explicit is not None:
        flags = parse_fastmath(explicit)
    else:
        ctx = context()
        if ctx.fastmath_scopes:
            flags = ctx.fastmath_scopes[-1]
        elif ctx.fastmath_default is not None:
            flags = ctx.fastmath_default
        else:
            return None
    return str(flags) if flags else None


def fastmath_attrs(explicit=None) -> dict:
    """``{"fastmath": text}`` for op construction, or ``{}``."""
    f = resolve_fastmath(explicit)
    return {"fastmath": f} if f else {}
