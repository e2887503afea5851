"""The ``fly`` dialect in the traced IR (docs/layout.md, "Layouts in the IR"): what tracing records, how it
prints and parses, what ``fly-layout-lowering`` turns it into, and that kernels compute the same."""

import numpy as np
import pytest
from compiler_util import cpu_device  # noqa: F401

import flydsl.compiler as flyc
import flydsl.expr as fx
import flydsl.layout as L
from flydsl import ir, passes
from flydsl._mlir import ir as mir
from flydsl._mlir.dialects import arith as marith
from flydsl._mlir.dialects import fly as mfly
from flydsl._mlir.dialects import func as mfunc
from flydsl._mlir.passmanager import PassManager
from flydsl.dialects import arith, fly
from flydsl.ir import FlyType, IRError
from flydsl.ir.parser import parse_module
from flydsl.testing import trace_kernel


def _fly_ops(module) -> list[str]:
    return [o.defn.name for o in module.walk() if o.defn.dialect == "fly"]


def test_types_print_and_parse():
    t = FlyType("int_tuple", "(9,(4,8))")
    assert str(t) == "!fly.int_tuple<(9,(4,8))>"
    assert ir.parse_type("!fly.int_tuple<(9, (4, 8))>") is t  # FlyDSL's input spacing is accepted
    assert ir.parse_type("!fly.layout<(16,?):(1,?)>").is_static is False
    m = ir.parse_type("!fly.memref<f32, register, (2,3):(1,2)>")
    assert str(m) == "!fly.memref<f32, register, (2,3):(1,2)>"
    with pytest.raises(ValueError, match="unknown fly type"):
        FlyType("tensor", "4")


def test_static_types_of_values():
    lay = L.make_layout((128, 64), (1, 128))
    assert str(lay.type) == "!fly.layout<(128,64):(1,128)>"
    assert str(L.get(lay, 0).type) == "!fly.layout<128:1>"
    assert str(fx.make_shape(9, (4, 8)).type) == "!fly.int_tuple<(9,(4,8))>"
    assert str(fx.size(lay).type) == "!fly.int_tuple<8192>"
    b = fx.Basis(2, [0, 1])
    assert b.type.is_leaf_basis and b.type.get_leaf_as_basis.modes == [0, 1] and str(b.type) == "!fly.int_tuple<2E0E1>"
    t = L.IntTupleType.get((10, (2, 3)))
    assert t.rank == 2 and t.depth == 2 and t.at(1).rank == 2 and t.at(0).get_static_leaf_int == 10
    assert L.parse_body("int_tuple", t.body) == (10, (2, 3))
    assert L.parse_body("layout", "(4,8):(1E0,1E1)") == L.make_identity_layout((4, 8))
    with pytest.raises(
        ValueError, match=r"!fly\.int_tuple<\(4,\?\)> has run-time leaves; its value is not in its type"
    ):
        L.parse_body("int_tuple", "(4,?)")


def test_tracing_records_constructors_with_run_time_leaves():
    with trace_kernel([ir.i32]) as t:
        m = fx.Int32(t.args[0])
        fx.make_int_tuple((9, (4, 8)))
        fx.make_layout((16, m), (1, m))
        fx.make_identity_layout((4, 8))
        fx.make_rmem_tensor((2, 3), fx.Float32)
    text = t.text
    assert '"fly.make_int_tuple"() : () -> (!fly.int_tuple<(9,(4,8))>)' in text
    assert '"fly.make_int_tuple"(%arg0) : (i32) -> (!fly.int_tuple<(16,?)>)' in text
    assert "-> (!fly.layout<(16,?):(1,?)>)" in text
    assert "-> (!fly.layout<(4,8):(1E0,1E1)>)" in text
    assert '"fly.make_ordered_layout"' in text and "-> (!fly.memref<f32, register, (2,3):(1,2)>)" in text
    # the printed module parses back to the same text
    traced = parse_module(text)
    assert ir.print_op(traced) == text
    # the lowering erases every record (trace_kernel runs it, as the compiler does)
    assert _fly_ops(traced) and _fly_ops(t.module) == []
    passes.run_pipeline(traced, ["fly-layout-lowering"])
    assert _fly_ops(traced) == []


def test_outside_a_trace_nothing_is_recorded():
    lay = fx.make_layout((4, 8), (8, 1))  # no insertion point: a plain Python layout
    assert str(lay) == "(4,8):(8,1)"


def test_get_scalar_lowers_to_a_constant_or_to_its_leaf():
    with trace_kernel([ir.i32]) as t:
        a = fly.static(result_types=[FlyType("int_tuple", "(10)")])
        ca = fly.get_scalar(a, result_types=[ir.i32])
        d = fly.CONSTRUCTORS["make_int_tuple"](t.args[0], result_types=[FlyType("int_tuple", "?")])
        cd = fly.get_scalar(d, result_types=[ir.i32])
        s = arith.addi(ca, cd)
    passes.run_pipeline(t.module, ["fly-layout-lowering", "canonicalize"])
    assert _fly_ops(t.module) == []
    adds = [o for o in t.module.walk() if o.defn.name == "arith.addi"]
    assert s is not None and len(adds) == 1
    lhs, rhs = adds[0].operands
    assert lhs.defining_op.defn.name == "arith.constant" and lhs.defining_op.attrs["value"] == 10
    assert rhs is t.args[0]  # the run-time leaf is the kernel argument it was built from


