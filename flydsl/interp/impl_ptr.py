"""``ptr`` ops: pointer arithmetic and casts, allocations, loads and stores, buffer resources.

Pointer values: global/constant/generic pointers are int64 byte addresses; shared and local
pointers are int64 byte offsets into the block's / thread's arena (uniform when the offset is), so a
shared allocation is a uniform constant. Static shared allocations are laid out when the kernel is
compiled, in program order with their alignment; the dynamic shared memory follows them.

Buffer ops (AMD semantics on every target): the byte offset is an unsigned 32-bit value; element
``k`` of the access covers bytes ``[off + k*size, off + (k+1)*size)`` and is in range when that end
is at most ``num_records``; ``num_records >= 0xFFFFFFFF`` means unbounded. Out-of-range or
masked-off elements read 0 and are never written. In-range elements still go through the global
memory check, so a resource wider than its buffer faults like a plain access. A vector access's
``align`` attribute is what the compiler proved: a wholly in-range, unmasked access relies on it without
a test (one vector instruction when it covers the vector's size, else — after a run-time test of the
full alignment — pieces of ``align`` bytes), so an address that breaks it faults as on the GPU.
"""

from __future__ import annotations

import numpy as np

from ..ir import Op, PointerType, VectorType
from .access import GENERIC, GLOBAL, LOCAL, SHARED, SHARED_CLUSTER, check_vector_align, load, space_of, store
from .machine import Compiler, impl, is_uniform, value_dtype
from .memory import LOCAL_WINDOW, SHARED_WINDOW

__all__ = ["elem_size", "access_kind"]

_UNBOUNDED = 0xFFFFFFFF


def _ptr(v) -> PointerType:
    """The pointer type of an operand the op's verifier has checked is a pointer."""
    return PointerType.of(v)


def elem_size(t) -> int:
    """Bytes of one pointee element of type ``t`` (pointers count 8 bytes)."""
    if isinstance(t, VectorType):
        return t.numel * value_dtype(t.elem).itemsize
    return value_dtype(t).itemsize


def access_kind(ptr_t: PointerType, val_t):
    """``(n, dtype, type name)`` of an access of ``val_t`` through ``ptr_t``: ``n`` = 0 for a scalar."""
    if isinstance(val_t, VectorType):
        return val_t.numel, value_dtype(val_t.elem), str(val_t.elem)
    if isinstance(ptr_t.elem, VectorType):  # a pointer to vectors, accessed whole
        e = ptr_t.elem
        return e.numel, value_dtype(e.elem), str(e.elem)
    return 0, value_dtype(val_t), str(val_t)


@impl("ptr.add")
def add(op: Op, cc: Compiler):
    """``ptr.add p, off``: ``p + off * sizeof(pointee)`` (offset sign-extended to 64 bits)."""
    p, o = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])
    size = elem_size(_ptr(op.operands[0]).elem)

    def step(env, lanes):
        env[r] = env[p] + np.asarray(env[o]).astype(np.int64) * size

    return step


@impl("ptr.cast")
def cast(op: Op, cc: Compiler):
    """``ptr.cast``: pointee change is free; shared/local ↔ generic moves through the address windows."""
    a = cc.slot(op.operands[0])
    r = cc.slot(op.results[0])
    src, dst = space_of(_ptr(op.operands[0])), space_of(_ptr(op.results[0]))
    if SHARED_CLUSTER in (src, dst) and src != dst:

        def unsupported(env, lanes):
            raise lanes.fault(
                op,
                "casting a shared::cluster pointer (from nvvm.mapa) to or from another address space is not "
                "supported by the interpreter; access the other block's shared memory through the pointer itself",
                None,
            )

        return unsupported
    delta = 0
    if src == SHARED and dst == GENERIC:
        delta = SHARED_WINDOW
    elif src == LOCAL and dst == GENERIC:
        delta = LOCAL_WINDOW
    elif src == GENERIC and dst == SHARED:
        delta = -SHARED_WINDOW
    elif src == GENERIC and dst == LOCAL:
        delta = -LOCAL_WINDOW

    if delta == 0:

        def same(env, lanes):
            env[r] = env[a]

        return same

    def step(env, lanes):
        env[r] = env[a] + np.int64(delta)

    return step


