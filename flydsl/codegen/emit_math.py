"""LLVM lowering of the ``math`` dialect.

Exact operations (``absf``, ``ceil`` … ``roundeven``, ``copysign``, ``fma``, ``sqrt``, the integer bit
ops and the class tests) become LLVM intrinsics that every target selects. Transcendental functions
go through :meth:`TargetHooks.math` on f32/f64 scalars: f16/bf16 operands are widened to f32 and the
result rounded back, vectors are computed lane by lane. The accuracy of each lowering is listed in
docs/codegen.md.
"""

from __future__ import annotations

from ml_dtypes import finfo

from ..dialects._base import bool_like
from ..ir import Op, numpy_dtype
from .errors import CodegenError
from .intrinsics import mangle, reject_fp8, scalarize, vector_parts
from .llvm_emitter import FunctionEmitter, emitter
from .llvm_types import const_literal, llvm_type

# -- exact float ops: one LLVM intrinsic ---------------------------------------------------------

_EXACT_UNARY = {
    "math.absf": "fabs",
    "math.ceil": "ceil",
    "math.floor": "floor",
    "math.trunc": "trunc",
    "math.round": "round",
    "math.roundeven": "roundeven",
}


@emitter(*_EXACT_UNARY)
def emit_exact_unary(fe: FunctionEmitter, op: Op) -> None:
    (a,) = op.operands
    reject_fp8(op, a.type)
    ty = llvm_type(a.type)
    fe.define(op.results[0], fe.call(f"llvm.{_EXACT_UNARY[op.defn.name]}.{mangle(ty)}", ty, [(ty, fe.val(a))]))


@emitter("math.copysign")
def emit_copysign(fe: FunctionEmitter, op: Op) -> None:
    a, b = op.operands
    reject_fp8(op, a.type)
    ty = llvm_type(a.type)
    fe.define(op.results[0], fe.call(f"llvm.copysign.{mangle(ty)}", ty, [(ty, fe.val(a)), (ty, fe.val(b))]))


@emitter("math.fma")
def emit_fma(fe: FunctionEmitter, op: Op) -> None:
    """``llvm.fma``: one rounding (``fma.rn``) in the operands' own precision."""
    a, b, c = op.operands
    reject_fp8(op, a.type)
    ty = llvm_type(a.type)
    args = [(ty, fe.val(a)), (ty, fe.val(b)), (ty, fe.val(c))]
    fe.define(op.results[0], fe.call(f"llvm.fma.{mangle(ty)}", ty, args))


def _promoted(fe: FunctionEmitter, op: Op, build) -> str:
    """Run ``build(value, llty) -> value`` on f32/f64 lanes, widening f16/bf16 and rounding back."""
    (a,) = op.operands[:1]
    t = a.type
    n, e = vector_parts(t)
    ety = llvm_type(e)
    narrow = ety in ("half", "bfloat")
    cty = "float" if narrow else ety

    def lane(args):
        vals = []
        for lty, v in args:
            vals.append(fe.assign(f"fpext {lty} {v} to float") if narrow else v)
        r = build(vals, cty)
        return fe.assign(f"fptrunc float {r} to {ety}") if narrow else r

    return scalarize(fe, t, [(llvm_type(x.type), fe.val(x)) for x in op.operands], lane)


@emitter("math.sqrt")
def emit_sqrt(fe: FunctionEmitter, op: Op) -> None:
    """``llvm.sqrt`` = ``sqrt.rn`` (correctly rounded) on f32/f64; f16/bf16 through f32 (still exact)."""
    (a,) = op.operands
    reject_fp8(op, a.type)
    ty = llvm_type(a.type)
    if a.type.element_type.bitwidth >= 32:
        fe.define(op.results[0], fe.call(f"llvm.sqrt.{mangle(ty)}", ty, [(ty, fe.val(a))]))
        return

    def build(vals, cty):
        return fe.call(f"llvm.sqrt.{mangle(cty)}", cty, [(cty, vals[0])])

    fe.define(op.results[0], _promoted(fe, op, build))


# -- integer bit ops -----------------------------------------------------------------------------


