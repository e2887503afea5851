"""Carrying Python variables through run-time regions (``scf.if`` / ``scf.for`` / ``scf.while``).

A carried variable's value is a *tree*: nested lists, tuples, dicts and SimpleNamespaces whose leaves
are DSL values (anything with ``__fly_values__``/``__fly_rebuild__``, raw IR values), Python scalars
(promoted to DSL types when they must cross a region) or other Python objects (which may not change
inside a run-time region). :func:`flatten` splits a tree into a skeleton and its leaves,
:func:`unflatten` rebuilds it. Unbound names and names assigned on only some paths are bound to an
:class:`Undefined` sentinel whose every use raises the catalogued error at the line of the use.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from ...expr.numeric import Numeric, as_numeric
from ...ir import Value
from ..errors import LOOP_VAR_AFTER_LOOP, error
from ..frames import frame_location, user_frame

__all__ = [
    "is_value_like",
    "Undefined",
    "UNBOUND",
    "is_undefined",
    "copy_tree",
    "flatten",
    "unflatten",
    "leaf_values",
    "rebuild_leaf",
    "leaf_sig",
    "describe",
    "is_py_scalar",
    "promote_pair",
    "loop_var_sentinel",
]

_PY_SCALARS = (bool, int, float)


# ---------------------------------------------------------------------------------------------------
# the sentinel for names without a value
# ---------------------------------------------------------------------------------------------------


class Undefined:
    """Bound to a variable that has no value on this path; using it raises ``diag`` at the use's line."""

    __slots__ = ("_fly_diag", "_fly_fields")

    def __init__(self, diag=None, **fields):
        self._fly_diag = diag
        self._fly_fields = fields

    def _fly_raise(self, *args, **kwargs):
        f = user_frame(sys._getframe(1))
        loc = frame_location(f) if f is not None else None
        if self._fly_diag is None:
            raise NameError("a variable is used before it is assigned")
        raise error(self._fly_diag, loc, **self._fly_fields)

    def __repr__(self) -> str:
        return f"<undefined {self._fly_fields.get('name', '')!r}>"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        self._fly_raise()


def _install_traps():
    names = (
        "bool len iter getitem setitem call index int float str format hash eq ne lt le gt ge neg pos abs invert "
        "add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow and rand or ror xor rxor "
        "lshift rlshift rshift rrshift matmul contains"
    ).split()
    for n in names:
        setattr(Undefined, f"__{n}__", Undefined._fly_raise)


_install_traps()

UNBOUND = Undefined()  # "never assigned": a plain NameError-like use


def is_undefined(x) -> bool:
    return type(x) is Undefined


def loop_var_sentinel(name: str, site_line: int) -> Undefined:
    return Undefined(LOOP_VAR_AFTER_LOOP, name=name, site_line=site_line)


# ---------------------------------------------------------------------------------------------------
# trees
# ---------------------------------------------------------------------------------------------------

LEAF = None  # skeleton of a leaf


def is_value_like(x) -> bool:
    """A leaf changed in place that is nevertheless a value (``__fly_copy__`` returns a new object)."""
    cp = getattr(type(x), "__fly_copy__", None)
    return cp is not None and cp(x) is not x


def map_leaves(x, fn):
    """``x`` with every leaf (what is not a list, dict, tuple or SimpleNamespace) replaced by ``fn(leaf)``."""
    t = type(x)
    if t is list:
        return [map_leaves(v, fn) for v in x]
    if t is dict:
        return {k: map_leaves(v, fn) for k, v in x.items()}
    if t is SimpleNamespace:
        return SimpleNamespace(**{k: map_leaves(v, fn) for k, v in vars(x).items()})
    if isinstance(x, tuple):
        items = [map_leaves(v, fn) for v in x]
        return t._make(items) if hasattr(t, "_make") else t(items)
    return fn(x)


def copy_tree(x):
    """Fresh containers, same leaves (each branch of an ``if`` mutates its own copy). A leaf with
    ``__fly_copy__`` (a register tensor: a value that is changed in place) is copied too."""
    t = type(x)
    if hasattr(t, "__fly_copy__"):
        return x.__fly_copy__()
    if t is list:
        return [copy_tree(v) for v in x]
    if t is dict:
        return {k: copy_tree(v) for k, v in x.items()}
    if t is SimpleNamespace:
        return SimpleNamespace(**{k: copy_tree(v) for k, v in vars(x).items()})
    if isinstance(x, tuple) and any(type(v) in (list, dict, tuple, SimpleNamespace) for v in x):
        items = [copy_tree(v) for v in x]
        return t._make(items) if hasattr(t, "_make") else t(items)
    return x


def align_keys(x, like):
    """``x`` with every dict (and SimpleNamespace) whose key set equals the one at the same place in
    ``like`` reordered to ``like``'s key order: carried dicts are matched by key, not by insertion order
    (FlyDSL's semantics), so two branches may build the same keys in a different order."""
    t = type(x)
    if t is dict and type(like) is dict:
        if x.keys() == like.keys() and list(x) != list(like):
            return {k: align_keys(x[k], like[k]) for k in like}
        return {k: align_keys(v, like[k]) if k in like else v for k, v in x.items()}
    if t is SimpleNamespace and type(like) is SimpleNamespace:
        d, e = vars(x), vars(like)
        order = list(e) if d.keys() == e.keys() else list(d)
        return SimpleNamespace(**{k: align_keys(d[k], e[k]) if k in e else d[k] for k in order})
    if t is list and type(like) is list and len(x) == len(like):
        return [align_keys(a, b) for a, b in zip(x, like)]
    if isinstance(x, tuple) and type(like) is t and len(x) == len(like) and not hasattr(t, "_fields"):
        return t(align_keys(a, b) for a, b in zip(x, like))
    return x


