"""FlyDSL's API surface that programs written for ROCm FlyDSL import (issue 13): runtime.device arch
queries, the ``flydsl._mlir`` facade over our IR (incl. rocdl ops mapped to portable ones and AMD-only ops
as FLY501), compiler alias modules (CompilationContext, protocol, diagnostics, llvm_options), and the fx
names (typing/vector/arith re-exports, meta)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401
from compiler_util import facade_module as _module

from flydsl._mlir.dialects import arith as _facade_arith
from flydsl.compiler import CompileError

pytestmark = pytest.mark.usefixtures("cpu_device")


# -- runtime.device ---------------------------------------------------------------------------------


def test_arch_queries_report_nvidia(monkeypatch):
    from flydsl.runtime import device as d

    monkeypatch.delenv("ARCH", raising=False)
    monkeypatch.setenv("FLYDSL_GPU_ARCH", "sm_90a")
    assert d.get_rocm_arch() == d.get_hip_arch() == "sm_90a"
    assert d.get_warp_size() == 32 and not d.is_rdna_arch() and d.is_nvidia_arch()
    assert d.supports_bf16_global_atomics() and not d.supports_bf16_global_atomics("sm_80")
    assert d.default_fp8_format() == "e4m3fn"
    assert "gfx9" not in d.get_rocm_arch()  # FlyDSL's CDNA gates skip
    assert (d.get_warp_size("gfx942"), d.get_warp_size("gfx1201"), d.is_rdna_arch("gfx1100")) == (64, 32, True)
    assert d.default_fp8_format("gfx942") == "e4m3fnuz"
    assert isinstance(d.get_rocm_device_count(), int)
    monkeypatch.setenv("ARCH", "gfx950")
    assert d.get_rocm_arch() == "gfx950"  # the compile target override wins


# -- the _mlir facade: building IR outside a jit ----------------------------------------------------


def test_facade_types_are_our_types_and_views_check_them():
    from flydsl import ir as ours
    from flydsl._mlir import ir

    f32 = ir.F32Type.get()
    assert f32 is ours.f32 and isinstance(f32, ir.FloatType) and isinstance(f32, ir.Type)
    v = ir.VectorType.get([4], f32)
    assert v is ours.VectorType((4,), ours.f32) and ir.VectorType(v) is v and v.element_type is f32
    assert ir.IntegerType.get_signless(32) is ours.i32 and ir.IndexType.get() is ours.index
    assert ir.Type.parse("vector<8xbf16>") is ours.VectorType((8,), ours.bf16)
    assert ir.Type.parse("!llvm.ptr<1>") is ours.PointerType(ours.i8, 1)
    assert ir.Type.parse("!llvm.ptr<8>") is ours.BufferRsrcType()
    assert not isinstance(f32, ir.IntegerType)
    with pytest.raises(ValueError):
        ir.VectorType(f32)
    assert ir.Context.current is None


def test_facade_arith_builds_ops_and_returns_fx_values():
    from flydsl._mlir import ir
    from flydsl._mlir.dialects import arith, math, vector
    from flydsl.expr.typing import T

    seen = {}

    def build(x, v):
        c = arith.ConstantOp(T.f32, 2.0).result
        y = arith.addf(x, c)
        z = arith.AddFOp(y, x, fastmath=arith.FastMathFlags.fast).result
        p = arith.CmpFOp(arith.CmpFPredicate.OLT, z, c).result
        i = arith.index_cast(T.index, arith.constant(T.i32, 7))
        r = vector.reduction(T.f32, vector.CombiningKind.ADD, v)
        e = math.exp2(z)
        seen.update(y=y, p=p, i=i, r=r, e=e)
        assert isinstance(y, ir.Value) and isinstance(y, fx.Float32)
        assert isinstance(p, fx.Boolean) and isinstance(r, fx.Float32)

    text = _module(build, [ir.F32Type.get(), ir.VectorType.get([4], ir.F32Type.get())])
    for op in ("arith.addf", "arith.cmpf", "arith.index_cast", "vector.reduction", "math.exp2"):
        assert op in text
    assert "fastmath<fast>" in text and 'predicate = "olt"' in text or "olt" in text


def test_facade_scf_if_and_for_build_structured_ops():
    from flydsl._mlir import ir
    from flydsl._mlir.dialects import arith, scf
    from flydsl.expr.typing import T

    def build(x):
        cond = arith.cmpi(arith.CmpIPredicate.slt, x, arith.constant(T.i32, 3))
        if_op = scf.IfOp(cond, [T.i32], hasElse=True)
        with ir.InsertionPoint(if_op.then_block):
            scf.YieldOp([arith.constant(T.i32, 1)])
        with ir.InsertionPoint(if_op.else_block):
            scf.YieldOp([x])
        lb, ub, st = (arith.constant(T.index, k) for k in (0, 4, 1))
        loop = scf.ForOp(lb, ub, st, [if_op.result])
        with ir.InsertionPoint(loop.body):
            scf.YieldOp([arith.addi(loop.inner_iter_args[0], x)])

    text = _module(build, [ir.IntegerType.get_signless(32)])
    assert "scf.if" in text and "scf.for" in text and "scf.yield" in text


def test_dispatch_helpers_build_structured_ops_with_flydsl_calling_convention():
    from flydsl._mlir import ir
    from flydsl.compiler.ast_rewriter import CanonicalizeWhile, InsertEmptyYieldForSCFFor, ReplaceIfWithDispatch

    seen = {}

    def build(c, n):
        x = fx.Int32(n)
        # a compile-time condition runs one branch (no op); a run-time one builds scf.if, raw IR values
        # coming back as DSL values and Python numbers promoted to the other branch's type
        seen["static"] = ReplaceIfWithDispatch.scf_if_dispatch(
            True, lambda x: {"x": x + 1}, lambda x: {"x": x}, state_names=("x",), state_values=(x,)
        )
        pair = ReplaceIfWithDispatch.scf_if_dispatch(
            c,
            lambda names, x, d: {"x": 7, "d": {"b": x, "a": x}},
            lambda names, x, d: {"d": {"a": x + 1, "b": x}},
            result_names=("x", "d"),
            result_values=(n, {"a": x, "b": x}),
        )
        seen["if"] = pair
        seen["ifexp"] = ReplaceIfWithDispatch.scf_ifexp_dispatch(c, lambda: x, lambda: x * 2)
        seen["for"] = InsertEmptyYieldForSCFFor.scf_for_dispatch(
            0, 8, 2, lambda iv, names, acc: {"acc": acc + iv}, result_names=("acc",), result_values=(0,)
        )
        seen["while"] = CanonicalizeWhile.scf_while_dispatch(
            lambda names, k, acc: k > 0,
            lambda names, k, acc: {"k": k // 2, "acc": acc + k},
            result_names=("k", "acc"),
            result_values=(x, x),
        )
        with pytest.raises(TypeError, match="'acc' is None"):
            InsertEmptyYieldForSCFFor.scf_for_dispatch(
                0, 4, 1, lambda iv, names, acc: {}, result_names=("acc",), result_values=(None,)
            )
        with pytest.raises(TypeError, match="does not match the region entry"):
            ReplaceIfWithDispatch.scf_if_dispatch(
                c,
                lambda names, v: {"v": [x]},
                lambda names, v: {"v": [x, x]},
                result_names=("v",),
                result_values=([x],),
            )

    i1, i32 = ir.IntegerType.get_signless(1), ir.IntegerType.get_signless(32)
    text = _module(build, [i1, i32])
    assert text.count("scf.if") == 2 and "scf.for" in text and "scf.while" in text
    assert type(seen["static"]) is fx.Int32 and not seen["static"].is_static()
    x_out, d_out = seen["if"]
    assert type(x_out) is fx.Int32 and list(d_out) == ["a", "b"]  # keys aligned to the entry's order
    assert type(seen["ifexp"]) is fx.Int32 and type(seen["for"]) is fx.Int32
    assert isinstance(seen["while"], tuple) and len(seen["while"]) == 2


def _raw_ops_in_statements():
    a = _facade_arith.ConstantOp(_facade_i32(), 1)
    if True:
        b = _facade_arith.ConstantOp(_facade_i32(), 2)
    return a, b


def _facade_i32():
    from flydsl._mlir import ir

    return ir.IntegerType.get_signless(32)


def test_debug_info_gives_raw_ops_their_statement_line(monkeypatch):
    from flydsl._mlir import ir
    from flydsl.compiler.ast_rewriter import ASTRewriter, FallbackLocations

    first = _raw_ops_in_statements.__code__.co_firstlineno

    def locations():
        fn = ASTRewriter.transform(_raw_ops_in_statements)
        with ir.Context() as ctx, ir.Location.unknown(ctx):
            module = ir.Module.create()
            with ir.InsertionPoint(module.body), ir.Location.file("kernel.py", 999, 1):
                return [str(op.operation.location) for op in fn()]

    monkeypatch.setenv("FLYDSL_DEBUG_ENABLE_DEBUG_INFO", "1")
    a, b = locations()
    assert f":{first + 1}:" in a  # its own statement
    assert f":{first + 2}:" in b  # inside a branch: the `if` statement's line
    monkeypatch.setenv("FLYDSL_DEBUG_ENABLE_DEBUG_INFO", "0")
    assert all('"kernel.py":999:' in loc for loc in locations())  # off: the enclosing location
    with FallbackLocations.rewrite_globals()["_flydsl_loc"]("f.py", 7, 3):
        assert str(ir.Location.current) == 'loc("f.py":7:3)'


def test_fly_dialect_layout_algebra_is_fx_on_python_layouts():
    from flydsl._mlir.dialects import fly

    lay = fx.make_layout((3, (1, 9)), (1, (9, 3)))
    assert fly.coalesce(lay) == fx.coalesce(lay) and fly.size(lay) == 27
    assert fly.logical_divide(fx.make_layout(16, 1), fx.make_layout(4, 1)) == fx.logical_divide(
        fx.make_layout(16, 1), fx.make_layout(4, 1)
    )
    assert fly.make_ordered_layout((4, 2), (1, 0)) == fx.make_ordered_layout((4, 2), (1, 0))
    with pytest.raises(CompileError, match="fly.make_fragment_like"):
        fly.make_fragment_like(lay)  # the dialect's other IR ops are not available


def test_passmanager_runs_our_passes_and_rejects_fly_lowerings():
    from flydsl._mlir import ir
    from flydsl._mlir.dialects import arith, func
    from flydsl._mlir.passmanager import PassManager
    from flydsl.expr.typing import T

    with ir.Context(), ir.Location.unknown():
        m = ir.Module.create()
        with ir.InsertionPoint(m.body):
            f = func.FuncOp("t", ir.FunctionType.get([], [T.i32]))
            with ir.InsertionPoint(f.add_entry_block()):
                func.ReturnOp([arith.addi(arith.constant(T.i32, 2), arith.constant(T.i32, 3))])
        PassManager.parse("builtin.module(canonicalize,cse)").run(m.operation)
        text = str(m)
    assert "arith.addi" not in text and "5" in text
    with pytest.raises(CompileError, match="FLY502"):
        PassManager.parse("builtin.module(fly-rewrite-func-signature)")


# -- rocdl ops that have a portable meaning, in a kernel on the interpreter -------------------------


@flyc.kernel
def rocdl_kernel(a: Tensor, out: Tensor):
    from flydsl._mlir import ir
    from flydsl._mlir.dialects import arith, fly, rocdl
    from flydsl.expr.typing import T

    tid = fx.thread_idx.x
    base = fly.extract_aligned_pointer_as_index(ir.Type.parse("!llvm.ptr<1>"), a)
    nbytes = arith.constant(T.i32, 6 * 4)  # only 6 of the 8 floats are inside the resource
    rsrc = rocdl.MakeBufferRsrcOp(ir.Type.parse("!llvm.ptr<8>"), base, 0, nbytes, 0).result
    zero = arith.constant(T.i32, 0)
    x = rocdl.raw_ptr_buffer_load(T.f32, rsrc, tid * 4, zero, zero)
    rocdl.sched_barrier(0)  # a scheduling hint: no effect
    out[tid] = x
    out[8 + tid] = fx.Float32(rocdl.readfirstlane(T.i32, tid + 5))
    out[16 + tid] = fx.Float32(rocdl.mbcnt_hi(T.i32, -1, rocdl.mbcnt_lo(T.i32, -1, 0)))
    out[24 + tid] = fx.Float32(rocdl.ds_bpermute(T.i32, (tid ^ 1) * 4, tid))
    rocdl.raw_ptr_buffer_store(x * 10.0, rsrc, tid * 4, zero, zero)


@flyc.jit
def launch_rocdl(a, out):
    rocdl_kernel(a, out).launch(grid=1, block=8)


def test_rocdl_portable_ops_run_on_the_interpreter():
    a = np.arange(8, dtype=np.float32)
    out = np.full(32, np.nan, np.float32)
    launch_rocdl(a, out)
    tid = np.arange(8)
    assert out[:8].tolist() == [0, 1, 2, 3, 4, 5, 0, 0]  # loads past num_records read 0
    assert out[8:16].tolist() == [5.0] * 8  # the lowest active lane's value
    assert out[16:24].tolist() == tid.tolist()  # mbcnt(-1) is the lane id
    assert out[24:32].tolist() == (tid ^ 1).tolist()
    assert a.tolist() == [0, 10, 20, 30, 40, 50, 6, 7]  # stores past num_records are dropped


@flyc.kernel
def mfma_kernel(out: Tensor):
    from flydsl.expr import rocdl

    rocdl.s_waitcnt(0)


@flyc.jit
def launch_mfma(out):
    mfma_kernel(out).launch(grid=1, block=1)


def test_amd_only_op_is_fly501_naming_op_and_target():
    with pytest.raises(CompileError) as ei:
        launch_mfma(np.zeros(1, np.float32))
    text = str(ei.value)
    assert "error[FLY501]: `rocdl.s_waitcnt`" in text and "sm_90a" in text and "rocdl.s_waitcnt(0)" in text


# -- compiler modules ----------------------------------------------------------------------------------


@flyc.kernel
def one(out: Tensor):
    out[0] = fx.Float32(1.0)


seen_ctx = []


@flyc.jit
def launch_one(out):
    from flydsl.compiler.kernel_function import CompilationContext

    ctx = CompilationContext.get_current()
    seen_ctx.append((ctx is not None, ctx.gpu_module_body is not None))
    one(out).launch(grid=1, block=1)


def test_compilation_context_current_and_hints_are_honoured():
    from flydsl.compiler.kernel_function import CompilationContext

    assert CompilationContext.get_current() is None
    out = np.zeros(1, np.float32)
    launch_one(out)
    assert seen_ctx[-1] == (True, True)
    with CompilationContext.compile_hints({"fast_fp_math": True}):
        with CompilationContext.compile_hints({"maxnreg": 64, "fast_fp_math": None}):
            assert CompilationContext.get_compile_hints() == {"fast_fp_math": True, "maxnreg": 64}
            launch_one(out)
    hinted = list(launch_one._hint_copies.values())[0]
    assert hinted.compile_hints == {"fast_fp_math": True, "maxnreg": 64}  # its own specialization
    assert launch_one.compile_hints == {} and launch_one.func is launch_one.fn
    assert len(launch_one._mem_cache) == 1 and "gpu.func @one_0" in launch_one._last_compiled[1].source_ir
    with CompilationContext.create() as c:
        assert CompilationContext.get_current() is c


def test_protocol_functions_accept_both_spellings():
    from flydsl.compiler.protocol import cache_signature, dsl_size_of, extract_to_ir_values

    assert dsl_size_of(fx.Float32) == 4
    with pytest.raises(TypeError, match="does not implement __cache_signature__"):
        cache_signature(object())
    assert cache_signature(SimpleNamespace(a=fx.Int32(1))) == (("a", (fx.Int32,)),)
    assert extract_to_ir_values([]) == []


def test_diagnostics_records_render_source_and_caret(tmp_path):
    from flydsl.compiler.diagnostics import DiagRecord, DSLCompileError, SourceFrame

    src = tmp_path / "k.py"
    src.write_text("def k():\n    x = compute(a, b)\n")
    err = DSLCompileError("op failed", diagnostics=[DiagRecord("bad op", [SourceFrame(str(src), 2, 8, 21)])])
    text = str(err)
    assert "bad op" in text and f'File "{src}", line 2' in text
    assert "    x = compute(a, b)\n        " + "^" * 13 in text
    assert str(DSLCompileError("plain")) == "plain"


def test_llvm_options_scope_becomes_the_compile_hint():
    from flydsl.compiler import FlyDSLError
    from flydsl.compiler import llvm_options as lo

    with pytest.raises(TypeError, match="Unsupported type list"):
        with lo.llvm_options({"x": [1]}):
            pass
    with pytest.raises(RuntimeError, match="outside a `with llvm_options"):
        lo.set_option("enable-post-misched", False)
    out = np.zeros(1, np.float32)
    with lo.llvm_options({"enable-post-misched": False}):
        with lo.llvm_options({"lsr-drop-solution": True}):
            assert lo.current_options() == {"enable-post-misched": False, "lsr-drop-solution": True}
            assert lo.set_option("lsr-drop-solution", False) is True
            launch_one(out)
    assert lo.current_options() == {} and out.tolist() == [1.0]
    hinted = [jf for jf in launch_one._hint_copies.values() if "llvm_options" in jf.compile_hints]
    assert hinted[0].compile_hints["llvm_options"] == {"enable-post-misched": False, "lsr-drop-solution": False}
    with pytest.raises(FlyDSLError, match="no-such-llvm-option"):  # honoured or rejected, never ignored
        with lo.llvm_options({"no-such-llvm-option": 1}):
            launch_one(out)


@flyc.kernel
def ptr_add(A: fx.Pointer, C: fx.Pointer, n: fx.Int32):
    idx = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if idx < n:
        C[idx] = A[idx] + 1.0


@flyc.jit
def launch_ptr_add(A: fx.Pointer, C: fx.Pointer, n: fx.Int32):
    ptr_add(A, C, n).launch(grid=(n + 63) // 64, block=64)


def test_from_c_void_p_runs_on_the_interpreter_checked_against_the_owning_array(monkeypatch):
    from flydsl.compiler import DSLTypeError, DSLValueError
    from flydsl.interp import InterpError

    a, c = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    args = (flyc.from_c_void_p(fx.Float32, a.ctypes.data), flyc.from_c_void_p(fx.Float32, c.ctypes.data), 100)
    launch_ptr_add(*args)
    assert c.tolist() == (a + 1).tolist()
    c[:] = 0
    launch_ptr_add(a.ctypes.data, c.ctypes.data, 100)  # plain addresses, as FlyDSL's compiled functions take
    assert c.tolist() == (a + 1).tolist()

    @flyc.jit
    def fresh(A: fx.Pointer, C: fx.Pointer, n: fx.Int32):
        ptr_add(A, C, n).launch(grid=1, block=64)

    with pytest.raises(DSLTypeError, match="an integer address before any flyc.from_c_void_p"):
        fresh(a.ctypes.data, c.ctypes.data, 4)
    with pytest.raises(InterpError, match="out-of-bounds read .* buffer 'A'"):  # past the array it points into
        launch_ptr_add(args[0], args[1], 120)
    loose = flyc.from_c_void_p(fx.Float32, 16)  # an address into no live array
    with pytest.raises(DSLValueError, match=r"error\[FLY401\]: argument 'A': a raw pointer 0x10"):
        launch_ptr_add(loose, args[1], 4)
    monkeypatch.setenv("COMPILE_ONLY", "1")
    launch_ptr_add.clear_cache()
    assert launch_ptr_add(*args) is None
    ptx = launch_ptr_add._last[1].artifact.ptx
    assert ".param .u64 .ptr .global" in ptx and "add.rn.f32" in ptx and "ld.global" in ptx
    with pytest.raises(TypeError, match="integer address"):
        flyc.from_c_void_p(fx.Float32, 1.5)


def _remembered_region_probe(raw_pointer, monkeypatch):
    """Find an array's region, then look it up again with the heap search disabled; returns its start
    and a weak reference (the array dies with this frame)."""
    import weakref

    a = np.zeros(64, np.float32)
    start = a.ctypes.data
    found = raw_pointer.owning_region(start + 8)
    assert found[:2] == (start, a.nbytes) and found[2] is a

    def no_search():
        raise AssertionError("searched the heap for a remembered region")

    with monkeypatch.context() as m:
        m.setattr(raw_pointer, "_storages", no_search)
        again = raw_pointer.owning_region(start + 200)  # the same allocation: answered from memory
    assert again[:2] == (start, a.nbytes) and again[2] is a
    return start, weakref.ref(a)


def test_raw_pointer_regions_are_remembered_while_their_owner_lives(monkeypatch):
    import gc

    from flydsl.runtime import raw_pointer

    start, alive = _remembered_region_probe(raw_pointer, monkeypatch)
    gc.collect()
    assert alive() is None
    assert raw_pointer._remembered(start + 8) is None  # a dead owner's region is forgotten, not answered
    assert start not in raw_pointer._FOUND


@pytest.mark.gpu
def test_from_c_void_p_vector_add_on_the_gpu(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.delenv("FLYDSL_RUNTIME_KIND", raising=False)
    a = torch.randn(4099, device="cuda")
    c = torch.empty_like(a)
    launch_ptr_add(flyc.from_c_void_p(fx.Float32, a.data_ptr()), flyc.from_c_void_p(fx.Float32, c.data_ptr()), 4099)
    torch.cuda.synchronize()
    assert torch.equal(c, a + 1.0)


# -- fx names ---------------------------------------------------------------------------------------------


def test_fx_typing_vector_arith_meta_names():
    from flydsl.expr import arith, meta
    from flydsl.expr import typing as fxt
    from flydsl.expr import vector as fxv

    for name in ("T", "Vector", "ReductionOp", "full", "full_like", "Float32x4"):
        assert getattr(fxt, name) is getattr(fx, name)
    assert fxv.full is fx.full and fxv.T is fx.T
    assert fx.as_ir_value(None) is None and fx.as_ir_value(3, keep_static=True) == 3
    assert not isinstance(fx.Int32(3), arith.ArithValue)  # a compile-time value is not an IR value
    assert fx.SyncScope.Agent == "agent" and arith.ConstantOp is not None
    with meta.tracing_context(fastmath="fast", unroll=4):
        with meta.tracing_context(fastmath=None):
            assert meta.tracing_option("fastmath") is None and meta.tracing_option("unroll") == 4
        assert meta.tracing_option("fastmath") == "fast"
    assert meta.tracing_option("fastmath", "d") == "d"


# -- smaller names ----------------------------------------------------------------------------------------


@flyc.kernel
def attrs_kernel(out: Tensor, p: fx.Pointer):
    v = fx.ptr_load(p)
    fx.ptr_store(v + 1.0, p)
    out[fx.thread_idx.x] = fx.Float32(fx.math.clampf(v, 0.0, 2.0)) + fx.math.fpowi(fx.Float32(2.0), fx.Int32(3))


@flyc.jit
def launch_attrs(out, x):
    attrs_kernel(out, fx.get_iter(x), value_attrs={"my.value": 3}).launch(grid=1, block=1, unit_attrs=["my.unit"])


def test_value_attrs_ptr_load_store_and_math_composites():

    out, x = np.zeros(1, np.float32), np.array([5.0], np.float32)
    launch_attrs(out, x)
    assert out.tolist() == [10.0] and x.tolist() == [6.0]  # clampf(5, 0, 2) + 2**3; x incremented in place
    fop = [line for line in launch_attrs._last[1].artifact.ir_text().splitlines() if "gpu.func" in line][0]
    assert "my.unit = true" in fop and "my.value = 3" in fop
    assert str(fx.SwizzleType.get(3, 3, 3)) == "Sw<3,3,3>" and fx.static((4, 8)) == (4, 8)
    spec = fx.Constexpr[tuple[int, tuple[bool, float]]]
    assert spec.accepts((1, (True, 2.0))) and not spec.accepts((1, (1, 2.0))) and not spec.accepts((1,))
    assert fx.math.sincos(fx.Float32(0.0)) == (fx.Float32(0.0), fx.Float32(1.0))
    assert fx.math.ipowi(fx.Int32(3), 4) == fx.Int32(81)
    assert not fx.math.isnormal(fx.Float32(1e-40)).value and fx.math.isnormal(fx.BFloat16(1.0)).value
    with pytest.raises(TypeError, match="must be a bool, int, float or str"):

        @flyc.jit
        def bad(out):
            attrs_kernel(out, None, value_attrs={"x": [1]})

        bad(out)


@flyc.kernel
def typed(out: Tensor):
    r = fx.make_rmem_tensor(4, fx.Float32)
    out[0] = fx.Float32(1.0) if str(r.type) == "!fly.memref<f32, register, 4:1>" else fx.Float32(0.0)


@flyc.jit
def launch_typed(out):
    typed(out).launch(grid=1, block=1)


def test_tensor_type():
    out = np.zeros(1, np.float32)
    launch_typed(out)
    assert out.tolist() == [1.0]


def test_backends_ast_rewriter_jit_argument_modules():
    torch = pytest.importorskip("torch")
    from flydsl.compiler.ast_rewriter import ASTRewriter
    from flydsl.compiler.backends import GPUTarget, get_backend
    from flydsl.compiler.jit_argument import TorchTensorJitArg

    assert get_backend(arch="sm_90a").target == GPUTarget("nvptx", "sm_90a", 32)
    assert get_backend(arch="gfx942").target.warp_size == 64

    def f(x):
        return 1 if x > 0 else 2

    assert ASTRewriter.transform(f)(3) == 1
    a, b = torch.empty(100), torch.empty(999)
    assert TorchTensorJitArg(a).__cache_signature__() == TorchTensorJitArg(b).__cache_signature__()
    sa, sb = flyc.from_torch_tensor(a).__cache_signature__(), flyc.from_torch_tensor(b).__cache_signature__()
    assert sa != sb


# -- autotune on the interpreter ----------------------------------------------------------------------------


@flyc.kernel
def scale_kernel(out: Tensor, x: Tensor, BLOCK: fx.Constexpr[int]):
    i = fx.block_idx.x * BLOCK + fx.thread_idx.x
    out[i] = out[i] + x[i] * 2.0


def test_autotune_searches_caches_and_uses_the_winner(monkeypatch, tmp_path):
    from flydsl.autotune import Config, autotune

    monkeypatch.setenv("FLYDSL_AUTOTUNE_CACHE_DIR", str(tmp_path / "tune"))
    benched = []

    def bench(call, warmup, rep):
        from flydsl.autotune import do_bench

        benched.append(1)
        return do_bench(call, warmup, rep)  # perf_counter timing on the interpreter

    @autotune(
        configs=[Config(BLOCK=32), Config(BLOCK=64)], key=["x"], warmup=1, rep=1, reset_to_zero=["out"], do_bench=bench
    )
    @flyc.jit
    def launch_scale(out, x, BLOCK: fx.Constexpr[int]):
        scale_kernel(out, x, BLOCK).launch(grid=128 // BLOCK, block=BLOCK)

    x = np.arange(128, dtype=np.float32)
    out = np.full(128, 7.0, np.float32)
    launch_scale(out, x)
    assert out.tolist() == (2 * x).tolist()  # reset_to_zero before the real run: accumulated once
    assert len(benched) == 2 and isinstance(launch_scale.best_config(out, x), Config)
    assert list((tmp_path / "tune").glob("*.json"))
    launch_scale(out, x)  # a cache hit: no new search
    assert len(benched) == 2 and out.tolist() == (2 * x).tolist()
    monkeypatch.setenv("FLYDSL_AUTOTUNE", "1")  # forces a search
    launch_scale(out, x)
    assert len(benched) == 4