@emitter("math.absi")
def emit_absi(fe: FunctionEmitter, op: Op) -> None:
    (a,) = op.operands
    ty = llvm_type(a.type)
    fe.define(op.results[0], fe.call(f"llvm.abs.{mangle(ty)}", ty, [(ty, fe.val(a)), ("i1", "false")]))


@emitter("math.ctpop")
def emit_ctpop(fe: FunctionEmitter, op: Op) -> None:
    (a,) = op.operands
    ty = llvm_type(a.type)
    fe.define(op.results[0], fe.call(f"llvm.ctpop.{mangle(ty)}", ty, [(ty, fe.val(a))]))


@emitter("math.ctlz", "math.cttz")
def emit_count_zeros(fe: FunctionEmitter, op: Op) -> None:
    """Count leading/trailing zeros; zero input gives the bit width (``is_zero_poison = false``)."""
    (a,) = op.operands
    ty = llvm_type(a.type)
    name = op.defn.name.split(".")[1]
    fe.define(op.results[0], fe.call(f"llvm.{name}.{mangle(ty)}", ty, [(ty, fe.val(a)), ("i1", "false")]))


# -- class tests -----------------------------------------------------------------------------------


def _inf(t) -> str:
    return const_literal(float("inf"), t)


@emitter("math.isnan")
def emit_isnan(fe: FunctionEmitter, op: Op) -> None:
    (a,) = op.operands
    reject_fp8(op, a.type, "isnan")
    fe.define(op.results[0], fe.assign(f"fcmp uno {fe.typed(a)}, {fe.val(a)}"))


@emitter("math.isinf", "math.isfinite")
def emit_isinf(fe: FunctionEmitter, op: Op) -> None:
    (a,) = op.operands
    reject_fp8(op, a.type, op.defn.name)
    ty = llvm_type(a.type)
    mag = fe.call(f"llvm.fabs.{mangle(ty)}", ty, [(ty, fe.val(a))])
    pred = "oeq" if op.defn.name == "math.isinf" else "one"
    fe.define(op.results[0], fe.assign(f"fcmp {pred} {ty} {mag}, {_inf(a.type)}"))


# -- transcendental functions: target hooks --------------------------------------------------------

_TRANSCENDENTAL = (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "rsqrt", "cbrt", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "powf", "atan2",
)  # fmt: skip


def emit_transcendental(fe: FunctionEmitter, op: Op, fn: str) -> None:
    """Lower ``fn`` lane by lane on f32/f64 through the target's math hook."""
    t = op.operands[0].type
    reject_fp8(op, t)
    e = t.element_type
    if not (e.is_float):
        raise CodegenError(f"{op.defn.name} needs a float operand, got {t}")

    def build(vals, cty):
        return fe.hooks.math(fe, op, fn, vals, cty)

    fe.define(op.results[0], _promoted(fe, op, build))


def _make_transcendental(fn: str):
    def emit(fe: FunctionEmitter, op: Op) -> None:
        emit_transcendental(fe, op, fn)

    emit.__name__ = f"emit_{fn}"
    emit.__doc__ = f"``math.{fn}`` through :meth:`TargetHooks.math`."
    return emit


for _fn in _TRANSCENDENTAL:
    emitter(f"math.{_fn}")(_make_transcendental(_fn))


# -- MLIR's composite math ops ----------------------------------------------------------------------


@emitter("math.isnormal")
def emit_isnormal(fe: FunctionEmitter, op: Op) -> None:
    """Finite and ``|x| >= `` the smallest normal (zero, subnormals, inf and NaN are not normal)."""
    (a,) = op.operands
    reject_fp8(op, a.type, "isnormal")
    ty = llvm_type(a.type)
    tiny = float(finfo(numpy_dtype(vector_parts(a.type)[1])).smallest_normal)
    mag = fe.call(f"llvm.fabs.{mangle(ty)}", ty, [(ty, fe.val(a))])
    finite = fe.assign(f"fcmp one {ty} {mag}, {_inf(a.type)}")
    big = fe.assign(f"fcmp oge {ty} {mag}, {const_literal(tiny, a.type)}")
    fe.define(op.results[0], fe.assign(f"and {llvm_type(op.results[0].type)} {finite}, {big}"))


