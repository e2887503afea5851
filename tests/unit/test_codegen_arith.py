"""Codegen of the arith dialect: every op on every type family, LLVM text checks, PTX checks, and
ptxas acceptance for sm_90a and sm_80 (skipped when no ptxas is installed)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from flydsl.codegen import CodegenError, Target, compile_module, emit_llvm, find_ptxas, run_ptxas
from flydsl.dialects import arith, ptr
from flydsl.ir import PointerType, VectorType
from flydsl.ir import numpy_dtype as ir_numpy_dtype
from flydsl.ir import types as T
from flydsl.testing import build_kernel

ARCHS = ("sm_90a", "sm_80")
HAVE_PTXAS = find_ptxas() is not None


def compile_all(mod, archs=ARCHS, expect=(), target_kw=None):
    """Compile for each arch, check expected PTX substrings, run ptxas; returns {arch: ptx}."""
    out = {}
    for arch in archs:
        ck = compile_module(mod, Target(arch=arch, **(target_kw or {})))
        for e in expect:
            assert e in ck.ptx, f"{e!r} not in PTX for {arch}:\n{ck.ptx}"
        if HAVE_PTXAS:
            run_ptxas(ck.ptx, arch)
        out[arch] = ck.ptx
    return out


def io_kernel(t, n_in, fn, n_out=None):
    """A kernel reading ``n_in`` values of type ``t`` from one pointer and storing fn's results."""
    elem = t.elem if isinstance(t, VectorType) else t
    P = PointerType(elem, "global")

    def body(src, dst):
        ins = [ptr.load(ptr.add(src, arith.const(i * 4, T.i32)), result_types=[t]) for i in range(n_in)]
        res = fn(*ins)
        for i, r in enumerate(res):
            rp = PointerType(r.type.element_type, "global")
            dp = ptr.cast(dst, result_types=[rp]) if rp is not dst.type else dst
            ptr.store(r, ptr.add(dp, arith.const(i * 4, T.i32)))

    return build_kernel([P, P], body)


INT_TYPES = [T.i8, T.i16, T.i32, T.i64, T.index, VectorType(4, T.i32), VectorType(2, T.i16)]
INT_OPS = [
    arith.addi, arith.subi, arith.muli, arith.divsi, arith.divui, arith.remsi, arith.remui, arith.andi,
    arith.ori, arith.xori, arith.maxsi, arith.minsi, arith.maxui, arith.minui, arith.mulhisi, arith.mulhiui,
    arith.floordivsi, arith.ceildivsi, arith.ceildivui, arith.shli, arith.shrui, arith.shrsi,
]  # fmt: skip


@pytest.mark.parametrize("t", INT_TYPES, ids=str)
def test_integer_ops_compile(t):
    mod = io_kernel(t, 2, lambda a, b: [op(a, b) for op in INT_OPS])
    text = emit_llvm(mod, Target())
    for instr in ("sdiv", "udiv", "srem", "urem", "@llvm.smax", "@llvm.umin", "lshr", "ashr"):
        assert instr in text
    compile_all(mod)


def test_integer_ptx_instructions():
    mod = io_kernel(
        T.i32, 2, lambda a, b: [arith.divsi(a, b), arith.remui(a, b), arith.mulhisi(a, b), arith.maxsi(a, b)]
    )
    ptx = compile_all(mod, expect=("div.s32", "rem.u32", "mul.hi.s32", "max.s32"))
    assert ptx


def test_constant_shift_amounts_fold_to_defined_results():
    def fn(a):
        big = arith.const(40, T.i32)
        return [arith.shli(a, big), arith.shrui(a, big), arith.shrsi(a, big), arith.shli(a, arith.const(3, T.i32))]

    text = emit_llvm(io_kernel(T.i32, 1, fn), Target())
    assert "ashr i32 %v" in text and ", 31" in text  # sign fill
    assert "shl i32 %v" in text and ", 3" in text
    assert "shl i32 %v2, 40" not in text


def test_dynamic_shift_is_guarded():
    text = emit_llvm(io_kernel(T.i32, 2, lambda a, b: [arith.shli(a, b), arith.shrsi(a, b)]), Target())
    assert "icmp ult i32" in text and "select i1" in text


