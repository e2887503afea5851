"""``flydsl._mlir.extras.types``: type shorthands. Each is one of our interned types; a type called
with no arguments returns itself, so both ``T.f32`` and ``T.f32()`` work."""

from __future__ import annotations

from ... import ir as _ir

__all__ = ["i1", "i8", "i16", "i32", "i64", "index", "f16", "bf16", "f32", "f64", "vector", "llvm_ptr"]

i1, i8, i16, i32, i64 = _ir.i1, _ir.i8, _ir.i16, _ir.i32, _ir.i64
index = _ir.index
f16, bf16, f32, f64 = _ir.f16, _ir.bf16, _ir.f32, _ir.f64
f8E4M3FN, f8E5M2, f8E4M3FNUZ = _ir.f8E4M3FN, _ir.f8E5M2, _ir.f8E4M3FNUZ


def vector(*shape_and_type, **kw):
    """``vector(4, f32)`` → ``vector<4xf32>``."""
    *shape, elem = shape_and_type
    return _ir.VectorType(tuple(int(d) for d in shape), elem() if callable(elem) else elem)


def llvm_ptr(address_space: int = 0):
    """An untyped pointer in ``address_space`` (a byte pointer here)."""
    return _ir.PointerType(_ir.i8, address_space)