@impl("ptr.to_int")
def to_int(op: Op, cc: Compiler):
    """``ptr.to_int``: the pointer's int64 value (shared/local: the byte offset)."""
    a = cc.slot(op.operands[0])
    r = cc.slot(op.results[0])

    def step(env, lanes):
        env[r] = env[a]

    return step


@impl("ptr.from_int")
def from_int(op: Op, cc: Compiler):
    """``ptr.from_int``: an integer as a pointer (sign-extended to int64)."""
    a = cc.slot(op.operands[0])
    r = cc.slot(op.results[0])

    def step(env, lanes):
        env[r] = np.asarray(env[a]).astype(np.int64)

    return step


@impl("ptr.shared_alloc")
def shared_alloc(op: Op, cc: Compiler):
    """``ptr.shared_alloc``: a uniform byte offset fixed by the kernel's shared-memory layout."""
    cc.constant(op.results[0], np.asarray(cc.program.shared_offset(op), np.int64))


@impl("ptr.dynamic_shared")
def dynamic_shared(op: Op, cc: Compiler):
    """``ptr.dynamic_shared``: the offset right after the static allocations (16-byte aligned)."""
    cc.constant(op.results[0], np.asarray(cc.program.dyn_offset, np.int64))


@impl("ptr.alloca")
def alloca(op: Op, cc: Compiler):
    """``ptr.alloca``: a uniform byte offset into each thread's local memory (one slot per op)."""
    cc.constant(op.results[0], np.asarray(cc.program.local_offset(op), np.int64))


@impl("ptr.load")
def load_(op: Op, cc: Compiler):
    """``ptr.load p``: active lanes read; a uniform global address is read once (uniform result)."""
    p = cc.slot(op.operands[0])
    r = cc.slot(op.results[0])
    pt = _ptr(op.operands[0])
    space = space_of(pt)
    n, dt, tname = access_kind(pt, op.results[0].type)
    align = op.attrs.get("align", 0)

    def step(env, lanes):
        env[r] = load(lanes, op, space, env[p], n, dt, tname, None, align)

    return step


@impl("ptr.store")
def store_(op: Op, cc: Compiler):
    """``ptr.store v, p``: active lanes write (several lanes to one address: the last lane wins)."""
    v, p = cc.slots_of(op.operands)
    pt = _ptr(op.operands[1])
    space = space_of(pt)
    n, dt, tname = access_kind(pt, op.operands[0].type)
    align = op.attrs.get("align", 0)

    def step(env, lanes):
        store(lanes, op, space, env[p], n, dt, tname, env[v], None, align)

    return step


def _lane_mask(mk, n):
    """A load/store mask as ``(R, 1)`` (per lane) or ``(R, n)`` (per element)."""
    mk = np.asarray(mk)
    if n and mk.ndim == 2:
        return mk
    return mk.reshape(-1, 1)


@impl("ptr.masked_load")
def masked_load(op: Op, cc: Compiler):
    """``ptr.masked_load p, mask, other``: masked-off elements are not read and give ``other``."""
    p, m, o = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])
    pt = _ptr(op.operands[0])
    space = space_of(pt)
    n, dt, tname = access_kind(pt, op.results[0].type)
    align = op.attrs.get("align", 0)

    def step(env, lanes):
        mk = _lane_mask(env[m], n)
        v = load(lanes, op, space, env[p], n, dt, tname, mk, align)
        if not n:
            mk = mk[:, 0] if mk.shape[0] > 1 else mk.reshape(())
        env[r] = np.where(mk, v, env[o])

    return step


@impl("ptr.masked_store")
def masked_store(op: Op, cc: Compiler):
    """``ptr.masked_store v, p, mask``: masked-off elements are not written."""
    v, p, m = cc.slots_of(op.operands)
    pt = _ptr(op.operands[1])
    space = space_of(pt)
    n, dt, tname = access_kind(pt, op.operands[0].type)
    align = op.attrs.get("align", 0)

    def step(env, lanes):
        store(lanes, op, space, env[p], n, dt, tname, env[v], _lane_mask(env[m], n), align)

    return step


