"""Divergent control flow: scf.if / scf.for / scf.while with per-lane conditions and carried values."""

from __future__ import annotations

import numpy as np
import pytest

from flydsl import ir
from flydsl.dialects import arith, gpu, ptr, scf
from flydsl.interp import InterpError
from flydsl.ir import PointerType, f32, i32
from flydsl.testing import KernelBuilder, const, launch

I32P = PointerType(i32)
F32P = PointerType(f32)


def _tid():
    return gpu.thread_id(dimension="x")


def test_divergent_if_with_results_and_nesting():
    out = np.zeros(64, np.int32)
    with KernelBuilder("if", [I32P]) as kb:
        tid = _tid()
        odd = arith.cmpi(arith.andi(tid, const(1)), const(1), predicate="eq")
        op = scf.build_if(odd, [i32])
        with ir.InsertionPoint(op.regions[0].blocks[0]):
            big = arith.cmpi(tid, const(40), predicate="sge")
            inner = scf.build_if(big, [i32])
            with ir.InsertionPoint(inner.regions[0].blocks[0]):
                scf.yield_(arith.muli(tid, const(100)))
            with ir.InsertionPoint(inner.regions[1].blocks[0]):
                scf.yield_(arith.muli(tid, const(10)))
            scf.yield_(inner.results[0])
        with ir.InsertionPoint(op.regions[1].blocks[0]):
            scf.yield_(arith.subi(const(0), tid))
        ptr.store(op.results[0], ptr.add(kb.args[0], tid))
    launch(kb.op, 1, 64, out, check=True)
    t = np.arange(64)
    assert np.array_equal(out, np.where(t % 2 == 1, np.where(t >= 40, t * 100, t * 10), -t))


def test_if_uniform_condition_takes_one_branch():
    out = np.zeros(8, np.int32)
    with KernelBuilder("uif", [I32P, i32]) as kb:
        o, flag = kb.args
        op = scf.build_if(arith.cmpi(flag, const(0), predicate="ne"), [i32])
        with ir.InsertionPoint(op.regions[0].blocks[0]):
            scf.yield_(const(1))
        with ir.InsertionPoint(op.regions[1].blocks[0]):
            scf.yield_(const(2))
        ptr.store(op.results[0], ptr.add(o, _tid()))
    launch(kb.op, 1, 8, out, 0, check=True)
    assert (out == 2).all()
    launch(kb.op, 1, 8, out, 5, check=True)
    assert (out == 1).all()


def test_for_uniform_bounds_carries_values():
    out = np.zeros(32, np.float32)
    with KernelBuilder("ufor", [F32P, i32]) as kb:
        o, n = kb.args
        tid = _tid()
        x0 = arith.sitofp(tid, result_types=[f32])
        loop = scf.build_for(const(0), n, const(1), [x0, const(0)])
        body = loop.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            iv, x, k = body.args
            x2 = arith.addf(x, arith.sitofp(iv, result_types=[f32]))
            scf.yield_(x2, arith.addi(k, const(1)))
        ptr.store(arith.addf(loop.results[0], arith.sitofp(loop.results[1], result_types=[f32])), ptr.add(o, tid))
    launch(kb.op, 1, 32, out, 10, check=True)
    assert np.array_equal(out, np.arange(32) + 45 + 10)


def test_for_per_lane_trip_counts_freeze_finished_lanes():
    out = np.zeros(96, np.int32)
    writes = np.zeros(96, np.int32)
    with KernelBuilder("vfor", [I32P, I32P]) as kb:
        o, w = kb.args
        tid = kb.global_id()
        lb = arith.remui(tid, const(3))
        ub = arith.remui(tid, const(11))
        step = arith.addi(arith.remui(tid, const(2)), const(1))
        loop = scf.build_for(lb, ub, step, [const(0)])
        body = loop.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            iv, acc = body.args
            # a side effect inside the divergent loop: only active lanes write
            cnt = ptr.load(ptr.add(w, tid), result_types=[i32])
            ptr.store(arith.addi(cnt, const(1)), ptr.add(w, tid))
            scf.yield_(arith.addi(acc, arith.muli(iv, iv)))
        ptr.store(loop.results[0], ptr.add(o, tid))
    launch(kb.op, 3, 32, out, writes, check=True)
    ref = [sum(j * j for j in range(t % 3, t % 11, t % 2 + 1)) for t in range(96)]
    trips = [len(range(t % 3, t % 11, t % 2 + 1)) for t in range(96)]
    assert out.tolist() == ref and writes.tolist() == trips


