"""LLVM lowering of the ``arith`` dialect.

Integer ops map to LLVM instructions (``add`` …, ``sdiv``) and intrinsics (``llvm.smax``); float ops
to ``fadd`` … with the op's fast-math flags (without ``contract`` nothing is fused, so results are
bit-identical to the interpreter's). Where LLVM leaves a result undefined the IR's semantics are kept
explicitly: shifts by >= the bit width give 0 (or the sign), float → int conversions saturate and map
NaN to 0 (``llvm.fptosi.sat``). fp8 conversions go through the target hooks.
"""

from __future__ import annotations

from ..ir import FloatType, IntegerType, Op, VectorType, bf16, f64
from .emit_math import emit_transcendental
from .emit_rounding import f64_to_f32_round_odd, int_to_f64_round_odd, truncf_directed
from .errors import CodegenError
from .intrinsics import constant_int, fastmath_flags, mangle, reject_fp8, vector_parts
from .llvm_emitter import FunctionEmitter, emitter
from .llvm_types import const_literal, is_fp8, llvm_type

# -- constants ------------------------------------------------------------------------------------


@emitter("arith.constant")
def emit_constant(fe: FunctionEmitter, op: Op) -> None:
    r = op.results[0]
    fe.define(r, const_literal(op.attrs["value"], r.type))


# -- integer binary ops ---------------------------------------------------------------------------

_INT_BINARY = {
    "arith.addi": "add",
    "arith.subi": "sub",
    "arith.muli": "mul",
    "arith.andi": "and",
    "arith.ori": "or",
    "arith.xori": "xor",
    "arith.divsi": "sdiv",
    "arith.divui": "udiv",
    "arith.remsi": "srem",
    "arith.remui": "urem",
}


@emitter(*_INT_BINARY)
def emit_int_binary(fe: FunctionEmitter, op: Op) -> None:
    a, b = op.operands
    fe.define(op.results[0], fe.assign(f"{_INT_BINARY[op.defn.name]} {fe.typed(a)}, {fe.val(b)}"))


_INT_MINMAX = {"arith.maxsi": "smax", "arith.minsi": "smin", "arith.maxui": "umax", "arith.minui": "umin"}


@emitter(*_INT_MINMAX)
def emit_int_minmax(fe: FunctionEmitter, op: Op) -> None:
    a, b = op.operands
    ty = llvm_type(a.type)
    r = fe.call(f"llvm.{_INT_MINMAX[op.defn.name]}.{mangle(ty)}", ty, [(ty, fe.val(a)), (ty, fe.val(b))])
    fe.define(op.results[0], r)


def _splat(fe, t, value: int) -> str:
    return const_literal(value, t)


_SHIFTS = {"arith.shli": "shl", "arith.shrui": "lshr", "arith.shrsi": "ashr"}


@emitter(*_SHIFTS)
def emit_shift(fe: FunctionEmitter, op: Op) -> None:
    """Shifts with the IR's semantics: an amount >= width gives 0 (``shrsi``: the sign fill)."""
    a, b = op.operands
    t = a.type
    ty = llvm_type(t)
    w = t.element_type.bitwidth
    instr = _SHIFTS[op.defn.name]
    amount = constant_int(b)
    if amount is not None:
        amount &= (1 << w) - 1
        if amount < w:
            r = fe.assign(f"{instr} {ty} {fe.val(a)}, {_splat(fe, t, amount)}")
        elif instr == "ashr":
            r = fe.assign(f"ashr {ty} {fe.val(a)}, {_splat(fe, t, w - 1)}")
        else:
            r = _splat(fe, t, 0)
        fe.define(op.results[0], r)
        return
    in_range = fe.assign(f"icmp ult {ty} {fe.val(b)}, {_splat(fe, t, w)}")
    if instr == "ashr":
        amt = fe.assign(f"select {_bool_ty(t)} {in_range}, {ty} {fe.val(b)}, {ty} {_splat(fe, t, w - 1)}")
        r = fe.assign(f"ashr {ty} {fe.val(a)}, {amt}")
    else:
        # shift by the amount masked to the width, not by the raw amount: LLVM 22's NVPTX backend folds
        # select(amount < w, shl(a, amount), 0) into one PTX shl.b64, whose amount is a u32, so an i64 amount
        # >= 2^32 wrapped (shl by 2^63 gave `a` on the H200, 2026-12-01); the masked shift is always defined
        amt = fe.assign(f"and {ty} {fe.val(b)}, {_splat(fe, t, w - 1)}")
        s = fe.assign(f"{instr} {ty} {fe.val(a)}, {amt}")
        r = fe.assign(f"select {_bool_ty(t)} {in_range}, {ty} {s}, {ty} {_splat(fe, t, 0)}")
    fe.define(op.results[0], r)


