"""canonicalize / cse / dce: golden IR after each pass."""

import numpy as np

from flydsl import ir, passes
from flydsl.dialects import arith, func, gpu, ptr, scf, vector


def _kernel(arg_types):
    m = ir.new_module()
    k = func.build_func(gpu.func, "k", arg_types, kernel=True)
    m.regions[0].block.append(k)
    return m, k.regions[0].blocks[0]


def _body(m):
    return ir.print_op(m).split("\n")[2:-3]


def test_fold_identities_constants_cse_dce():
    m, b = _kernel([ir.i32, ir.PointerType(ir.i32)])
    x, p = b.args
    with ir.InsertionPoint(b):
        y = arith.addi(x, arith.const(0, ir.i32))  # x + 0 -> x
        c = arith.muli(arith.const(6, ir.i32), arith.const(7, ir.i32))  # 42
        a1 = arith.muli(y, c)
        a2 = arith.muli(x, c)  # same as a1 after folding -> CSE
        arith.subi(a1, a1)  # dead
        ptr.store(arith.addi(a1, a2), p)
        gpu.return_()
    passes.run_pipeline(m)
    ir.verify(m)
    assert _body(m) == [
        "    %0 = arith.constant 42 : i32",
        "    %1 = arith.muli %arg0, %0 : i32",
        "    %2 = arith.addi %1, %1 : i32",
        '    "ptr.store"(%2, %arg1) : (i32, !fly.ptr<i32, global>) -> ()',
    ]


def test_fold_uses_the_ops_semantics():
    m, b = _kernel([ir.PointerType(ir.f32), ir.PointerType(ir.i32)])
    with ir.InsertionPoint(b):
        q = arith.divsi(arith.const(-7, ir.i32), arith.const(2, ir.i32))  # trunc: -3
        r = arith.remsi(arith.const(-7, ir.i32), arith.const(2, ir.i32))  # -1
        f = arith.fptosi(arith.const(3e9, ir.f32), result_types=[ir.i32])  # saturates
        ptr.store(arith.addi(arith.addi(q, r), f), b.args[1])
        v = arith.const(np.array([1.0, 2.0, 3.0, 4.0], np.float32), ir.VectorType(4, ir.f32))
        ptr.store(vector.reduction(v, kind="mul"), b.args[0])
        gpu.return_()
    passes.run_pipeline(m)
    text = ir.print_op(m)
    assert f"arith.constant {2147483647 - 4} : i32" in text
    assert "arith.constant 24.0 : f32" in text


def test_static_if_is_inlined_and_empty_loop_forwards():
    m, b = _kernel([ir.i32, ir.PointerType(ir.i32)])
    x, p = b.args
    with ir.InsertionPoint(b):
        iff = scf.build_if(arith.cmpi(arith.const(1, ir.i32), arith.const(2, ir.i32), predicate="slt"), [ir.i32])
        with ir.InsertionPoint(iff.regions[0].blocks[0]):
            scf.yield_(arith.muli(x, x))
        with ir.InsertionPoint(iff.regions[1].blocks[0]):
            scf.yield_(x)
        loop = scf.build_for(arith.const(5, ir.i32), arith.const(5, ir.i32), arith.const(1, ir.i32), [iff.results[0]])
        with ir.InsertionPoint(loop.regions[0].blocks[0]):
            scf.yield_(loop.regions[0].blocks[0].args[1])
        ptr.store(loop.results[0], p)
        gpu.return_()
    passes.run_pipeline(m)
    ir.verify(m)
    assert _body(m) == [
        "    %0 = arith.muli %arg0, %arg0 : i32",
        '    "ptr.store"(%0, %arg1) : (i32, !fly.ptr<i32, global>) -> ()',
    ]


def test_dce_keeps_side_effects_and_removes_pure_loops():
    m, b = _kernel([ir.i32, ir.PointerType(ir.i32)])
    x, p = b.args
    with ir.InsertionPoint(b):
        pure_loop = scf.build_for(arith.const(0, ir.i32), x, arith.const(1, ir.i32), [x])
        with ir.InsertionPoint(pure_loop.regions[0].blocks[0]):
            scf.yield_(arith.addi(pure_loop.regions[0].blocks[0].args[1], x))
        side = scf.build_for(arith.const(0, ir.i32), x, arith.const(1, ir.i32), [])
        with ir.InsertionPoint(side.regions[0].blocks[0]):
            ptr.store(side.regions[0].blocks[0].args[0], p)
            scf.yield_()
        gpu.return_()
    passes.run_pipeline(m)
    text = ir.print_op(m)
    assert text.count("scf.for") == 1 and "ptr.store" in text


def test_pipeline_after_each_hook():
    m, b = _kernel([ir.i32])
    with ir.InsertionPoint(b):
        gpu.return_()
    seen = []
    passes.run_pipeline(m, after_each=lambda name, mod: seen.append(name))
    assert seen == passes.DEFAULT_PIPELINE
