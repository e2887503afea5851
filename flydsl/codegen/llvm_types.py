"""IR types → LLVM IR type text, sizes, and constant literals.

| IR type | LLVM |
|---|---|
| ``iN`` / ``index`` | ``iN`` / ``i64`` |
| ``f16`` ``bf16`` ``f32`` ``f64`` (``tf32``) | ``half`` ``bfloat`` ``float`` ``double`` (``float``) |
| fp8 (``f8E4M3FN`` …) | ``i8`` (the bits; conversions go through target hooks) |
| ``vector<…xT>`` | ``<numel x T>`` (n-D vectors are flat) |
| ``!fly.ptr<T, space>`` | ``ptr addrspace(space)`` (``ptr`` for generic) |
| ``!fly.buffer_rsrc`` | ``{ ptr addrspace(1), i64 }`` (base, num_records in bytes) |
"""

from __future__ import annotations

import struct

import ml_dtypes
import numpy as np

from ..ir import BufferRsrcType, FloatType, IndexType, IntegerType, PointerType, TmaDescType, Type, VectorType
from .errors import CodegenError

__all__ = [
    "llvm_type",
    "RSRC_TYPE",
    "is_fp8",
    "is_float",
    "store_size",
    "natural_align",
    "scalar_literal",
    "const_literal",
    "float_hex",
]

RSRC_TYPE = "{ ptr addrspace(1), i64 }"

_FLOAT_LLVM = {"f16": "half", "bf16": "bfloat", "f32": "float", "f64": "double", "tf32": "float"}
_CACHE: dict[Type, str] = {}


def is_fp8(t: Type) -> bool:
    """True for the 8-bit float types (stored as i8 in LLVM)."""
    e = t.element_type
    return isinstance(e, FloatType) and e.width == 8


def is_float(t: Type) -> bool:
    """A float type that LLVM computes in natively (not fp8)."""
    e = t.element_type
    return isinstance(e, FloatType) and e.width != 8


def llvm_type(t: Type) -> str:
    """LLVM IR spelling of an IR type."""
    s = _CACHE.get(t)
    if s is not None:
        return s
    if isinstance(t, IntegerType):
        s = f"i{t.width}"
    elif isinstance(t, IndexType):
        s = "i64"
    elif isinstance(t, FloatType):
        s = "i8" if t.width == 8 else _FLOAT_LLVM[t.name]
    elif isinstance(t, VectorType):
        s = f"<{t.numel} x {llvm_type(t.elem)}>"
    elif isinstance(t, PointerType):
        s = "ptr" if t.space == 0 else f"ptr addrspace({t.space})"
    elif isinstance(t, BufferRsrcType):
        s = RSRC_TYPE
    elif isinstance(t, TmaDescType):  # the address of the by-value grid-constant parameter (emit_sm90.py)
        s = "ptr"
    else:
        raise CodegenError(f"type {t} has no LLVM lowering")
    _CACHE[t] = s
    return s


def store_size(t: Type) -> int:
    """Bytes that a load/store of ``t`` touches."""
    if isinstance(t, VectorType):
        e = t.elem
        if isinstance(e, IntegerType) and e.width == 1:
            return (t.numel + 7) // 8
        return t.numel * store_size(e)
    if isinstance(t, (IntegerType, IndexType, FloatType)):
        w = t.bitwidth
        n = 1
        while n * 8 < w:
            n *= 2
        return n
    if isinstance(t, PointerType):
        return 8
    if isinstance(t, BufferRsrcType):
        return 16
    if isinstance(t, TmaDescType):
        return TmaDescType.nbytes
    raise CodegenError(f"type {t} has no size")


def natural_align(t: Type) -> int:
    """ABI alignment of a scalar (or of a vector's element)."""
    if isinstance(t, VectorType):
        return natural_align(t.elem)
    if isinstance(t, BufferRsrcType):
        return 8
    if isinstance(t, TmaDescType):
        return TmaDescType.align
    return store_size(t)


def float_hex(x: float) -> str:
    """A float/double literal as LLVM's exact 64-bit hex form."""
    return f"0x{struct.unpack('<Q', struct.pack('<d', float(x)))[0]:016X}"


_NP_FP8 = {
    "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
}


def scalar_literal(value, t: Type) -> str:
    """Literal text of a scalar constant of IR type ``t`` (no type prefix)."""
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)[0] if value.size else 0
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(t, FloatType):
        name = t.name
        if name in ("f32", "tf32"):
            return float_hex(float(np.float32(value)))
        if name == "f64":
            return float_hex(float(value))
        if name == "f16":
            return f"0xH{int(np.array(value, dtype=np.float16).view(np.uint16)):04X}"
        if name == "bf16":
            return f"0xR{int(np.array(value, dtype=ml_dtypes.bfloat16).view(np.uint16)):04X}"
        bits = int(np.array(float(value), dtype=np.float32).astype(_NP_FP8[name]).view(np.int8))
        return str(bits)
    if isinstance(t, IntegerType) and t.width == 1:
        return "true" if (int(value) & 1) else "false"
    if isinstance(t, (IntegerType, IndexType)):
        w = t.bitwidth
        v = int(value) & ((1 << w) - 1)
        return str(v - (1 << w) if v >= 1 << (w - 1) else v)
    if isinstance(t, PointerType):
        if int(value) == 0:
            return "null"
        return f"inttoptr (i64 {int(value)} to {llvm_type(t)})"
    raise CodegenError(f"cannot make a constant of type {t}")


def const_literal(value, t: Type) -> str:
    """Literal text of a constant of type ``t``: scalars, and vectors (splat or per lane)."""
    if not isinstance(t, VectorType):
        return scalar_literal(value, t)
    a = np.asarray(value)
    et = llvm_type(t.elem)
    if a.ndim == 0 or a.size == 1:
        lit = scalar_literal(a.reshape(-1)[0] if a.ndim else a.item(), t.elem)
        if lit in ("0", "false", "0x0000000000000000", "0xH0000", "0xR0000"):
            return "zeroinitializer"
        return f"splat ({et} {lit})"
    flat = a.reshape(-1)
    if flat.size != t.numel:
        raise CodegenError(f"dense constant of {flat.size} values does not fit {t}")
    return "<" + ", ".join(f"{et} {scalar_literal(x, t.elem)}" for x in flat) + ">"
