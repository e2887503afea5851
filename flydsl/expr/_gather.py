"""``fx.gather`` / ``fx.scatter``: indexed copies — each copy instance reads (writes) memory at the base
iterator advanced by its own run-time offset.

Argument layouts (FlyDSL's contract)::

    data fragment : ((AtomV, TV), Rest...)   the register side, as partition_S/D + make_fragment_like
    offset tensor : (TV, Rest...)            one element offset (Int32) per copy instance
    pred tensor   : (TV, Rest...)            optional: a false instance neither reads nor writes

Instance ``(v, r)`` copies ``AtomV`` contiguous elements between ``base + offset[v, r]`` and the data
fragment's ``[(None, v), r]`` slice with the given copy atom.
"""

from __future__ import annotations

from .. import layout as L
from .copy import CopyAtom, TiledCopy, copy
from .tensor import make_view

__all__ = ["gather", "scatter"]


def _static(n, what: str) -> int:
    if type(n) is not int:
        raise TypeError(f"fx.gather/scatter: the {what} must be static, got {n}")
    return n


def _instances(offsets, operand, pred):
    """``(offset, data slice, predicate)`` per copy instance, TV-major."""
    r = L.rank(offsets.layout)
    shape = offsets.layout._shape
    tv = _static(L.size(shape[0] if type(shape) is tuple else shape), "TV size of the offset tensor")
    if r <= 1:
        for v in range(tv):
            yield offsets[v], operand[None, v], None if pred is None else pred[v]
        return
    rest = _static(L.size(offsets.layout) // tv, "rest size of the offset tensor")
    for v in range(tv):
        for i in range(rest):
            crd = L.idx2crd(i, tuple(shape[1:]))
            crd = crd if type(crd) is tuple else (crd,)
            data = operand[((None, v), *crd)]
            yield offsets[(v, *crd)], data, None if pred is None else pred[(v, *crd)]


def _atom(copy_atom) -> CopyAtom:
    if isinstance(copy_atom, TiledCopy):
        copy_atom = copy_atom.atom
    if not isinstance(copy_atom, CopyAtom):
        raise TypeError(f"fx.gather/scatter need a copy atom (fx.make_copy_atom), got {copy_atom!r}")
    return copy_atom


def gather(copy_atom, base_iter, offset_tensor, dst_tensor, *, pred=None) -> None:
    """``dst[(:, v), r] = base[offset[v, r] : offset[v, r] + AtomV]`` for every instance (see the module)."""
    atom = _atom(copy_atom)
    vals = L.Layout._make(atom.num_vals, 1)
    for off, dst, p in _instances(offset_tensor, dst_tensor, pred):
        copy(atom, make_view(base_iter + off, vals), dst, pred=p)


def scatter(copy_atom, src_tensor, base_iter, offset_tensor, *, pred=None) -> None:
    """``base[offset[v, r] : offset[v, r] + AtomV] = src[(:, v), r]`` for every instance (see the module)."""
    atom = _atom(copy_atom)
    vals = L.Layout._make(atom.num_vals, 1)
    for off, src, p in _instances(offset_tensor, src_tensor, pred):
        copy(atom, src, make_view(base_iter + off, vals), pred=p)
