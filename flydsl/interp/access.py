"""Memory accesses of a batch of lanes: loads, stores and read-modify-writes in every address space.

Input: a pointer value (uniform or per lane), an element dtype and count, the active elements.
Output: the loaded values / the stores done, or an :class:`InterpError` naming the buffer (and the
kernel argument that points into it), the element index and its bound, and the first faulting lane.

Address spaces (LLVM numbering): global (1) and constant (4) pointers are byte addresses of
registered buffers; shared (3) pointers are byte offsets into the block's shared memory; local (5)
pointers are byte offsets into the thread's local memory; generic (0) pointers are global addresses
or ``SHARED_WINDOW + offset`` / ``LOCAL_WINDOW + offset``; shared-cluster (7) pointers are
``rank << CLUSTER_RANK_SHIFT | offset``: byte ``offset`` of the shared memory of block ``rank`` of the
accessing thread's cluster (the batch holds whole clusters). Every element access must be naturally
aligned (the GPU faults otherwise); a vector access must also honour its ``align`` attribute.
"""

from __future__ import annotations

import numpy as np

from ..ir import PointerType
from ..ir.types import AddressSpace
from .errors import format_loc
from .memory import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SHIFT, view_dtype

__all__ = [
    "GLOBAL", "SHARED", "LOCAL", "GENERIC", "SHARED_CLUSTER", "CLUSTER_RANK_SHIFT", "space_of", "load", "store",
    "resolve", "arg_desc", "cluster_dims", "cluster_peer", "check_vector_align",
]  # fmt: skip

GLOBAL, SHARED, LOCAL, GENERIC = AddressSpace.GLOBAL, AddressSpace.SHARED, AddressSpace.LOCAL, AddressSpace.GENERIC
SHARED_CLUSTER = AddressSpace.SHARED_CLUSTER
CLUSTER_RANK_SHIFT = 32  # a shared-cluster pointer: the block rank above the 32-bit shared-memory offset
_SHARED_W, _LOCAL_W = SHARED_WINDOW >> WINDOW_SHIFT, LOCAL_WINDOW >> WINDOW_SHIFT
_SPACE_NAME = {
    GLOBAL: "global",
    SHARED: "shared",
    LOCAL: "local",
    GENERIC: "generic",
    SHARED_CLUSTER: "shared::cluster",
}


def cluster_dims(program) -> tuple:
    """The kernel's cluster shape (``launch(cluster=...)``; 1x1x1 without clusters)."""
    cd = program.kernel.attrs.get("cluster_dims") or (1, 1, 1)
    return tuple(int(x) for x in cd)


