"""Integer tuples (CuTe ``IntTuple``) and the leaf arithmetic every layout function is built on.

Input: nested Python tuples whose leaves are

* Python ``int`` -- *static* values, folded in Python;
* *traced integers* -- any other object that supports ``+ - * // %`` and comparisons through
  operators (the expr layer passes its run-time ``fx.Int32`` values); they are never inspected,
  only combined with operators, so every operation on them is recorded by their owner;
* :class:`Basis` -- scaled basis elements ``k*E(i, ...)``, used as strides of identity layouts.

Output: the same kinds of objects. The leaf helpers (:func:`iadd`, :func:`imul`, ...) short-circuit
whenever one operand is a static ``0`` or ``1`` so that static layout arithmetic leaves no run-time
operations behind (``0 * x -> 0``, ``x * 1 -> x``, ``x + 0 -> x``, ``x // 1 -> x``, ``x % 1 -> 0``).

Orders are colexicographic (the leftmost mode varies fastest), as in CuTe.
"""

from __future__ import annotations

import numbers
import operator

# The types the algebra treats as a tuple of modes: ``tuple`` and the user-facing view of one (views.IntTuple adds
# itself on import), tested as ``type(x) in TUPLES`` (a set lookup, as fast as ``type(x) is tuple``), so a
# ``layout.shape`` handed back to any function here computes as the plain tuple it views, never as a leaf.
TUPLES: set = {tuple}
# Likewise the types of a static integer leaf: ``int`` and views.StaticInt (a leaf shape handed to user code).
INTS: set = {int}

__all__ = [
    "Basis",
    "E",
    "is_tuple",
    "is_int",
    "is_static",
    "is_dynamic",
    "has_none",
    "make_int_tuple",
    "format_int_tuple",
    "flatten",
    "unflatten",
    "rank",
    "depth",
    "product",
    "product_each",
    "product_like",
    "inner_product",
    "prefix_product",
    "suffix_product",
    "compact_col_major",
    "compact_row_major",
    "shape_div",
    "ceil_div",
    "elem_less",
    "elem_scale",
    "congruent",
    "weakly_congruent",
    "compatible",
    "weakly_compatible",
    "equal",
    "transform_leaf",
    "repeat_like",
    "int_tuple_add",
    "int_tuple_sub",
    "int_tuple_mul",
    "int_tuple_div",
    "int_tuple_mod",
    "iadd",
    "isub",
    "imul",
    "idiv",
    "imod",
    "iceil_div",
    "ishape_div",
    "imin",
    "imax",
    "static_value",
]


# ---------------------------------------------------------------------------------------------
# Scaled basis elements
# ---------------------------------------------------------------------------------------------