def test_get_scalar_of_a_computed_run_time_leaf_is_an_error():
    with pytest.raises(IRError, match="run-time leaf is read only from the fly.make_int_tuple"):
        with trace_kernel([ir.i32]) as t:
            d = fly.CONSTRUCTORS["make_shape"](t.args[0], t.args[0], result_types=[FlyType("int_tuple", "(?,?)")])
            sz = fly.TRANSFORMS["size"](d, result_types=[FlyType("int_tuple", "?")])
            fly.get_scalar(sz, result_types=[ir.i32])


def test_fly_print_lowers_to_gpu_printf():
    with trace_kernel([ir.i32]) as t:
        fly.print_(t.args[0], format="x={}")
    passes.run_pipeline(t.module, ["fly-layout-lowering"])
    (p,) = [o for o in t.module.walk() if o.defn.name == "gpu.printf"]
    assert p.attrs["format"] == "x={}\n" and p.operands == [t.args[0]]


def test_facade_builders_infer_types_and_fold():
    """FlyDSL's ``fly.*`` builders on IR values: the algebra infers each result type; FlyDSL's pass names
    run ``fly-layout-lowering``, after which the sizes are constants."""
    with mir.Context(), mir.Location.unknown():
        module = mir.Module.create()
        idx = mir.IndexType.get()
        with mir.InsertionPoint(module.body):
            f = mfunc.FuncOp("f", mir.FunctionType.get([], [idx, idx]))
            with mir.InsertionPoint(f.add_entry_block()):
                a = mfly.make_layout(
                    mfly.static(mfly.IntTupleType.get((10, 2))), stride=mfly.static(mfly.IntTupleType.get((16, 4)))
                )
                b = mfly.make_layout(
                    mfly.static(mfly.IntTupleType.get((5, 4))), stride=mfly.static(mfly.IntTupleType.get((1, 5)))
                )
                r = mfly.composition(a, b)
                assert str(r.type) == "!fly.layout<(5,(2,2)):(16,(80,4))>"
                st = mfly.get_stride(a)
                s1 = mfly.get_scalar(mfly.select(st, indices=[1]))
                sz = mfly.get_scalar(mfly.size(r))
                mfunc.ReturnOp([marith.IndexCastOp(idx, v).result for v in (s1, sz)])
        text = str(module)
        assert "fly.composition" in text and "fly.get_scalar" in text
        PassManager.parse(
            "builtin.module(fly-canonicalize,fly-layout-lowering,convert-fly-to-rocdl,canonicalize,cse)"
        ).run(module.operation)
        ret = module.body.operations[0].entry_block.operations[-1]
        assert [int(v.owner.attributes["value"]) for v in ret.operands] == [4, 20]
        assert "fly." not in str(module)


def test_facade_builders_need_static_operands():
    with trace_kernel([ir.i32]) as t:
        d = mfly.make_shape(mfly.IntTupleType(L.make_int_tuple((4, fx.Int32(t.args[0])))), [t.args[0]])
        assert str(d.type) == "!fly.int_tuple<(4,?)>"
        with pytest.raises(TypeError, match="build run-time layouts with fx"):
            mfly.size(d)


def test_complement_of_overlapping_modes():
    """CuTe rejects a layout whose modes overlap; FlyDSL's complement gives a layout of size 0 there, and so
    does ``fx.complement``; the divides, which need a real complement, keep the error."""
    lay = L.make_layout((3, 2), (1, 2))
    assert fx.size(fx.complement(lay, 12)) == 0
    with pytest.raises(ValueError, match="not injective"):
        L.complement(lay, 12)
    with pytest.raises(ValueError, match="not injective"):
        fx.logical_divide(L.make_layout(12, 1), lay)
    assert fx.complement(L.make_layout(3, 0), 12) == L.make_layout(12, 1)  # stride-0 modes are dropped (CuTe)
    assert fx.complement(L.make_layout((2, 2), (1, 6)), 24) == L.make_layout((3, 2), (2, 12))


@pytest.mark.usefixtures("cpu_device")
def test_kernels_compute_the_same_with_records():
    """A jit kernel that builds layouts (static and run-time) runs on the interpreter as before: the records
    are gone from the compiled IR and the result is right."""

    @flyc.kernel
    def k(a: fx.Tensor, out: fx.Tensor, n: fx.Int32):
        tid = fx.thread_idx.x
        lay = fx.make_layout((4, n), (n, 1))
        shape = fx.make_shape(4, n)
        crd = fx.make_coord(tid % 4, tid // 4)
        out[tid] = a[fx.crd2idx(crd, lay)] + fx.Float32(fx.size(shape))

    @flyc.jit
    def run(a: fx.Tensor, out: fx.Tensor, n: fx.Int32):
        k(a, out, n).launch(grid=(1, 1, 1), block=(8, 1, 1))

    a = np.arange(8, dtype=np.float32)
    out = np.zeros(8, dtype=np.float32)
    run(a, out, 2)
    tid = np.arange(8)
    np.testing.assert_array_equal(out, a[(tid % 4) * 2 + tid // 4] + 8)
    traced = run._last_compiled[1].source_ir  # FlyDSL's view: the records are in the IR as traced
    assert "fly.make_layout" in traced and "-> (!fly.layout<(4,?):(?,1)>)" in traced