def cluster_peer(lanes, blk: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """The batch index of the block of rank ``rank`` in the cluster of batch block ``blk`` (int64 arrays)."""
    cx, cy, cz = cluster_dims(lanes.program)
    gx, gy, _ = lanes.grid
    b = lanes.first + blk
    bx, by, bz = b % gx, b // gx % gy, b // (gx * gy)
    px = bx - bx % cx + rank % cx
    py = by - by % cy + rank // cx % cy
    pz = bz - bz % cz + rank // (cx * cy)
    return px + gx * (py + gy * pz) - lanes.first


def space_of(t: PointerType) -> int:
    """The access space of a pointer type (constant memory is global memory here)."""
    return GLOBAL if t.space == AddressSpace.CONSTANT else t.space


# -- fault messages -----------------------------------------------------------------------------


def arg_desc(lanes, buf) -> str:
    """`` (kernel argument 'x')`` when a pointer argument of the launch points into ``buf``."""
    names = []
    for i, (t, v) in enumerate(zip(lanes.program.main.arg_types, lanes.args)):
        if isinstance(t, PointerType) and np.ndim(v) == 0 and buf.base <= int(v) <= buf.end:
            nm = lanes.arg_names[i] if lanes.arg_names and i < len(lanes.arg_names) else None
            names.append(f"'{nm}'" if nm else f"#{i}")
    if not names:
        return ""
    return f" (kernel argument {' / '.join(names)})"


def _describe_global(lanes, a: int, size: int, count: int, tname: str, what: str) -> str:
    buf = lanes.memory.nearest(a)
    head = f"out-of-bounds {what} of {tname} at address 0x{a:x}"
    if a < 1 << 16:
        head += " (null pointer)"
    if buf is None:
        return head + ": no buffer is registered"
    idx = (a - buf.base) // size
    n = buf.nbytes // size
    elems = f"element {idx}" if count == 1 or not 0 <= idx < n else f"elements {idx}..{idx + count - 1}"
    return f"{head}: {elems} of buffer '{buf.name}'{arg_desc(lanes, buf)}, which has {n} elements of {tname}"


def _nearest_alloc(allocs, off: int):
    """The allocation record containing byte ``off``, else the closest one (or None)."""
    best, best_d = None, None
    for rec in allocs:
        start, nbytes = rec[1], rec[2]
        if nbytes <= 0:
            continue
        d = 0 if start <= off < start + nbytes else min(abs(off - start), abs(off - (start + nbytes - 1)))
        if best_d is None or d < best_d:
            best, best_d = rec, d
    return best


def _region(lanes, op, space: int) -> tuple | None:
    """The allocation record whose bounds an access through ``op`` must respect (None: the whole arena)."""
    r = lanes.program.region(op)
    if r is None:
        return None
    kind, rec = r
    if kind == "dynamic":
        return lanes.dyn_region() if space == SHARED else None
    return rec if (kind == "shared") == (space == SHARED) else None


def _resolve_cluster(lanes, op, a: np.ndarray, ln, size: int, tname: str, what: str, count: int) -> list:
    """Shared-cluster accesses: the rank's block in the batch, the offset checked like a shared access."""
    rank = a >> CLUSTER_RANK_SHIFT
    off = a & ((1 << CLUSTER_RANK_SHIFT) - 1)
    cx, cy, cz = cluster_dims(lanes.program)
    bad = (rank < 0) | (rank >= cx * cy * cz)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise lanes.fault(
            op,
            f"{what} of {tname} in the shared memory of block rank {int(rank[i])} of a cluster of {cx * cy * cz} "
            "block(s)",
            _lane(ln, i),
        )
    ((arena, own, _),) = resolve(lanes, op, SHARED, off, ln, size, tname, what, count)
    blk = lanes.lane_block() if ln is None else ln // lanes.tpb
    return [(arena, own + (cluster_peer(lanes, blk, rank) - blk) * lanes.S, None)]


def _describe_arena(lanes, space: int, off: int, size: int, count: int, tname: str, what: str, rec=None) -> str:
    prog = lanes.program
    if space == SHARED:
        total, allocs, kind, unit = lanes.S, prog.shared_allocs + [lanes.dyn_region()], "shared memory", "the block's"
    else:
        total, allocs, kind, unit = lanes.L, prog.local_allocs, "local memory", "the thread's"
    n = f" ({count} elements)" if count > 1 else ""
    text = f"out-of-bounds {what} of {tname}{n} in {kind} at byte offset {off}"
    best = rec if rec is not None else _nearest_alloc(allocs, off)
    if best is not None:
        name, start, nbytes, loc = best
        where = format_loc(loc)
        text += (
            f": element {(off - start) // size} of {name} ({nbytes // size} elements of {tname}"
            + (f", allocated at {where}" if where else "")
            + ")"
        )
    return text + f"; {unit} {kind} is {total} bytes"


# -- resolution: element addresses -> (arena, byte offset) ---------------------------------------


def resolve(lanes, op, space: int, a: np.ndarray, ln, size: int, tname: str, what: str, count: int = 1) -> list:
    """Map access start addresses to arenas, checking alignment and bounds.

    Args:
        a: int64 (k,) first-byte addresses (or offsets, for shared/local) of accesses of ``count``
            consecutive ``size``-byte elements.
        ln: int64 (k,) lane of each access, or None when ``k == T`` and access i belongs to lane i.
    Returns:
        ``[(arena, byte_offsets, pos)]`` — ``pos`` None (all k accesses) or their index array.
    """
    if a.shape[0] == 0:
        return []
    span = size * count
    if size > 1:
        mis = (a & (size - 1)) != 0
        if mis.any():
            i = int(np.flatnonzero(mis)[0])
            addr = int(a[i])
            where = ""
            buf = lanes.memory.find(addr) if space == GLOBAL else None
            if buf is not None:
                where = f", byte {addr - buf.base} of buffer '{buf.name}'{arg_desc(lanes, buf)}"
            raise lanes.fault(
                op,
                f"misaligned {what} of {tname} at {_SPACE_NAME[space]} address 0x{addr:x}{where} "
                f"(not a multiple of {size} bytes)",
                _lane(ln, i),
            )
    if space == GLOBAL:
        groups, bad = lanes.memory.locate(a, span)
        if bad >= 0:
            raise lanes.fault(op, _describe_global(lanes, int(a[bad]), size, count, tname, what), _lane(ln, bad))
        return [(buf, (a if pos is None else a[pos]) - buf.base, pos) for buf, pos in groups]
    if space == SHARED or space == LOCAL:
        total = lanes.S if space == SHARED else lanes.L
        rec = _region(lanes, op, space)  # the allocation the pointer comes from: its bounds, not the arena's
        lo, hi = (rec[1], rec[1] + rec[2]) if rec is not None else (0, total)
        bad = (a < lo) | (a > hi - span)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            detail = _describe_arena(lanes, space, int(a[i]), size, count, tname, what, rec)
            raise lanes.fault(op, detail, _lane(ln, i))
        if space == SHARED:
            owner = lanes.lane_block() if ln is None else ln // lanes.tpb
            return [(lanes.shared, owner * total + a, None)]
        owner = lanes.arange() if ln is None else ln
        return [(lanes.local, owner * total + a, None)]
    if space == SHARED_CLUSTER:
        return _resolve_cluster(lanes, op, a, ln, size, tname, what, count)
    # generic: split by window
    w = a >> WINDOW_SHIFT
    in_sh = w == _SHARED_W
    in_lo = w == _LOCAL_W
    if not (in_sh.any() or in_lo.any()):
        return resolve(lanes, op, GLOBAL, a, ln, size, tname, what, count)
    out = []
    for sp, sel, base in ((GLOBAL, ~(in_sh | in_lo), 0), (SHARED, in_sh, SHARED_WINDOW), (LOCAL, in_lo, LOCAL_WINDOW)):
        pos = np.flatnonzero(sel)
        if pos.shape[0] == 0:
            continue
        sub_ln = pos if ln is None else ln[pos]
        for arena, off, sub in resolve(lanes, op, sp, a[pos] - base, sub_ln, size, tname, what, count):
            out.append((arena, off, pos if sub is None else pos[sub]))
    return out


def _lane(ln, i: int) -> int:
    return i if ln is None else int(ln[i])


def _index(off: np.ndarray, shift: int, count: int, vec: bool) -> np.ndarray:
    e = off >> shift
    if vec:
        return e[:, None] + np.arange(count, dtype=np.int64)
    return e


def _gather(lanes, op, space, a, ln, dt, tname, count=1, vec=False) -> np.ndarray:
    """Read accesses of ``count`` elements at ``a``: ``(k,)`` (scalars) or ``(k, count)`` (``vec``)."""
    vd = view_dtype(dt)
    size = vd.itemsize
    shift = size.bit_length() - 1
    groups = resolve(lanes, op, space, a, ln, size, tname, "read", count)
    if len(groups) == 1 and groups[0][2] is None:
        arena, off, _ = groups[0]
        v = arena.typed(vd)[_index(off, shift, count, vec)]
    else:
        v = np.zeros((a.shape[0], count) if vec else a.shape[0], vd)
        for arena, off, pos in groups:
            v[pos] = arena.typed(vd)[_index(off, shift, count, vec)]
    return v != 0 if dt == np.bool_ else v


def _scatter(lanes, op, space, a, ln, dt, tname, vals, count=1, vec=False) -> None:
    """Write ``vals`` (``(k,)`` or ``(k, count)``) to accesses at ``a``; for one address the last write wins."""
    vd = view_dtype(dt)
    size = vd.itemsize
    shift = size.bit_length() - 1
    vals = np.asarray(vals).astype(vd, copy=False)
    lanes.writes += 1
    for arena, off, pos in resolve(lanes, op, space, a, ln, size, tname, "write", count):
        view = arena.typed(vd)
        if not view.flags.writeable:
            name = getattr(arena, "name", "?")
            raise lanes.fault(op, f"write of {tname} to read-only buffer '{name}'", _lane(ln, 0))
        view[_index(off, shift, count, vec)] = vals if pos is None else vals[pos]


# -- lane-level accesses ------------------------------------------------------------------------


def check_vector_align(lanes, op, starts, emask, align: int, what: str) -> None:
    """Fault as the GPU does when an ``align``-byte vector access starts at an address that is not a
    multiple of ``align``: ``starts`` (R,) first-byte addresses, ``emask`` (R,) or (R, 1) the accesses
    issued as one vector instruction (the lane mask is applied on top)."""
    _check_align(lanes, op, np.asarray(starts, dtype=np.int64).reshape(-1), _element_mask(lanes, emask), align, what)


def _element_mask(lanes, emask):
    """Active elements: ``lanes.mask`` & ``emask`` as a bool array ``(R, 1|n)``, or None (all)."""
    m = lanes.mask
    if emask is None:
        return None if m is None else m[:, None]
    e = np.asarray(emask)
    if e.ndim < 2:
        e = e.reshape(-1, 1)
    if m is None:
        return e
    return m[:, None] & e


def _global_once(space, starts) -> bool:
    """True when a uniform access may be done once for all lanes (one global address)."""
    if starts.shape[0] != 1:
        return False
    if space == GLOBAL:
        return True
    if space == GENERIC:
        w = int(starts[0]) >> WINDOW_SHIFT
        return w != _SHARED_W and w != _LOCAL_W
    return False


def _check_align(lanes, op, starts, M, align, what):
    if not align or align <= 1:
        return
    mis = (starts & (align - 1)) != 0
    if M is not None:
        act = M.any(axis=1)
        if starts.shape[0] > 1:
            mis &= np.broadcast_to(act, mis.shape)
        elif not act.any():
            return
    if mis.any():
        i = int(np.flatnonzero(mis)[0])
        lane = i if starts.shape[0] > 1 else lanes.first_active()
        raise lanes.fault(
            op, f"misaligned vector {what}: address 0x{int(starts[i]):x} is not a multiple of align={align}", lane
        )


def _elements(lanes, P, M, N, size):
    """Flat element addresses, lanes and positions of the active elements of a per-element-masked access."""
    T = lanes.T
    A = (np.broadcast_to(P, (T,))[:, None] + np.arange(N, dtype=np.int64) * size).reshape(-1)
    pos = np.flatnonzero(np.broadcast_to(M, (T, N)))
    return A[pos], pos // N, pos


def load(lanes, op, space, p, n, dt, tname, emask=None, align=0) -> np.ndarray:
    """Load ``n`` consecutive elements (``n`` = 0: a scalar) per active lane; inactive elements read 0.

    ``emask``: an extra mask, per lane (``()``/``(T,)``/``(R, 1)``) or per element (``(R, n)``).
    A uniform global address is read once and gives a uniform value (masked-off lanes then hold the
    value instead of 0, which no program can observe). Shapes: scalar ``()``/``(T,)``, vector
    ``(1, n)``/``(T, n)``.
    """
    N = n or 1
    vec = n > 0
    size = view_dtype(dt).itemsize
    starts = np.asarray(p, dtype=np.int64).reshape(-1)
    M = _element_mask(lanes, emask)
    per_elem = M is not None and M.shape[1] > 1
    _check_align(lanes, op, starts, M, align, "read")
    if _global_once(space, starts):
        shape = (1, N) if vec else ()
        if M is None or not per_elem:
            if M is not None and not M.any():
                return np.zeros(shape, dt)
            lane = np.full(1, lanes.first_active(), np.int64)
            return _gather(lanes, op, space, starts, lane, dt, tname, N, vec).reshape(shape)
        cols = M.any(axis=0)
        if not cols.any():
            return np.zeros(shape, dt)
        a = starts[0] + np.flatnonzero(cols).astype(np.int64) * size
        out = np.zeros(N, dt)
        out[cols] = _gather(lanes, op, space, a, np.full(a.shape[0], lanes.first_active(), np.int64), dt, tname)
        return out.reshape(shape)
    T = lanes.T
    P = np.broadcast_to(starts, (T,))
    if not per_elem:
        if M is None:
            return _gather(lanes, op, space, P, None, dt, tname, N, vec)
        pos = np.flatnonzero(np.broadcast_to(M[:, 0], (T,)))
        out = np.zeros((T, N) if vec else T, dt)
        out[pos] = _gather(lanes, op, space, P[pos], pos, dt, tname, N, vec)
        return out
    a, ln, pos = _elements(lanes, P, M, N, size)
    out = np.zeros(T * N, dt)
    out[pos] = _gather(lanes, op, space, a, ln, dt, tname)
    return out.reshape(T, N)


def store(lanes, op, space, p, n, dt, tname, value, emask=None, align=0) -> None:
    """Store ``value`` (scalar or ``n``-vector per lane) to the active elements.

    Several lanes writing one address: the last lane (in linear thread order) wins.
    """
    N = n or 1
    vec = n > 0
    size = view_dtype(dt).itemsize
    starts = np.asarray(p, dtype=np.int64).reshape(-1)
    V = np.asarray(value)
    V = V.reshape(-1, N) if vec else V.reshape(-1)
    M = _element_mask(lanes, emask)
    per_elem = M is not None and M.shape[1] > 1
    _check_align(lanes, op, starts, M, align, "write")
    if V.shape[0] == 1 and _global_once(space, starts):
        if M is None or not per_elem:
            if M is None or M.any():
                lane = np.full(1, lanes.first_active(), np.int64)
                _scatter(lanes, op, space, starts, lane, dt, tname, V, N, vec)
            return
        cols = M.any(axis=0)
        if cols.any():
            a = starts[0] + np.flatnonzero(cols).astype(np.int64) * size
            lane = np.full(a.shape[0], lanes.first_active(), np.int64)
            _scatter(lanes, op, space, a, lane, dt, tname, V[0][cols])
        return
    T = lanes.T
    P = np.broadcast_to(starts, (T,))
    V = np.broadcast_to(V, (T, N) if vec else (T,))
    if not per_elem:
        if M is None:
            _scatter(lanes, op, space, P, None, dt, tname, V, N, vec)
            return
        pos = np.flatnonzero(np.broadcast_to(M[:, 0], (T,)))
        _scatter(lanes, op, space, P[pos], pos, dt, tname, V[pos], N, vec)
        return
    a, ln, pos = _elements(lanes, P, M, N, size)
    _scatter(lanes, op, space, a, ln, dt, tname, V.reshape(-1)[pos])