FLOAT_TYPES = [T.f16, T.bf16, T.f32, T.f64, VectorType(4, T.f32), VectorType(2, T.f16), VectorType(2, T.bf16)]
FLOAT_OPS = [
    arith.addf,
    arith.subf,
    arith.mulf,
    arith.divf,
    arith.maximumf,
    arith.minimumf,
    arith.maxnumf,
    arith.minnumf,
]


def _float_ptx(t, arch) -> list[str]:
    """What the PTX of addf/subf/mulf/divf/maximumf/minimumf/maxnumf/minnumf/negf/remf on ``t`` must hold: each
    op's own instruction (IEEE round-to-nearest; NaN-propagating max/min are the ``.NaN`` forms), half
    types computing what they cannot in f32 and rounding back once."""
    e = t.elem if isinstance(t, VectorType) else t
    name = {T.f16: "f16", T.bf16: "bf16", T.f32: "f32", T.f64: "f64"}[e]
    pt = name + ("x2" if isinstance(t, VectorType) and e.bitwidth == 16 else "")
    if e is T.f64:  # no .NaN forms for f64: max/min with explicit NaN tests
        return ["add.rn.f64", "sub.rn.f64", "mul.rn.f64", "div.rn.f64", "max.f64", "min.f64", "setp.nan.f64",
                "neg.f64"]  # fmt: skip
    want = [f"max.NaN.{pt}", f"min.NaN.{pt}", f"max.{pt}", f"min.{pt}", f"neg.{pt}", "div.rn.f32"]
    if e is T.bf16 and arch == "sm_80":  # no bf16 add/sub/mul before sm_90: fma with a zero/one operand
        want.append(f"fma.rn.{pt}")
    else:
        want += [f"add.rn.{pt}", f"sub.rn.{pt}", f"mul.rn.{pt}"]
    if e.bitwidth == 16:  # divf through f32, one rounding back
        want.append(f"cvt.rn.{pt}.f32")
    return want


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
def test_float_ops_compile(t):
    mod = io_kernel(t, 2, lambda a, b: [op(a, b) for op in FLOAT_OPS] + [arith.negf(a), arith.remf(a, b)])
    for arch, ptx in compile_all(mod).items():
        missing = [w for w in _float_ptx(t, arch) if w not in ptx]
        assert not missing, f"{t} on {arch}: {missing} not in the PTX"
        assert "rem." not in ptx  # remf is an exact fmod, not PTX's (approximate) rem


def test_f32_arithmetic_is_not_contracted():
    """Without fastmath, mul + add stay separate and rounded (.rn): bit-identical to the interpreter."""
    mod = io_kernel(T.f32, 3, lambda a, b, c: [arith.addf(arith.mulf(a, b), c)])
    ptx = compile_all(mod, expect=("mul.rn.f32", "add.rn.f32"))
    assert all("fma.rn.f32" not in p for p in ptx.values())


def test_fastmath_flags_reach_llvm():
    mod = io_kernel(T.f32, 3, lambda a, b, c: [arith.addf(arith.mulf(a, b, fastmath="fast"), c, fastmath="contract")])
    text = emit_llvm(mod, Target())
    assert "fmul fast float" in text and "fadd contract float" in text
    compile_all(mod, archs=("sm_90a",), expect=("fma.rn.f32",))


def test_cmpi_predicates():
    preds = arith.CMPI_PREDICATES
    mod = io_kernel(
        T.i32, 2, lambda a, b: [arith.extui(arith.cmpi(a, b, predicate=p), result_types=[T.i32]) for p in preds]
    )
    text = emit_llvm(mod, Target())
    assert all(f"icmp {p} i32" in text for p in preds)
    compile_all(mod, archs=("sm_90a",))


def test_cmpf_predicates():
    preds = arith.CMPF_PREDICATES
    mod = io_kernel(T.f32, 2, lambda a, b: [arith.select(arith.cmpf(a, b, predicate=p), a, b) for p in preds])
    text = emit_llvm(mod, Target())
    assert all(f"fcmp {p} float" in text for p in preds)
    compile_all(mod, archs=("sm_90a",))


