"""``ptr``: typed pointers and memory — offsets, loads/stores (plain, masked, buffer-bounded),
shared/local allocation, atomics.

Offsets are in elements of the pointee type. A load or store of ``vector<N x T>`` through a
``!fly.ptr<T, …>`` accesses N consecutive elements. Buffer ops carry AMD's bounds semantics on every
target: each element whose bytes lie at or past ``num_records`` reads as 0 and is never written;
``mask = false`` behaves the same.
"""

from __future__ import annotations

from ..ir import BufferRsrcType, IntegerType, Op, OpDef, PointerType, Trait, Type, VectorType, i1, i64
from ..ir.types import AddressSpace

P = Trait.PURE

CACHE_MODIFIERS = ("", "ca", "cg", "cs", "lu", "cv", "nc", "wb", "wt")


def _access_ok(ptr_t: Type, val_t: Type) -> str | None:
    if not isinstance(ptr_t, PointerType):
        return f"expected a pointer, got {ptr_t}"
    e = ptr_t.elem
    if val_t is e or (isinstance(val_t, VectorType) and val_t.elem is e):
        return None
    return f"cannot access {val_t} through {ptr_t} (the value must be the pointee type or a vector of it)"


def _add_verify(op: Op):
    p, off = op.operands
    if not isinstance(p.type, PointerType):
        return f"ptr.add takes a pointer, got {p.type}"
    if not off.type.is_int_like:
        return f"offset must be an integer, got {off.type}"
    if op.results[0].type is not p.type:
        return "result must have the pointer's type"
    return None


def _add_fold(op, consts):
    c = consts[1]
    if c is not None and int(c) == 0:
        return [op.operands[0]]
    return None


add = OpDef(
    "ptr.add",
    operands=2,
    traits=(P,),
    infer=lambda types, attrs: [types[0]],
    verify=_add_verify,
    fold=_add_fold,
    fmt="binary",
    doc="pointer + offset (in elements of the pointee type)",
)


def _load_verify(op: Op):
    return _access_ok(op.operands[0].type, op.results[0].type) or _cache_ok(op)


def _cache_ok(op: Op):
    c = op.attrs.get("cache", "")
    if c not in CACHE_MODIFIERS:
        return f"unknown cache modifier {c!r}; expected one of {', '.join(m for m in CACHE_MODIFIERS if m)}"
    return None


load = OpDef(
    "ptr.load",
    operands=1,
    verify=_load_verify,
    doc="read the pointee (or N consecutive elements); attrs: align, cache",
)


def _store_verify(op: Op):
    v, p = op.operands
    return _access_ok(p.type, v.type) or _cache_ok(op)


store = OpDef("ptr.store", operands=2, results=0, verify=_store_verify, doc="write (value, ptr); attrs: align, cache")


def _mask_ok(mask_t: Type, val_t: Type) -> str | None:
    if mask_t is i1:
        return None
    if isinstance(val_t, VectorType) and mask_t is VectorType(val_t.shape, i1):
        return None
    return f"mask must be i1 or one i1 per lane, got {mask_t} for {val_t}"


def _masked_load_verify(op: Op):
    p, m, other = op.operands
    t = op.results[0].type
    if other.type is not t:
        return "the fill value must have the result type"
    return _access_ok(p.type, t) or _mask_ok(m.type, t)


masked_load = OpDef(
    "ptr.masked_load",
    operands=3,
    infer=lambda types, attrs: [types[2]],
    verify=_masked_load_verify,
    doc="(ptr, mask, other): masked-off lanes are not read and give `other`",
)


def _masked_store_verify(op: Op):
    v, p, m = op.operands
    return _access_ok(p.type, v.type) or _mask_ok(m.type, v.type)


masked_store = OpDef(
    "ptr.masked_store",
    operands=3,
    results=0,
    verify=_masked_store_verify,
    doc="(value, ptr, mask): masked-off lanes are not written",
)


def _cast_verify(op: Op):
    s, d = op.operands[0].type, op.results[0].type
    if not isinstance(s, PointerType) or not isinstance(d, PointerType):
        return f"ptr.cast converts pointers, got {s} -> {d}"
    if s.space != d.space and AddressSpace.GENERIC not in (s.space, d.space):
        return f"cannot cast between {s.space_name} and {d.space_name} pointers (go through generic)"
    return None


cast = OpDef(
    "ptr.cast", operands=1, traits=(P,), verify=_cast_verify, fmt="cast", doc="change pointee type or address space"
)
to_int = OpDef("ptr.to_int", operands=1, traits=(P,), infer=lambda t, a: [i64], fmt="cast", doc="pointer → i64 address")
from_int = OpDef("ptr.from_int", operands=1, traits=(P,), fmt="cast", doc="i64 address → pointer")


def _alloc_verify(space):
    def verify(op: Op):
        t = op.results[0].type
        if not isinstance(t, PointerType) or t.space != space:
            return f"result must be a {AddressSpace.NAMES[space]} pointer"
        n = op.attrs.get("count")
        if not isinstance(n, int) or n <= 0:
            return f"count must be a positive int, got {n!r}"
        a = op.attrs.get("align", 16)
        if not isinstance(a, int) or a <= 0 or a & (a - 1):
            return f"align must be a power of two, got {a!r}"
        return None

    return verify


