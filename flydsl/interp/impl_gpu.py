"""``gpu`` ops: thread/block ids, barriers, fences, warp shuffles and votes, printf.

Ids follow CUDA's linearization: thread ``(x, y, z)`` of a block is linear thread
``x + bx * (y + by * z)``; warps are consecutive groups of ``warp_size`` linear thread ids of one
block (the last warp of a block may be partial). Ids that cannot vary (a block dimension of 1, a
batch of one block) are uniform values.
"""

from __future__ import annotations

import sys

import numpy as np

from ..ir import Op, PointerType, VectorType
from .errors import InterpError
from .machine import Compiler, impl, is_uniform
from .printf import format_lane_values

__all__ = ["default_printer"]


def default_printer(text: str) -> None:
    """Write device printf output to stdout exactly as formatted (no newline is added)."""
    sys.stdout.write(text)


_DIM = {"x": 0, "y": 1, "z": 2}


def _thread_id(lanes, d: int) -> np.ndarray:
    key = ("thread_id", d)
    v = lanes.geo.get(key)
    if v is None:
        bx, by, _ = lanes.block
        if lanes.block[d] == 1:
            v = np.zeros((), np.int32)
        else:
            t = lanes.tid()
            v = (t % bx if d == 0 else t // bx % by if d == 1 else t // (bx * by)).astype(np.int32)
        lanes.geo[key] = v
    return v


def _block_id(lanes, d: int) -> np.ndarray:
    key = ("block_id", d)
    v = lanes.cache.get(key)
    if v is None:
        gx, gy, _ = lanes.grid
        if lanes.grid[d] == 1:
            v = np.zeros((), np.int32)
        else:
            b = np.asarray(lanes.first) if lanes.nb == 1 else lanes.first + lanes.lane_block()
            v = (b % gx if d == 0 else b // gx % gy if d == 1 else b // (gx * gy)).astype(np.int32)
        lanes.cache[key] = v
    return v


def _block_dim(lanes, d: int) -> np.ndarray:
    return np.asarray(lanes.block[d], np.int32)


def _grid_dim(lanes, d: int) -> np.ndarray:
    return np.asarray(lanes.grid[d], np.int32)


def _dim_query(op: Op, cc: Compiler, value):
    """The step of a ``gpu.<query> x|y|z`` op: ``value(lanes, dimension)`` into its result."""
    d = _DIM[op.attrs["dimension"]]
    r = cc.slot(op.results[0])

    def step(env, lanes):
        env[r] = value(lanes, d)

    return step


@impl("gpu.thread_id")
def thread_id(op: Op, cc: Compiler):
    """``gpu.thread_id x|y|z`` (i32)."""
    return _dim_query(op, cc, _thread_id)


@impl("gpu.block_id")
def block_id(op: Op, cc: Compiler):
    """``gpu.block_id x|y|z`` (i32)."""
    return _dim_query(op, cc, _block_id)


@impl("gpu.block_dim")
def block_dim(op: Op, cc: Compiler):
    """``gpu.block_dim x|y|z``: uniform."""
    return _dim_query(op, cc, _block_dim)


@impl("gpu.grid_dim")
def grid_dim(op: Op, cc: Compiler):
    """``gpu.grid_dim x|y|z``: uniform."""
    return _dim_query(op, cc, _grid_dim)


@impl("gpu.lane_id")
def lane_id(op: Op, cc: Compiler):
    """``gpu.lane_id``: linear thread id modulo the warp size."""
    r = cc.slot(op.results[0])

    def step(env, lanes):
        v = lanes.geo.get("lane_id")
        if v is None:
            v = lanes.geo["lane_id"] = (lanes.tid() % lanes.warp_size).astype(np.int32)
        env[r] = v

    return step


@impl("gpu.barrier")
def barrier(op: Op, cc: Compiler):
    """``gpu.barrier``: trivially satisfied in lock-step; reached by some threads of a block only → fault."""

    def step(env, lanes):
        if lanes.sched is not None:  # warp by warp: a rendezvous of every warp still running
            lanes.sched.named_barrier(op, lanes, 0, None, wait=True)
            return
        m = lanes.mask
        if m is None:
            return
        mm = m.reshape(lanes.nb, lanes.tpb)
        partial = mm.any(axis=1) & ~mm.all(axis=1)
        if partial.any():
            b = int(np.flatnonzero(partial)[0])
            row = mm[b]
            arrived = b * lanes.tpb + int(np.flatnonzero(row)[0])
            missing = b * lanes.tpb + int(np.flatnonzero(~row)[0])
            bid, t_in = lanes.coords(arrived)
            _, t_out = lanes.coords(missing)
            n_in = int(row.sum())
            raise lanes.fault(
                op,
                f"barrier reached by only some threads of block {bid}: {n_in} of {lanes.tpb} threads arrived "
                f"(thread {t_in} did, thread {t_out} did not); a barrier in divergent control flow "
                "hangs or corrupts the GPU",
                arrived,
            )

    return step


@impl("gpu.fence")
def fence(op: Op, cc: Compiler):
    """``gpu.fence``: a no-op (lock-step execution orders every access already)."""
    return None


def _shuffle_sources(lanes, op, mode: str, off, width) -> np.ndarray:
    """Source lane (batch index) per lane for ``shfl.sync`` with PTX semantics, generalized to warp_size."""
    ws = lanes.warp_size
    w = np.asarray(width).astype(np.int64)
    if np.any((w < 1) | (w > ws) | ((w & (w - 1)) != 0)):
        bad = int(np.asarray(w).reshape(-1)[np.flatnonzero(((w < 1) | (w > ws) | ((w & (w - 1)) != 0)).reshape(-1))[0]])
        raise lanes.fault(op, f"shuffle width {bad} must be a power of two in [1, {ws}]", None)
    tid = lanes.tid()
    lane = tid % ws
    top = ws - 1
    segmask = ~(w - 1) & top
    min_lane = lane & segmask
    max_lane = min_lane | (top & ~segmask)
    b = np.asarray(off).astype(np.int64) & top
    if mode == "up":
        j = lane - b
        ok = j >= min_lane
    elif mode == "down":
        j = lane + b
        ok = j <= max_lane
    elif mode == "xor":
        j = lane ^ b
        ok = j <= max_lane
    else:  # idx
        j = min_lane | (b & ~segmask)
        ok = j <= max_lane
    src_tid = tid - lane + j
    ok = ok & (src_tid < lanes.tpb)
    ar = lanes.arange()
    return np.where(ok, ar + (j - lane), ar)


@impl("gpu.shuffle")
def shuffle(op: Op, cc: Compiler):
    """``gpu.shuffle`` (value, offset, width): out-of-segment or missing sources return the own value."""
    mode = op.attrs["mode"]
    v, o, w = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])

    def step(env, lanes):
        val = env[v]
        if is_uniform(val):
            env[r] = val
            return
        off, width = env[o], env[w]
        if is_uniform(off) and is_uniform(width):
            key = ("shfl", mode, int(off), int(width))
            src = lanes.geo.get(key)
            if src is None:
                src = lanes.geo[key] = _shuffle_sources(lanes, op, mode, int(off), int(width))
        else:
            src = _shuffle_sources(lanes, op, mode, off, width)
        env[r] = val[src]

    return step


