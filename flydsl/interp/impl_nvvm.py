"""``nvvm`` ops: warp-collective tensor-core MMA, ``ldmatrix``/``stmatrix`` and ``cp.async``.

Warp-collective ops gather the values of the 32 lanes of each warp (a warp is 32 consecutive linear
thread ids of a block), compute on whole matrices and scatter the results back, exactly as the PTX
ISA assigns fragments to lanes (:mod:`flydsl.dialects.nvvm` holds the tables). They are
``.sync.aligned``: every lane of a warp must execute them together; a warp that reaches one with only
some of its lanes active is a fault (the GPU's behaviour is undefined), as is a block whose last warp
is partial.

Arithmetic of ``mma.sync`` (documented in docs/mma.md): each element of D is ``C + Σ_k A·B`` with the
products exact and the sum formed in float64, rounded once to D's type (round to nearest even); for
8-bit integers the sum is exact and wraps modulo 2^32 (no ``.satfinite``).

``cp.async`` is a copy that completes later: issuing records it per lane (its source is read, and
its destination written, only when it completes), ``cp_async_commit_group`` closes the lane's
current group, and ``cp_async_wait_group n`` completes every copy of the lane's groups older than
its ``n`` most recent ones. A kernel that reads shared memory before waiting therefore sees the old
contents (shared memory starts as 0xFF bytes: NaN), never the data in flight. Bytes at or past the
copy's ``src_size`` are zero-filled and not read.
"""

from __future__ import annotations

import numpy as np

from ..dialects.nvvm import MMA_SHAPES, fragment_coords, ldmatrix_lanes
from ..ir import Op, VectorType
from .access import GLOBAL, SHARED, load, store
from .impl_cluster import check_whole_warps
from .machine import Compiler, impl, value_dtype

__all__ = ["CpAsyncState"]

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32}


def _full(x, T: int) -> np.ndarray:
    """A per-lane value ``(T, ...)`` from a uniform or per-lane one (scalars ``(T,)``, vectors ``(T, n)``)."""
    x = np.asarray(x)
    if x.ndim == 2:
        return np.broadcast_to(x, (T, x.shape[1])) if x.shape[0] == 1 else x
    return np.broadcast_to(x.reshape(-1), (T,)) if x.size == 1 else x


def _warps(lanes, op, what: str) -> int:
    """The number of warps of the batch; faults unless every warp is complete and converged."""
    if lanes.warp_size != 32:
        raise lanes.fault(op, f"{what} needs 32-lane warps (NVIDIA), the launch has warp_size={lanes.warp_size}", None)
    if lanes.tpb % 32:
        raise lanes.fault(
            op,
            f"{what} is executed by whole warps, but the block has {lanes.tpb} threads (its last warp is partial); "
            "launch a multiple of 32 threads per block",
            None,
        )
    nw = lanes.T // 32
    m = lanes.mask
    if m is not None:
        mm = m.reshape(nw, 32)
        partial = mm.any(axis=1) & ~mm.all(axis=1)
        if partial.any():
            w = int(np.flatnonzero(partial)[0])
            row = mm[w]
            lane_in, lane_out = int(np.flatnonzero(row)[0]), int(np.flatnonzero(~row)[0])
            raise lanes.fault(
                op,
                f"{what} is warp-collective (.sync.aligned), but only {int(row.sum())} of the 32 lanes of a warp "
                f"execute it (lane {lane_in} does, lane {lane_out} does not); keep it out of lane-divergent "
                "control flow",
                w * 32 + lane_in,
            )
    return nw


# ---------------------------------------------------------------------------------------------------------
# mma.sync
# ---------------------------------------------------------------------------------------------------------


def _operand_matrix(vals: np.ndarray, coords: np.ndarray, rows: int, cols: int, dt) -> np.ndarray:
    """``(nw, rows, cols)`` matrices from per-lane fragments ``(nw, 32, V)`` placed at ``coords``."""
    out = np.zeros((vals.shape[0], rows, cols), dt)
    out[:, coords[..., 0], coords[..., 1]] = vals
    return out