shared_alloc = OpDef(
    "ptr.shared_alloc",
    operands=0,
    attrs=("count",),
    verify=_alloc_verify(AddressSpace.SHARED),
    doc="static shared memory of `count` pointee elements (attrs: count, align)",
)
alloca = OpDef(
    "ptr.alloca",
    operands=0,
    attrs=("count",),
    verify=_alloc_verify(AddressSpace.LOCAL),
    doc="per-thread local memory of `count` elements",
)
dynamic_shared = OpDef(
    "ptr.dynamic_shared",
    operands=0,
    infer=lambda t, a: [PointerType(IntegerType(8), AddressSpace.SHARED)],
    doc="base of the dynamic shared memory given at launch (i8 pointer)",
)

ATOMIC_KINDS = ("add", "max", "min", "umax", "umin", "and", "or", "xor", "xchg")


def atomic_type_error(kind: str, t) -> str | None:
    """Why no target does atomic ``kind`` (an ATOMIC_KINDS entry or ``"cas"``) on elements of IR type ``t``,
    or None. One rule for every target and the interpreter (LLVM's atomics need integers of at least 8 bits,
    and no GPU has fp8 read-modify-write)."""
    if t.is_integer and t.bitwidth == 1:
        return "atomics on Boolean (i1) values are not supported by any target; use an Int8 or Int32 flag (0/1)"
    if t.is_float and kind != "cas" and t.bitwidth == 8:
        return "atomic read-modify-write on fp8 values is not supported by any target; use Float16 or wider"
    if t.is_float and kind not in ("add", "max", "min", "xchg", "cas"):
        return f"atomic {kind} is for integers"
    return None


def _atomic_verify(op: Op):
    p, v = op.operands
    if op.attrs.get("kind") not in ATOMIC_KINDS:
        return f"kind must be one of {', '.join(ATOMIC_KINDS)}"
    if not isinstance(p.type, PointerType) or p.type.elem is not v.type:
        return f"value type {v.type} does not match {p.type}"
    return atomic_type_error(op.attrs["kind"], v.type)


def _cas_verify(op: Op):
    return atomic_type_error("cas", op.operands[1].type)


atomic_rmw = OpDef(
    "ptr.atomic_rmw",
    operands=2,
    attrs=("kind",),
    infer=lambda types, attrs: [types[1]],
    verify=_atomic_verify,
    doc="atomically *ptr = kind(*ptr, value); returns the old value (attr scope: gpu|cta|sys)",
)
atomic_cas = OpDef(
    "ptr.atomic_cas",
    operands=3,
    infer=lambda types, attrs: [types[1]],
    verify=_cas_verify,
    doc="(ptr, compare, new): atomic compare-and-swap; returns the old value",
)

# -- buffer resources (AMD semantics on every target) -------------------------------------------


def _rsrc_verify(op: Op):
    base, n = op.operands
    if not isinstance(base.type, PointerType) or base.type.space != AddressSpace.GLOBAL:
        return f"the base must be a global pointer, got {base.type}"
    if n.type is not i64:
        return f"num_records (bytes) must be i64, got {n.type}"
    return None


buffer_rsrc = OpDef(
    "ptr.buffer_rsrc",
    operands=2,
    traits=(P,),
    infer=lambda t, a: [BufferRsrcType()],
    verify=_rsrc_verify,
    doc="(base, num_records bytes): a bounded view of global memory",
)


def _buf_verify(op: Op, rsrc, off, mask, val_t):
    if not isinstance(rsrc.type, BufferRsrcType):
        return f"expected a buffer resource, got {rsrc.type}"
    if off.type.bitwidth != 32 or not off.type.is_integer:
        return f"byte offset must be i32, got {off.type}"
    if mask is not None and mask.type is not i1:
        return f"mask must be i1, got {mask.type}"
    if not (val_t.is_float or val_t.is_integer or (isinstance(val_t, VectorType))):
        return f"cannot move {val_t} through a buffer"
    return None


def _buffer_load_verify(op: Op):
    if len(op.operands) not in (2, 3):
        return "buffer_load takes (rsrc, byte offset[, mask])"
    m = op.operands[2] if len(op.operands) == 3 else None
    return _buf_verify(op, op.operands[0], op.operands[1], m, op.results[0].type)


def _buffer_store_verify(op: Op):
    if len(op.operands) not in (3, 4):
        return "buffer_store takes (value, rsrc, byte offset[, mask])"
    m = op.operands[3] if len(op.operands) == 4 else None
    return _buf_verify(op, op.operands[1], op.operands[2], m, op.operands[0].type)


buffer_load = OpDef(
    "ptr.buffer_load",
    operands=-1,
    verify=_buffer_load_verify,
    doc="(rsrc, byte offset[, mask]): elements past num_records or masked off read 0",
)
buffer_store = OpDef(
    "ptr.buffer_store",
    operands=-1,
    results=0,
    verify=_buffer_store_verify,
    doc="(value, rsrc, byte offset[, mask]): elements past num_records or masked off are not written",
)

__all__ = [
    "add", "load", "store", "masked_load", "masked_store", "cast", "to_int", "from_int", "shared_alloc",
    "alloca", "dynamic_shared", "atomic_rmw", "atomic_cas", "buffer_rsrc", "buffer_load", "buffer_store",
    "ATOMIC_KINDS", "CACHE_MODIFIERS",
]  # fmt: skip
