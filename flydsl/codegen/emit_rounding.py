"""Float narrowing with explicit rounding, in target-independent LLVM IR (scalars and vectors).

- ``arith.truncf`` with ``rounding`` = ``downward`` / ``upward`` / ``toward_zero`` /
  ``to_nearest_away`` (f16, bf16 or f32 results): the hardware's round-to-nearest-even result is
  moved one step (on its bit pattern) where it lies on the wrong side of the exact value, or where a
  tie went toward zero. The comparisons are made in f64, exactly as the interpreter makes them, so the
  results are bit-identical.
- f64 → f32 with round-to-odd, so that a second rounding (to bf16 or fp8) is correctly rounded;
  i64 → f64 likewise (for integer → bf16 on targets without a direct conversion).
"""

from __future__ import annotations

from ..ir import FloatType, IntegerType, Type, VectorType
from .intrinsics import mangle, vector_parts
from .llvm_types import const_literal, llvm_type

__all__ = ["truncf_directed", "f64_to_f32_round_odd", "int_to_f64_round_odd", "DIRECTED_MODES"]

DIRECTED_MODES = ("downward", "upward", "toward_zero", "to_nearest_away")


def _like(t: Type, elem: Type) -> Type:
    n, _ = vector_parts(t)
    return VectorType(n, elem) if n else elem


class _V:
    """Instruction helpers over one (vector) shape."""

    def __init__(self, fe, shape: Type):
        self.fe = fe
        self.shape = shape
        self.b = llvm_type(_like(shape, IntegerType(1)))

    def ty(self, elem: Type) -> str:
        return llvm_type(_like(self.shape, elem))

    def c(self, value, elem: Type) -> str:
        return const_literal(value, _like(self.shape, elem))

    def a(self, rhs: str) -> str:
        return self.fe.assign(rhs)

    def sel(self, cond: str, ty: str, x: str, y: str) -> str:
        return self.a(f"select {self.b} {cond}, {ty} {x}, {ty} {y}")

    def fabs(self, x: str, ty: str) -> str:
        return self.fe.call(f"llvm.fabs.{mangle(ty)}", ty, [(ty, x)])


def _step(v: _V, bits: str, up: str, width: int) -> str:
    """The neighbour of each float (by its bits) toward +inf where ``up``, else toward -inf."""
    it = IntegerType(width)
    ity = v.ty(it)
    sign = v.a(f"icmp slt {ity} {bits}, {v.c(0, it)}")
    mag = v.a(f"and {ity} {bits}, {v.c((1 << (width - 1)) - 1, it)}")
    zero = v.a(f"icmp eq {ity} {mag}, {v.c(0, it)}")
    away = v.a(f"xor {v.b} {up}, {sign}")
    grow = v.a(f"or {v.b} {away}, {zero}")
    inc = v.a(f"add {ity} {mag}, {v.c(1, it)}")
    dec = v.a(f"sub {ity} {mag}, {v.c(1, it)}")
    new_mag = v.sel(grow, ity, inc, dec)
    not_up = v.a(f"xor {v.b} {up}, {v.c(1, IntegerType(1))}")
    new_sign = v.sel(zero, v.b, not_up, sign)
    signed = v.a(f"or {ity} {new_mag}, {v.c(1 << (width - 1), it)}")
    return v.sel(new_sign, ity, signed, new_mag)


def truncf_directed(fe, value: str, src: Type, dst: Type, mode: str) -> str:
    """Round ``value`` (f16/bf16/f32/f64 scalars or vectors) to ``dst`` with an IEEE directed mode."""
    v = _V(fe, src)
    f32, f64 = FloatType("f32"), FloatType("f64")
    se = src.element_type
    x, sty = value, llvm_type(src)
    if se.bitwidth < 32:
        x, sty = v.a(f"fpext {sty} {x} to {v.ty(f32)}"), v.ty(f32)
    dty, dt64 = llvm_type(dst), v.ty(f64)
    width = dst.element_type.bitwidth
    it = IntegerType(width)
    ity = v.ty(it)
    r = v.a(f"fptrunc {sty} {x} to {dty}")
    xd = x if sty == dt64 else v.a(f"fpext {sty} {x} to {dt64}")
    back = v.a(f"fpext {dty} {r} to {dt64}")
    bits = v.a(f"bitcast {dty} {r} to {ity}")
    if mode == "downward":
        fix, up = v.a(f"fcmp ogt {dt64} {back}, {xd}"), v.c(0, IntegerType(1))
    elif mode == "upward":
        fix, up = v.a(f"fcmp olt {dt64} {back}, {xd}"), v.c(1, IntegerType(1))
    elif mode == "toward_zero":
        fix = v.a(f"fcmp ogt {dt64} {v.fabs(back, dt64)}, {v.fabs(xd, dt64)}")
        up = v.a(f"fcmp olt {dt64} {back}, {v.c(0.0, f64)}")
    elif mode == "to_nearest_away":
        up = v.a(f"fcmp olt {dt64} {back}, {xd}")
        other = v.a(f"fpext {dty} {v.a(f'bitcast {ity} {_step(v, bits, up, width)} to {dty}')} to {dt64}")
        d1 = v.fabs(v.a(f"fsub {dt64} {xd}, {back}"), dt64)
        d2 = v.fabs(v.a(f"fsub {dt64} {other}, {xd}"), dt64)
        tie = v.a(f"and {v.b} {v.a(f'fcmp one {dt64} {back}, {xd}')}, {v.a(f'fcmp oeq {dt64} {d1}, {d2}')}")
        smaller = v.a(f"fcmp olt {dt64} {v.fabs(back, dt64)}, {v.fabs(xd, dt64)}")
        fix = v.a(f"and {v.b} {tie}, {smaller}")
    else:
        raise ValueError(f"unknown rounding mode {mode!r}")
    fix = v.a(f"and {v.b} {fix}, {v.a(f'fcmp ord {dt64} {xd}, {xd}')}")
    out = v.sel(fix, ity, _step(v, bits, up, width), bits)
    return v.a(f"bitcast {ity} {out} to {dty}")


