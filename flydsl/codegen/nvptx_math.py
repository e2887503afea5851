"""Transcendental math on NVPTX: libdevice calls, or approximations built from PTX ``*.approx``.

LLVM's generic ``llvm.exp.f32``, ``llvm.sin.f32`` … do not select on NVPTX (LLVM exits the process
with "no libcall available"), so they are never emitted. Per function and type:

- f32, libdevice found and the op not marked ``afn``/``fast`` (target math ``auto``/``libdevice``):
  ``call @__nv_<fn>f`` (CUDA math library accuracy, 1-4 ulp; ``erff`` 2 ulp).
- f32 otherwise: the approximation below, from ``ex2.approx``, ``lg2.approx``, ``sin.approx``,
  ``cos.approx``, ``tanh.approx`` (sm_75+), ``rsqrt.approx`` and polynomials fitted for this module.
  Their measured errors are in docs/codegen.md.
- f64: libdevice only; without it a :class:`CodegenError` names the op.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..ir import Op
from .errors import CodegenError
from .intrinsics import wants_approx
from .llvm_types import float_hex

__all__ = ["lower_math", "LIBDEVICE_FUNCS"]

# fn -> (f32 name, f64 name)
LIBDEVICE_FUNCS = {
    fn: (f"__nv_{fn}f", f"__nv_{fn}")
    for fn in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "rsqrt", "cbrt", "sin", "cos", "tan", "asin",
        "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "atan2", "fmod",
    )
}  # fmt: skip
LIBDEVICE_FUNCS["powf"] = ("__nv_powf", "__nv_pow")

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
LOG10_2 = 0.3010299956639812

# erf(x)/x = P(x^2) on |x| < 1 (least-squares fit, max error 2.3 ulp in f32 arithmetic)
ERF_SMALL = (
    1.1283791065216064, -0.37612247467041016, 0.11279861629009247, -0.026706572622060776,
    0.004915070720016956, -0.0005629902589134872,
)  # fmt: skip
# log(erfc(t)) = Q(t) on 1 <= t < 4 (max absolute error of erf 6.3e-8; erfc relative 3.8e-6)
ERF_LARGE = (
    0.00024101458257064223, -1.1298048496246338, -0.6328428387641907, -0.10869014263153076,
    0.025209488347172737, -0.004055898170918226, 0.0003209701390005648, 2.6047928258776665e-05,
    -1.040507686411729e-05, 1.161625846179959e-06, -4.921325569284818e-08,
)  # fmt: skip
# log(erfc(t)) + t^2 + log(t) = R(1/t^2) on 4 <= t <= 10.1 (relative error 4.5e-8)
ERFC_TAIL = (-0.5723652243614197, -0.4999418556690216, 0.6206574440002441, -1.388217568397522, 2.761305570602417)
# atan(x)/x = P(x^2) on [0, 1] (max error 1.4 ulp)
ATAN = (
    1.0, -0.33333277702331543, 0.19998285174369812, -0.14262932538986206, 0.10949688404798508,
    -0.08404547721147537, 0.058080654591321945, -0.031380701810121536, 0.011058294214308262,
    -0.0018322380492463708,
)  # fmt: skip
# expm1(x) = x + x^2 * P(x) for |x| < 0.35 (Taylor, truncation 6e-9 relative)
EXPM1_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(2, 9))
# log1p(x) = 2 s (1 + s^2/3 + s^4/5 …) with s = x / (2 + x), |x| < 0.4
LOG1P_SERIES = tuple(1.0 / (2 * k + 1) for k in range(7))


class F32:
    """Builds f32 scalar arithmetic into a function emitter (readable formulas, one line each)."""

    def __init__(self, fe, hooks, op: Op):
        self.fe, self.hooks, self.op = fe, hooks, op

    @staticmethod
    def c(x: float) -> str:
        return float_hex(float(np.float32(x)))

    def _bin(self, instr, a, b):
        return self.fe.assign(f"{instr} float {a}, {b}")

    def add(self, a, b):
        return self._bin("fadd", a, b)

    def sub(self, a, b):
        return self._bin("fsub", a, b)

    def mul(self, a, b):
        return self._bin("fmul", a, b)

    def div(self, a, b):
        return self._bin("fdiv", a, b)

    def neg(self, a):
        return self.fe.assign(f"fneg float {a}")

    def _intr(self, name, *args):
        return self.fe.call(name, "float", [("float", a) for a in args])

    def fma(self, a, b, c):
        return self._intr("llvm.fma.f32", a, b, c)

    def abs(self, a):
        return self._intr("llvm.fabs.f32", a)

    def copysign(self, a, s):
        return self._intr("llvm.copysign.f32", a, s)

    def sqrt(self, a):
        return self._intr("llvm.sqrt.f32", a)

    def max(self, a, b):
        return self._intr("llvm.maxnum.f32", a, b)

    def min(self, a, b):
        return self._intr("llvm.minnum.f32", a, b)

    def cmp(self, pred, a, b):
        return self.fe.assign(f"fcmp {pred} float {a}, {b}")

    def sel(self, c, a, b):
        return self.fe.assign(f"select i1 {c}, float {a}, float {b}")

    def ex2(self, a):
        return self._intr("llvm.nvvm.ex2.approx.f", a)

    def lg2(self, a):
        return self._intr("llvm.nvvm.lg2.approx.f", a)

    def poly(self, u, coeffs):
        """Horner with fma: c0 + u*(c1 + u*(…))."""
        r = self.c(coeffs[-1])
        for k in reversed(coeffs[:-1]):
            r = self.fma(r, u, self.c(k))
        return r

    def exp(self, a):
        return self.ex2(self.mul(a, self.c(LOG2E)))

    def log(self, a):
        return self.mul(self.lg2(a), self.c(LN2))

    def signbit(self, a):
        bits = self.fe.assign(f"bitcast float {a} to i32")
        return self.fe.assign(f"icmp slt i32 {bits}, 0")


# -- approximations (f32) ---------------------------------------------------------------------------


def _exp(f: F32, x):
    return f.exp(x)


def _exp2(f: F32, x):
    return f.ex2(x)


def _log(f: F32, x):
    return f.log(x)


def _log2(f: F32, x):
    return f.lg2(x)


def _log10(f: F32, x):
    return f.mul(f.lg2(x), f.c(LOG10_2))


def _sin(f: F32, x):
    return f._intr("llvm.nvvm.sin.approx.f", x)


def _cos(f: F32, x):
    return f._intr("llvm.nvvm.cos.approx.f", x)


def _tan(f: F32, x):
    return f.div(_sin(f, x), _cos(f, x))


def _rsqrt(f: F32, x):
    return f._intr("llvm.nvvm.rsqrt.approx.f", x)


def _tanh(f: F32, x):
    if f.hooks.target.sm >= 75:
        f.hooks.require(f.op, "tanh_approx")
        return f._intr("llvm.nvvm.tanh.approx.f32", x)
    a = f.abs(x)
    e = f.exp(f.mul(a, f.c(2.0)))
    t = f.sub(f.c(1.0), f.div(f.c(2.0), f.add(e, f.c(1.0))))
    return f.copysign(t, x)


def _expm1(f: F32, x):
    small = f.cmp("olt", f.abs(x), f.c(0.35))
    series = f.fma(f.mul(x, x), f.poly(x, EXPM1_TAYLOR), x)
    big = f.sub(f.exp(x), f.c(1.0))
    return f.sel(small, series, big)


def _log1p(f: F32, x):
    small = f.cmp("olt", f.abs(x), f.c(0.4))
    s = f.div(x, f.add(f.c(2.0), x))
    series = f.mul(f.mul(s, f.c(2.0)), f.poly(f.mul(s, s), LOG1P_SERIES))
    big = f.log(f.add(f.c(1.0), x))
    return f.sel(small, series, big)


def _cbrt(f: F32, x):
    a = f.abs(x)
    r = f.ex2(f.mul(f.lg2(a), f.c(1.0 / 3.0)))
    r2 = f.mul(r, r)
    r = f.sub(r, f.div(f.sub(f.mul(r2, r), a), f.mul(r2, f.c(3.0))))  # one Newton step
    special = f.fe.assign(f"or i1 {f.cmp('oeq', a, f.c(0.0))}, {f.cmp('oeq', a, f.c(math.inf))}")
    return f.copysign(f.sel(special, a, r), x)


def _sinh(f: F32, x):
    a = f.abs(x)
    e = _expm1(f, a)
    small = f.mul(f.add(e, f.div(e, f.add(e, f.c(1.0)))), f.c(0.5))
    big = f.ex2(f.sub(f.mul(a, f.c(LOG2E)), f.c(1.0)))
    return f.copysign(f.sel(f.cmp("olt", a, f.c(10.0)), small, big), x)


def _cosh(f: F32, x):
    half = f.ex2(f.sub(f.mul(f.abs(x), f.c(LOG2E)), f.c(1.0)))  # e^|x| / 2
    return f.add(half, f.div(f.c(0.25), half))


def _asinh(f: F32, x):
    a = f.abs(x)
    a2 = f.mul(a, a)
    near = _log1p(f, f.add(a, f.div(a2, f.add(f.c(1.0), f.sqrt(f.add(f.c(1.0), a2))))))
    far = f.add(f.log(a), f.c(LN2))
    return f.copysign(f.sel(f.cmp("ogt", a, f.c(4096.0)), far, near), x)


def _acosh(f: F32, x):
    t = f.sub(x, f.c(1.0))
    near = _log1p(f, f.add(t, f.sqrt(f.fma(t, t, f.mul(t, f.c(2.0))))))
    far = f.add(f.log(x), f.c(LN2))
    r = f.sel(f.cmp("ogt", x, f.c(4096.0)), far, near)
    return f.sel(f.cmp("olt", x, f.c(1.0)), f.c(math.nan), r)


def _atanh(f: F32, x):
    return f.mul(_log1p(f, f.div(f.mul(x, f.c(2.0)), f.sub(f.c(1.0), x))), f.c(0.5))


def _atan_unit(f: F32, t):
    """atan on [0, 1]."""
    return f.mul(t, f.poly(f.mul(t, t), ATAN))


def _atan(f: F32, x):
    a = f.abs(x)
    inv = f.cmp("ogt", a, f.c(1.0))
    t = f.sel(inv, f.div(f.c(1.0), a), a)
    r = _atan_unit(f, t)
    r = f.sel(inv, f.sub(f.c(math.pi / 2), r), r)
    return f.copysign(r, x)


def _atan2(f: F32, y, x):
    ax, ay = f.abs(x), f.abs(y)
    mx, mn = f.max(ax, ay), f.min(ax, ay)
    t = f.div(mn, mx)
    t = f.sel(f.cmp("oeq", mx, f.c(0.0)), f.c(0.0), t)
    both_inf = f.fe.assign(f"and i1 {f.cmp('oeq', ax, f.c(math.inf))}, {f.cmp('oeq', ay, f.c(math.inf))}")
    t = f.sel(both_inf, f.c(1.0), t)
    r = _atan_unit(f, t)
    r = f.sel(f.cmp("ogt", ay, ax), f.sub(f.c(math.pi / 2), r), r)
    r = f.sel(f.signbit(x), f.sub(f.c(math.pi), r), r)
    r = f.copysign(r, y)
    return f.sel(f.cmp("uno", x, y), f.add(x, y), r)


def _sqrt_1mx2(f: F32, x):
    return f.sqrt(f.mul(f.sub(f.c(1.0), x), f.add(f.c(1.0), x)))


def _asin(f: F32, x):
    return _atan2(f, x, _sqrt_1mx2(f, x))


def _acos(f: F32, x):
    return _atan2(f, _sqrt_1mx2(f, x), x)


def _erfc_pos(f: F32, a):
    """erfc(a) for a >= 1 (relative accuracy)."""
    mid = f.exp(f.poly(a, ERF_LARGE))
    u = f.div(f.c(1.0), f.mul(a, a))
    tail = f.div(f.exp(f.sub(f.poly(u, ERFC_TAIL), f.mul(a, a))), a)
    return f.sel(f.cmp("olt", a, f.c(4.0)), mid, tail)


def _erf(f: F32, x):
    a = f.abs(x)
    small = f.mul(x, f.poly(f.mul(x, x), ERF_SMALL))
    large = f.sub(f.c(1.0), f.exp(f.poly(a, ERF_LARGE)))
    large = f.sel(f.cmp("oge", a, f.c(4.0)), f.c(1.0), large)
    return f.sel(f.cmp("olt", a, f.c(1.0)), small, f.copysign(large, x))


def _erfc(f: F32, x):
    a = f.abs(x)
    pos = _erfc_pos(f, a)
    pos = f.sel(f.cmp("ogt", a, f.c(10.1)), f.c(0.0), pos)
    tail = f.sel(f.signbit(x), f.sub(f.c(2.0), pos), pos)
    return f.sel(f.cmp("olt", a, f.c(1.0)), f.sub(f.c(1.0), _erf(f, x)), tail)


def _powf(f: F32, x, y):
    """|x|^y = 2^(y log2|x|); sign and special cases of C pow for finite y."""
    r = f.ex2(f.mul(y, f.lg2(f.abs(x))))
    yint = f.cmp("oeq", f.fe.call("llvm.trunc.f32", "float", [("float", y)]), y)
    half = f.mul(y, f.c(0.5))
    odd = f.fe.assign(f"and i1 {yint}, {f.cmp('one', f.fe.call('llvm.trunc.f32', 'float', [('float', half)]), half)}")
    neg = f.cmp("olt", x, f.c(0.0))
    r = f.sel(f.fe.assign(f"and i1 {neg}, {odd}"), f.neg(r), r)
    bad = f.fe.assign(f"and i1 {neg}, {f.fe.assign(f'xor i1 {yint}, true')}")
    r = f.sel(bad, f.c(math.nan), r)
    r = f.sel(f.cmp("oeq", y, f.c(0.0)), f.c(1.0), r)
    return f.sel(f.cmp("oeq", x, f.c(1.0)), f.c(1.0), r)


def _fmod(f: F32, x, y):
    """LLVM ``frem`` (x - trunc(x/y)*y on NVPTX: exact only while |x/y| < 2^24)."""
    return f.fe.assign(f"frem float {x}, {y}")


APPROX: dict[str, Callable[..., str]] = {
    "exp": _exp, "exp2": _exp2, "expm1": _expm1, "log": _log, "log2": _log2, "log10": _log10,
    "log1p": _log1p, "rsqrt": _rsqrt, "cbrt": _cbrt, "sin": _sin, "cos": _cos, "tan": _tan, "asin": _asin,
    "acos": _acos, "atan": _atan, "sinh": _sinh, "cosh": _cosh, "tanh": _tanh, "asinh": _asinh,
    "acosh": _acosh, "atanh": _atanh, "erf": _erf, "erfc": _erfc, "powf": _powf, "atan2": _atan2, "fmod": _fmod,
}  # fmt: skip


def lower_math(hooks, fe, op: Op, fn: str, args: list[str], llty: str) -> str:
    """Lower ``fn`` on f32/f64 scalars (see the module docstring for the choice)."""
    mode = hooks.target.math
    libdevice = hooks.libdevice_path()
    if mode == "libdevice" and libdevice is None:
        raise CodegenError(
            f"math mode 'libdevice' is set but libdevice ({fn}) was not found",
            fix="pip install nvidia-nvvm (or install the CUDA toolkit), or use Target(math='auto')",
        )
    names = LIBDEVICE_FUNCS.get(fn)
    if names is None:
        raise CodegenError(f"no lowering for math function {fn}")
    if llty == "double":
        if libdevice is None:
            raise CodegenError(
                f"{op.defn.name} on f64 needs libdevice, which was not found",
                fix="pip install nvidia-nvvm (or install the CUDA toolkit), or compute in f32",
            )
        return _libcall(fe, names[1], args, llty)
    if libdevice is not None and mode != "approx" and not wants_approx(op):
        return _libcall(fe, names[0], args, llty)
    return APPROX[fn](F32(fe, hooks, op), *args)


def _libcall(fe, name: str, args: list[str], llty: str) -> str:
    fe.m.libdevice_calls.add(name)
    return fe.call(name, llty, [(llty, a) for a in args])