def _bool_ty(t) -> str:
    n, _ = vector_parts(t)
    return f"<{n} x i1>" if n else "i1"


def _wide(t):
    n, e = vector_parts(t)
    w = IntegerType(e.bitwidth * 2)
    return VectorType(n, w) if n else w


@emitter("arith.mulhisi", "arith.mulhiui")
def emit_mulhi(fe: FunctionEmitter, op: Op) -> None:
    a, b = op.operands
    t = a.type
    ty, wty = llvm_type(t), llvm_type(_wide(t))
    ext = "sext" if op.defn.name == "arith.mulhisi" else "zext"
    wa = fe.assign(f"{ext} {ty} {fe.val(a)} to {wty}")
    wb = fe.assign(f"{ext} {ty} {fe.val(b)} to {wty}")
    p = fe.assign(f"mul {wty} {wa}, {wb}")
    hi = fe.assign(f"lshr {wty} {p}, {_splat(fe, _wide(t), t.element_type.bitwidth)}")
    fe.define(op.results[0], fe.assign(f"trunc {wty} {hi} to {ty}"))


def _emit_rounded_div(fe: FunctionEmitter, op: Op, sign_pred: str | None, adjust: str) -> None:
    """``q = a div b``, then ``q adjust 1`` when the remainder ``r`` is nonzero and, for the signed forms,
    ``icmp sign_pred (r xor b), 0`` holds (that test compares the signs of ``r`` and ``b``).
    ``sign_pred=None`` is the unsigned form (``udiv``/``urem``, no sign test)."""
    a, b = op.operands
    t = a.type
    ty, bt = llvm_type(t), _bool_ty(t)
    div, rem = ("sdiv", "srem") if sign_pred is not None else ("udiv", "urem")
    q = fe.assign(f"{div} {ty} {fe.val(a)}, {fe.val(b)}")
    r = fe.assign(f"{rem} {ty} {fe.val(a)}, {fe.val(b)}")
    adj = fe.assign(f"icmp ne {ty} {r}, {_splat(fe, t, 0)}")
    if sign_pred is not None:
        x = fe.assign(f"xor {ty} {r}, {fe.val(b)}")
        signs = fe.assign(f"icmp {sign_pred} {ty} {x}, {_splat(fe, t, 0)}")
        adj = fe.assign(f"and {bt} {adj}, {signs}")
    one = fe.assign(f"zext {bt} {adj} to {ty}")
    fe.define(op.results[0], fe.assign(f"{adjust} {ty} {q}, {one}"))


@emitter("arith.floordivsi")
def emit_floordivsi(fe: FunctionEmitter, op: Op) -> None:
    """q = a sdiv b, minus one when the remainder is nonzero and its sign differs from b's."""
    _emit_rounded_div(fe, op, "slt", "sub")


@emitter("arith.ceildivsi")
def emit_ceildivsi(fe: FunctionEmitter, op: Op) -> None:
    """q = a sdiv b, plus one when the remainder is nonzero and has b's sign."""
    _emit_rounded_div(fe, op, "sge", "add")


@emitter("arith.ceildivui")
def emit_ceildivui(fe: FunctionEmitter, op: Op) -> None:
    """q = a udiv b, plus one when the remainder is nonzero."""
    _emit_rounded_div(fe, op, None, "add")


# -- float binary ops -----------------------------------------------------------------------------

_FLOAT_BINARY = {"arith.addf": "fadd", "arith.subf": "fsub", "arith.mulf": "fmul", "arith.divf": "fdiv"}


@emitter(*_FLOAT_BINARY)
def emit_float_binary(fe: FunctionEmitter, op: Op) -> None:
    a, b = op.operands
    reject_fp8(op, a.type)
    instr = _FLOAT_BINARY[op.defn.name]
    fe.define(op.results[0], fe.assign(f"{instr} {fastmath_flags(op)}{fe.typed(a)}, {fe.val(b)}"))