@impl("nvvm.mma_sync")
def mma_sync(op: Op, cc: Compiler):
    """``nvvm.mma_sync a, b, c``: per warp, D = A·B + C on the matrices the lanes' fragments form."""
    shape = op.attrs["shape"]
    M, N, K = MMA_SHAPES[shape]
    ta, tb, tc = (VectorType.of(v) for v in op.operands)
    ca = fragment_coords(shape, "A", ta.elem.bitwidth)
    cb = fragment_coords(shape, "B", tb.elem.bitwidth)
    ccd = fragment_coords(shape, "C", tc.elem.bitwidth)
    integer = tc.elem.is_integer
    a_signed, b_signed = op.attrs.get("a_signed", True), op.attrs.get("b_signed", True)
    out_dt = value_dtype(tc)
    ins = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])

    def as_acc(x, signed, nbits):
        x = np.asarray(x)
        if not integer:
            return x.astype(np.float64)
        if not signed:
            x = x.view(np.uint8) if nbits == 8 else x
        return x.astype(np.int64)

    def step(env, lanes):
        nw = _warps(lanes, op, "mma.sync")
        T = lanes.T
        a = as_acc(_full(env[ins[0]], T), a_signed, ta.elem.bitwidth).reshape(nw, 32, -1)
        b = as_acc(_full(env[ins[1]], T), b_signed, tb.elem.bitwidth).reshape(nw, 32, -1)
        c = as_acc(_full(env[ins[2]], T), True, 32).reshape(nw, 32, -1)
        acc = np.int64 if integer else np.float64
        A = _operand_matrix(a, ca, M, K, acc)
        B = _operand_matrix(b, cb, K, N, acc)
        C = _operand_matrix(c, ccd, M, N, acc)
        with np.errstate(all="ignore"):  # inactive warps may hold garbage; their results are discarded
            D = np.matmul(A, B) + C
        d = D[:, ccd[..., 0], ccd[..., 1]].reshape(T, -1)
        env[r] = d.astype(np.int32) if integer else d.astype(out_dt)

    return step


# ---------------------------------------------------------------------------------------------------------
# ldmatrix / stmatrix
# ---------------------------------------------------------------------------------------------------------


def _matrix_geometry(op: Op, elem):
    num, trans = op.attrs["num"], bool(op.attrs.get("trans", False))
    bits = elem.bitwidth
    row_lane, pos = ldmatrix_lanes(num, trans, bits)
    provides = np.zeros(32, np.bool_)
    provides[: 8 * num] = True
    return num, bits, pos, provides


def _provides(lanes, provides) -> np.ndarray:
    key = ("ldmatrix_rows", provides.tobytes())
    m = lanes.geo.get(key)
    if m is None:
        m = lanes.geo[key] = provides[lanes.tid() % 32]
    return m


