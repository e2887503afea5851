"""Atomic copy atoms: ``fx.UniversalAtomic(fx.AtomicOp.Add, fx.Float32, syncscope=...)``.

A copy with an atomic atom does not store the source: it combines each source value into the destination
element with one atomic read-modify-write (``ptr.atomic_rmw``) — FlyDSL's target-neutral reduction atom, so
``fx.copy_atom_call(atom, register_fragment, global_view)`` adds (maxes, …) a thread's values into memory.

``syncscope`` takes LLVM's scope names (``fx.SyncScope``): ``""`` (system), ``"agent"`` (the whole GPU),
``"workgroup"`` (the block), ``"wavefront"`` (the warp), ``"singlethread"``. NVIDIA atomics have the scopes
``.sys``, ``.gpu`` and ``.cta``; a narrower LLVM scope maps to the narrowest PTX scope that contains it
(``wavefront`` and ``singlethread`` → ``.cta``), which orders at least as much as asked.
"""

from __future__ import annotations

import enum

from .. import layout as L
from ..dialects import scf
from ..ir import InsertionPoint
from ._sem.numeric import Boolean, Numeric, resolve_dtype
from .copy import CopyError, CopyOp
from .pointer import atomic_add, atomic_and, atomic_exchange, atomic_max, atomic_min, atomic_or, atomic_xor

__all__ = [
    "AtomicOp", "UniversalAtomic", "UniversalAtomicAdd", "UniversalAtomicMax", "UniversalAtomicMin",
    "UniversalAtomicAnd", "UniversalAtomicOr",
]  # fmt: skip


class AtomicOp(enum.Enum):
    """The combining operation of an atomic copy atom."""

    Add = "add"
    Max = "max"
    Min = "min"
    And = "and"
    Or = "or"
    Xor = "xor"
    Xchg = "xchg"
    Inc = "inc"
    Dec = "dec"


_RMW = {
    AtomicOp.Add: atomic_add, AtomicOp.Max: atomic_max, AtomicOp.Min: atomic_min, AtomicOp.And: atomic_and,
    AtomicOp.Or: atomic_or, AtomicOp.Xor: atomic_xor, AtomicOp.Xchg: atomic_exchange,
}  # fmt: skip

#: LLVM sync scope -> the narrowest of our (PTX) scopes that contains it
_SCOPES = {"": "sys", "system": "sys", "agent": "gpu", "workgroup": "cta", "wavefront": "cta", "singlethread": "cta"}


class UniversalAtomicOp(CopyOp):
    """An atomic read-modify-write of each destination element with the source value (see the module)."""

    __slots__ = ("atomic_op", "val_type", "syncscope")

    def __init__(self, atomic_op, val_type, syncscope: str = ""):
        op = atomic_op if isinstance(atomic_op, AtomicOp) else AtomicOp(atomic_op)
        if op not in _RMW:
            raise ValueError(
                f"UniversalAtomic: {op.name} (a wrapping increment/decrement) has no target-neutral atomic here; "
                f"use one of {', '.join(o.name for o in _RMW)}"
            )
        if syncscope not in _SCOPES:
            raise ValueError(f"UniversalAtomic: unknown syncscope {syncscope!r}; use an fx.SyncScope value")
        dtype = resolve_dtype(val_type)
        super().__init__(dtype.width)
        self.atomic_op, self.val_type, self.syncscope = op, dtype, syncscope

    @property
    def name(self) -> str:
        return f"UniversalAtomic({self.atomic_op.name}, {self.val_type.__name__}, syncscope={self.syncscope!r})"

    def call(self, atom, src, dst, pred) -> None:
        if src.memspace != "register" or dst.memspace in ("register", "coord"):
            raise CopyError(f"{self.name} combines registers into memory, got {src.memspace} -> {dst.memspace}")
        if dst.dtype is not self.val_type:
            raise CopyError(f"{self.name} on a destination of {dst.dtype.__name__}")
        if pred is None:
            return self._rmw(src, dst)
        p = pred if isinstance(pred, Numeric) else Boolean(bool(pred))
        p = p if type(p) is Boolean else p.to(Boolean)
        if p.is_static():
            if p.value:
                self._rmw(src, dst)
            return None
        op = scf.build_if(p.ir_value(), with_else=False)
        with InsertionPoint(op.regions[0].blocks[0]):
            self._rmw(src, dst)
            scf.yield_()
        return None

    def _rmw(self, src, dst) -> None:
        values = src.load()
        fn, scope = _RMW[self.atomic_op], _SCOPES[self.syncscope]
        for j in range(values.numel):
            fn(dst._it._at(L.crd2idx(j, dst.layout)), values[j].to(self.val_type), scope=scope)

    def __eq__(self, other):
        return type(other) is UniversalAtomicOp and (self.atomic_op, self.val_type, self.syncscope) == (
            other.atomic_op,
            other.val_type,
            other.syncscope,
        )

    def __hash__(self):
        return hash(("UniversalAtomicOp", self.atomic_op, self.val_type, self.syncscope))

    def __repr__(self) -> str:
        return self.name


def UniversalAtomic(atomic_op, val_type, syncscope: str = "") -> UniversalAtomicOp:
    """An atomic copy op: ``fx.make_copy_atom(fx.UniversalAtomic(fx.AtomicOp.Add, fx.Float32), fx.Float32)``
    combines each source value into its destination element atomically (``syncscope``: an ``fx.SyncScope``
    value, default the system scope).

    Raises:
        ValueError: ``Inc``/``Dec`` (no target-neutral wrapping atomics here) or an unknown scope.
    """
    return UniversalAtomicOp(atomic_op, val_type, syncscope)


def UniversalAtomicAdd(val_type, syncscope: str = "") -> UniversalAtomicOp:
    """``UniversalAtomic(AtomicOp.Add, val_type, syncscope)``."""
    return UniversalAtomicOp(AtomicOp.Add, val_type, syncscope)


def UniversalAtomicMax(val_type, syncscope: str = "") -> UniversalAtomicOp:
    """``UniversalAtomic(AtomicOp.Max, val_type, syncscope)``."""
    return UniversalAtomicOp(AtomicOp.Max, val_type, syncscope)


def UniversalAtomicMin(val_type, syncscope: str = "") -> UniversalAtomicOp:
    """``UniversalAtomic(AtomicOp.Min, val_type, syncscope)``."""
    return UniversalAtomicOp(AtomicOp.Min, val_type, syncscope)


def UniversalAtomicAnd(val_type, syncscope: str = "") -> UniversalAtomicOp:
    """``UniversalAtomic(AtomicOp.And, val_type, syncscope)``."""
    return UniversalAtomicOp(AtomicOp.And, val_type, syncscope)


def UniversalAtomicOr(val_type, syncscope: str = "") -> UniversalAtomicOp:
    """``UniversalAtomic(AtomicOp.Or, val_type, syncscope)``."""
    return UniversalAtomicOp(AtomicOp.Or, val_type, syncscope)
