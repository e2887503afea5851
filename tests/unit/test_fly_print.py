"""``fx.printf`` as FlyDSL's ``fly.print``: the op it records, its lowering (``gpu.printf`` in kernels,
``vector.print`` in host code), FlyDSL's bare-``{}`` float rule, and ``gpu.printf``'s C spelling."""

import numpy as np
import pytest
from compiler_util import cpu_device  # noqa: F401

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl import ir, passes
from flydsl._mlir import ir as mir
from flydsl._mlir.dialects import arith as marith
from flydsl._mlir.dialects import func as mfunc
from flydsl._mlir.dialects import gpu as mgpu
from flydsl.dialects import gpu
from flydsl.dialects.gpu import PrintfFormatError
from flydsl.dialects.printf_c import braces_to_c, c_to_braces
from flydsl.ir.parser import parse_module
from flydsl.testing import trace_kernel


def _names(module) -> list[str]:
    return [o.defn.name for o in module.walk()]


def test_c_format_translation_round_trips():
    types = [ir.i32, ir.f32, ir.i64, ir.i32]
    fmt = "t={} f={:.2f} big={} hex={:#x} 100% {{lit}}\n"
    c = braces_to_c(fmt, types)
    assert c == "t=%d f=%.2f big=%lld hex=%#x 100%% {lit}\n"
    assert braces_to_c(c_to_braces(c), types) == c
    assert c_to_braces("%-8.3e|%+05d|%ld|%u|%p|%%") == "{:<8.3e}|{:+05}|{}|{}|{}|%"
    assert braces_to_c("v={}", [ir.VectorType(4, ir.f32)]) is None  # C has no vector conversion
    with pytest.raises(PrintfFormatError, match="no string arguments"):
        c_to_braces("name=%s")


def test_gpu_printf_prints_in_mlir_syntax_and_parses_back():
    with trace_kernel([ir.i32, ir.f32]) as t:
        gpu.printf(t.args[0], t.args[1], format="a={} b={:.3f} 50%\n")
        gpu.printf(format="plain\n")
    assert 'gpu.printf "a=%d b=%.3f 50%%\\n" %arg0, %arg1 : i32, f32' in t.text
    assert 'gpu.printf "plain\\n"' in t.text
    again = parse_module(t.text)
    assert ir.print_op(again) == t.text
    (p, _) = [o for o in again.walk() if o.defn.name == "gpu.printf"]
    assert p.attrs["format"] == "a={} b={:.3f} 50%\n"


def test_fx_printf_records_fly_print_and_lowers_in_a_kernel():
    with trace_kernel([ir.i32, ir.f32]) as t:
        fx.printf("i={} x={} y={:.1f} s={}", fx.Int32(t.args[0]), fx.Float32(t.args[1]), fx.Float32(t.args[1]), "ok")
    assert '"fly.print"(%arg0, %arg1, %arg1) {format = "i={} x={} y={:.1f} s=ok"}' in t.text
    passes.run_pipeline(t.module, ["fly-layout-lowering"])
    (p,) = [o for o in t.module.walk() if o.defn.name == "gpu.printf"]
    assert p.attrs["format"] == "i={} x={:.2f} y={:.1f} s=ok\n"  # FlyDSL: a bare {} float has two decimals


def test_fx_printf_without_a_format_prints_the_values_separated_by_spaces():
    with trace_kernel([ir.i32, ir.i32]) as t:
        fx.printf(fx.Int32(t.args[0]), fx.Int32(t.args[1]))
    assert '"fly.print"(%arg0, %arg1) {format = "{} {}"}' in t.text


def test_host_print_lowers_to_vector_print_pieces():
    with mir.Context(), mir.Location.unknown():
        m = mir.Module.create()
        i32 = mir.IntegerType.get_signless(32)
        with mir.InsertionPoint(m.body):
            f = mfunc.FuncOp("host", mir.FunctionType.get([], []))
            with mir.InsertionPoint(f.add_entry_block()):
                fx.printf("a={}, b={}", marith.ConstantOp(i32, 1).result, marith.ConstantOp(i32, 2).result)
                mfunc.ReturnOp([])
        passes.run_pipeline(m._op, ["fly-layout-lowering"])
    prints = [o for o in m._op.walk() if o.defn.name == "vector.print"]
    assert [(o.attrs.get("string"), o.attrs["punctuation"], len(o.operands)) for o in prints] == [
        ("a=", "no_punctuation", 0),
        (None, "no_punctuation", 1),
        (", b=", "no_punctuation", 0),
        (None, "newline", 1),
    ]


def test_mlir_gpu_printf_takes_a_c_format():
    with trace_kernel([ir.i32, ir.f32]) as t:
        mgpu.printf("t=%d x=%-8.3f 100%%\n", [t.args[0], t.args[1]])
    (p,) = [o for o in t.module.walk() if o.defn.name == "gpu.printf"]
    assert p.attrs["format"] == "t={} x={:<8.3f} 100%\n"


@flyc.kernel
def _kernel(a: fx.Tensor):
    t = fx.thread_idx.x
    fx.printf("k t={} v={}", t, a[t])


@flyc.jit
def _launcher(a: fx.Tensor, n: fx.Int32, x: fx.Float32):
    fx.printf("host n={} x={}", n, x)
    fx.printf("spec n={:>4}", n)
    _kernel(a).launch(grid=1, block=2)


@pytest.mark.usefixtures("cpu_device")
def test_prints_run_on_host_and_device(capsys):
    _launcher(np.array([1.5, 2.25], np.float32), 3, 0.5)
    assert capsys.readouterr().out.splitlines() == [
        "host n=3 x=0.5",  # host code: vector.print, MLIR's %g for floats
        "spec n=   3",  # a format spec: gpu.printf on the host
        "k t=0 v=1.50",  # kernels: gpu.printf, FlyDSL's two decimals for a bare float
        "k t=1 v=2.25",
    ]
