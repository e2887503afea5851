"""What a jit function's compiled code depends on besides its arguments: its source, the source of
the kernels and helpers it reaches, and the compile-time values it reads from globals and closures.

:func:`collect` walks the code objects of the function (and of nested functions, lambdas and
comprehensions): every global it loads and every closure cell is looked at.

* kernels / jit functions (anything with ``__fly_function__``) and plain functions defined in user
  files — the methods of user classes the code reaches included — are followed recursively (their
  source, file name and first line enter the key: cached IR carries source locations, so code that
  moved must not be served from the cache);
* user modules referenced by name (``import helpers`` … ``helpers.f()``) enter with their path and
  their file's hash;
* compile-time values enter by value: ints, floats, bools, strings, None, enums, DSL types, static DSL
  numbers, tuples/lists/dicts/sets of these, tuple subclasses (``NamedTuple`` configurations) by every
  item, numpy arrays and scalars, and the attributes the code reads (by name) of ``SimpleNamespace``
  objects, user classes and instances of user classes (``__slots__`` included);
* anything else (library functions and objects) is ignored: flydsl's own source is covered by the
  compiler hash, third-party libraries by their version not at all (as Triton and FlyDSL).

Every such value is re-checked on every call (:meth:`Deps.watcher`): immutable values (scalars,
tuples of them …) by the identity of the binding, mutable ones (lists, dicts, sets, arrays, objects)
by their content, so that rebinding *or editing in place* is seen (FLY229, or a re-trace:
:mod:`flydsl.compiler.drift`) instead of running a stale kernel. ``Deps.refs`` names those bindings for
the drift check. Checking content costs time on every call, so a mutable value of more than
:data:`TRACKED_MAX` elements is an error (FLY219) that asks for a tuple or an argument instead.

"User file" means a file outside the flydsl package, the standard library and site-packages.
"""

from __future__ import annotations

import enum
import sys
import threading
import types

import numpy as np

from ..layout import VALUE_TYPES as LAYOUT_VALUE_TYPES
from . import errors as E
from .code_source import _codes, _file_hash, _global_loads, _source_of, _where, load_site
from .errors import error
from .frames import is_user_path

__all__ = [
    "Deps", "collect", "is_user_file", "compile_time_value", "freeze", "freeze_object", "TRACKED_MAX", "CellRef",
    "keys_in_progress", "load_site", "Freezer", "Untracked",
]  # fmt: skip

_MISSING = object()
TRACKED_MAX = 4096  # elements of a mutable compile-time value checked by content on every call
_MAX_NESTING = 8
_LOADS = frozenset(("LOAD_GLOBAL", "LOAD_NAME"))
_FLAT = frozenset((int, str, float, bool, type(None)))


def is_user_file(path: str | None) -> bool:
    """A real file of the user's (see :func:`flydsl.compiler.frames.is_user_path`)."""
    return bool(path) and not path.startswith("<") and is_user_path(path)


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


# ---------------------------------------------------------------------------------------------------
# tracked values: the content of what the code reads, frozen for comparison and for the disk key
# ---------------------------------------------------------------------------------------------------


class Untracked(Exception):
    """Not a compile-time value (a function, a tensor, a library object): ignored, as before."""


class _TooLarge(Exception):
    """A mutable value with more than :data:`TRACKED_MAX` elements."""


_USER_CLASS: dict[type, bool] = {}


def _user_class(cls: type) -> bool:
    r = _USER_CLASS.get(cls)
    if r is None:
        mod = sys.modules.get(getattr(cls, "__module__", None) or "")
        r = _USER_CLASS[cls] = is_user_file(getattr(mod, "__file__", None))
    return r


# how the freezer handles a value, by its type (decided once per type)
_PLAIN, _TYPED, _LEAF, _SEQ, _SET, _DICT, _NDARRAY, _NPSCALAR, _NUMERIC, _NAMESPACE, _TUPLE_SUB, _OTHER = (
    "plain", "typed", "leaf", "seq", "set", "dict", "ndarray", "npscalar", "numeric", "namespace", "tuple_sub",
    "other",
)  # fmt: skip
_LAYOUT = "layout"  # a static layout-layer value (Layout, Tile, Swizzle …): its type and its text say it all
_KINDS: dict[type, str] = {
    int: _PLAIN, str: _PLAIN, bool: _TYPED, float: _TYPED, bytes: _TYPED, type(None): _TYPED,
    list: _SEQ, tuple: _SEQ, set: _SET, frozenset: _SET, dict: _DICT, types.SimpleNamespace: _NAMESPACE,
}  # fmt: skip