@impl("nvvm.ldmatrix")
def ldmatrix(op: Op, cc: Compiler):
    """``nvvm.ldmatrix p``: lanes ``8j … 8j+7`` give the rows of matrix ``j`` (16 bytes each, 16-byte
    aligned); every lane receives its elements of every matrix (``.trans``: of the transposed one)."""
    elem = VectorType.of(op.results[0]).elem
    num, bits, pos, provides = _matrix_geometry(op, elem)
    dt = value_dtype(elem)
    p = cc.slot(op.operands[0])
    r = cc.slot(op.results[0])

    def step(env, lanes):
        nw = _warps(lanes, op, "ldmatrix")
        T = lanes.T
        ptrs = _full(env[p], T)
        rows = load(lanes, op, SHARED, ptrs, 16, np.dtype(np.uint8), "ldmatrix row", _provides(lanes, provides), 16)
        rows = np.ascontiguousarray(np.asarray(rows).reshape(nw, 32, 16)[:, : 8 * num])
        mats = rows.view(_UINT[bits]).reshape(nw, num, 8, 128 // bits)
        vals = mats[:, pos[..., 0], pos[..., 1], pos[..., 2]]  # (nw, 32, V)
        env[r] = np.ascontiguousarray(vals).view(dt).reshape(T, -1)

    return step


@impl("nvvm.stmatrix")
def stmatrix(op: Op, cc: Compiler):
    """``nvvm.stmatrix p, v``: the inverse of ``ldmatrix``: lane ``8j + r`` gives the address where row ``r``
    of matrix ``j`` is written."""
    elem = VectorType.of(op.operands[1]).elem
    num, bits, pos, provides = _matrix_geometry(op, elem)
    p, v = cc.slots_of(op.operands)

    def step(env, lanes):
        nw = _warps(lanes, op, "stmatrix")
        T = lanes.T
        vals = np.ascontiguousarray(_full(env[v], T)).view(_UINT[bits]).reshape(nw, 32, -1)
        mats = np.zeros((nw, num, 8, 128 // bits), _UINT[bits])
        mats[:, pos[..., 0], pos[..., 1], pos[..., 2]] = vals
        rows = np.zeros((nw, 32, 16), np.uint8)
        rows[:, : 8 * num] = mats.reshape(nw, 8 * num, -1).view(np.uint8)
        ptrs = _full(env[p], T)
        store(
            lanes,
            op,
            SHARED,
            ptrs,
            16,
            np.dtype(np.uint8),
            "stmatrix row",
            rows.reshape(T, 16),
            _provides(lanes, provides),
            16,
        )

    return step


# ---------------------------------------------------------------------------------------------------------
# cp.async
# ---------------------------------------------------------------------------------------------------------


class _Copy:
    """One issued ``cp.async`` op execution: per-lane source/destination and which lanes still owe it."""

    __slots__ = ("op", "dst", "src", "nbytes", "src_size", "group", "pending")

    def __init__(self, op, dst, src, nbytes, src_size, group, pending):
        self.op, self.dst, self.src, self.nbytes = op, dst, src, nbytes
        self.src_size, self.group, self.pending = src_size, group, pending


class CpAsyncState:
    """The asynchronous copies of one batch of lanes (kept in ``lanes.cache``): issued copies in order and,
    per lane, the number of groups it has committed (a copy's group is that number when it was issued)."""

    KEY = "nvvm.cp_async"
    __slots__ = ("copies", "committed")

    def __init__(self, T: int):
        self.copies: list[_Copy] = []
        self.committed = np.zeros(T, np.int64)

    @classmethod
    def of(cls, lanes) -> CpAsyncState:
        st = lanes.cache.get(cls.KEY)
        if st is None:
            st = lanes.cache[cls.KEY] = cls(lanes.T)
        return st

    def complete(self, lanes, due) -> None:
        """Complete, in issue order, every pending copy of lane ``l`` whose group is below ``due[l]``."""
        keep = []
        for cp in self.copies:
            sel = cp.pending & (cp.group < due)
            if sel.any():
                _do_copy(lanes, cp, sel)
                cp.pending = cp.pending & ~sel
            if cp.pending.any():
                keep.append(cp)
        self.copies = keep


def _active(lanes) -> np.ndarray:
    return np.ones(lanes.T, np.bool_) if lanes.mask is None else lanes.mask.copy()


def _do_copy(lanes, cp: _Copy, sel: np.ndarray) -> None:
    n = cp.nbytes
    u8 = np.dtype(np.uint8)
    if cp.src_size is None:
        data = load(lanes, cp.op, GLOBAL, cp.src, n, u8, "cp.async source bytes", sel)
    else:
        ss = cp.src_size
        if (ss[sel] > n).any() or (ss[sel] < 0).any():
            lane = int(np.flatnonzero(sel & ((ss > n) | (ss < 0)))[0])
            raise lanes.fault(cp.op, f"cp.async src_size {int(ss[lane])} is outside [0, {n}] bytes", lane)
        whole = (ss == n) | (ss == 0)
        if whole[sel].all():
            data = load(lanes, cp.op, GLOBAL, cp.src, n, u8, "cp.async source bytes", sel & (ss > 0))
        else:
            em = sel[:, None] & (np.arange(n)[None, :] < ss[:, None])
            data = load(lanes, cp.op, GLOBAL, cp.src, n, u8, "cp.async source bytes", em)
    store(lanes, cp.op, SHARED, cp.dst, n, u8, "cp.async destination bytes", data, sel)


@impl("nvvm.cp_async")
def cp_async(op: Op, cc: Compiler):
    """``nvvm.cp_async dst, src[, src_size]``: record the copy (checked for alignment now, done at a wait)."""
    ins = cc.slots_of(op.operands)
    n = op.attrs["bytes"]

    def step(env, lanes):
        T = lanes.T
        act = _active(lanes)
        dst = np.array(_full(env[ins[0]], T), np.int64)
        src = np.array(_full(env[ins[1]], T), np.int64)
        for what, a in (("destination", dst), ("source", src)):
            bad = act & ((a % n) != 0)
            if bad.any():
                lane = int(np.flatnonzero(bad)[0])
                raise lanes.fault(
                    op, f"cp.async of {n} bytes: the {what} address 0x{int(a[lane]):x} is not {n}-byte aligned", lane
                )
        ss = np.array(_full(env[ins[2]], T), np.int64) if len(ins) == 3 else None
        st = CpAsyncState.of(lanes)
        st.copies.append(_Copy(op, dst, src, n, ss, st.committed.copy(), act))

    return step


@impl("nvvm.cp_async_commit_group")
def cp_async_commit_group(op: Op, cc: Compiler):
    """``nvvm.cp_async_commit_group``: the active lanes close their current group."""

    def step(env, lanes):
        st = CpAsyncState.of(lanes)
        st.committed += _active(lanes)

    return step


@impl("nvvm.cp_async_wait_group")
def cp_async_wait_group(op: Op, cc: Compiler):
    """``nvvm.cp_async_wait_group n``: complete the active lanes' groups but their ``n`` most recent."""
    n = op.attrs["n"]

    def step(env, lanes):
        st = lanes.cache.get(CpAsyncState.KEY)
        if st is None or not st.copies:
            return
        due = np.where(_active(lanes), st.committed - n, np.iinfo(np.int64).min)
        st.complete(lanes, due)

    return step


@impl("nvvm.cp_async_wait_all")
def cp_async_wait_all(op: Op, cc: Compiler):
    """``nvvm.cp_async_wait_all``: complete every copy of the active lanes (committed or not)."""

    def step(env, lanes):
        st = lanes.cache.get(CpAsyncState.KEY)
        if st is None:
            return
        act = _active(lanes)
        st.committed += act
        if st.copies:
            st.complete(lanes, np.where(act, st.committed, np.iinfo(np.int64).min))

    return step


@impl("nvvm.syncwarp")
def syncwarp(op: Op, cc: Compiler):
    """``bar.warp.sync 0xffffffff``: the lanes of a warp run together here (lock-step, or warp by warp), so it
    only checks that every lane of each warp that reaches it is active (else the GPU waits forever)."""

    def step(env, lanes):
        check_whole_warps(op, lanes, "syncwarp")

    return step
