"""Logical shapes of ``fx.Vector``: nested tuples of positive ints kept in Python (IR vectors are flat).

Lanes are ordered row-major over the flattened leaves of the shape (FlyDSL's order): for shape
``(2, (1, 2))`` the coordinate ``(i, (j, k))`` is lane ``(i * 1 + j) * 2 + k``.
"""

from __future__ import annotations

import itertools

__all__ = [
    "canonical_shape",
    "leaves",
    "numel",
    "broadcast_shapes",
    "coord_positions",
    "broadcast_positions",
]


def canonical_shape(shape) -> tuple:
    """``4`` → ``(4,)``; lists become tuples at every level.

    Raises:
        TypeError: a dimension that is not a positive ``int`` (bools and floats are rejected), or an empty
            tuple at some level.
    """
    if isinstance(shape, (list, tuple)):
        return _canon_tuple(shape)
    return (_check_dim(shape),)


def _canon_tuple(t) -> tuple:
    if len(t) == 0:
        raise TypeError(f"a Vector shape must be non-empty at every level, got {t!r}")
    return tuple(_canon_tuple(d) if isinstance(d, (list, tuple)) else _check_dim(d) for d in t)


def _check_dim(d) -> int:
    if type(d) is not int or d <= 0:
        raise TypeError(f"a Vector dimension must be a positive integer, got {d!r}")
    return d


def leaves(shape) -> list[int]:
    """The flattened dimensions of a (nested) shape."""
    out = []
    for d in shape:
        if isinstance(d, tuple):
            out.extend(leaves(d))
        else:
            out.append(d)
    return out


def numel(shape) -> int:
    n = 1
    for d in leaves(shape):
        n *= d
    return n


def broadcast_shapes(a: tuple, b: tuple) -> tuple:
    """numpy-style broadcast of two shapes over their flattened leaves (a 1-lane shape broadcasts to any).

    Raises:
        ValueError: incompatible shapes.
    """
    if a == b:
        return a
    if numel(a) == 1:
        return b
    if numel(b) == 1:
        return a
    la, lb = leaves(a), leaves(b)
    r = max(len(la), len(lb))
    la = [1] * (r - len(la)) + la
    lb = [1] * (r - len(lb)) + lb
    out = []
    for x, y in zip(la, lb):
        if x != y and 1 not in (x, y):
            raise ValueError(f"cannot broadcast Vector shapes {a} and {b}")
        out.append(max(x, y))
    return tuple(out)


def broadcast_positions(src: tuple, dst: tuple) -> list[int]:
    """For each lane of ``dst`` (row-major), the source lane it reads when ``src`` broadcasts to ``dst``.

    Raises:
        ValueError: ``src`` does not broadcast to ``dst``.
    """
    ls, ld = leaves(src), leaves(dst)
    if numel(src) == 1:
        return [0] * numel(dst)
    if len(ls) > len(ld):
        raise ValueError(f"cannot broadcast Vector shape {src} to {dst}")
    ls = [1] * (len(ld) - len(ls)) + ls
    for s, d in zip(ls, ld):
        if s != d and s != 1:
            raise ValueError(f"cannot broadcast Vector shape {src} to {dst}")
    strides = _row_major_strides(ls)
    out = []
    for crd in itertools.product(*(range(d) for d in ld)):
        out.append(sum((c if s != 1 else 0) * st for c, s, st in zip(crd, ls, strides)))
    return out


def _row_major_strides(dims: list[int]) -> list[int]:
    strides, acc = [], 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= d
    return strides[::-1]


def _pair_leaves(shape, coord, out: list) -> None:
    """(extent, coordinate) per leaf, a None coordinate over a nested mode covering all its leaves."""
    if isinstance(shape, tuple):
        if coord is None:
            out.extend((d, None) for d in leaves(shape))
            return
        if not isinstance(coord, tuple) or len(coord) != len(shape):
            raise ValueError(f"coordinate {coord!r} does not match the Vector shape {shape}")
        for s, c in zip(shape, coord):
            _pair_leaves(s, c, out)
        return
    if isinstance(coord, tuple):
        raise ValueError(f"coordinate {coord!r} is nested deeper than the Vector shape")
    out.append((shape, coord))


def _flat(coord) -> list:
    if isinstance(coord, tuple):
        return [x for c in coord for x in _flat(c)]
    return [coord]


def coord_pairs(shape: tuple, coord: tuple) -> list:
    """Pair a coordinate with the shape's leaves: structurally, or flat when it has no ``None``
    (FlyDSL accepts a flat coordinate for a nested shape).

    Raises:
        ValueError: the coordinate's rank or nesting does not match the shape.
    """
    flat = _flat(coord)
    ls = leaves(shape)
    if None not in flat and len(flat) == len(ls):
        return list(zip(ls, flat))
    out: list = []
    _pair_leaves(shape, coord, out)
    return out


def sliced_shape(shape, coord):
    """The shape kept by a coordinate with ``None`` entries (modes fixed by an int are dropped)."""
    out = []
    for d, c in zip(shape, coord):
        if isinstance(d, tuple):
            if c is None:
                out.append(d)
                continue
            sub = sliced_shape(d, c if isinstance(c, tuple) else (c,))
            if sub != ():
                out.append(sub)
        elif c is None:
            out.append(d)
    return tuple(out)


def coord_positions(pairs: list) -> list[int]:
    """Row-major lanes selected by (extent, int-or-None) pairs, None leaves ranging over their extent."""
    strides = _row_major_strides([d for d, _ in pairs])
    ranges = [range(d) if c is None else (c,) for d, c in pairs]
    return [sum(c * s for c, s in zip(crd, strides)) for crd in itertools.product(*ranges)]
