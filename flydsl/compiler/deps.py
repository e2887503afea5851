"""What a jit function's compiled code depends on besides its arguments: its source, the source of
the kernels and helpers it reaches, and the compile-time values it reads from globals and closures.

:func:`collect` walks the code objects of the function (and of nested functions, lambdas and
comprehensions): every name it reads from its module globals and every closure cell is looked at.

* kernels / jit functions (anything with ``__fly_function__``) and plain functions defined in user
  files are followed recursively (their source enters the key);
* user modules referenced by name (``import helpers`` … ``helpers.f()``) enter with their file's hash;
* compile-time values (ints, floats, bools, strings, None, enums, DSL types, static DSL numbers, and
  tuples/lists/dicts/sets of these) enter with their canonical value, and are re-checked on every call
  (:class:`Deps` ``.changed()``: rebinding, or editing a container of up to 64 items in place) so that a
  change recompiles instead of running a stale kernel;
* anything else (library functions and objects) is ignored: flydsl's own source is covered by the
  compiler hash, third-party libraries by their version not at all (as Triton and FlyDSL).

"User file" means a file outside the flydsl package, the standard library and site-packages.
"""

from __future__ import annotations

import copy
import enum
import hashlib
import inspect
import operator
import sys
import types

from .frames import is_user_path

__all__ = ["Deps", "collect", "is_user_file", "compile_time_value"]

_MISSING = object()


def is_user_file(path: str | None) -> bool:
    """A real file of the user's (see :func:`flydsl.compiler.frames.is_user_path`)."""
    return bool(path) and not path.startswith("<") and is_user_path(path)


_MUTABLE = (list, dict, set)
_WATCH_MAX = 64  # containers up to this length are re-read by content on every call


def compile_time_value(v) -> bool:
    """Values whose content (not identity) shapes the generated code."""
    if v is None or type(v) in (bool, int, float, str, bytes):
        return True
    if isinstance(v, (tuple, list, set, frozenset)):
        return all(compile_time_value(x) for x in v)
    if isinstance(v, dict):
        return all(compile_time_value(k) and compile_time_value(x) for k, x in v.items())
    if isinstance(v, enum.Enum):
        return True
    if isinstance(v, type) and getattr(v, "_is_numeric", False):
        return True
    try:
        if getattr(v, "_is_numeric", False) and not isinstance(v, type):
            return v.is_static()
    except Exception:  # an object whose attribute lookup fails is not a compile-time value
        return False
    return False


def freeze(v):
    """A hashable, comparable, canonical-serializable form of a compile-time value (containers by content)."""
    if isinstance(v, list):
        return ("<list>", tuple(freeze(x) for x in v))
    if isinstance(v, (set, frozenset)):
        return ("<set>", tuple(sorted((freeze(x) for x in v), key=repr)))
    if isinstance(v, dict):
        return ("<dict>", tuple(sorted(((freeze(k), freeze(x)) for k, x in v.items()), key=repr)))
    if isinstance(v, tuple) and type(v) is tuple:
        return tuple(freeze(x) for x in v)
    return v


def _never() -> bool:
    return False


def _always() -> bool:
    return True