def test_vector_select_and_compare():
    V = VectorType(4, T.f32)

    def fn(a, b):
        return [arith.select(arith.cmpf(a, b, predicate="olt"), a, b)]

    text = emit_llvm(io_kernel(V, 2, fn), Target())
    assert "fcmp olt <4 x float>" in text and "select <4 x i1>" in text


CASTS = [
    (arith.extsi, T.i8, T.i32),
    (arith.extui, T.i16, T.i64),
    (arith.trunci, T.i64, T.i8),
    (arith.sitofp, T.i32, T.f32),
    (arith.uitofp, T.i64, T.f64),
    (arith.sitofp, T.i32, T.bf16),
    (arith.uitofp, T.i16, T.f16),
    (arith.fptosi, T.f32, T.i32),
    (arith.fptoui, T.f64, T.i8),
    (arith.fptosi, T.f16, T.i64),
    (arith.fptosi, T.bf16, T.i16),
    (arith.extf, T.f16, T.f32),
    (arith.extf, T.bf16, T.f32),
    (arith.extf, T.f32, T.f64),
    (arith.extf, T.bf16, T.f64),
    (arith.truncf, T.f32, T.f16),
    (arith.truncf, T.f32, T.bf16),
    (arith.truncf, T.f64, T.bf16),
    (arith.truncf, T.f16, T.bf16),
    (arith.truncf, T.bf16, T.f16),
    (arith.bitcast, T.f32, T.i32),
    (arith.bitcast, T.i16, T.bf16),
    (arith.index_cast, T.i32, T.index),
    (arith.index_cast, T.index, T.i32),
    (arith.index_castui, T.i32, T.index),
    (arith.index_cast, T.i64, T.index),
]


# what each cast's PTX must hold (sm_90a; sm_80 differences in CAST_PTX_SM80): the conversion instruction, or
# for integer casts the sign- or zero-extending load / narrowing store they fold into; "!x": x must not appear
CAST_PTX = {
    ("arith.extsi", T.i8, T.i32): ["ld.global.s8", "st.global.b32"],
    ("arith.extui", T.i16, T.i64): [r"ld.global.b16 \t%rd", "st.global.b64"],
    ("arith.trunci", T.i64, T.i8): ["ld.global.b64", "st.global.b8"],
    ("arith.sitofp", T.i32, T.f32): ["cvt.rn.f32.s32"],
    ("arith.uitofp", T.i64, T.f64): ["cvt.rn.f64.u64"],
    ("arith.sitofp", T.i32, T.bf16): ["cvt.rn.bf16.s32"],
    ("arith.uitofp", T.i16, T.f16): ["cvt.rn.f16.u16"],
    ("arith.fptosi", T.f32, T.i32): ["cvt.rzi.s32.f32", "setp.nan.f32"],  # saturating, NaN -> 0
    ("arith.fptoui", T.f64, T.i8): ["cvt.rzi.u16.f64", "max.f64", "min.f64"],  # clamped to [0, 255]
    ("arith.fptosi", T.f16, T.i64): ["cvt.f32.f16", "cvt.rzi.s64.f32", "setp.nan.f32"],
    ("arith.fptosi", T.bf16, T.i16): ["cvt.rzi.s16.f32", "max.f32", "min.f32"],
    ("arith.extf", T.f16, T.f32): ["cvt.f32.f16"],
    ("arith.extf", T.bf16, T.f32): ["cvt.f32.bf16"],
    ("arith.extf", T.f32, T.f64): ["cvt.f64.f32"],
    ("arith.extf", T.bf16, T.f64): ["cvt.f64.bf16"],
    ("arith.truncf", T.f32, T.f16): ["cvt.rn.f16.f32"],
    ("arith.truncf", T.f32, T.bf16): ["cvt.rn.bf16.f32"],
    # f64 -> bf16 rounds once: f64 -> f32 rounding to odd, then f32 -> bf16 to nearest even
    ("arith.truncf", T.f64, T.bf16): ["cvt.rn.f32.f64", "setp.equ.f64", "cvt.rn.bf16.f32", "!cvt.rn.bf16.f64"],
    ("arith.truncf", T.f16, T.bf16): ["cvt.f32.f16", "cvt.rn.bf16.f32"],
    ("arith.truncf", T.bf16, T.f16): ["cvt.f32.bf16", "cvt.rn.f16.f32"],
    ("arith.bitcast", T.f32, T.i32): ["ld.global.b32", "st.global.b32", "!cvt."],
    ("arith.bitcast", T.i16, T.bf16): ["ld.global.b16", "st.global.b16", "!cvt."],
    ("arith.index_cast", T.i32, T.index): [r"ld.global.s32 \t%rd", "st.global.b64"],
    ("arith.index_cast", T.index, T.i32): ["ld.global.b64", "st.global.b32"],
    ("arith.index_castui", T.i32, T.index): [r"ld.global.b32 \t%rd", "st.global.b64"],
    ("arith.index_cast", T.i64, T.index): ["ld.global.b64", "st.global.b64", "!cvt."],
}
CAST_PTX_SM80 = {  # no bf16 conversion instructions before sm_90 but f32 -> bf16
    ("arith.sitofp", T.i32, T.bf16): ["cvt.rn.f32.s32", "cvt.rn.bf16.f32"],
    ("arith.fptosi", T.bf16, T.i16): ["shl.b32", "cvt.rzi.s16.f32"],
    ("arith.extf", T.bf16, T.f32): ["shl.b32", "!cvt.f32.bf16"],  # bf16 is the top half of an f32
    ("arith.extf", T.bf16, T.f64): ["shl.b32", "cvt.f64.f32"],
    ("arith.truncf", T.bf16, T.f16): ["shl.b32", "cvt.rn.f16.f32"],
}


