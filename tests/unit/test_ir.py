"""IR core: types, building, printing (custom and generic), parsing round trips, verifier errors."""

import numpy as np
import pytest

from flydsl import ir
from flydsl.dialects import arith, func, gpu, ptr, scf, vector


def _kernel(arg_types, name="k"):
    m = ir.new_module()
    gm = gpu.build_gpu_module()
    m.regions[0].block.append(gm)
    k = func.build_func(gpu.func, name, arg_types, kernel=True)
    gm.regions[0].block.append(k)
    return m, k.regions[0].blocks[0]


@pytest.mark.parametrize(
    "text",
    ["i1", "i32", "index", "f16", "bf16", "f8E4M3FN", "f8E5M2FNUZ", "vector<4xf32>", "vector<2x8xbf16>",
     "!fly.ptr<f32, global>", "!fly.ptr<vector<4xi32>, shared>", "!fly.buffer_rsrc", "(i32, f32) -> (i64)"],
)  # fmt: skip
def test_type_print_parse_roundtrip(text):
    t = ir.parse_type(text)
    assert str(t) == text
    assert ir.parse_type(text) is t  # interned


def test_types_are_interned():
    assert ir.IntegerType(32) is ir.i32
    assert ir.VectorType(4, ir.f32) is ir.VectorType((4,), ir.f32)
    assert ir.PointerType(ir.f32, "shared") is ir.PointerType(ir.f32, 3)
    with pytest.raises(ValueError, match="unknown float type"):
        ir.FloatType("f12")


def _sample_module():
    m, b = _kernel([ir.PointerType(ir.f32), ir.i32])
    with ir.InsertionPoint(b):
        tid = gpu.thread_id(dimension="x")
        cond = arith.cmpi(tid, b.args[1], predicate="slt")
        iff = scf.build_if(cond, [ir.f32])
        with ir.InsertionPoint(iff.regions[0].blocks[0]):
            v = ptr.load(ptr.add(b.args[0], tid), result_types=[ir.f32])
            scf.yield_(v)
        with ir.InsertionPoint(iff.regions[1].blocks[0]):
            scf.yield_(arith.const(0.5, ir.f32))
        loop = scf.build_for(arith.const(0, ir.i32), b.args[1], arith.const(1, ir.i32), [iff.results[0]])
        body = loop.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            scf.yield_(arith.addf(body.args[1], arith.sitofp(body.args[0], result_types=[ir.f32])))
        vec = arith.const(np.array([1.0, -2.0, 3.25, 4.0], np.float32), ir.VectorType(4, ir.f32))
        s = vector.reduction(vec, kind="add")
        ptr.store(arith.addf(s, loop.results[0]), b.args[0])
        gpu.return_()
    return m


def test_print_parse_roundtrip_custom_and_generic():
    m = _sample_module()
    ir.verify(m)
    text = ir.print_op(m)
    assert "arith.cmpi slt" in text and "vector<4xf32>" in text
    assert ir.print_op(ir.parse_module(text)) == text
    gtext = ir.print_op(m, generic=True)
    assert '"arith.addf"' in gtext
    m2 = ir.parse_module(gtext)
    ir.verify(m2)
    assert ir.print_op(m2, generic=True) == gtext
    assert ir.print_op(m2) == text


def test_locations_print_and_parse():
    m, b = _kernel([ir.i32])
    with ir.InsertionPoint(b), ir.location(("user.py", 12, 5)):
        arith.addi(b.args[0], b.args[0])
        gpu.return_()
    text = ir.print_op(m, locs=True)
    assert 'loc("user.py":12:5)' in text
    m2 = ir.parse_module(text)
    assert ir.print_op(m2, locs=True) == text


def test_verifier_reports_op_and_location():
    m, b = _kernel([ir.i32, ir.f32])
    with ir.InsertionPoint(b), ir.location(("kern.py", 7, 3)):
        arith.addi(b.args[0], b.args[1], result_types=[ir.i32])  # mixed types
        gpu.return_()
    with pytest.raises(ir.VerifyError) as e:
        ir.verify(m)
    msg = str(e.value)
    assert "arith.addi" in msg and "kern.py:7" in msg and "operand and result types must match" in msg
    assert "%0 = arith.addi %arg0, %arg1 : i32" in msg


def test_verifier_catches_dominance():
    m, b = _kernel([ir.i32])
    with ir.InsertionPoint(b):
        iff = scf.build_if(arith.cmpi(b.args[0], b.args[0], predicate="eq"), [], with_else=False)
        with ir.InsertionPoint(iff.regions[0].blocks[0]):
            inner = arith.addi(b.args[0], b.args[0])
            scf.yield_()
        arith.muli(inner, inner)  # uses a value defined inside the if
        gpu.return_()
    with pytest.raises(ir.VerifyError, match="does not dominate"):
        ir.verify(m)


def test_builder_rejects_non_values_and_missing_insertion_point():
    with pytest.raises(ir.IRError, match="no insertion point"):
        arith.const(1, ir.i32)
    m, b = _kernel([ir.i32])
    with ir.InsertionPoint(b), pytest.raises(ir.IRError, match="is not an IR value"):
        arith.addi(b.args[0], 3)


def test_trace_budget_hook():
    m, b = _kernel([ir.i32])
    hit = []

    def stop(op):
        hit.append(op.name)
        raise RuntimeError("budget")

    with ir.InsertionPoint(b), ir.TraceBudget(5, stop), pytest.raises(RuntimeError):
        x = b.args[0]
        for _ in range(10):
            x = arith.addi(x, x)
    assert hit == ["arith.addi"]


def test_raw_values_refuse_python_protocols():
    m, b = _kernel([ir.i32])
    with pytest.raises(TypeError, match="no Python truth value"):
        bool(b.args[0])
    with pytest.raises(TypeError, match="not iterable"):
        list(b.args[0])


def test_scf_pretty_forms_roundtrip():
    m, b = _kernel([ir.i32])
    with ir.InsertionPoint(b):
        w = scf.build_while([b.args[0]], [ir.i32])
        before, after = w.regions[0].blocks[0], w.regions[1].blocks[0]
        with ir.InsertionPoint(before):
            scf.condition(arith.cmpi(before.args[0], arith.const(100, ir.i32), predicate="slt"), before.args[0])
        with ir.InsertionPoint(after):
            scf.yield_(arith.muli(after.args[0], arith.const(2, ir.i32)))
        iff = scf.build_if(arith.cmpi(w.results[0], b.args[0], predicate="ne"), [ir.i32, ir.i32])
        with ir.InsertionPoint(iff.regions[0].blocks[0]):
            scf.yield_(w.results[0], b.args[0])
        with ir.InsertionPoint(iff.regions[1].blocks[0]):
            scf.yield_(b.args[0], w.results[0])
        gpu.return_()
    ir.verify(m)
    text = ir.print_op(m)
    assert "scf.while (%arg1 = %arg0) : (i32) -> (i32) {" in text
    assert "scf.condition(%" in text and "} do {" in text
    assert ":2 = scf.if %" in text and "-> (i32, i32) {" in text and "} else {" in text
    m2 = ir.parse_module(text)
    ir.verify(m2)
    assert ir.print_op(m2) == text