def _kind_of(t: type) -> str:
    if issubclass(t, enum.Enum):
        kind = _LEAF
    elif issubclass(t, np.ndarray):
        kind = _NDARRAY
    elif issubclass(t, np.generic):
        kind = _NPSCALAR
    elif t in LAYOUT_VALUE_TYPES:
        kind = _LAYOUT
    elif issubclass(t, type):
        kind = _OTHER  # a class: numeric classes are leaves, user classes namespaces (decided per value)
    elif getattr(t, "_is_numeric", False):
        kind = _NUMERIC
    elif issubclass(t, tuple):
        kind = _TUPLE_SUB  # a NamedTuple (user's or library's): its fields are its items, not attributes
    elif _user_class(t) and not any("__call__" in k.__dict__ for k in t.__mro__):
        kind = _NAMESPACE  # an instance of a user class (callables are code, not configuration)
    else:
        kind = _OTHER
    _KINDS[t] = kind
    return kind


def _is_namespace(v) -> bool:
    """Objects whose attributes the code may read as compile-time constants."""
    if isinstance(v, type):
        return _user_class(v)
    t = type(v)
    return (_KINDS.get(t) or _kind_of(t)) is _NAMESPACE


def _immutable(v) -> bool:
    """Values that cannot change without rebinding (compared by identity on every call)."""
    if v is None or type(v) in (bool, int, float, str, bytes) or isinstance(v, enum.Enum):
        return True
    if type(v) in (tuple, frozenset):
        return all(_immutable(x) for x in v)
    if isinstance(v, tuple) and not hasattr(v, "__dict__"):  # a NamedTuple: its items cannot be rebound
        return all(_immutable(x) for x in v)
    if isinstance(v, type) and getattr(v, "_is_numeric", False):
        return True
    if type(v) in LAYOUT_VALUE_TYPES:  # immutable objects; a static one is a compile-time constant
        return v.is_static
    return bool(getattr(v, "_is_numeric", False)) and compile_time_value(v)


def _class_attr(cls: type, name: str):
    for k in cls.__mro__:
        d = k.__dict__
        if name in d:
            return d[name]
    return _MISSING


