"""Codegen of structured control flow (phis, no allocas), device function calls and the vector
dialect."""

from __future__ import annotations

import numpy as np
import pytest

from flydsl.codegen import CodegenError, Target, compile_module, emit_llvm, find_ptxas, run_ptxas
from flydsl.dialects import arith, func, gpu, ptr, scf, vector
from flydsl.ir import InsertionPoint, PointerType, VectorType, verify
from flydsl.ir import types as T
from flydsl.testing import build_kernel, kernel_module

HAVE_PTXAS = find_ptxas() is not None
F32G = PointerType(T.f32, "global")


def check(mod, archs=("sm_90a", "sm_80"), expect=()):
    for arch in archs:
        ck = compile_module(mod, Target(arch=arch))
        for e in expect:
            assert e in ck.ptx
        if HAVE_PTXAS:
            run_ptxas(ck.ptx, arch)
    return emit_llvm(mod, Target())


def test_for_loop_with_iter_args_uses_phis():
    def body(a, n):
        zero, one = arith.const(0, T.index), arith.const(1, T.index)
        ub = arith.index_cast(n, result_types=[T.index])
        loop = scf.build_for(zero, ub, one, [arith.const(0.0, T.f32), arith.const(1.0, T.f32)])
        blk = loop.regions[0].blocks[0]
        with InsertionPoint(blk):
            iv, s, p = blk.args
            x = ptr.load(ptr.add(a, iv), result_types=[T.f32])
            scf.yield_(arith.addf(s, x), arith.mulf(p, x))
        s, p = loop.results
        ptr.store(arith.addf(s, p), a)

    text = check(build_kernel([F32G, T.i32], body))
    assert "phi i64" in text and text.count("phi float") == 2 and "icmp slt i64" in text
    assert "alloca" not in text


def test_nested_loops_and_if_inside_loop():
    def body(a, n):
        zero, one = arith.const(0, T.i32), arith.const(1, T.i32)
        outer = scf.build_for(zero, n, one, [arith.const(0.0, T.f32)])
        ob = outer.regions[0].blocks[0]
        with InsertionPoint(ob):
            i, acc = ob.args
            inner = scf.build_for(zero, i, one, [acc])
            ib = inner.regions[0].blocks[0]
            with InsertionPoint(ib):
                j, acc2 = ib.args
                odd = arith.cmpi(arith.andi(j, one), one, predicate="eq")
                br = scf.build_if(odd, [T.f32])
                with InsertionPoint(br.regions[0].blocks[0]):
                    scf.yield_(arith.addf(acc2, arith.const(1.0, T.f32)))
                with InsertionPoint(br.regions[1].blocks[0]):
                    scf.yield_(arith.mulf(acc2, arith.const(0.5, T.f32)))
                scf.yield_(br.results[0])
            scf.yield_(inner.results[0])
        ptr.store(outer.results[0], a)

    text = check(build_kernel([F32G, T.i32], body))
    assert text.count("for.hdr") >= 4 and "if.else" in text


def test_if_without_else_and_if_with_results():
    def body(a, n):
        t = gpu.thread_id(dimension="x")
        c = arith.cmpi(t, n, predicate="slt")
        br = scf.build_if(c, with_else=False)
        with InsertionPoint(br.regions[0].blocks[0]):
            ptr.store(arith.const(1.0, T.f32), ptr.add(a, t))
            scf.yield_()
        r = scf.build_if(c, [T.i32, T.f32])
        with InsertionPoint(r.regions[0].blocks[0]):
            scf.yield_(t, arith.const(2.0, T.f32))
        with InsertionPoint(r.regions[1].blocks[0]):
            scf.yield_(n, arith.const(3.0, T.f32))
        ptr.store(r.results[1], ptr.add(a, r.results[0]))

    text = check(build_kernel([F32G, T.i32], body))
    assert "phi i32" in text and "phi float" in text


def test_while_loop():
    def body(a, n):
        w = scf.build_while([arith.const(0, T.i32), arith.const(1.0, T.f32)], [T.i32, T.f32])
        before, after = w.regions[0].blocks[0], w.regions[1].blocks[0]
        with InsertionPoint(before):
            i, x = before.args
            scf.condition(arith.cmpi(i, n, predicate="slt"), i, x)
        with InsertionPoint(after):
            i, x = after.args
            scf.yield_(arith.addi(i, arith.const(1, T.i32)), arith.mulf(x, arith.const(2.0, T.f32)))
        ptr.store(w.results[1], ptr.add(a, w.results[0]))

    text = check(build_kernel([F32G, T.i32], body))
    assert "while.cond" in text and text.count("= phi") == 2