def test_while_per_lane_condition_collatz():
    out = np.zeros(64, np.int32)
    with KernelBuilder("collatz", [I32P]) as kb:
        tid = kb.global_id()
        start = arith.addi(tid, const(1))
        w = scf.build_while([start, const(0)], [i32, i32])
        before, after = w.regions[0].blocks[0], w.regions[1].blocks[0]
        with ir.InsertionPoint(before):
            x, n = before.args
            scf.condition(arith.cmpi(x, const(1), predicate="ne"), x, n)
        with ir.InsertionPoint(after):
            x, n = after.args
            odd = arith.andi(x, const(1))
            up = arith.addi(arith.muli(x, const(3)), const(1))
            down = arith.shrui(x, const(1))
            nx = arith.select(arith.cmpi(odd, const(1), predicate="eq"), up, down)
            scf.yield_(nx, arith.addi(n, const(1)))
        ptr.store(w.results[1], ptr.add(kb.args[0], tid))
    launch(kb.op, 2, 32, out, check=True)

    def steps(x):
        n = 0
        while x != 1:
            x, n = (3 * x + 1 if x % 2 else x // 2), n + 1
        return n

    assert out.tolist() == [steps(t + 1) for t in range(64)]


def test_while_results_are_the_forwarded_values():
    out = np.zeros(16, np.int32)
    with KernelBuilder("fwd", [I32P]) as kb:
        tid = _tid()
        w = scf.build_while([const(0)], [i32])
        before, after = w.regions[0].blocks[0], w.regions[1].blocks[0]
        with ir.InsertionPoint(before):
            (x,) = before.args
            scf.condition(arith.cmpi(x, tid, predicate="slt"), arith.addi(x, const(1000)))
        with ir.InsertionPoint(after):
            (y,) = after.args
            scf.yield_(arith.subi(y, const(999)))
        ptr.store(w.results[0], ptr.add(kb.args[0], tid))
    launch(kb.op, 1, 16, out, check=True)
    assert out.tolist() == [t + 1000 for t in range(16)]


def test_loop_inside_divergent_if_and_uniform_while():
    out = np.zeros(32, np.int32)
    with KernelBuilder("mix", [I32P, i32]) as kb:
        o, n = kb.args
        tid = _tid()
        with kb.if_(arith.cmpi(tid, const(20), predicate="slt")):
            loop = scf.build_for(const(0), n, const(1), [tid])
            body = loop.regions[0].blocks[0]
            with ir.InsertionPoint(body):
                iv, acc = body.args
                scf.yield_(arith.addi(acc, iv))
            w = scf.build_while([loop.results[0], const(0)], [i32, i32])
            before, after = w.regions[0].blocks[0], w.regions[1].blocks[0]
            with ir.InsertionPoint(before):
                a, c = before.args
                scf.condition(arith.cmpi(c, n, predicate="slt"), a, c)
            with ir.InsertionPoint(after):
                a, c = after.args
                scf.yield_(arith.addi(a, const(2)), arith.addi(c, const(1)))
            ptr.store(w.results[0], ptr.add(o, tid))
    launch(kb.op, 1, 32, out, 5, check=True)
    t = np.arange(32)
    assert np.array_equal(out, np.where(t < 20, t + 10 + 10, 0))


def test_for_nonpositive_step_is_a_fault():
    with KernelBuilder("badfor", [i32]) as kb:
        loop = scf.build_for(const(0), const(10), kb.args[0], [])
        with ir.InsertionPoint(loop.regions[0].blocks[0]):
            scf.yield_()
    with pytest.raises(InterpError, match="step must be positive"):
        launch(kb.op, 1, 4, 0)