class Basis:
    """A scaled basis element ``value * E(m0, m1, ...)`` (CuTe ``ScaledBasis``).

    ``modes`` is the path of the coordinate it points into: ``E(0)`` is "mode 0", ``E(1, 0)`` is
    "sub-mode 0 of mode 1". Basis elements are the strides of identity layouts; adding them yields
    coordinate tuples (``E(0) * 2 + E(1) * 3 == (2, 3)``). The coefficient may be a traced
    integer. ``repr`` follows FlyDSL: ``2E0``, ``1E0E1``.
    """

    __slots__ = ("_value", "_modes")

    def __init__(self, value=1, modes=(0,)):
        if isinstance(modes, int) and not isinstance(modes, bool):
            modes = (modes,)
        modes = tuple(modes)
        if not modes:
            raise ValueError("Basis needs at least one mode; a basis with no mode is the plain integer 1")
        for m in modes:
            if type(m) not in INTS or m < 0:
                raise TypeError(f"Basis modes must be non-negative Python ints, got {modes!r}")
        value = _norm_leaf(value, "Basis value")
        if type(value) is Basis:
            raise TypeError("a Basis coefficient cannot itself be a Basis")
        self._value = value
        self._modes = modes

    @property
    def value(self):
        """The coefficient (a Python int or a traced integer)."""
        return self._value

    @property
    def modes(self) -> list[int]:
        """The mode path as a list (FlyDSL's convention)."""
        return list(self._modes)

    @property
    def is_static(self) -> bool:
        return type(self._value) in INTS

    @property
    def type(self):
        """The basis leaf's static type, ``!fly.int_tuple<2E0>`` (:class:`flydsl.layout.types.IntTupleType`)."""
        from .types import IntTupleType  # cycle: the type describes this class

        return IntTupleType(self)

    def scale(self, k):
        """``self * k`` for an integer (static or traced) ``k``; ``0`` collapses to the int ``0``."""
        if type(k) is Basis:
            raise TypeError(f"cannot multiply two basis elements ({self} * {k})")
        if type(k) in TUPLES:
            raise TypeError(f"cannot multiply basis element {self} by a tuple {format_int_tuple(k)}")
        if type(k) in INTS:
            if k == 0:
                return 0
            if k == 1:
                return self
        return Basis(imul(self._value, k), self._modes)

    __mul__ = scale
    __rmul__ = scale

    def __floordiv__(self, k):
        if type(k) is Basis or type(k) in TUPLES:
            raise TypeError(f"cannot divide basis element {self} by {k!r}")
        return Basis(idiv(self._value, k), self._modes)

    def __add__(self, other):
        return iadd(self, other)

    __radd__ = __add__

    def to_tuple(self):
        """The coordinate this basis element denotes, e.g. ``3*E(1) -> (0, 3)``, ``E(1,0) -> (0, (1,))``."""
        out = self._value
        for m in reversed(self._modes):
            out = (0,) * m + (out,)
        return out

    def __eq__(self, other):
        if type(other) is not Basis:
            return NotImplemented if not isinstance(other, (int, tuple)) else False
        if self._modes != other._modes:
            return False
        a, b = self._value, other._value
        return a == b if type(a) in INTS and type(b) in INTS else a is b

    def __hash__(self):
        if type(self._value) not in INTS:
            raise TypeError(f"basis element {self} with a run-time coefficient is not hashable")
        return hash(("Basis", self._value, self._modes))

    def __str__(self):
        v = self._value if type(self._value) in INTS else "?"
        return f"{v}" + "".join(f"E{m}" for m in self._modes)

    __repr__ = __str__


def E(*modes):
    """The unit basis element of a mode path: ``E(0)``, ``E(0, 1)`` or ``E([0, 1])``; ``E() == 1``."""
    if len(modes) == 1 and isinstance(modes[0], (list, tuple)):
        modes = tuple(modes[0])
    if not modes:
        return 1
    return Basis(1, modes)


# ---------------------------------------------------------------------------------------------
# Leaf classification and normalization
# ---------------------------------------------------------------------------------------------


def is_tuple(x) -> bool:
    """True for a (nested) tuple, i.e. a non-leaf IntTuple."""
    return type(x) in TUPLES


def is_dynamic(x) -> bool:
    """True for a traced integer leaf (not an int, bool, tuple, Basis or None)."""
    t = type(x)
    return not (t is int or t is tuple or t is Basis or t is bool or x is None)


def is_int(x) -> bool:
    """True for an integer leaf, static (Python int) or traced."""
    t = type(x)
    return t in INTS or not (t in TUPLES or t is Basis or t is bool or x is None)


def is_static(x) -> bool:
    """True when ``x`` (an IntTuple, coordinate, Basis, Layout, ...) holds no traced integer."""
    t = type(x)
    if t in INTS or x is None:
        return True
    if t in TUPLES:
        return all(is_static(e) for e in x)
    if t is Basis:
        return type(x.value) in INTS
    st = getattr(x, "is_static", None)
    if isinstance(st, bool):
        return st
    return False


def static_value(x):
    """``x`` if it is a static int, else ``None``."""
    return x if type(x) in INTS else None