def test_device_function_calls_with_several_results():
    mod, k = kernel_module("k", [F32G])
    gm = mod.regions[0].blocks[0].ops[0]
    dev = func.build_func(gpu.func, "sincos_like", [T.f32], [T.f32, T.f32])
    gm.regions[0].blocks[0].ops.insert(0, dev)
    dev.parent = gm.regions[0].blocks[0]
    with InsertionPoint(dev.regions[0].blocks[0]):
        (x,) = dev.regions[0].blocks[0].args
        gpu.return_(arith.addf(x, x), arith.mulf(x, x))
    with InsertionPoint(k.regions[0].blocks[0]):
        (a,) = k.regions[0].blocks[0].args
        v = ptr.load(a, result_types=[T.f32])
        s, p = func.call(v, callee=__import__("flydsl.ir", fromlist=["SymbolRef"]).SymbolRef("sincos_like"),
                         result_types=[T.f32, T.f32])  # fmt: skip
        ptr.store(arith.addf(s, p), a)
        gpu.return_()
    verify(mod)
    text = check(mod)
    assert "define internal { float, float } @sincos_like" in text and "extractvalue { float, float }" in text


def test_call_to_unknown_function_is_an_error():
    from flydsl.ir import SymbolRef

    def body(a):
        func.call(a, callee=SymbolRef("nope"), result_types=[])

    with pytest.raises(CodegenError, match="unknown device function @nope"):
        emit_llvm(build_kernel([F32G], body), Target())


def test_vector_ops():
    V4, V2 = VectorType(4, T.f32), VectorType(2, T.f32)

    def body(a, idx):
        v = ptr.load(a, result_types=[V4], align=16)
        b = vector.broadcast(arith.const(2.0, T.f32), result_types=[V4])
        w = arith.mulf(v, b)
        e = vector.extract(w, position=2)
        w = vector.insert(arith.addf(e, e), w, position=0)
        d = vector.extractelement(w, idx)
        w = vector.insertelement(d, w, idx)
        two = vector.shuffle(w, w, mask=[3, 2])
        odd = vector.shuffle(two, w, mask=[0, 1, 2, 3, 4, 5])  # operands of different lengths
        fe = vector.from_elements(vector.extract(odd, position=5), e)
        bits = vector.bitcast(fe, result_types=[VectorType(2, T.i32)])
        back = vector.bitcast(bits, result_types=[V2])
        tot = vector.reduction(back, kind="add")
        tot = vector.reduction(w, tot, kind="maxnumf")
        ptr.store(tot, a)

    check(build_kernel([F32G, T.i32], body))


INT_KINDS = ["add", "mul", "and", "or", "xor", "maxsi", "minsi", "maxui", "minui"]
FLOAT_KINDS = ["add", "mul", "maxnumf", "minnumf", "maximumf", "minimumf"]


@pytest.mark.parametrize("elem", [T.i32, T.i8, T.i1], ids=str)
def test_integer_reductions(elem):
    V = VectorType(8, elem)
    P = PointerType(T.i32, "global")

    def body(a):
        raw = ptr.load(a, result_types=[VectorType(8, T.i32)])
        v = raw if elem is T.i32 else arith.trunci(raw, result_types=[V])
        for i, kind in enumerate(INT_KINDS):
            r = vector.reduction(v, kind=kind)
            r2 = vector.reduction(v, r, kind=kind)
            out = arith.extui(r2, result_types=[T.i32]) if elem is not T.i32 else r2
            ptr.store(out, ptr.add(a, arith.const(i, T.i32)))

    check(build_kernel([P], body), archs=("sm_90a",))


@pytest.mark.parametrize("elem", [T.f32, T.f16, T.bf16, T.f64], ids=str)
def test_float_reductions_are_ordered(elem):
    V = VectorType(4, elem)
    P = PointerType(elem, "global")

    def body(a):
        v = ptr.load(a, result_types=[V])
        for i, kind in enumerate(FLOAT_KINDS):
            ptr.store(vector.reduction(v, kind=kind), ptr.add(a, arith.const(i, T.i32)))

    text = check(build_kernel([P], body), archs=("sm_90a",))
    assert "reassoc" not in text and "@llvm.vector.reduce.fadd" in text and "@llvm.vector.reduce.fmaximum" in text


def test_float_reduction_keeps_its_fastmath_flags():
    V = VectorType(32, T.f32)
    P = PointerType(T.f32, "global")

    def body(a):
        v = ptr.load(a, result_types=[V])
        ptr.store(vector.reduction(v, kind="add", fastmath="reassoc,contract"), a)

    text = check(build_kernel([P], body), archs=("sm_90a",))
    assert "call reassoc contract float @llvm.vector.reduce.fadd.v32f32" in text


def test_dense_vector_constant_lanes():
    V = VectorType(4, T.i32)
    P = PointerType(T.i32, "global")

    def body(a):
        c = arith.constant(value=np.array([1, 2, 3, 4], np.int32), result_types=[V])
        ptr.store(c, a, align=16)

    text = check(build_kernel([P], body))
    assert "<i32 1, i32 2, i32 3, i32 4>" in text
