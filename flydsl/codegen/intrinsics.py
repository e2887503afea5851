"""Small helpers shared by the dialect emitters: intrinsic name mangling, fastmath flags, constants,
lane-wise scalarization, fp8 rejection."""

from __future__ import annotations

import re

import numpy as np

from ..ir import Op, Type, Value, VectorType
from .errors import CodegenError
from .llvm_types import is_fp8, llvm_type

__all__ = [
    "mangle",
    "fastmath_flags",
    "wants_approx",
    "constant_int",
    "scalarize",
    "reject_fp8",
    "vector_parts",
]

_MANGLE_SCALAR = {"half": "f16", "bfloat": "bf16", "float": "f32", "double": "f64", "ptr": "p0"}
_VEC_RE = re.compile(r"^<(\d+) x (.+)>$")
_AS_RE = re.compile(r"^ptr addrspace\((\d+)\)$")

_FASTMATH = {"reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "fast"}


def mangle(llty: str) -> str:
    """Overload suffix of an intrinsic for an LLVM type (``float`` → ``f32``, ``<4 x i32>`` → ``v4i32``)."""
    m = _VEC_RE.match(llty)
    if m:
        return f"v{m.group(1)}{mangle(m.group(2))}"
    m = _AS_RE.match(llty)
    if m:
        return f"p{m.group(1)}"
    return _MANGLE_SCALAR.get(llty, llty)


def fastmath_flags(op: Op) -> str:
    """LLVM fast-math flags (with a trailing space) from the op's ``fastmath`` attribute."""
    fm = op.attrs.get("fastmath")
    if not fm:
        return ""
    if isinstance(fm, (list, tuple)):
        words = [str(w) for w in fm]
    else:
        words = re.split(r"[,\s|]+", str(fm))
    flags = [w for w in words if w in _FASTMATH]
    return (" ".join(flags) + " ") if flags else ""


def wants_approx(op: Op) -> bool:
    """True when the op's fastmath flags allow approximate functions (``afn`` or ``fast``)."""
    f = fastmath_flags(op)
    return "afn" in f or "fast" in f


def constant_int(v: Value) -> int | None:
    """The Python int of a scalar or splat ``arith.constant`` operand, else None."""
    d = v.owner
    if not isinstance(d, Op) or d.defn.name != "arith.constant":
        return None
    a = np.asarray(d.attrs["value"])
    if a.ndim and a.size > 1 and not (a == a.reshape(-1)[0]).all():
        return None
    x = a.reshape(-1)[0] if a.ndim else a.item()
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def vector_parts(t: Type) -> tuple[int, Type]:
    """(lanes, element type): (0, t) for a scalar."""
    if isinstance(t, VectorType):
        return t.numel, t.elem
    return 0, t


def scalarize(fe, t: Type, args: list[tuple[str, str]], fn) -> str:
    """Apply ``fn([(scalar llvm type, value), …]) -> value`` lane by lane when ``t`` is a vector (each
    ``(llvm type, value)`` argument that is a vector contributes its lane), else once."""
    n, e = vector_parts(t)
    if not n:
        return fn(args)
    vty, ety = llvm_type(t), llvm_type(e)
    arg_vtys = [a[0] for a in args]
    acc = "poison"
    for i in range(n):
        lanes = [fe.assign(f"extractelement {vt} {v}, i64 {i}") if vt.startswith("<") else v for vt, v in args]
        r = fn([(_elem_of(vt), x) for vt, x in zip(arg_vtys, lanes)])
        acc = fe.assign(f"insertelement {vty} {acc}, {ety} {r}, i64 {i}")
    return acc


def _elem_of(llty: str) -> str:
    m = _VEC_RE.match(llty)
    return m.group(2) if m else llty


def reject_fp8(op: Op, t: Type, what: str = "arithmetic") -> None:
    """fp8 values are storage types: compute in f16/f32 and convert."""
    if is_fp8(t):
        e = t.element_type
        raise CodegenError(
            f"{what} on {e} values is not supported",
            op=op,
            fix=f"convert to f16 or f32 first (arith.extf), compute, then arith.truncf back to {e}",
        )