def has_none(x) -> bool:
    """True if a coordinate contains a ``None`` wildcard anywhere."""
    if x is None:
        return True
    if type(x) in TUPLES:
        return any(has_none(e) for e in x)
    return False


def _norm_leaf(x, what, allow_none=False):
    t = type(x)
    if t is int or t is Basis:
        return x
    if x is None:
        if allow_none:
            return None
        raise TypeError(f"{what}: None is only allowed in coordinates (as a slicing wildcard)")
    if t is bool:
        raise TypeError(f"{what}: {x!r} is a bool, not an integer; write 0/1 if you meant a number")
    if isinstance(x, int):
        return int(x)
    if isinstance(x, numbers.Integral):
        try:
            return operator.index(x)
        except TypeError:
            return x
    is_static = getattr(x, "is_static", None)
    if callable(is_static) and hasattr(x, "__index__") and is_static():  # a compile-time DSL integer
        return operator.index(x)
    if isinstance(x, (numbers.Number, str, bytes, list, dict, set)) or not all(
        hasattr(x, m) for m in ("__add__", "__mul__", "__floordiv__", "__mod__")
    ):
        raise TypeError(
            f"{what}: leaf {x!r} of type {type(x).__name__} is not an integer; layouts hold Python ints "
            "or run-time integer values"
        )
    return x


def _norm(x, what, allow_none):
    if type(x) in TUPLES or type(x) is list or isinstance(x, tuple):  # tuple subclasses: views (IntTuple)
        return tuple(_norm(e, what, allow_none) for e in x)
    return _norm_leaf(x, what, allow_none)


def make_int_tuple(*elems):
    """Normalize a (nested) tuple/list of integers into an IntTuple.

    ``make_int_tuple((4, (2, 8)))`` returns ``(4, (2, 8))``; several arguments form a tuple
    (``make_int_tuple(4, 8) == (4, 8)``); a single int stays a leaf. Lists become tuples, numpy
    integers become ``int``; ``None`` is kept (coordinates). Raises ``TypeError`` for bools,
    floats and other non-integers.
    """
    if len(elems) == 1:
        return _norm(elems[0], "make_int_tuple", True)
    return _norm(elems, "make_int_tuple", True)


def format_int_tuple(x) -> str:
    """CuTe notation: ``(4,(2,8))``, a rank-1 tuple ``(4)``, a leaf ``4``, dynamic leaves ``?``."""
    t = type(x)
    if t is int:
        return str(x)
    if t is tuple:
        return "(" + ",".join(format_int_tuple(e) for e in x) + ")"
    if t is Basis:
        return str(x)
    if x is None:
        return "_"
    return "?"


# ---------------------------------------------------------------------------------------------
# Leaf arithmetic (static folds in Python; traced values only through operators)
# ---------------------------------------------------------------------------------------------


def _as_arith(x):
    return x.to_tuple() if type(x) is Basis else x


def _arith_add(a, b, op):
    a, b = _as_arith(a), _as_arith(b)
    ta, tb = type(a), type(b)
    if ta is tuple and tb is tuple:
        n = max(len(a), len(b))
        return tuple(op(a[i] if i < len(a) else 0, b[i] if i < len(b) else 0) for i in range(n))
    if ta is tuple and tb is int and b == 0:
        return a
    if tb is tuple and ta is int and a == 0:
        return b if op is iadd else tuple(op(0, e) for e in b)
    raise TypeError(
        f"cannot combine integer {format_int_tuple(a if ta is not tuple else b)} with the coordinate "
        f"{format_int_tuple(a if ta is tuple else b)}"
    )


def _no_tuple(a, b, name):
    if type(a) in TUPLES or type(b) in TUPLES:
        raise TypeError(f"{name}: expected integers, got {format_int_tuple(a)} and {format_int_tuple(b)}")