@impl("ptr.buffer_rsrc")
def buffer_rsrc(op: Op, cc: Compiler):
    """``ptr.buffer_rsrc base, num_records``: an int64 ``(1|T, 2)`` array ``[base, num_records]``."""
    b, n = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])

    def step(env, lanes):
        base, nrec = env[b], env[n]
        if is_uniform(base) and is_uniform(nrec):
            env[r] = np.array([[int(base), int(nrec)]], np.int64)
        else:
            T = lanes.T
            env[r] = np.stack([np.broadcast_to(base, (T,)), np.broadcast_to(nrec, (T,))], axis=1).astype(np.int64)

    return step


def _buffer_access(rsrc, off, mask, N, size):
    """(first-element pointer ``(R,)``, element mask ``(R, N)`` of in-range and unmasked elements)."""
    base = rsrc[:, 0]
    nrec = rsrc[:, 1:2]
    o = np.asarray(off).astype(np.int64).reshape(-1) & 0xFFFFFFFF
    end = o[:, None] + (np.arange(N, dtype=np.int64) + 1) * size
    em = (end <= nrec) | (nrec >= _UNBOUNDED)
    if mask is not None:
        em = em & np.asarray(mask).reshape(-1, 1)
    return base + o, em


def _buffer_kind(op, val_t):
    if isinstance(val_t, VectorType):
        return val_t.numel, value_dtype(val_t.elem), str(val_t.elem)
    return 0, value_dtype(val_t), str(val_t)


def unchecked_vector_align(op, n: int, size: int) -> int:
    """The alignment the generated code relies on, without testing it, for a wholly in-range and unmasked
    buffer access of ``n`` ``size``-byte elements (0: none beyond the element's). Mirrors
    :class:`flydsl.codegen.emit_memory._Buffer`: the op's ``align`` attribute (what the compiler proved),
    capped at the vector's power-of-two alignment (at most 16) — one vector instruction when it covers the
    vector, else pieces of ``align`` bytes for a misaligned address."""
    if not n:
        return 0
    total, vec = n * size, 1
    while vec < 16 and total % (vec * 2) == 0:
        vec *= 2
    known = op.attrs.get("align")
    known = known if isinstance(known, int) and known > 0 else size
    a = min(known, vec)
    return a if a > size else 0


def _check_buffer_align(lanes, op, ptr, em, vec: int, what: str) -> None:
    """The wholly in-range, unmasked accesses need ``vec``-aligned addresses (the GPU faults otherwise)."""
    if vec:
        check_vector_align(lanes, op, ptr, em.all(axis=1), vec, what)


@impl("ptr.buffer_load")
def buffer_load(op: Op, cc: Compiler):
    """``ptr.buffer_load rsrc, byte_off[, mask]``: out-of-range or masked-off elements read 0."""
    ins = cc.slots_of(op.operands)
    r = cc.slot(op.results[0])
    n, dt, tname = _buffer_kind(op, op.results[0].type)
    size = dt.itemsize if dt != np.bool_ else 1
    vec = unchecked_vector_align(op, n, size)

    def step(env, lanes):
        mask = env[ins[2]] if len(ins) == 3 else None
        ptr, em = _buffer_access(env[ins[0]], env[ins[1]], mask, n or 1, size)
        _check_buffer_align(lanes, op, ptr, em, vec, "read")
        v = load(lanes, op, GLOBAL, ptr, n, dt, tname, em)
        if not em.all():
            if n:
                v = np.where(em, v, np.zeros((), dt))
            else:
                v = np.where(em[:, 0] if em.shape[0] > 1 else em.reshape(()), v, np.zeros((), dt))
        env[r] = v

    return step


@impl("ptr.buffer_store")
def buffer_store(op: Op, cc: Compiler):
    """``ptr.buffer_store v, rsrc, byte_off[, mask]``: out-of-range or masked-off elements are dropped."""
    ins = cc.slots_of(op.operands)
    n, dt, tname = _buffer_kind(op, op.operands[0].type)
    size = dt.itemsize if dt != np.bool_ else 1
    vec = unchecked_vector_align(op, n, size)

    def step(env, lanes):
        mask = env[ins[3]] if len(ins) == 4 else None
        ptr, em = _buffer_access(env[ins[1]], env[ins[2]], mask, n or 1, size)
        _check_buffer_align(lanes, op, ptr, em, vec, "write")
        store(lanes, op, GLOBAL, ptr, n, dt, tname, env[ins[0]], em)

    return step