class Deps:
    """The dependencies of one function (see the module docstring)."""

    def __init__(self):
        self.sources: list[tuple[str, str]] = []  # (qualified name, source text or code digest)
        self.modules: list[tuple[str, str]] = []  # (module name, sha256 of its file)
        self.values: list[tuple[str, object]] = []  # (label, value) compile-time values
        self._refs: list = []  # (dict or cell, key) to re-read the values

    def current_values(self) -> tuple:
        """The values now; mutable containers as their frozen content (so in-place edits show)."""
        out = []
        for holder, key in self._refs:
            if key is None:
                try:
                    v = holder.cell_contents
                except ValueError:
                    v = _MISSING
            else:
                v = holder.get(key, _MISSING)
            # small containers are compared by content on every call; big ones (tables) by identity only
            out.append(freeze(v) if type(v) in _MUTABLE and len(v) <= _WATCH_MAX else v)
        return tuple(out)

    def watcher(self):
        """A function answering, cheaply, "is every compile-time value still the very object it is now (and
        every watched container's content equal)?" — the fast path's per-call check. ``False`` does not
        mean changed (a value rebound to an equal one): ask :meth:`changed`, then make a new watcher.

        Generated code: the values are read with one ``itemgetter`` per module dict and one ``attrgetter``
        over the cells, and compared by identity in C (``map(operator.is_, ...)``): a few hundred ns for
        dozens of values; a function without compile-time values gets a constant ``True``.
        """
        groups: dict = {}
        cells = []
        for holder, key in self._refs:
            if key is None:
                cells.append(holder)
            else:
                groups.setdefault(id(holder), (holder, []))[1].append(key)
        try:
            getters = [(h, operator.itemgetter(*keys, keys[0])) for h, keys in groups.values()]
            now = [g(h) for h, g in getters]
            cell_now = tuple(c.cell_contents for c in cells)
        except (KeyError, ValueError):  # a name deleted or a cell emptied since collect(): never unchanged
            return _never
        watched = [v for vals in (*now, cell_now) for v in vals if type(v) in _MUTABLE and len(v) <= _WATCH_MAX]
        ns = {"is_": operator.is_, "eq": operator.eq, "CG": operator.attrgetter("cell_contents"), "CELLS": cells,
              "CV": cell_now, "W": watched, "COPIES": copy.deepcopy(watched)}  # fmt: skip
        terms = []
        for i, ((h, g), vals) in enumerate(zip(getters, now)):
            ns[f"G{i}"], ns[f"H{i}"], ns[f"V{i}"] = g, h, vals
            terms.append(f"all(map(is_, G{i}(H{i}), V{i}))")
        if cells:
            terms.append("all(map(is_, map(CG, CELLS), CV))")
        if watched:
            terms.append("all(map(eq, W, COPIES))")
        if not terms:
            return _always
        src = "def unchanged():\n    try:\n        return " + " and ".join(terms)
        src += "\n    except (KeyError, ValueError):\n        return False\n"
        exec(compile(src, "<dependency watch>", "exec"), ns)
        return ns["unchanged"]

    def changed(self, snapshot: tuple) -> bool:
        """True when a compile-time global/closure value was rebound (or a container edited) since ``snapshot``."""
        cur = self.current_values()
        return any(a is not b and (type(a) is not tuple or a != b) for a, b in zip(cur, snapshot))


def _source_of(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        if code is None:
            return f"<no source: {getattr(obj, '__qualname__', type(obj).__name__)}>"
        return "<bytecode> " + hashlib.sha256(code.co_code + repr(code.co_names).encode()).hexdigest()


def _file_hash(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return "<unreadable>"


def _codes(code: types.CodeType):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


class _Walker:
    def __init__(self):
        self.deps = Deps()
        self.seen: set[int] = set()

    def function(self, fn, label: str) -> None:
        fn = getattr(fn, "__wrapped__", None) if not hasattr(fn, "__code__") else fn
        if fn is None or id(fn) in self.seen:
            return
        self.seen.add(id(fn))
        d = self.deps
        d.sources.append((f"{getattr(fn, '__module__', '?')}.{fn.__qualname__}", _source_of(fn)))
        g = fn.__globals__
        names = []
        for c in _codes(fn.__code__):
            names.extend(c.co_names)
        for name in dict.fromkeys(names):
            v = g.get(name, _MISSING)
            if v is not _MISSING:
                self.value(v, f"{label}:{name}", (g, name))
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            self.value(v, f"{label}:<closure {name}>", (cell, None))

    def value(self, v, label: str, ref) -> None:
        if compile_time_value(v):
            self.deps.values.append((label, freeze(v)))
            self.deps._refs.append(ref)
            return
        inner = getattr(v, "__fly_function__", None)
        if inner is not None:
            self.function(inner, label)
            return
        if isinstance(v, types.FunctionType):
            if is_user_file(v.__code__.co_filename):
                self.function(v, label)
            return
        if isinstance(v, types.ModuleType):
            f = getattr(v, "__file__", None)
            if is_user_file(f) and id(v) not in self.seen:
                self.seen.add(id(v))
                self.deps.modules.append((v.__name__, _file_hash(f)))
            return
        if isinstance(v, type) and id(v) not in self.seen:
            mod = sys.modules.get(v.__module__)
            if is_user_file(getattr(mod, "__file__", None)):
                self.seen.add(id(v))
                self.deps.sources.append((f"{v.__module__}.{v.__qualname__}", _source_of(v)))


def collect(fn) -> Deps:
    """The dependencies of ``fn`` (a plain function; kernels/jits are followed through ``__fly_function__``)."""
    w = _Walker()
    w.function(fn, fn.__name__)
    return w.deps
