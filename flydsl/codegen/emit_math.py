"""LLVM lowering of the ``math`` dialect.

Exact operations (``absf``, ``ceil`` … ``roundeven``, ``copysign``, ``fma``, ``sqrt``, the integer bit
ops and the class tests) become LLVM intrinsics that every target selects. Transcendental functions
go through :meth:`TargetHooks.math` on f32/f64 scalars: f16/bf16 operands are widened to f32 and the
result rounded back, vectors are computed lane by lane. The accuracy of each lowering is listed in
docs/codegen.md.
"""

from __future__ import annotations

from ..ir import Op
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
