"""Atomics: ``ptr.atomic_rmw`` and ``ptr.atomic_cas`` on global, shared, local and generic memory.

Semantics: the active lanes' operations are serialized in linear thread order (block by block,
thread by thread) — one of the orders a GPU may pick. Each lane gets the value the location held
just before its own operation. Lanes hitting distinct addresses update in one vectorized step;
colliding lanes are processed either round by round (the k-th lane of every address in round k) or,
for associative kinds, by one ``ufunc.accumulate`` per address over ``[old, v0, v1, …]`` — which is
exactly the sequential result, float rounding included.

Kinds: ``add`` (integers wrap; floats round per step), ``max``/``min`` (signed; floats: NaN-ignoring
like ``llvm.maxnum``), ``umax``/``umin`` (unsigned), ``and``/``or``/``xor``, ``xchg``. CAS compares
bit patterns (so ``-0.0`` ≠ ``+0.0`` and a NaN equals the same NaN).
"""

from __future__ import annotations

import numpy as np

from ..ir import Op, PointerType
from .access import resolve, space_of
from .machine import Compiler, impl, value_dtype
from .memory import view_dtype

__all__ = ["ATOMIC_UFUNCS"]


def _xchg(old, v):
    return v


# kind -> (ufunc for ints, ufunc for floats, works on unsigned bits)
ATOMIC_UFUNCS = {
    "add": (np.add, np.add, False),
    "max": (np.maximum, np.fmax, False),
    "min": (np.minimum, np.fmin, False),
    "umax": (np.maximum, None, True),
    "umin": (np.minimum, None, True),
    "and": (np.bitwise_and, None, False),
    "or": (np.bitwise_or, None, False),
    "xor": (np.bitwise_xor, None, False),
    "xchg": (_xchg, _xchg, False),
}


def _work_dtype(dt: np.dtype, unsigned: bool) -> np.dtype:
    vd = view_dtype(dt)
    if unsigned and vd.kind == "i":
        return np.dtype(f"u{vd.itemsize}")
    return vd


def _segments(e: np.ndarray):
    """Sort element indices; return (order, sorted, segment starts, lengths, rank within segment)."""
    order = np.argsort(e, kind="stable")
    es = e[order]
    k = es.shape[0]
    brk = np.empty(k, np.bool_)
    brk[0] = True
    np.not_equal(es[1:], es[:-1], out=brk[1:])
    starts = np.flatnonzero(brk)
    lens = np.diff(np.append(starts, k))
    rank = np.arange(k) - np.repeat(starts, lens)
    return order, es, starts, lens, rank


def _apply(view: np.ndarray, e: np.ndarray, vals: np.ndarray, fn, cmp=None) -> np.ndarray:
    """Serialize ``view[e[i]] = fn(view[e[i]], vals[i])`` in order i; return the old values.

    With ``cmp`` (CAS): ``view[e[i]] = vals[i] if bits(view[e[i]]) == bits(cmp[i]) else unchanged``.
    """
    k = e.shape[0]
    if k == 0:
        return np.zeros(0, view.dtype)
    order, es, starts, lens, rank = _segments(e)
    vs = vals[order]
    cs = None if cmp is None else cmp[order]
    olds = np.empty(k, view.dtype)
    rounds = int(lens.max())
    acc = getattr(fn, "accumulate", None)
    multi = np.flatnonzero(lens > 1)
    if rounds > 1 and cmp is None and (acc is not None or fn is _xchg) and multi.shape[0] < rounds:
        _apply_by_segment(view, es, vs, starts, lens, olds, fn, multi)
        return _unsort(olds, order)
    if rounds == 1:
        groups = [np.arange(k)]
    else:
        by_rank = np.argsort(rank, kind="stable")
        bounds = np.cumsum(np.bincount(rank))
        groups = np.split(by_rank, bounds[:-1])
    for sel in groups:
        idx = es[sel]
        old = view[idx]
        olds[sel] = old
        if cs is None:
            view[idx] = fn(old, vs[sel])
        else:
            view[idx] = np.where(_bits(old) == _bits(cs[sel]), vs[sel], old)
    return _unsort(olds, order)