def flatten(x, path: str, out_leaves: list, out_paths: list):
    """Append the leaves of ``x`` (and their printable paths); return the skeleton."""
    t = type(x)
    if t is list:
        return ("list", tuple(flatten(v, f"{path}[{i}]", out_leaves, out_paths) for i, v in enumerate(x)))
    if isinstance(x, tuple):
        return ("tuple", t, tuple(flatten(v, f"{path}[{i}]", out_leaves, out_paths) for i, v in enumerate(x)))
    if t is dict:
        keys = tuple(x)
        return ("dict", keys, tuple(flatten(x[k], f"{path}[{k!r}]", out_leaves, out_paths) for k in keys))
    if t is SimpleNamespace:
        d = vars(x)
        keys = tuple(d)
        return ("ns", keys, tuple(flatten(d[k], f"{path}.{k}", out_leaves, out_paths) for k in keys))
    out_leaves.append(x)
    out_paths.append(path)
    return LEAF


def unflatten(skel, leaves_iter):
    """Inverse of :func:`flatten` (``leaves_iter`` is an iterator over the new leaves)."""
    if skel is LEAF:
        return next(leaves_iter)
    kind = skel[0]
    if kind == "list":
        return [unflatten(s, leaves_iter) for s in skel[1]]
    if kind == "tuple":
        t = skel[1]
        items = [unflatten(s, leaves_iter) for s in skel[2]]
        if t is tuple:
            return tuple(items)
        return t._make(items) if hasattr(t, "_make") else t(items)
    if kind == "dict":
        return {k: unflatten(s, leaves_iter) for k, s in zip(skel[1], skel[2])}
    return SimpleNamespace(**{k: unflatten(s, leaves_iter) for k, s in zip(skel[1], skel[2])})


def skeleton_text(skel) -> str:
    """A short description of a tree's shape for error messages."""
    if skel is LEAF:
        return "a value"
    kind = skel[0]
    if kind == "list":
        return f"a list of {len(skel[1])}"
    if kind == "tuple":
        return f"a tuple of {len(skel[2])}"
    if kind == "dict":
        return f"a dict with keys {list(skel[1])}"
    return f"a namespace with fields {list(skel[1])}"


# ---------------------------------------------------------------------------------------------------
# leaves
# ---------------------------------------------------------------------------------------------------


def is_py_scalar(x) -> bool:
    return type(x) in _PY_SCALARS


def is_dsl_leaf(x) -> bool:
    return type(x) is Value or hasattr(type(x), "__fly_values__")


def leaf_values(x) -> list:
    """The IR values of a DSL leaf (materializing constants at the insertion point)."""
    if type(x) is Value:
        return [x]
    return list(x.__fly_values__())


def rebuild_leaf(proto, values: list):
    """A leaf like ``proto`` made of ``values`` (block arguments or op results)."""
    if type(proto) is Value:
        return values[0]
    return proto.__fly_rebuild__(values)


def leaf_sig(x):
    """What must agree between the paths of a region for a DSL leaf (no IR is built)."""
    if isinstance(x, Numeric):
        return type(x)
    if type(x) is Value:
        return ("ir", x.type)
    sig = getattr(x, "__fly_signature__", None)
    if sig is not None:
        return (type(x), sig())
    return (type(x), tuple(v.type for v in leaf_values(x)) if _cheap_values(x) else None)


def _cheap_values(x) -> bool:
    return getattr(x, "_is_vector", False)


def describe(x) -> str:
    """A value's type in user words: ``Int32``, ``a Python int``, ``Vector<4xf32>`` …"""
    if isinstance(x, Numeric):
        return type(x).__name__
    if is_py_scalar(x):
        return f"a Python {type(x).__name__} ({x!r})"
    if x is None:
        return "None"
    if type(x) is Value:
        return f"an IR value of type {x.type}"
    d = getattr(x, "__fly_describe__", None)
    if d is not None:
        return d()
    return type(x).__name__


def promote_pair(a, b):
    """Make two leaves that must become one carried value agree in DSL type.

    A Python scalar takes the other side's Numeric type when that loses nothing (an ``int`` into any
    number, a ``float`` into a float type); two Python scalars become their literal types (``Int32``,
    ``Float32``, ``Boolean``), which must then be equal. Returns ``(a', b', ok)``; ``ok`` is False when
    the types conflict.
    """
    a_py, b_py = is_py_scalar(a), is_py_scalar(b)
    if a_py and b_py:
        na, nb = as_numeric(a), as_numeric(b)
        return na, nb, type(na) is type(nb)
    if a_py and isinstance(b, Numeric):
        return (type(b)(a), b, True) if _fits(a, type(b)) else (a, b, False)
    if b_py and isinstance(a, Numeric):
        return (a, type(a)(b), True) if _fits(b, type(a)) else (a, b, False)
    if a_py or b_py:
        return a, b, False
    return a, b, leaf_sig(a) == leaf_sig(b)


def _fits(x, cls) -> bool:
    """A Python literal converts to ``cls`` without changing kind (no float into an integer type)."""
    return not (type(x) is float and not cls.is_float)
