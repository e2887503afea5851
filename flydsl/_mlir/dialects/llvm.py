"""``flydsl._mlir.dialects.llvm``: the LLVM-dialect operations FlyDSL's kernel helpers use on raw
pointers, over our ``ptr`` ops. ``!llvm.ptr<N>`` is a byte pointer (``!fly.ptr<i8, N>``); loads, stores
and atomics through it are typed by the value, offsets (``GEPOp``) count elements of ``elem_type``."""

from __future__ import annotations

import enum

from ... import ir as _ir
from ...dialects import arith as _a
from ...dialects import ptr as _p
from ...ir import types as _t
from .. import ir
from ._ods import build, unsupported

__all__ = [
    "AtomicBinOp", "AtomicOrdering", "IntegerOverflowFlags", "IntToPtrOp", "PtrToIntOp", "AddOp", "GEPOp",
    "LoadOp", "StoreOp", "AtomicRMWOp", "inttoptr", "ptrtoint", "load", "store", "call_intrinsic",
    "CallIntrinsicOp", "bitcast", "BitcastOp",
]  # fmt: skip


class AtomicBinOp(enum.Enum):
    xchg = "xchg"
    add = "add"
    sub = "sub"
    _and = "and"
    nand = "nand"
    _or = "or"
    _xor = "xor"
    max = "max"
    min = "min"
    umax = "umax"
    umin = "umin"
    fadd = "fadd"
    fsub = "fsub"
    fmax = "fmax"
    fmin = "fmin"


class AtomicOrdering(enum.Enum):
    not_atomic = 0
    unordered = 1
    monotonic = 2
    acquire = 4
    release = 5
    acq_rel = 6
    seq_cst = 7


class IntegerOverflowFlags(enum.IntFlag):
    none = 0
    nsw = 1
    nuw = 2


class _Result(ir.OpView):
    """An op view whose ``result`` is a value built by a small sequence of our ops."""

    def __init__(self, value):
        self._value = value
        owner = ir.unwrap(value).owner
        self._op = owner if isinstance(owner, _ir.Op) else None

    @property
    def result(self):
        return self._value

    @property
    def results(self):
        return [self._value]


def _typed(ptr, elem):
    """``ptr`` viewed as a pointer to ``elem`` (same address space)."""
    p = ir.unwrap(ptr)
    pt = p.type
    if not isinstance(pt, _t.PointerType):
        raise TypeError(f"expected a pointer, got {pt}")
    if pt.elem is elem:
        return p
    return build(_p.cast, [p], [_t.PointerType(elem, pt.space)]).results[0]


def inttoptr(res, arg, **kw):
    v = ir.unwrap(arg)
    if v.type is not _t.i64:
        v = build(_a.extui if v.type.bitwidth < 64 else _a.trunci, [v], [_t.i64]).results[0]
    return build(_p.from_int, [v], [ir._unwrap_type(res)]).results[0]


def ptrtoint(res, arg, **kw):
    p = ir.unwrap(arg)
    if not isinstance(p.type, _t.PointerType):
        raise TypeError(f"llvm.ptrtoint of a {p.type} (a buffer resource has no integer form here)")
    v = build(_p.to_int, [p]).results[0]
    t = ir._unwrap_type(res)
    if t is not _t.i64:
        v = build(_a.trunci if t.bitwidth < 64 else _a.extui, [v], [t]).results[0]
    return ir.wrap(v)


def IntToPtrOp(res, arg, **kw):
    return _Result(inttoptr(res, arg))


def PtrToIntOp(res, arg, **kw):
    return _Result(ptrtoint(res, arg))


def AddOp(lhs, rhs, overflowFlags=None, **kw):
    return _Result(ir.wrap(build(_a.addi, [lhs, rhs]).results[0]))


def GEPOp(res, base, dynamicIndices, rawConstantIndices=None, elem_type=None, noWrapFlags=None, **kw):
    """``base + index`` in elements of ``elem_type`` (one index)."""
    elem = ir._unwrap_type(elem_type) if elem_type is not None else _t.i8
    idx = list(dynamicIndices or [])
    consts = [c for c in (rawConstantIndices or []) if c != -2147483648]
    if len(idx) + len(consts) != 1:
        raise NotImplementedError("llvm.GEPOp with more than one index is not supported here")
    p = _typed(base, elem)
    off = ir.unwrap(idx[0]) if idx else build(_a.constant, [], [_t.i64], {"value": int(consts[0])}).results[0]
    q = build(_p.add, [p, off]).results[0]
    return _Result(build(_p.cast, [q], [ir._unwrap_type(res)]).results[0] if q.type is not res else q)


def load(res, addr, *, alignment=None, volatile_=False, nontemporal=False, **kw):
    t = ir._unwrap_type(res)
    p = _typed(addr, t.element_type)
    attrs = {"align": int(alignment)} if alignment else None
    return ir.wrap(build(_p.load, [p], [t], attrs).results[0])


def LoadOp(res, addr, *, alignment=None, **kw):
    return _Result(load(res, addr, alignment=alignment))


def store(value, addr, *, alignment=None, **kw):
    v = ir.unwrap(value)
    p = _typed(addr, v.type.element_type)
    build(_p.store, [v, p], [], {"align": int(alignment)} if alignment else None)


def StoreOp(value, addr, *, alignment=None, **kw):
    store(value, addr, alignment=alignment)


_RMW = {"add": "add", "fadd": "add", "max": "max", "fmax": "max", "min": "min", "fmin": "min", "umax": "umax",
        "umin": "umin", "_and": "and", "_or": "or", "_xor": "xor", "xchg": "xchg"}  # fmt: skip
_SCOPE = {"": "sys", "agent": "gpu", "workgroup": "cta", "wavefront": "cta", "singlethread": "cta", None: "gpu"}


def AtomicRMWOp(bin_op, ptr, val, ordering, *, syncscope=None, alignment=None, **kw):
    """An atomic read-modify-write through ``ptr`` (relaxed: our atomics are monotonic); returns the old value."""
    name = bin_op.name if isinstance(bin_op, AtomicBinOp) else str(bin_op)
    kind = _RMW.get(name)
    if kind is None:
        raise NotImplementedError(f"llvm atomicrmw {name} is not supported here")
    v = ir.unwrap(val)
    p = _typed(ptr, v.type)
    scope = _SCOPE.get(syncscope, "gpu")
    return _Result(ir.wrap(build(_p.atomic_rmw, [p, v], None, {"kind": kind, "scope": scope}).results[0]))


def bitcast(res, arg, **kw):
    from ...dialects import vector as _v

    return ir.wrap(build(_v.bitcast, [arg], [ir._unwrap_type(res)]).results[0])


def BitcastOp(res, arg, **kw):
    return _Result(bitcast(res, arg))


call_intrinsic = unsupported("llvm.call_intrinsic", "raw LLVM intrinsics are target-specific; use the fx API")
CallIntrinsicOp = call_intrinsic