def check_ptx(ptx: str, wants, what: str) -> None:
    """Every pattern (a regex; ``!x``: must not occur) against the PTX text."""
    for w in wants:
        if w.startswith("!"):
            assert w[1:] not in ptx, f"{what}: {w[1:]!r} in the PTX:\n{ptx}"
        else:
            assert re.search(w, ptx), f"{what}: {w!r} not in the PTX:\n{ptx}"


@pytest.mark.parametrize("op,src,dst", CASTS, ids=lambda x: getattr(x, "name", str(x)))
def test_casts(op, src, dst):
    mod = io_kernel(src, 1, lambda a: [op(a, result_types=[dst])])
    for arch, ptx in compile_all(mod).items():
        key = (op.name, src, dst)
        check_ptx(ptx, (CAST_PTX_SM80 if arch == "sm_80" else {}).get(key, CAST_PTX[key]), f"{key} on {arch}")


def test_vector_casts():
    V4 = VectorType(4, T.f32)
    mod = io_kernel(
        V4,
        1,
        lambda a: [
            arith.truncf(a, result_types=[VectorType(4, T.bf16)]),
            arith.fptosi(a, result_types=[VectorType(4, T.i32)]),
            arith.bitcast(a, result_types=[VectorType(4, T.i32)]),
        ],
    )
    for arch, ptx in compile_all(mod).items():
        # two lanes per packed bf16x2 conversion; four saturating conversions; the bitcast moves bits only
        assert ptx.count("cvt.rn.bf16x2.f32") == 2 and ptx.count("cvt.rzi.s32.f32") == 4, arch
        assert ptx.count("setp.nan.f32") == 4 and ptx.count("st.global.b16") == 4, arch


def test_fptosi_is_saturating():
    text = emit_llvm(io_kernel(T.f32, 1, lambda a: [arith.fptosi(a, result_types=[T.i32])]), Target())
    assert "@llvm.fptosi.sat.i32.f32" in text


FP8 = [T.f8E4M3FN, T.f8E5M2]


