"""Warp-level ops (shuffle, vote, lane id) and a block reduction through shared memory and barriers."""

from __future__ import annotations

import numpy as np
import pytest

from flydsl.dialects import arith, gpu, ptr
from flydsl.ir import PointerType, f32, i32
from flydsl.testing import KernelBuilder, const, launch

I32P = PointerType(i32)
F32P = PointerType(f32)


def test_block_reduction_shared_memory_barriers_and_xor_butterfly():
    blocks, threads = 16, 256
    sp = PointerType(f32, "shared")
    with KernelBuilder("block_sum", [F32P, F32P]) as kb:
        x, out = kb.args
        tid = gpu.thread_id(dimension="x")
        v = ptr.load(ptr.add(x, kb.global_id()), result_types=[f32])
        for o in (16, 8, 4, 2, 1):
            v = arith.addf(v, gpu.shuffle(v, const(o), const(32), mode="xor"))
        partial = ptr.shared_alloc(result_types=[sp], count=threads // 32)
        lane, warp = gpu.lane_id(), arith.divui(tid, const(32))
        with kb.if_(arith.cmpi(lane, const(0), predicate="eq")):
            ptr.store(v, ptr.add(partial, warp))
        gpu.barrier()
        with kb.if_(arith.cmpi(warp, const(0), predicate="eq")):
            ok = arith.cmpi(lane, const(threads // 32), predicate="slt")
            s = ptr.masked_load(ptr.add(partial, lane), ok, arith.const(0.0, f32))
            for o in (4, 2, 1):
                s = arith.addf(s, gpu.shuffle(s, const(o), const(8), mode="xor"))
            with kb.if_(arith.cmpi(lane, const(0), predicate="eq")):
                ptr.store(s, ptr.add(out, gpu.block_id(dimension="x")))
    rng = np.random.default_rng(0)
    data = rng.standard_normal(blocks * threads).astype(np.float32)
    res = np.zeros(blocks, np.float32)
    launch(kb.op, blocks, threads, data, res, check=True)
    # the butterfly's exact association order, in float32
    w = data.reshape(blocks, threads // 32, 32)
    for o in (16, 8, 4, 2, 1):
        w = w + w[..., np.arange(32) ^ o]
    p = w[..., 0]
    for o in (4, 2, 1):
        p = p + p[..., np.arange(8) ^ o]
    assert np.array_equal(res, p[:, 0])


def _ref_shuffle(vals, mode, off, width, ws, tpb):
    """CUDA __shfl_*_sync semantics, lane by lane (sources outside the segment or block: own value)."""
    out = vals.copy()
    for t in range(len(vals)):
        tb = t % tpb
        lane = tb % ws
        seg = lane // width * width
        o = off[t] if np.ndim(off) else off
        if mode == "xor":
            src = lane ^ o
            ok = src < seg + width
        elif mode == "up":
            src = lane - o
            ok = src >= seg
        elif mode == "down":
            src = lane + o
            ok = src < seg + width
        else:
            src, ok = seg + o % width, True
        src_t = tb - lane + src
        if ok and src_t < tpb:
            out[t] = vals[t - tb + src_t]
    return out


@pytest.mark.parametrize("ws,tpb", [(32, 48), (64, 96)])
@pytest.mark.parametrize("mode", ["xor", "up", "down", "idx"])
def test_shuffle_modes_match_cuda(mode, ws, tpb):
    offsets_widths = [(1, ws), (3, 16), (5, 8), (16, ws), (2, 4)]
    n = 2 * tpb
    x = np.arange(n, dtype=np.int32) * 7 + 1
    out = np.zeros((len(offsets_widths) + 1, n), np.int32)
    with KernelBuilder("shfl", [I32P, I32P]) as kb:
        xp, op_ = kb.args
        i = kb.global_id()
        v = ptr.load(ptr.add(xp, i), result_types=[i32])
        for r, (o, w) in enumerate(offsets_widths):
            s = gpu.shuffle(v, const(o), const(w), mode=mode)
            ptr.store(s, ptr.add(op_, arith.addi(i, const(r * n))))
        per_lane = arith.remui(arith.muli(i, const(5)), const(ws))  # a per-lane offset / source
        s = gpu.shuffle(v, per_lane, const(ws), mode=mode)
        ptr.store(s, ptr.add(op_, arith.addi(i, const(len(offsets_widths) * n))))
    launch(kb.op, 2, tpb, x, out, warp_size=ws, check=True)
    for r, (o, w) in enumerate(offsets_widths):
        assert np.array_equal(out[r], _ref_shuffle(x, mode, o, w, ws, tpb)), (o, w)
    assert np.array_equal(out[-1], _ref_shuffle(x, mode, np.arange(n) * 5 % ws, ws, ws, tpb))


def test_shuffle_of_uniform_value_and_floats():
    out = np.zeros(32, np.float32)
    with KernelBuilder("ushfl", [F32P]) as kb:
        c = arith.const(2.5, f32)
        s = gpu.shuffle(c, const(3), const(32), mode="down")
        t = gpu.shuffle(arith.sitofp(gpu.lane_id(), result_types=[f32]), const(1), const(32), mode="down")
        ptr.store(arith.addf(s, t), ptr.add(kb.args[0], gpu.thread_id(dimension="x")))
    launch(kb.op, 1, 32, out, check=True)
    assert np.array_equal(out, 2.5 + np.minimum(np.arange(32) + 1, 31))  # lane 31 keeps its own value


def test_vote_over_active_lanes_with_partial_warp():
    tpb = 48
    out = np.zeros((3, tpb), np.int32)
    with KernelBuilder("vote", [I32P]) as kb:
        (o,) = kb.args
        tid = gpu.thread_id(dimension="x")
        with kb.if_(arith.cmpi(arith.remui(tid, const(5)), const(0), predicate="ne")):
            ballot = gpu.vote(arith.cmpi(arith.remui(tid, const(3)), const(0), predicate="eq"), mode="ballot")
            any_ = gpu.vote(arith.cmpi(tid, const(7), predicate="eq"), mode="any")
            all_ = gpu.vote(arith.cmpi(tid, const(40), predicate="slt"), mode="all")
            ptr.store(ballot, ptr.add(o, tid))
            ptr.store(arith.extui(any_, result_types=[i32]), ptr.add(o, arith.addi(tid, const(tpb))))
            ptr.store(arith.extui(all_, result_types=[i32]), ptr.add(o, arith.addi(tid, const(2 * tpb))))
    launch(kb.op, 1, tpb, out, check=True)
    t = np.arange(tpb)
    active = t % 5 != 0
    for w in (0, 1):
        lanes = (t // 32 == w) & active
        ballot = sum(1 << int(x % 32) for x in t[lanes & (t % 3 == 0)])
        ballot = ballot - (1 << 32) if ballot >= 1 << 31 else ballot
        assert (out[0][lanes] == ballot).all()
        assert (out[1][lanes] == int((t[lanes] == 7).any())).all()
        assert (out[2][lanes] == int((t[lanes] < 40).all())).all()
    assert (out[:, ~active] == 0).all()


def test_lane_id_and_uniform_vote():
    out = np.zeros(128, np.int32)
    with KernelBuilder("lane", [I32P]) as kb:
        tid = gpu.thread_id(dimension="x")
        b = gpu.vote(arith.cmpi(const(1), const(1), predicate="eq"), mode="ballot")
        s = arith.addi(gpu.lane_id(), arith.andi(b, const(0x1000)))
        ptr.store(s, ptr.add(kb.args[0], tid))
    launch(kb.op, 1, 128, out, warp_size=32, check=True)
    assert np.array_equal(out, np.arange(128) % 32 + 0x1000)