def _apply_by_segment(view, es, vs, starts, lens, olds, fn, multi) -> None:
    single = lens == 1
    if single.any():
        pos = starts[single]
        idx = es[pos]
        old = view[idx]
        olds[pos] = old
        view[idx] = fn(old, vs[pos])
    for j in multi.tolist():
        a, n = int(starts[j]), int(lens[j])
        idx = es[a]
        if fn is _xchg:
            olds[a] = view[idx]
            olds[a + 1 : a + n] = vs[a : a + n - 1]
            view[idx] = vs[a + n - 1]
            continue
        seq = np.concatenate([view[idx : idx + 1], vs[a : a + n]])
        run = fn.accumulate(seq, dtype=view.dtype)
        olds[a : a + n] = run[:-1]
        view[idx] = run[-1]


def _unsort(olds, order):
    out = np.empty_like(olds)
    out[order] = olds
    return out


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(f"u{x.dtype.itemsize}") if x.dtype.kind not in "iub" else x


def _rmw(lanes, op, space, p, vals, dt, tname, fn, unsigned, cmp=None, what="atomic"):
    """Run one atomic per active lane; returns the old values (inactive lanes: 0)."""
    T = lanes.T
    m = lanes.mask
    wd = _work_dtype(dt, unsigned)
    P = np.broadcast_to(np.asarray(p, np.int64).reshape(-1), (T,))
    V = np.broadcast_to(np.asarray(vals).reshape(-1), (T,)).astype(dt, copy=False)
    C = None if cmp is None else np.broadcast_to(np.asarray(cmp).reshape(-1), (T,)).astype(dt, copy=False)
    if m is None:
        pos, a, ln = None, P, None
    else:
        pos = np.flatnonzero(m)
        a, ln = P[pos], pos
        V = V[pos]
        C = None if C is None else C[pos]
    V = V.view(wd) if V.dtype != wd and V.dtype.itemsize == wd.itemsize else V.astype(wd)
    if C is not None:
        C = C.view(wd) if C.dtype != wd and C.dtype.itemsize == wd.itemsize else C.astype(wd)
    size = wd.itemsize
    old = np.zeros(a.shape[0], wd)
    lanes.writes += 1
    for arena, off, gpos in resolve(lanes, op, space, a, ln, size, tname, what):
        e = off >> (size.bit_length() - 1)
        gv = V if gpos is None else V[gpos]
        gc = None if C is None else (C if gpos is None else C[gpos])
        o = _apply(arena.typed(wd), e, gv, fn, gc)
        if gpos is None:
            old = o
        else:
            old[gpos] = o
    old = old.view(view_dtype(dt)) if old.dtype != view_dtype(dt) else old
    if dt == np.bool_:
        old = old != 0
    if pos is None:
        return old
    out = np.zeros(T, old.dtype)
    out[pos] = old
    return out


@impl("ptr.atomic_rmw")
def atomic_rmw(op: Op, cc: Compiler):
    """``ptr.atomic_rmw kind p, v``: serialized in linear thread order; returns the old value."""
    p, v = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])
    kind = op.attrs["kind"]
    pt = PointerType.of(op.operands[0])
    space = space_of(pt)
    vt = op.operands[1].type
    dt = value_dtype(vt)
    int_fn, float_fn, unsigned = ATOMIC_UFUNCS[kind]
    fn = float_fn if vt.is_float else int_fn
    if fn is None:
        raise NotImplementedError(f"atomic {kind} on {vt}")
    what = f"atomic {kind}"

    def step(env, lanes):
        env[r] = _rmw(lanes, op, space, env[p], env[v], dt, str(vt), fn, unsigned, what=what)

    return step


@impl("ptr.atomic_cas")
def atomic_cas(op: Op, cc: Compiler):
    """``ptr.atomic_cas p, cmp, new``: bitwise compare-and-swap; returns the old value."""
    p, c, n = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])
    space = space_of(PointerType.of(op.operands[0]))
    vt = op.operands[2].type
    dt = value_dtype(vt)

    def step(env, lanes):
        env[r] = _rmw(lanes, op, space, env[p], env[n], dt, str(vt), _xchg, False, cmp=env[c], what="atomic cas")

    return step