@emitter("arith.remf")
def emit_remf(fe: FunctionEmitter, op: Op) -> None:
    """C ``fmod``: exact, through the target's math library (LLVM's ``frem`` is inexact on NVPTX)."""
    reject_fp8(op, op.operands[0].type)
    emit_transcendental(fe, op, "fmod")


_FLOAT_MINMAX = {
    "arith.maximumf": "maximum",
    "arith.minimumf": "minimum",
    "arith.maxnumf": "maxnum",
    "arith.minnumf": "minnum",
}


@emitter(*_FLOAT_MINMAX)
def emit_float_minmax(fe: FunctionEmitter, op: Op) -> None:
    a, b = op.operands
    reject_fp8(op, a.type)
    ty = llvm_type(a.type)
    name = f"llvm.{_FLOAT_MINMAX[op.defn.name]}.{mangle(ty)}"
    fe.define(op.results[0], fe.call(name, ty, [(ty, fe.val(a)), (ty, fe.val(b))], attrs=""))


@emitter("arith.negf")
def emit_negf(fe: FunctionEmitter, op: Op) -> None:
    (a,) = op.operands
    if is_fp8(a.type):  # flip the sign bit of the stored byte
        ty = llvm_type(a.type)
        fe.define(op.results[0], fe.assign(f"xor {ty} {fe.val(a)}, {const_literal(-128, _i8_like(a.type))}"))
        return
    fe.define(op.results[0], fe.assign(f"fneg {fastmath_flags(op)}{fe.typed(a)}"))


def _i8_like(t):
    n, _ = vector_parts(t)
    return VectorType(n, IntegerType(8)) if n else IntegerType(8)


# -- comparisons and select -----------------------------------------------------------------------


@emitter("arith.cmpi")
def emit_cmpi(fe: FunctionEmitter, op: Op) -> None:
    a, b = op.operands
    fe.define(op.results[0], fe.assign(f"icmp {op.attrs['predicate']} {fe.typed(a)}, {fe.val(b)}"))


@emitter("arith.cmpf")
def emit_cmpf(fe: FunctionEmitter, op: Op) -> None:
    a, b = op.operands
    reject_fp8(op, a.type, "comparison")
    p = op.attrs["predicate"]
    fe.define(op.results[0], fe.assign(f"fcmp {fastmath_flags(op)}{p} {fe.typed(a)}, {fe.val(b)}"))


@emitter("arith.select")
def emit_select(fe: FunctionEmitter, op: Op) -> None:
    c, a, b = op.operands
    fe.define(op.results[0], fe.assign(f"select {fe.typed(c)}, {fe.typed(a)}, {fe.typed(b)}"))


# -- casts ----------------------------------------------------------------------------------------


def _cast_instr(kind: str):
    def emit(fe: FunctionEmitter, op: Op) -> None:
        (a,) = op.operands
        r = op.results[0]
        fe.define(r, fe.cast(kind, fe.val(a), llvm_type(a.type), llvm_type(r.type)))

    return emit


emitter("arith.extsi")(_cast_instr("sext"))
emitter("arith.extui")(_cast_instr("zext"))
emitter("arith.trunci")(_cast_instr("trunc"))


def _int_resize(fe: FunctionEmitter, op: Op, ext: str) -> None:
    (a,) = op.operands
    r = op.results[0]
    sw, dw = a.type.element_type.bitwidth, r.type.element_type.bitwidth
    kind = ext if dw > sw else "trunc"
    fe.define(r, fe.val(a) if sw == dw else fe.cast(kind, fe.val(a), llvm_type(a.type), llvm_type(r.type)))


@emitter("arith.index_cast")
def emit_index_cast(fe: FunctionEmitter, op: Op) -> None:
    _int_resize(fe, op, "sext")


@emitter("arith.index_castui")
def emit_index_castui(fe: FunctionEmitter, op: Op) -> None:
    _int_resize(fe, op, "zext")


def _f32_like(t):
    n, _ = vector_parts(t)
    f32 = FloatType("f32")
    return VectorType(n, f32) if n else f32