@emitter("math.clampf")
def emit_clampf(fe: FunctionEmitter, op: Op) -> None:
    """``llvm.minimum(llvm.maximum(x, lo), hi)``: NaN-propagating, as the interpreter."""
    x, lo, hi = op.operands
    reject_fp8(op, x.type)
    ty = llvm_type(x.type)
    m = mangle(ty)
    mx = fe.call(f"llvm.maximum.{m}", ty, [(ty, fe.val(x)), (ty, fe.val(lo))], attrs="")
    fe.define(op.results[0], fe.call(f"llvm.minimum.{m}", ty, [(ty, mx), (ty, fe.val(hi))], attrs=""))


@emitter("math.fpowi")
def emit_fpowi(fe: FunctionEmitter, op: Op) -> None:
    """``powf(x, sitofp(n))`` lane by lane, ``n`` converted to f32 (f64 for f64), as the interpreter."""
    x, n = op.operands
    reject_fp8(op, x.type)
    ety = llvm_type(vector_parts(x.type)[1])
    nty = llvm_type(vector_parts(n.type)[1])
    narrow = ety in ("half", "bfloat")
    cty = "float" if narrow else ety

    def lane(args):
        (_, xv), (_, nv) = args
        xv = fe.assign(f"fpext {ety} {xv} to float") if narrow else xv
        nf = fe.assign(f"sitofp {nty} {nv} to {cty}")
        r = fe.hooks.math(fe, op, "powf", [xv, nf], cty)
        return fe.assign(f"fptrunc float {r} to {ety}") if narrow else r

    args = [(llvm_type(x.type), fe.val(x)), (llvm_type(n.type), fe.val(n))]
    fe.define(op.results[0], scalarize(fe, x.type, args, lane))


@emitter("math.ipowi")
def emit_ipowi(fe: FunctionEmitter, op: Op) -> None:
    """Square-and-multiply over every bit of ``n`` (straight-line selects); ``n < 0`` gives 1 for
    ``x == 1``, +/-1 for ``x == -1`` by the parity of ``n``, else 0 (the interpreter's semantics)."""
    x, n = op.operands
    t = x.type
    ty = llvm_type(t)
    bty = llvm_type(bool_like(t))
    w = vector_parts(t)[1].bitwidth

    def c(v: int) -> str:
        return const_literal(v, t)

    xv, nv = fe.val(x), fe.val(n)
    acc, base = c(1), xv
    for k in range(w):
        bit = fe.assign(f"and {ty} {nv}, {c(1 << k if k < w - 1 else -(1 << k))}")
        on = fe.assign(f"icmp ne {ty} {bit}, {c(0)}")
        acc = fe.assign(f"select {bty} {on}, {ty} {fe.assign(f'mul {ty} {acc}, {base}')}, {ty} {acc}")
        if k < w - 1:
            base = fe.assign(f"mul {ty} {base}, {base}")
    neg = fe.assign(f"icmp slt {ty} {nv}, {c(0)}")
    is1 = fe.assign(f"icmp eq {ty} {xv}, {c(1)}")
    ism1 = fe.assign(f"icmp eq {ty} {xv}, {c(-1)}")
    odd = fe.assign(f"icmp ne {ty} {fe.assign(f'and {ty} {nv}, {c(1)}')}, {c(0)}")
    sgn = fe.assign(f"select {bty} {odd}, {ty} {c(-1)}, {ty} {c(1)}")
    small = fe.assign(f"select {bty} {ism1}, {ty} {sgn}, {ty} {c(0)}")
    small = fe.assign(f"select {bty} {is1}, {ty} {c(1)}, {ty} {small}")
    fe.define(op.results[0], fe.assign(f"select {bty} {neg}, {ty} {small}, {ty} {acc}"))


@emitter("math.sincos")
def emit_sincos(fe: FunctionEmitter, op: Op) -> None:
    """Two results through the target's ``sin`` and ``cos``."""
    t = op.operands[0].type
    reject_fp8(op, t)
    for r, fn in zip(op.results, ("sin", "cos")):
        fe.define(r, _promoted(fe, op, lambda vals, cty, fn=fn: fe.hooks.math(fe, op, fn, vals, cty)))
