"""A compile-time value (a module global or a closure variable a jit function reads) that changes between
calls: FlyDSL's rule, never stale code.

When a jit function is first called (per class of ``self`` for a method launcher) the values it reads are
snapshotted by content (:func:`snapshot_refs`); a later call whose dependency watch sees a binding that is
no longer the object it was compares the values again. Changed, the call raises FLY229 — as FlyDSL does —
at the line that reads the value, naming it, the old and new values and the fix. With
``FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE=1`` the function instead forgets what it compiled and re-traces with
the new value (whose content is then part of the disk key). Either way the old kernel never runs with the
new value. A value rebound to an equal one is not a change.
"""

from __future__ import annotations

import sys

from ..layout import VALUE_TYPES as LAYOUT_VALUE_TYPES
from . import errors as E
from .deps import Freezer, Untracked, load_site
from .errors import error

__all__ = ["snapshot_refs", "find_change", "drift_error", "UNTRACKED", "GONE"]

UNTRACKED = "<no longer a compile-time value>"
GONE = "<deleted>"
_SHOW_MAX = 80


def snapshot_refs(refs, names=None) -> dict:
    """``{(name, module name): frozen value}`` of the bindings ``refs`` — ``(name, module name, holder)``, the
    holder a module's globals or a :class:`~flydsl.compiler.deps.CellRef` — as they are now. A binding that
    is gone is left out; a value that no longer freezes (rebound to a function, a tensor) is
    :data:`UNTRACKED`. ``names``: the attributes of objects the code reads (None: all of them)."""
    out = {}
    for name, mod, holder in refs:
        if name not in holder:
            continue
        try:
            out[(name, mod)] = Freezer(names, sys.maxsize)(holder[name])
        except Untracked:
            out[(name, mod)] = UNTRACKED
    return out


def find_change(refs, baseline: dict, names=None):
    """The first ``(name, module name, old, new)`` among ``refs`` whose value differs from ``baseline`` (a
    :func:`snapshot_refs`), or None. Bindings the baseline does not have are not compared."""
    for name, mod, holder in refs:
        old = baseline.get((name, mod), _ABSENT)
        if old is _ABSENT:
            continue
        if name in holder:
            try:
                new = Freezer(names, sys.maxsize)(holder[name])
            except Untracked:
                new = UNTRACKED
        else:
            new = GONE
        if new != old:
            return name, mod, old, new
    return None


_ABSENT = object()


def show(frozen) -> str:
    """A frozen value as the user wrote it (short)."""
    text = repr(_thaw(frozen))
    return text if len(text) <= _SHOW_MAX else text[: _SHOW_MAX - 3] + "..."


def _thaw(v):
    if isinstance(v, tuple):
        if len(v) == 2 and isinstance(v[0], type) and v[0] in (bool, float, bytes, type(None)):
            return v[1]  # a typed scalar
        if len(v) == 2 and v[0] in LAYOUT_VALUE_TYPES:
            return _Shown(v[1])  # a layout-layer value: its repr
        if len(v) == 3 and v[0] in ("list", "tuple") and isinstance(v[1], tuple) and isinstance(v[2], tuple):
            return list(v[1]) if v[0] == "list" else v[1]  # a flat sequence
        if len(v) == 2 and v[0] in ("list", "tuple") and isinstance(v[1], tuple):
            items = [_thaw(x) for x in v[1]]
            return items if v[0] == "list" else tuple(items)
        if len(v) == 2 and v[0] == "dict":
            return {_hashable(_thaw(k)): _thaw(x) for k, x in v[1]}
    return v


class _Shown(str):
    """Text shown as it is (``repr`` without quotes)."""

    __repr__ = str.__str__


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def drift_error(fn_name: str, change: tuple, site=None):
    """FLY229 for ``change`` (from :func:`find_change`); ``site`` ``(code, name)`` locates the read."""
    name, mod, old, new = change
    if mod.startswith("<closure of "):
        where = f"closure variable '{name}' of {mod[len('<closure of ') : -1]}"
    else:
        where = f"global '{name}' of module '{mod}'"
    loc = load_site(*site) if site is not None else None
    return error(E.GLOBAL_CHANGED, loc, where=where, name=name, fn=fn_name, old=show(old), new=show(new))