@pytest.mark.parametrize("f8", FP8, ids=str)
@pytest.mark.parametrize("wide", [T.f16, T.bf16, T.f32, T.f64], ids=str)
def test_fp8_conversions_sm90(f8, wide):
    mod = io_kernel(wide, 1, lambda a: [arith.extf(arith.truncf(a, result_types=[f8]), result_types=[wide])])
    name = "e4m3" if f8 is T.f8E4M3FN else "e5m2"
    compile_all(mod, archs=("sm_90a",), expect=(f"satfinite.{name}x2",))


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_fp8_vector_conversions(n):
    V = VectorType(n, T.f32)
    V8 = VectorType(n, T.f8E4M3FN)
    mod = io_kernel(V, 1, lambda a: [arith.extf(arith.truncf(a, result_types=[V8]), result_types=[V])])
    ptx = compile_all(mod, archs=("sm_90a",), expect=("cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.f16x2.e4m3x2"))
    assert ptx["sm_90a"].count("cvt.rn.satfinite.e4m3x2.f32") == (n + 1) // 2


def test_fp8_int_conversions_and_between_formats():
    mod = io_kernel(
        T.f32,
        1,
        lambda a: [
            arith.sitofp(arith.fptosi(arith.truncf(a, result_types=[T.f8E5M2]), result_types=[T.i32]),
                         result_types=[T.f8E4M3FN]),
        ],
    )  # fmt: skip
    compile_all(mod, archs=("sm_90a",))


def test_fp8_on_sm80_is_a_codegen_error_not_an_abort():
    mod = io_kernel(T.f32, 1, lambda a: [arith.truncf(a, result_types=[T.f8E4M3FN])])
    with pytest.raises(CodegenError) as ei:
        compile_module(mod, Target(arch="sm_80"))
    msg = str(ei.value)
    assert "arith.truncf" in msg and "sm_89" in msg and "sm_80" in msg and "fix:" in msg


def test_fnuz_fp8_is_rejected_on_nvidia():
    mod = io_kernel(T.f32, 1, lambda a: [arith.truncf(a, result_types=[T.f8E4M3FNUZ])])
    with pytest.raises(CodegenError, match="fnuz"):
        compile_module(mod, Target())


def test_fp8_arithmetic_is_rejected_with_a_fix():
    mod = io_kernel(T.f8E4M3FN, 2, lambda a, b: [arith.addf(a, b)])
    with pytest.raises(CodegenError, match="convert to f16 or f32"):
        emit_llvm(mod, Target())


def test_error_points_at_source_location():
    from flydsl.ir import location

    def fn(a, b):
        with location((__file__, 7, 3)):
            return [arith.addf(a, b)]

    mod = io_kernel(T.f8E5M2, 2, fn)
    with pytest.raises(CodegenError) as ei:
        emit_llvm(mod, Target())
    assert f"{__file__}:7:3" in str(ei.value)
    assert ei.value.op is not None and ei.value.op.defn.name == "arith.addf"


CONSTANTS = [
    (1.5, T.f32), (-0.0, T.f32), (math.inf, T.f32), (math.nan, T.f64), (0.1, T.f64), (3.0, T.f16),
    (-2.5, T.bf16), (448.0, T.f8E4M3FN), (-1, T.i8), (2**40, T.i64), (True, T.i1), (7, T.index),
]  # fmt: skip


@pytest.mark.parametrize("value,t", CONSTANTS, ids=lambda x: str(x))
def test_scalar_constants(value, t):
    P = PointerType(t if t is not T.i1 else T.i8, "global")

    def body(dst):
        c = arith.const(value, t)
        if t is T.i1:
            c = arith.extui(c, result_types=[T.i8])
        ptr.store(c, dst)

    mod = build_kernel([P], body)
    ptx = compile_all(mod, archs=("sm_90a",))["sm_90a"]
    # the constant is stored as an immediate holding exactly its bits (decimal or hex)
    bits = _bits(value, t)
    w = 8 if t is T.i1 else t.bitwidth
    m = re.search(rf"st\.global\.b{w} \t\[%rd\d+\], ([-0-9xA-Fa-f]+);", ptx)
    assert m is not None, ptx
    assert int(m.group(1), 0) % (1 << w) == bits, (m.group(1), hex(bits))


def _bits(value, t) -> int:
    """The bits of ``value`` as a constant of type ``t`` (floats through numpy/ml_dtypes)."""
    if t.is_float:
        dt = np.dtype(ir_numpy_dtype(t))
        return int(np.array(value, dtype=np.float64).astype(dt).view(f"u{dt.itemsize}"))
    return int(value) % (1 << (8 if t is T.i1 else t.bitwidth))