def _warp_layout(lanes):
    """(padded position of each lane, warp index of each lane, warps per batch) — warps padded to warp_size."""
    hit = lanes.geo.get("warps")
    if hit is None:
        ws = lanes.warp_size
        W = -(-lanes.tpb // ws)
        pidx = lanes.lane_block() * (W * ws) + lanes.tid()
        hit = lanes.geo["warps"] = (pidx, pidx // ws, lanes.nb * W)
    return hit


@impl("gpu.vote")
def vote(op: Op, cc: Compiler):
    """``gpu.vote all|any|ballot`` over the active lanes of each warp (ballot: bit i = lane i)."""
    mode = op.attrs["mode"]
    p = cc.slot(op.operands[0])
    r = cc.slot(op.results[0])

    def step(env, lanes):
        pred = np.asarray(env[p], np.bool_)
        m = lanes.mask
        if m is None and is_uniform(pred) and (mode != "ballot" or not bool(pred)):
            env[r] = pred.reshape(()) if mode != "ballot" else np.zeros((), np.int32)
            return
        ws = lanes.warp_size
        pidx, warp, nw = _warp_layout(lanes)
        act = np.ones(lanes.T, np.bool_) if m is None else m
        P = np.zeros(nw * ws, np.bool_)
        P[pidx] = np.broadcast_to(pred, (lanes.T,)) & act
        P = P.reshape(nw, ws)
        if mode == "any":
            res = P.any(axis=1)
        elif mode == "all":
            A = np.zeros(nw * ws, np.bool_)
            A[pidx] = act
            res = (P | ~A.reshape(nw, ws)).all(axis=1)
        else:
            bits = np.bitwise_or.reduce(P.astype(np.uint64) << np.arange(ws, dtype=np.uint64), axis=1)
            res = (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
        env[r] = res[warp]

    return step


@impl("gpu.printf")
def printf(op: Op, cc: Compiler):
    """``gpu.printf``: one formatted string per active lane, in linear thread order, to ``lanes.printer``."""
    fmt = op.attrs["format"]
    ins = cc.slots_of(op.operands)
    kinds = []
    for v in op.operands:
        t = v.type
        e = t.elem if isinstance(t, VectorType) else t
        kinds.append((isinstance(t, VectorType), e, isinstance(e, PointerType)))

    def step(env, lanes):
        m = lanes.mask
        sel = lanes.arange() if m is None else np.flatnonzero(m)
        if sel.shape[0] == 0:
            return
        cols = []
        for s in ins:
            x = np.asarray(env[s])
            if x.ndim == 0:
                x = x.reshape(1)
            cols.append(x if x.shape[0] == 1 else x[sel])
        texts = format_lane_values(op, fmt, kinds, cols, sel.shape[0])
        for t in texts:
            lanes.printer(t)

    return step


@impl("vector.print")
def vector_print(op: Op, cc: Compiler):
    """``vector.print`` is host code (MLIR's runtime print); a kernel prints with ``gpu.printf`` (``fx.printf``)."""
    raise InterpError("vector.print runs in host functions only; in a kernel, print with fx.printf", op=op)