def iadd(a, b):
    """``a + b``; static ints fold, ``x + 0 -> x``; basis elements/coordinates add element-wise."""
    ta, tb = type(a), type(b)
    if ta is int:
        if tb is int:
            return a + b
        if a == 0:
            return b
    elif tb is int and b == 0:
        return a
    if ta is Basis or tb is Basis or ta is tuple or tb is tuple:
        return _arith_add(a, b, iadd)
    return a + b


def isub(a, b):
    """``a - b``; static ints fold, ``x - 0 -> x``."""
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return a - b
    if tb is int and b == 0:
        return a
    if ta is Basis or tb is Basis or ta is tuple or tb is tuple:
        return _arith_add(a, b, isub)
    return a - b


def imul(a, b):
    """``a * b``; static ints fold, ``0 * x -> 0``, ``1 * x -> x``; scales basis elements."""
    ta, tb = type(a), type(b)
    if ta is int:
        if tb is int:
            return a * b
        if a == 0:
            return 0
        if a == 1:
            return b
    elif tb is int:
        if b == 0:
            return 0
        if b == 1:
            return a
    if ta is Basis:
        return a.scale(b)
    if tb is Basis:
        return b.scale(a)
    _no_tuple(a, b, "multiply")
    return a * b


def idiv(a, b):
    """Floor division ``a // b``; ``x // 1 -> x``, ``0 // x -> 0``."""
    ta, tb = type(a), type(b)
    if ta is int:
        if tb is int:
            return a // b
        if a == 0:
            return 0
    elif tb is int and b == 1:
        return a
    if ta is Basis:
        return a // b
    _no_tuple(a, b, "divide")
    return a // b


def imod(a, b):
    """``a % b``; ``x % 1 -> 0``, ``0 % x -> 0``."""
    ta, tb = type(a), type(b)
    if ta is int:
        if tb is int:
            return a % b
        if a == 0:
            return 0
    elif tb is int and b == 1:
        return 0
    _no_tuple(a, b, "modulo")
    return a % b