def test_vector_constants():
    V = VectorType(4, T.f32)
    P = PointerType(T.f32, "global")

    def body(dst):
        dense = arith.constant(value=np.array([1.0, 2.0, 3.0, 4.0], np.float32), result_types=[V])
        splat = arith.const(2.0, V)
        zero = arith.const(0.0, V)
        ptr.store(arith.addf(arith.mulf(dense, splat), zero), dst, align=16)

    mod = build_kernel([P], body)
    text = emit_llvm(mod, Target())
    assert "splat (float 0x4000000000000000)" in text and "zeroinitializer" in text
    compile_all(mod)


# -- explicit rounding modes, checked bit for bit against the interpreter's semantics on the host --
# (f64 -> f32 only: the host has no native f16/bf16 conversions; the GPU tests cover those)

_JITS = []


def _host_f64_to_f32(rounding):
    """JIT ``bits(truncf(x : f64) : f32)`` on the host."""
    import ctypes

    import llvmlite.binding as llvm

    from flydsl.dialects import func, gpu
    from flydsl.ir import InsertionPoint, new_module, verify

    mod = new_module()
    gm = gpu.build_gpu_module()
    mod.regions[0].blocks[0].append(gm)
    f = func.build_func(gpu.func, "f", [T.f64], [T.i32])
    gm.regions[0].blocks[0].append(f)
    with InsertionPoint(f.regions[0].blocks[0]):
        (x,) = f.regions[0].blocks[0].args
        gpu.return_(arith.bitcast(arith.truncf(x, result_types=[T.f32], rounding=rounding), result_types=[T.i32]))
    verify(mod)
    text = emit_llvm(mod, Target()).replace("define internal", "define")
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("target "))
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    m = llvm.parse_assembly(text)
    ee = llvm.create_mcjit_compiler(m, llvm.Target.from_default_triple().create_target_machine())
    ee.finalize_object()
    _JITS.append(ee)  # keep the engine (and the code) alive
    return ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_double)(ee.get_function_address("f"))


@pytest.mark.parametrize("mode", ["downward", "upward", "toward_zero", "to_nearest_away", "to_nearest_even"])
def test_rounding_modes_bit_exact_vs_interpreter(mode):
    from flydsl.dialects.arith import float_round, float_round_directed

    f = _host_f64_to_f32(mode)
    rng = np.random.default_rng(7)
    xs = rng.standard_normal(3000) * np.exp(rng.uniform(-100, 100, 3000))
    f32 = np.float32
    ties = [1 + 2.0**-24, 1 + 3 * 2.0**-24, -(1 + 2.0**-24), 3.5e38, -3.5e38, 1e-46, -1e-46, 0.0, -0.0]
    ties += [float(np.nextafter(f32(1.0), f32(2))) + 2.0**-24, 2.0**-149 * 1.5, np.inf, -np.inf]
    xs = np.concatenate([xs, ties])
    with np.errstate(all="ignore"):
        want = float_round(xs, T.f32) if mode == "to_nearest_even" else float_round_directed(xs, T.f32, mode)
    got = np.array([f(float(x)) for x in xs], dtype=np.int32)
    bad = got != np.asarray(want, np.float32).view(np.int32)
    assert not bad.any(), xs[bad][:5]


def test_rounding_modes_on_vectors_compile():
    V = VectorType(4, T.f32)
    modes = ("downward", "upward", "toward_zero", "to_nearest_away")
    mod = io_kernel(V, 1, lambda a: [arith.truncf(a, result_types=[VectorType(4, T.bf16)], rounding=m) for m in modes])
    for arch, ptx in compile_all(mod).items():
        # each lane rounds to nearest once (shared by the modes), then an exact f64 comparison per mode steps it
        assert ptx.count("cvt.rn.bf16.f32") == 4 and ptx.count("cvt.f64.f32") >= 4, arch
        assert "setp.gt.f64" in ptx and "setp.lt.f64" in ptx and "sub.rn.f64" in ptx, arch  # down, up, away