@emitter("arith.sitofp", "arith.uitofp")
def emit_itofp(fe: FunctionEmitter, op: Op) -> None:
    (a,) = op.operands
    r = op.results[0]
    instr = "sitofp" if op.defn.name == "arith.sitofp" else "uitofp"
    if is_fp8(r.type):  # ints beyond 2^24 saturate fp8 anyway: one rounding through f32 is exact
        f = fe.assign(f"{instr} {fe.typed(a)} to {llvm_type(_f32_like(r.type))}")
        fe.define(r, fe.hooks.convert_fp8(fe, op, f, _f32_like(r.type), r.type))
        return
    if r.type.element_type is bf16 and not fe.hooks.supports("bf16_int_cvt"):
        fe.define(r, _int_to_bf16_correctly_rounded(fe, a, r.type, instr == "sitofp"))
        return
    fe.define(r, fe.assign(f"{instr} {fe.typed(a)} to {llvm_type(r.type)}"))


def _int_to_bf16_correctly_rounded(fe: FunctionEmitter, a, dst, signed: bool) -> str:
    """int → bf16 in one rounding where the target would go through f32 (two roundings): exact (or
    round-to-odd) f64, round-to-odd f32, then the final nearest-even rounding."""
    n, _ = vector_parts(a.type)
    f64 = FloatType("f64")
    d64 = VectorType(n, f64) if n else f64
    if a.type.element_type.bitwidth > 32:
        d = int_to_f64_round_odd(fe, fe.val(a), a.type, signed)
    else:
        d = fe.assign(f"{'sitofp' if signed else 'uitofp'} {fe.typed(a)} to {llvm_type(d64)}")
    x = f64_to_f32_round_odd(fe, d, d64)
    return fe.assign(f"fptrunc {llvm_type(_f32_like(dst))} {x} to {llvm_type(dst)}")


@emitter("arith.fptosi", "arith.fptoui")
def emit_fptoi(fe: FunctionEmitter, op: Op) -> None:
    """Saturating conversion, NaN → 0 (``llvm.fpto[su]i.sat`` = PTX ``cvt.rzi.sat`` semantics)."""
    (a,) = op.operands
    r = op.results[0]
    src, st = fe.val(a), a.type
    if is_fp8(st):
        src = fe.hooks.convert_fp8(fe, op, src, st, _f32_like(st))
        st = _f32_like(st)
    sty, dty = llvm_type(st), llvm_type(r.type)
    kind = "fptosi" if op.defn.name == "arith.fptosi" else "fptoui"
    fe.define(r, fe.call(f"llvm.{kind}.sat.{mangle(dty)}.{mangle(sty)}", dty, [(sty, src)]))


def _float_convert(fe: FunctionEmitter, op: Op) -> None:
    """extf/truncf: fpext/fptrunc (RNE); fp8 through the target; an explicit ``rounding`` mode and
    f64 → bf16 (rounded to odd f32 first, so the result is correctly rounded) in portable IR."""
    (a,) = op.operands
    r = op.results[0]
    st, dt = a.type, r.type
    if is_fp8(st) or is_fp8(dt):
        fe.define(r, fe.hooks.convert_fp8(fe, op, fe.val(a), st, dt))
        return
    mode = op.attrs.get("rounding")
    if mode not in (None, "to_nearest_even"):
        fe.define(r, truncf_directed(fe, fe.val(a), st, dt, mode))
        return
    sty, dty = llvm_type(st), llvm_type(dt)
    if st.element_type is f64 and dt.element_type is bf16:
        x = f64_to_f32_round_odd(fe, fe.val(a), st)
        fe.define(r, fe.assign(f"fptrunc {llvm_type(_f32_like(st))} {x} to {dty}"))
        return
    sw, dw = st.element_type.bitwidth, dt.element_type.bitwidth
    if sw == dw:  # f16 <-> bf16: exact widening to f32, then one rounding
        f = fe.assign(f"fpext {sty} {fe.val(a)} to {llvm_type(_f32_like(st))}")
        fe.define(r, fe.assign(f"fptrunc {llvm_type(_f32_like(st))} {f} to {dty}"))
        return
    fe.define(r, fe.assign(f"{'fpext' if dw > sw else 'fptrunc'} {sty} {fe.val(a)} to {dty}"))


emitter("arith.extf")(_float_convert)
emitter("arith.truncf")(_float_convert)


@emitter("arith.bitcast")
def emit_bitcast(fe: FunctionEmitter, op: Op) -> None:
    (a,) = op.operands
    r = op.results[0]
    sty, dty = llvm_type(a.type), llvm_type(r.type)
    if a.type.bitwidth != r.type.bitwidth:
        raise CodegenError(f"bitcast between {a.type} and {r.type} of different widths")
    fe.define(r, fe.cast("bitcast", fe.val(a), sty, dty))