def f64_to_f32_round_odd(fe, value: str, src: Type) -> str:
    """f64 → f32 rounding to odd (an inexact result gets an odd mantissa), as the interpreter does."""
    v = _V(fe, src)
    f32, i32 = FloatType("f32"), IntegerType(32)
    dty, ity, sty = v.ty(f32), v.ty(i32), llvm_type(src)
    f = v.a(f"fptrunc {sty} {value} to {dty}")
    back = v.a(f"fpext {dty} {f} to {sty}")
    inexact = v.a(f"fcmp one {sty} {back}, {value}")
    bits = v.a(f"bitcast {dty} {f} to {ity}")
    odd = v.a(f"trunc {ity} {bits} to {v.b}")
    fix = v.a(f"and {v.b} {inexact}, {v.a(f'xor {v.b} {odd}, {v.c(1, IntegerType(1))}')}")
    toward_up = v.a(f"fcmp olt {sty} {back}, {value}")
    pos = v.a(f"icmp sgt {ity} {bits}, {v.c(-1, i32)}")
    down = v.a(f"xor {v.b} {pos}, {toward_up}")
    delta = v.sel(down, ity, v.c(-1, i32), v.c(1, i32))
    moved = v.a(f"add {ity} {bits}, {delta}")
    return v.a(f"bitcast {ity} {v.sel(fix, ity, moved, bits)} to {dty}")


def int_to_f64_round_odd(fe, value: str, src: Type, signed: bool) -> str:
    """i64 → f64 rounded to odd (exact below 2^53), as the interpreter converts wide integers: the
    two 32-bit halves convert exactly, one add rounds, TwoSum recovers its error."""
    v = _V(fe, src)
    f64, i64 = FloatType("f64"), IntegerType(64)
    dty, ity = v.ty(f64), v.ty(i64)
    hi = v.a(f"{'ashr' if signed else 'lshr'} {ity} {value}, {v.c(32, i64)}")
    lo = v.a(f"and {ity} {value}, {v.c(0xFFFFFFFF, i64)}")
    conv = "sitofp" if signed else "uitofp"
    dh = v.a(f"fmul {dty} {v.a(f'{conv} {ity} {hi} to {dty}')}, {v.c(2.0**32, f64)}")
    dl = v.a(f"uitofp {ity} {lo} to {dty}")
    s = v.a(f"fadd {dty} {dh}, {dl}")
    bb = v.a(f"fsub {dty} {s}, {dh}")
    e1 = v.a(f"fsub {dty} {dh}, {v.a(f'fsub {dty} {s}, {bb}')}")
    err = v.a(f"fadd {dty} {e1}, {v.a(f'fsub {dty} {dl}, {bb}')}")
    bits = v.a(f"bitcast {dty} {s} to {ity}")
    even = v.a(f"icmp eq {ity} {v.a(f'and {ity} {bits}, {v.c(1, i64)}')}, {v.c(0, i64)}")
    fix = v.a(f"and {v.b} {even}, {v.a(f'fcmp one {dty} {err}, {v.c(0.0, f64)}')}")
    up = v.a(f"fcmp ogt {dty} {err}, {v.c(0.0, f64)}")
    pos = v.a(f"icmp sgt {ity} {bits}, {v.c(-1, i64)}")
    delta = v.sel(v.a(f"xor {v.b} {pos}, {up}"), ity, v.c(-1, i64), v.c(1, i64))
    moved = v.a(f"add {ity} {bits}, {delta}")
    return v.a(f"bitcast {ity} {v.sel(fix, ity, moved, bits)} to {dty}")