class Freezer:
    """Freezes one value, counting its elements against :data:`TRACKED_MAX`; of objects, the attributes in
    ``names`` (every attribute when None). An attribute named only in ``soft`` (by a method of an object's class,
    not by the code itself) that is too large to track is left out instead of refused: the method may never run
    while the code is traced."""

    __slots__ = ("names", "left", "soft")

    def __init__(self, names: frozenset | None, limit: int = TRACKED_MAX, soft: frozenset = frozenset()):
        self.names = names
        self.left = limit
        self.soft = soft

    def count(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise _TooLarge

    def __call__(self, v, depth: int = 0):
        t = type(v)
        kind = _KINDS.get(t) or _kind_of(t)
        if kind is _PLAIN:
            self.count(1)
            return v
        if kind is _TYPED:
            self.count(1)
            return (t, v)  # typed: 1, 1.0 and True compare equal but compile differently
        if kind is _LEAF:
            return v
        if kind is _LAYOUT:
            if not v.is_static:  # a run-time value exists only inside a trace
                raise Untracked
            self.count(1)
            return (t, repr(v))
        if depth > _MAX_NESTING:
            raise Untracked
        if kind is _SEQ:
            if _FLAT.issuperset(map(type, v)):  # the common case, at C speed: values and their types
                self.count(len(v))
                return (t.__name__, tuple(v), tuple(map(type, v)))
            return (t.__name__, tuple([self(x, depth + 1) for x in v]))
        if kind is _NAMESPACE:
            return self.namespace(v, depth)
        if kind is _TUPLE_SUB:  # every item (code may index it), and attributes of a subclass with a __dict__
            items = tuple([self(x, depth + 1) for x in v])
            return ("tuple", t, items, self.namespace(v, depth)[2] if hasattr(v, "__dict__") else ())
        if kind is _NDARRAY:
            if v.dtype.hasobject:
                raise Untracked
            self.count(v.size)
            return ("ndarray", v.dtype.str, v.shape, v.tobytes())
        if kind is _SET:
            return (t.__name__, tuple(sorted((self(x, depth + 1) for x in v), key=repr)))
        if kind is _DICT:
            return ("dict", tuple(sorted(((self(k, depth + 1), self(x, depth + 1)) for k, x in v.items()), key=repr)))
        if kind is _NPSCALAR:
            return ("npscalar", v.dtype.str, v.tobytes())
        if kind is _NUMERIC and compile_time_value(v):
            return ("numeric", t, v.value)
        if isinstance(v, type):
            if getattr(v, "_is_numeric", False):
                return v
            if _user_class(v):
                return self.namespace(v, depth)
        raise Untracked

    def namespace(self, v, depth: int):
        """``(kind, type, ((attr, frozen value), ...))`` for the attributes the code reads by name."""
        is_cls = isinstance(v, type)
        cls = v if is_cls else type(v)
        own = {} if is_cls else getattr(v, "__dict__", {})
        names = self.names
        keys = set(own) if names is None else own.keys() & names
        if cls is not types.SimpleNamespace:  # class attributes (a namespace's class has none of the user's)
            for k in cls.__mro__:
                if k is not object and (k is cls or _user_class(k)):
                    keys |= k.__dict__.keys() if names is None else k.__dict__.keys() & names
        items = []
        for name in sorted(keys):
            if name.startswith("__"):
                continue
            x = own[name] if name in own else _class_attr(cls, name)
            if type(x) is types.MemberDescriptorType and not is_cls:  # a __slots__ field: the instance's value
                x = getattr(v, name, _MISSING)
            elif x is _MISSING or hasattr(type(x), "__get__"):
                continue  # methods, properties and other descriptors: code, covered by the class's source
            if x is _MISSING:
                continue
            left = self.left
            try:
                items.append((name, self(x, depth + 1)))
            except Untracked:
                continue
            except _TooLarge:
                if name not in self.soft:
                    raise
                self.left = left
        return ("class" if is_cls else "object", cls, tuple(items))


class _Watch:
    """One binding the code reads: a module global (``holder[key]``) or a closure cell (``key`` None)."""

    __slots__ = ("holder", "key", "label", "code", "name", "immutable", "soft")

    def __init__(self, holder, key, label: str, code, name: str, immutable: bool, soft: bool = False):
        self.soft = soft  # read only by methods of an instance's class: in the key where trackable, never watched
        self.holder = holder
        self.key = key
        self.label = label
        self.code = code
        self.name = name
        self.immutable = immutable

    def read(self):
        return _read(self.holder, self.key)


def _read(holder, key):
    if key is None:
        try:
            return holder.cell_contents
        except ValueError:
            return _MISSING
    return holder.get(key, _MISSING)


class Deps:
    """The dependencies of one function (see the module docstring)."""

    def __init__(self):
        self.sources: list[tuple] = []  # (qualified name, "file:line", source text or code digest)
        self.modules: list[tuple[str, str, str]] = []  # (module name, path, sha256 of its file)
        self.values: list[tuple[str, object]] = []  # (label, frozen value) compile-time values
        self.names: frozenset = frozenset()  # every name the walked code mentions (attribute filter)
        self.soft: frozenset = frozenset()  # of those, the ones only methods of instances' classes mention
        self.watch_names: frozenset = frozenset()  # ``names`` less ``soft``: what the per-call checks compare
        # the bindings of the tracked values as FlyDSL names them, ``(name, module name, holder)`` (the holder a
        # module's globals or a :class:`CellRef`), and where the code reads each: what the drift check reads
        self.refs: list[tuple[str, str, object]] = []
        self.sites: dict[tuple[str, str], tuple] = {}  # (name, module) -> (code object, name it reads)
        self._fixed: tuple = ()  # (holder, key) of immutable values: compared by identity
        self._mutable: tuple = ()  # (holder, key) of mutable values: compared by frozen content

    def watcher(self):
        """A function answering, cheaply, "is every compile-time value still the very object it is now, and
        every mutable one's content the same?" — the fast path's per-call check. ``False`` does not mean
        changed (a value rebound to an equal one): compare the values (:mod:`flydsl.compiler.drift`), then make
        a new watcher.

        Generated code: one expression of identity tests, ``H0['name'] is X0 and C1.cell_contents is X1 and
        ...`` (each binding once: a kernel and its launcher often read the same names and cells); a small
        list or dict of plain values (up to :data:`_IDENTITY_MAX` of them, nested lists and dicts included)
        by its length and the identity of each element, ``len(X2) == 2 and X2['k'] is X3 ...``; other
        mutable values (sets, arrays, objects, big containers) frozen and compared. Tens of ns per value; a
        function without compile-time values gets a constant ``True``.
        """
        ns: dict = {}
        terms: list[str] = []
        holders: dict = {}
        seen: set = set()

        def const(v) -> str:
            name = f"X{len(ns)}"
            ns[name] = v
            return name

        def binding(holder, key) -> str:
            if key is None:
                return f"{const(holder)}.cell_contents"
            if id(holder) not in holders:
                holders[id(holder)] = const(holder)
            return f"{holders[id(holder)]}[{key!r}]"

        try:
            for mutable, refs in ((False, self._fixed), (True, self._mutable)):
                for holder, key in refs:
                    if (id(holder), key) in seen:
                        continue
                    seen.add((id(holder), key))
                    v = holder.cell_contents if key is None else holder[key]
                    x = const(v)
                    terms.append(f"{binding(holder, key)} is {x}")
                    if mutable:
                        terms.append(self._content_test(x, v, const))
        except (KeyError, ValueError):  # a name deleted or a cell emptied since collect(): never unchanged
            return _never
        if not terms:
            return _always
        ns["len"], ns["type"] = len, type
        src = "def unchanged():\n    try:\n        return " + " and ".join(terms)
        src += "\n    except (KeyError, IndexError, TypeError, ValueError):\n        return False\n"
        exec(compile(src, "<flydsl dependency watch>", "exec"), ns)
        fn = ns["unchanged"]
        fn.source = src
        return fn

    def _content_test(self, x: str, v, const) -> str:
        """An expression that holds while mutable value ``v`` (named ``x``) keeps its content."""
        terms: list[str] = []
        names = self.watch_names
        if _identity_terms(x, v, const, terms, [_IDENTITY_MAX], names):
            return " and ".join(terms)

        def frozen(value):
            try:
                return Freezer(names)(value)
            except (Untracked, _TooLarge):
                return object()  # no longer trackable: changed (the next collect() says why)

        return f"{const(frozen)}({x}) == {const(frozen(v))}"


_IDENTITY_MAX = 64  # elements of a mutable value the watch compares by identity, one by one


def _identity_terms(expr: str, v, const, terms: list[str], budget: list, names) -> bool:
    """Terms testing that ``expr`` still holds what ``v`` holds: plain values by identity (``1``, ``1.0`` and
    ``True`` compile differently), lists and dicts by length and element, objects and classes whose
    attributes the code reads by their attribute dicts (see :func:`_namespace_terms`). False: not that
    simple (the caller compares frozen content instead)."""
    budget[0] -= 1
    if budget[0] < 0:
        return False
    t = type(v)
    if t in _FLAT:
        terms.append(f"{expr} is {const(v)}")
        return True
    if t is list:
        terms.append(f"len({expr}) == {len(v)}")
        return all(_identity_terms(f"{expr}[{i}]", x, const, terms, budget, names) for i, x in enumerate(v))
    if t is dict:
        terms.append(f"len({expr}) == {len(v)}")
        return all(_identity_terms(f"{expr}[{const(k)}]", x, const, terms, budget, names) for k, x in v.items())
    if _is_namespace(v):
        return _namespace_terms(expr, v, const, terms, budget, names)
    if _immutable(v):
        terms.append(f"{expr} is {const(v)}")
        return True
    return False


def _namespace_terms(expr: str, v, const, terms: list[str], budget: list, names) -> bool:
    """An object's (or a class's) attributes as the freezer reads them — the ones the code names, from the
    instance's ``__dict__`` and the user classes of its MRO — watched through those dicts: each dict the
    very dict, of the same size (an attribute added anywhere changes it), each named entry the very
    object (its content checked the same way when mutable)."""
    is_cls = isinstance(v, type)
    cls = v if is_cls else type(v)
    if not is_cls:
        own = getattr(v, "__dict__", None)
        if own is None or type(own) is not dict:
            return False
        terms.append(f"type({expr}) is {const(cls)}")
        d = const(own)
        terms.append(f"{expr}.__dict__ is {d} and len({d}) == {len(own)}")
        if not _dict_entries(d, own, const, terms, budget, names):
            return False
    if cls is types.SimpleNamespace:
        return True
    for k in cls.__mro__:
        if k is object or not (k is cls or _user_class(k)):
            continue
        proxy = const(k.__dict__)  # a live view of the class's dict
        terms.append(f"len({proxy}) == {len(k.__dict__)}")
        if not _dict_entries(proxy, k.__dict__, const, terms, budget, names):
            return False
    return True


def _dict_entries(d: str, mapping, const, terms: list[str], budget: list, names) -> bool:
    """Identity (and content) terms for the entries of ``mapping`` the code may read."""
    for key, x in mapping.items():
        if key.startswith("__") or (names is not None and key not in names) or hasattr(type(x), "__get__"):
            continue  # dunders, names the code never reads, methods and other descriptors (code: the source)
        if not _identity_terms(f"{d}[{key!r}]", x, const, terms, budget, names):
            return False
    return True


def _never() -> bool:
    return False


def _always() -> bool:
    return True


class _Walker:
    def __init__(self, root):
        self.root = root
        self.deps = Deps()
        self.seen: dict[int, bool] = {}  # id -> walked for the code itself (True) or only for an instance (False)
        self.names: set[str] = set()
        self.soft: set[str] = set()  # names only the methods of instances' classes mention (Freezer.soft)
        self._in_instance = False
        self.watches: list[_Watch] = []

    def function(self, fn, label: str) -> None:
        fn = getattr(fn, "__wrapped__", None) if not hasattr(fn, "__code__") else fn
        if fn is None or not self._first_walk(fn):
            return
        d = self.deps
        if id(fn) in keys_in_progress() and fn is not self.root:  # an outer key computation walks it already
            d.sources.append((f"{getattr(fn, '__module__', '?')}.{fn.__qualname__}", _where(fn), "<recursive>"))
            return
        d.sources.append((f"{getattr(fn, '__module__', '?')}.{fn.__qualname__}", _where(fn), _source_of(fn)))
        g = fn.__globals__
        loads = []
        for c in _codes(fn.__code__):
            (self.soft if self._in_instance else self.names).update(c.co_names)
            loads.extend(_global_loads(c))
        for name in dict.fromkeys(loads):
            v = g.get(name, _MISSING)
            if v is not _MISSING:
                self.value(v, f"{label}:{name}", g, name, fn.__code__, name)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            self.value(v, f"{label}:<closure {name}>", cell, None, fn.__code__, name)

    def _first_walk(self, obj) -> bool:
        """Whether ``obj`` (a function or class) is to be walked now: not yet, or only for an instance's class
        before and for the code itself now (its names and values then count in full)."""
        strict = not self._in_instance
        prev = self.seen.get(id(obj))
        if prev is True or (prev is False and not strict):
            return False
        self.seen[id(obj)] = strict
        return True

    def value(self, v, label: str, holder, key, code, name: str) -> None:
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
                self.seen[id(v)] = True
                self.deps.modules.append((v.__name__, f, _file_hash(f)))
            return
        if isinstance(v, type) and _user_class(v):
            self.klass(v, label)
        elif (_KINDS.get(type(v)) or _kind_of(type(v))) is _NAMESPACE and type(v) is not types.SimpleNamespace:
            # an instance of a user class: its methods are code the function may run, and the attributes they read
            # through ``self`` are compile-time values of this one (a builder's config object with methods)
            outer, self._in_instance = self._in_instance, True
            try:
                self.klass(type(v), label)
            finally:
                self._in_instance = outer
        # anything else is watched if it freezes (collect() drops what does not: library objects, tensors); what only
        # a method of an instance's class reads (a host-side helper's memo, a table) enters the key, unwatched
        self.watches.append(_Watch(holder, key, label, code, name, _immutable(v), self._in_instance))

    def klass(self, cls: type, label: str) -> None:
        """A user class the code reaches (through a global, or as the owner of a method launcher): its
        source, and its methods walked like functions."""
        if not self._first_walk(cls):
            return
        self.deps.sources.append((f"{cls.__module__}.{cls.__qualname__}", _where(cls), _source_of(cls)))
        for base in cls.__mro__[1:]:  # inherited methods are the class's code too
            if base is not object and _user_class(base):
                self.klass(base, label)
        for m in vars(cls).values():  # what the methods read is read by the code too
            if isinstance(m, (staticmethod, classmethod, property)):
                m = m.fget if isinstance(m, property) else m.__func__
            if getattr(type(m), "__fly_function__", None) is not None:  # a @flyc.kernel / @flyc.jit method
                m = m.__fly_function__
            if isinstance(m, types.FunctionType):
                for c in _codes(m.__code__):
                    (self.soft if self._in_instance else self.names).update(c.co_names)
                if is_user_file(m.__code__.co_filename):  # not dataclass-generated ones ("<string>")
                    self.function(m, f"{label}.{m.__name__}")  # and the globals they load (helpers, tables)


class CellRef:
    """A closure cell seen as the one-entry mapping ``{name: contents}``: the drift check reads module globals
    and closure cells alike (``name in holder``, ``holder[name]``)."""

    __slots__ = ("name", "cell")

    def __init__(self, name: str, cell):
        self.name = name
        self.cell = cell

    def __contains__(self, name) -> bool:
        return name == self.name and _read(self.cell, None) is not _MISSING

    def __getitem__(self, name):
        v = _read(self.cell, None) if name == self.name else _MISSING
        if v is _MISSING:
            raise KeyError(name)
        return v


_IN_PROGRESS = threading.local()


def keys_in_progress() -> set:
    """This thread's set of ``id(fn)`` whose dependency walk (their cache key) is running now: a walk that
    reaches one of them again — a key computation re-entered through a nested one — records it by name
    instead of walking it a second time. Empty whenever no key is being computed."""
    s = getattr(_IN_PROGRESS, "stack", None)
    if s is None:
        s = _IN_PROGRESS.stack = set()
    return s


def freeze_object(obj) -> tuple:
    """The compile-time attributes of ``obj`` (its own and its user classes'), frozen: what a method
    launcher's code may read from ``self``. Raises ``ValueError`` past :data:`TRACKED_MAX` elements."""
    try:
        return Freezer(None).namespace(obj, 0)
    except _TooLarge:
        raise ValueError(_kind(obj)) from None


def _kind(v) -> str:
    if isinstance(v, np.ndarray):
        return "numpy array"
    if isinstance(v, type):
        return f"class {v.__qualname__}"
    return type(v).__name__


def collect(fn, owners: tuple = ()) -> Deps:
    """The dependencies of ``fn`` (a plain function; kernels/jits are followed through ``__fly_function__``),
    and of the user classes in ``owners`` (the classes of ``self`` a method launcher was called with: the
    kernels and helpers it reaches through ``self``).

    Raises FLY219 (at the line that reads it) for a mutable compile-time value too large to re-check.
    """
    progress = keys_in_progress()
    added = id(fn) not in progress
    progress.add(id(fn))
    try:
        walker = _Walker(fn)
        walker.function(fn, fn.__name__)
        for cls in owners:
            if isinstance(cls, type) and _user_class(cls):
                walker.klass(cls, f"{fn.__name__}:self<{cls.__qualname__}>")
    finally:
        if added:
            progress.discard(id(fn))
    d = walker.deps
    d.names = frozenset(walker.names | walker.soft)
    d.soft = frozenset(walker.soft - walker.names)
    d.watch_names = frozenset(walker.names)
    watches = []
    for watch in walker.watches:
        v = watch.read()
        # immutable values are compared by identity on every call: any size is fine
        freezer = Freezer(d.names, sys.maxsize if watch.immutable else TRACKED_MAX, d.soft)
        try:
            frozen = freezer(v)
        except Untracked:
            continue
        except _TooLarge:
            if watch.soft:
                continue
            fn_name = getattr(watch.code, "co_qualname", watch.code.co_name)
            raise error(
                E.TRACKED_VALUE_TOO_LARGE, load_site(watch.code, watch.name), name=watch.name, fn=fn_name,
                what=_kind(v), limit=TRACKED_MAX,
            ) from None  # fmt: skip
        d.values.append((watch.label, frozen))
        if watch.soft:
            continue  # (in the key; a host-side method may change it between calls)
        watches.append(watch)
        if watch.key is None:
            owner = getattr(watch.code, "co_qualname", watch.code.co_name)
            ref = (watch.name, f"<closure of {owner}>", CellRef(watch.name, watch.holder))
        else:
            ref = (watch.key, watch.holder.get("__name__", "?"), watch.holder)
        if (ref[0], ref[1]) not in d.sites:
            d.refs.append(ref)
            d.sites[(ref[0], ref[1])] = (watch.code, watch.name)  # the line: load_site(), when needed
    d._fixed = tuple((w.holder, w.key) for w in watches if w.immutable)
    d._mutable = tuple((w.holder, w.key) for w in watches if not w.immutable)
    return d