def iceil_div(a, b):
    """``ceil(a / b)`` for positive ``b`` (``(a + b - 1) // b`` on traced values)."""
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return -(-a // b)
    if tb is int and b == 1:
        return a
    if ta is int and (a == 0 or a == 1):
        return a  # NOTE: ceil(1 / b) == 1 for every positive b
    return idiv(iadd(a, isub(b, 1)), b)


def ishape_div(a, b):
    """CuTe ``shape_div`` on integers: ``a / b`` when ``b`` divides ``a``, ``1`` when ``a`` divides ``b``.

    Static operands must satisfy the divisibility condition (``ValueError`` otherwise). Traced
    operands are assumed to satisfy it, which makes the result ``ceil(a / b)``.
    """
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        if b == 0 or (a % b != 0 and b % a != 0):
            raise ValueError(f"shape_div({a}, {b}): neither value divides the other")
        q = abs(a) // abs(b)
        if q != 0:
            return q if (a < 0) == (b < 0) else -q
        return (1 if a > 0 else -1 if a < 0 else 0) * (1 if b > 0 else -1)
    if tb is int and b == 1:
        return a
    if ta is int and a == 1:
        return 1
    return iceil_div(a, b)


def _select(cond, a, b):
    if type(cond) is bool:
        return a if cond else b
    sel = getattr(cond, "select", None)
    if sel is not None:
        return sel(a, b)
    return iadd(b, imul(isub(a, b), cond))


def imin(a, b):
    """``min(a, b)``; traced operands use ``(a < b).select(a, b)`` or ``b + (a - b) * (a < b)``."""
    if type(a) in INTS and type(b) in INTS:
        return a if a <= b else b
    if a is b:
        return a
    return _select(a < b, a, b)


def imax(a, b):
    """``max(a, b)``; traced operands as in :func:`imin`."""
    if type(a) in INTS and type(b) in INTS:
        return a if a >= b else b
    if a is b:
        return a
    return _select(a < b, b, a)


# ---------------------------------------------------------------------------------------------
# Structure
# ---------------------------------------------------------------------------------------------


def _leaves(x, out):
    if type(x) in TUPLES:
        for e in x:
            _leaves(e, out)
    else:
        out.append(x)
    return out


def flatten(x):
    """Leaves of a nested tuple as a flat tuple; a leaf is returned unchanged (CuTe)."""
    if type(x) not in TUPLES:
        return x
    return tuple(_leaves(x, []))


def unflatten(flat, profile):
    """Rebuild the nesting of ``profile`` from the flat sequence ``flat`` (inverse of flatten)."""
    flat = tuple(flat) if type(flat) in TUPLES or isinstance(flat, list) else (flat,)
    it = iter(flat)

    def build(p):
        if type(p) in TUPLES:
            return tuple(build(e) for e in p)
        try:
            return next(it)
        except StopIteration:
            raise ValueError(f"unflatten: too few elements for profile {format_int_tuple(profile)}") from None

    out = build(profile)
    if next(it, _SENTINEL) is not _SENTINEL:
        raise ValueError(f"unflatten: too many elements for profile {format_int_tuple(profile)}")
    return out


_SENTINEL = object()


def rank(x) -> int:
    """Number of top-level modes: ``len`` of a tuple, 1 for a leaf."""
    return len(x) if type(x) in TUPLES else 1


def depth(x) -> int:
    """Nesting depth: 0 for a leaf, 1 for a flat tuple, ..."""
    if type(x) not in TUPLES:
        return 0
    return 1 + max((depth(e) for e in x), default=0)


def product(x):
    """Product of all leaves (``1`` for an empty tuple)."""
    if type(x) not in TUPLES:
        return x
    r = 1
    for e in x:
        r = imul(r, product(e))
    return r


def product_each(x):
    """Product of each top-level mode: ``((2,3),4) -> (6,4)``; a leaf is returned unchanged."""
    if type(x) not in TUPLES:
        return x
    return tuple(product(e) for e in x)


def product_like(x, guide):
    """Products of ``x`` taken at the leaves of ``guide``: ``product_like(((2,3),(4,5)), (0,(0,0))) -> (6,(4,5))``."""
    if type(guide) in TUPLES:
        if type(x) not in TUPLES or len(x) < len(guide):
            raise ValueError(f"product_like: {format_int_tuple(x)} does not match {format_int_tuple(guide)}")
        return tuple(product_like(x[i], g) for i, g in enumerate(guide))
    return product(x)


def inner_product(a, b):
    """``sum(a_i * b_i)`` over the leaves of two congruent tuples."""
    if type(a) in TUPLES:
        if type(b) not in TUPLES or len(a) != len(b):
            raise ValueError(f"inner_product: {format_int_tuple(a)} and {format_int_tuple(b)} are not congruent")
        r = 0
        for x, y in zip(a, b):
            r = iadd(r, inner_product(x, y))
        return r
    if type(b) in TUPLES:
        raise ValueError(f"inner_product: {format_int_tuple(a)} and {format_int_tuple(b)} are not congruent")
    return imul(a, b)


def prefix_product(x, init=1):
    """Exclusive colexicographic prefix product with the nesting of ``x``: ``(4,(2,3)) -> (1,(4,8))``."""
    if type(x) not in TUPLES:
        return init
    out = []
    cur = init
    for i, e in enumerate(x):
        out.append(prefix_product(e, cur))
        if i + 1 < len(x):
            cur = imul(cur, product(e))
    return tuple(out)


def suffix_product(x, init=1):
    """Exclusive lexicographic (right-to-left) prefix product: ``(4,(2,3)) -> (6,(3,1))``."""
    if type(x) not in TUPLES:
        return init
    out = [None] * len(x)
    cur = init
    for i in range(len(x) - 1, -1, -1):
        out[i] = suffix_product(x[i], cur)
        if i:
            cur = imul(cur, product(x[i]))
    return tuple(out)


def _compact(shape, cur, reverse):
    leaves = _leaves(shape, [])
    n = len(leaves)
    strides = [0] * n
    order = range(n - 1, -1, -1) if reverse else range(n)
    last = order[-1] if n else None
    for i in order:
        s = leaves[i]
        if type(s) in INTS and s == 1:
            continue
        strides[i] = cur
        if i != last:  # NOTE: no product after the last mode, so no dead run-time op.
            cur = imul(cur, s)
    return unflatten(strides, shape) if type(shape) in TUPLES else strides[0]


def compact_col_major(shape, start=1):
    """Compact column-major (LayoutLeft) strides; static shape-1 modes get stride 0 (as CuTe)."""
    return _compact(shape, start, False)


def compact_row_major(shape, start=1):
    """Compact row-major (LayoutRight) strides at every level; static shape-1 modes get stride 0."""
    return _compact(shape, start, True)


def shape_div(a, b):
    """CuTe ``shape_div``: divide ``a`` by ``b`` left to right (``(6,2) / 3 -> (2,2)``)."""
    if type(a) in TUPLES:
        if type(b) in TUPLES:
            if len(a) != len(b):
                raise ValueError(f"shape_div: ranks of {format_int_tuple(a)} and {format_int_tuple(b)} differ")
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        out = []
        for k, e in enumerate(a):
            out.append(shape_div(e, b))
            if k + 1 < len(a):
                b = shape_div(b, product(e))
        return tuple(out)
    if type(b) in TUPLES:
        return shape_div(a, product(b))
    return ishape_div(a, b)


def ceil_div(a, b):
    """CuTe ``ceil_div``: ``ceil(a / b)``, folded left to right over a tuple ``a``."""
    if type(a) in TUPLES:
        if type(b) in TUPLES:
            if len(b) > len(a):
                raise ValueError(f"ceil_div: {format_int_tuple(b)} has more modes than {format_int_tuple(a)}")
            return tuple(ceil_div(x, b[i] if i < len(b) else 1) for i, x in enumerate(a))
        out = []
        for k, e in enumerate(a):
            out.append(ceil_div(e, b))
            if k + 1 < len(a):
                b = ceil_div(b, product(e))
        return tuple(out)
    if type(b) in TUPLES:
        return ceil_div(a, product(b))
    return iceil_div(a, b)


def elem_less(a, b):
    """True if every leaf of ``a`` is less than the matching leaf of ``b`` (extra modes of ``b`` ignored).

    Static leaves fold; traced comparisons are combined with ``&`` into one traced boolean.
    """
    if type(a) in TUPLES:
        if type(b) not in TUPLES or len(a) > len(b):
            raise ValueError(f"elem_less: {format_int_tuple(a)} does not match {format_int_tuple(b)}")
        acc = True
        for x, y in zip(a, b):
            r = elem_less(x, y)
            if r is False:
                return False
            if r is not True:
                acc = r if acc is True else acc & r
        return acc
    if type(b) in TUPLES:
        raise ValueError(f"elem_less: {format_int_tuple(a)} does not match {format_int_tuple(b)}")
    return a < b


def elem_scale(a, b):
    """CuTe ``elem_scale``: ``a_i * product(b_i)`` mode by mode."""
    if type(a) in TUPLES:
        if type(b) not in TUPLES or len(a) != len(b):
            raise ValueError(f"elem_scale: {format_int_tuple(a)} and {format_int_tuple(b)} differ in rank")
        return tuple(elem_scale(x, y) for x, y in zip(a, b))
    return imul(a, product(b))


def congruent(a, b) -> bool:
    """Same nesting (profile): ``congruent((2,(3,4)), (5,(6,7)))``."""
    if type(a) in TUPLES:
        return type(b) in TUPLES and len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return type(b) not in TUPLES


def weakly_congruent(a, b) -> bool:
    """``a``'s nesting is a coarsening of ``b``'s: a leaf of ``a`` may stand for a subtree of ``b``."""
    if type(a) in TUPLES:
        return type(b) in TUPLES and len(a) == len(b) and all(weakly_congruent(x, y) for x, y in zip(a, b))
    return True


def _static_eq(x, y):
    if x is y:
        return True
    if type(x) in INTS and type(y) in INTS:
        return x == y
    raise TypeError("cannot decide equality of run-time integers at trace time; this check needs static shapes")


def compatible(a, b) -> bool:
    """Every coordinate of shape ``a`` is a coordinate of shape ``b`` (same sizes, ``a`` coarser)."""
    if type(a) in TUPLES:
        return type(b) in TUPLES and len(a) == len(b) and all(compatible(x, y) for x, y in zip(a, b))
    return _static_eq(a, product(b))


def weakly_compatible(a, b) -> bool:
    """Like :func:`compatible` but the sizes of ``a``'s leaves need only divide those of ``b``."""
    if type(a) in TUPLES:
        return type(b) in TUPLES and len(a) == len(b) and all(weakly_compatible(x, y) for x, y in zip(a, b))
    pa, pb = a, product(b)
    if type(pa) in INTS and type(pb) in INTS:
        return pa != 0 and pb % pa == 0
    return _static_eq(pa, pb)


def equal(a, b) -> bool:
    """Structural equality; traced leaves compare by identity (never through ``==``)."""
    ta = type(a)
    if ta in TUPLES:
        return type(b) in TUPLES and len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if ta in INTS:
        return type(b) in INTS and a == b
    if ta is Basis:
        return type(b) is Basis and a == b
    return a is b


def transform_leaf(fn, *trees):
    """Apply ``fn`` leaf by leaf to congruent trees (the first tree gives the nesting)."""
    t0 = trees[0]
    if type(t0) in TUPLES:
        for t in trees[1:]:
            if type(t) not in TUPLES or len(t) != len(t0):
                raise ValueError(f"transform_leaf: {format_int_tuple(t)} is not congruent to {format_int_tuple(t0)}")
        return tuple(transform_leaf(fn, *parts) for parts in zip(*trees))
    return fn(*trees)


def repeat_like(x, value):
    """A tuple congruent to ``x`` with every leaf replaced by ``value``."""
    if type(x) in TUPLES:
        return tuple(repeat_like(e, value) for e in x)
    return value


def _elementwise(a, b, op, name):
    a = make_int_tuple(a)
    b = make_int_tuple(b)
    if type(a) in TUPLES and type(b) in TUPLES:
        if len(a) != len(b):
            raise ValueError(f"{name}: {format_int_tuple(a)} and {format_int_tuple(b)} differ in rank")
        return tuple(_elementwise(x, y, op, name) for x, y in zip(a, b))
    if type(a) in TUPLES:
        return tuple(_elementwise(x, b, op, name) for x in a)
    if type(b) in TUPLES:
        return tuple(_elementwise(a, y, op, name) for y in b)
    return op(a, b)


def int_tuple_add(a, b):
    """Element-wise ``a + b`` (a scalar broadcasts over a tuple)."""
    return _elementwise(a, b, iadd, "int_tuple_add")


def int_tuple_sub(a, b):
    """Element-wise ``a - b`` (a scalar broadcasts over a tuple)."""
    return _elementwise(a, b, isub, "int_tuple_sub")


def int_tuple_mul(a, b):
    """Element-wise ``a * b`` (a scalar broadcasts over a tuple)."""
    return _elementwise(a, b, imul, "int_tuple_mul")


def int_tuple_div(a, b):
    """Element-wise floor division; divides basis coefficients (``(2E0,8E1)/(2,4) = (1E0,2E1)``)."""
    return _elementwise(a, b, idiv, "int_tuple_div")


def int_tuple_mod(a, b):
    """Element-wise ``a % b`` (a scalar broadcasts over a tuple)."""
    return _elementwise(a, b, imod, "int_tuple_mod")
