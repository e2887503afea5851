"""Shapes, strides and sizes as user code sees them: :class:`IntTuple` and :class:`StaticInt`.

The algebra computes on plain nested tuples (fast ``type(x) is tuple`` dispatch); what it hands to user code
— ``layout.shape``, ``layout.stride``, ``fx.shape(x)``, ``fx.size(x)`` — is a *view* of the same value with
FlyDSL's helpers:

* :class:`IntTuple` is a ``tuple`` (indexing, ``len``, iteration, unpacking, ``==`` with tuples, hashing
  all work as for the plain tuple) whose nested modes are IntTuples, plus ``unpack()`` / ``to_py_value()``
  (the plain nested Python value: ints, basis elements, run-time leaves as they are), ``rank``, ``depth``,
  ``is_leaf``, ``is_static`` and ``type`` (``!fly.int_tuple<...>``). ``str`` is CuTe's notation ``(4,(2,8))``.
* :class:`StaticInt` is an ``int`` with the same helpers (``fx.size(t).unpack() == 8``).

:func:`wrap` makes the view of a plain value (a run-time leaf is returned as it is); :func:`plain` undoes it.
"""

from __future__ import annotations

from .inttuple import INTS, TUPLES, format_int_tuple
from .inttuple import depth as _depth
from .inttuple import is_static as _is_static

__all__ = ["IntTuple", "StaticInt", "wrap", "plain"]


class IntTuple(tuple):
    """A shape, stride or coordinate as user code sees it: a tuple of ints, run-time integers, basis elements
    and nested IntTuples, with FlyDSL's helpers (``m, n = layout.shape.unpack()``)."""

    __slots__ = ()

    def __new__(cls, items=()):
        return tuple.__new__(cls, (IntTuple(x) if type(x) is tuple else x for x in items))

    def unpack(self) -> tuple:
        """The value as plain nested Python tuples (FlyDSL's ``IntTuple.unpack``): static leaves are ints
        (basis elements stay basis elements), run-time leaves the DSL values they are."""
        return plain(self)

    to_py_value = unpack

    @property
    def rank(self) -> int:
        return len(self)

    @property
    def depth(self) -> int:
        return _depth(plain(self))

    @property
    def is_leaf(self) -> bool:
        return False

    @property
    def is_static(self) -> bool:
        return _is_static(plain(self))

    @property
    def type(self):
        """The static type, FlyDSL's ``!fly.int_tuple<(9,(4,8))>`` (``?`` for a run-time leaf)."""
        from .types import IntTupleType  # cycle: the types describe these values

        return IntTupleType(plain(self))

    def __str__(self) -> str:
        return format_int_tuple(plain(self))

    def __repr__(self) -> str:
        return f"IntTuple{format_int_tuple(plain(self))}"


TUPLES.add(IntTuple)  # the algebra computes on a view as on the plain tuple (inttuple.TUPLES)


class StaticInt(int):
    """A compile-time integer result (``fx.size``, a static leaf shape): a plain ``int`` that also answers
    FlyDSL's IntTuple helpers (``fx.size(t).unpack()``, ``layout.shape.unpack()`` of a rank-1 layout)."""

    __slots__ = ()

    def unpack(self) -> int:
        return int(self)

    to_py_value = unpack
    get_static_leaf_int = property(unpack)
    is_static = True
    is_leaf = True
    rank = 1
    depth = 0

    @property
    def type(self):
        """``!fly.int_tuple<n>``."""
        from .types import IntTupleType  # cycle: the types describe these values

        return IntTupleType(int(self))


INTS.add(StaticInt)  # a static leaf view is an int to the algebra (inttuple.INTS)


def wrap(x):
    """The view of a plain value: tuples become IntTuples, ints StaticInts, anything else is returned as is."""
    t = type(x)
    if t is tuple:
        return IntTuple(x)
    if t is int:
        return StaticInt(x)
    return x


def plain(x):
    """The plain nested value of a view (IntTuples become tuples, StaticInts ints); others as they are."""
    t = type(x)
    if t is IntTuple or t is tuple:
        return tuple(plain(e) for e in x)
    if t is StaticInt:
        return int(x)
    return x
