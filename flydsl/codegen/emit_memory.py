"""LLVM lowering of the ``ptr`` dialect: addresses, loads/stores, allocations, atomics, buffers.

- ``ptr.add`` → ``getelementptr`` (offsets in elements of the pointee; the index is sign-extended).
- ``ptr.load``/``ptr.store`` → ``load``/``store`` with the op's ``align`` attribute (default: the
  element's natural alignment, so a vector access needs ``align`` = its size to become one vector
  instruction); ``cache = "nc"`` adds ``!invariant.load`` (→ ``ld.global.nc``); other cache
  modifiers go through the target hook (inline PTX on NVIDIA) or are dropped (they are hints).
  ``fast_align`` (larger than ``align``): a versioned access — the address is tested at run time and
  the access is issued with ``align = fast_align`` when it has that alignment, else with ``align``
  (which LLVM splits into accesses it can prove aligned); copy atoms over memory whose alignment the
  specialization does not prove use it.
- masked loads/stores: a scalar mask branches around the access; a lane mask uses
  ``llvm.masked.load/store``.
- ``ptr.shared_alloc`` → an ``addrspace(3)`` global per op; ``ptr.dynamic_shared`` → one
  ``external addrspace(3) global [0 x i8]``; ``ptr.alloca`` → an entry-block ``alloca``.
- atomics → ``atomicrmw``/``cmpxchg`` (monotonic; attribute ``scope`` = ``gpu`` (default) | ``cta`` |
  ``sys``).
- buffer ops keep AMD's bounds semantics: see :func:`emit_buffer_load` (the byte offset is an
  unsigned 32-bit value; ``num_records >= 0xFFFFFFFF`` means unbounded).
"""

from __future__ import annotations

from ..ir import Op, PointerType, VectorType
from ..ir.types import AddressSpace
from .errors import CodegenError
from .intrinsics import mangle
from .llvm_emitter import FunctionEmitter, emitter
from .llvm_types import RSRC_TYPE, const_literal, llvm_type, natural_align, store_size


def _ptr_ty(v) -> str:
    return llvm_type(v.type)


def _align(op: Op, t) -> int:
    a = op.attrs.get("align")
    if isinstance(a, int) and a > 0 and a & (a - 1) == 0:
        return a
    return natural_align(t)


def _fast_align(op: Op, t, align: int) -> int:
    """The op's ``fast_align`` when it asks for more than ``align`` for a vector access (0: a plain one)."""
    a = op.attrs.get("fast_align")
    if isinstance(t, VectorType) and isinstance(a, int) and a > align and a & (a - 1) == 0:
        return a
    return 0


def _pieces(t: VectorType, align: int) -> tuple[int, int]:
    """(pieces, lanes per piece): ``t`` cut into accesses of at most ``align`` bytes."""
    k = max(1, min(t.numel, align // store_size(t.elem)))
    while t.numel % k:
        k //= 2
    return t.numel // k, k


def _split_load(fe: FunctionEmitter, t: VectorType, pty: str, ptr: str, align: int, nc: bool) -> str:
    """``t`` read as accesses of ``align`` bytes (different instructions from the vector path, so LLVM
    cannot merge the two versions into one load of the weaker alignment)."""
    ty, ety = llvm_type(t), llvm_type(t.elem)
    pieces, k = _pieces(t, align)
    pty_ = f"<{k} x {ety}>" if k > 1 else ety
    acc = "poison"
    for i in range(pieces):
        q = fe.assign(f"getelementptr {ety}, {pty} {ptr}, i64 {i * k}")
        x = plain_load(fe, pty_, pty, q, align, nc)
        for j in range(k):
            e = fe.assign(f"extractelement {pty_} {x}, i64 {j}") if k > 1 else x
            acc = fe.assign(f"insertelement {ty} {acc}, {ety} {e}, i64 {i * k + j}")
    return acc


def _split_store(fe: FunctionEmitter, t: VectorType, v: str, pty: str, ptr: str, align: int) -> None:
    ty, ety = llvm_type(t), llvm_type(t.elem)
    pieces, k = _pieces(t, align)
    for i in range(pieces):
        q = fe.assign(f"getelementptr {ety}, {pty} {ptr}, i64 {i * k}")
        if k > 1:
            lanes = ", ".join(f"i32 {i * k + j}" for j in range(k))
            x = fe.assign(f"shufflevector {ty} {v}, {ty} poison, <{k} x i32> <{lanes}>")
            fe.emit(f"store <{k} x {ety}> {x}, {pty} {q}, align {align}")
        else:
            x = fe.assign(f"extractelement {ty} {v}, i64 {i}")
            fe.emit(f"store {ety} {x}, {pty} {q}, align {align}")


def _versioned(fe: FunctionEmitter, pty: str, ptr: str, fast: int, vector, split):
    """``vector()`` when the address is a multiple of ``fast`` at run time, else ``split()``. Returns the
    phi of their results, or None when they return None (stores)."""
    addr = fe.assign(f"ptrtoint {pty} {ptr} to i64")
    ok = fe.assign(f"icmp eq i64 {fe.assign(f'and i64 {addr}, {fast - 1}')}, 0")
    hi, lo, join = fe.label("vec.aligned"), fe.label("vec.split"), fe.label("vec.end")
    fe.cbr(ok, hi, lo)
    fe.start(hi)
    a = vector()
    hi_end = fe.block
    fe.br(join)
    fe.start(lo)
    b = split()
    lo_end = fe.block
    fe.br(join)
    fe.start(join)
    return None if a is None else (a, hi_end, b, lo_end)


def _load(fe: FunctionEmitter, op: Op, t, pty: str, ptr: str, align: int, nc: bool) -> str:
    """A plain load, versioned when the op has a ``fast_align``."""
    ty = llvm_type(t)
    fast = _fast_align(op, t, align)
    if not fast:
        return plain_load(fe, ty, pty, ptr, align, nc)
    x, xb, y, yb = _versioned(
        fe,
        pty,
        ptr,
        fast,
        lambda: plain_load(fe, ty, pty, ptr, fast, nc),
        lambda: _split_load(fe, t, pty, ptr, align, nc),
    )
    return fe.assign(f"phi {ty} [{x}, %{xb}], [{y}, %{yb}]")


def _store(fe: FunctionEmitter, op: Op, t, v: str, pty: str, p: str, align: int) -> None:
    """A plain store, versioned when the op has a ``fast_align``."""
    ty = llvm_type(t)
    fast = _fast_align(op, t, align)
    if not fast:
        fe.emit(f"store {ty} {v}, {pty} {p}, align {align}")
        return
    _versioned(fe, pty, p, fast, lambda: fe.emit(f"store {ty} {v}, {pty} {p}, align {fast}"),
               lambda: _split_store(fe, t, v, pty, p, align))  # fmt: skip


@emitter("ptr.add")
def emit_ptr_add(fe: FunctionEmitter, op: Op) -> None:
    p, off = op.operands
    elem = PointerType.of(p).elem
    if isinstance(elem, VectorType):
        scaled = fe.assign(f"mul {fe.typed(off)}, {store_size(elem)}")
        gep = f"getelementptr i8, {fe.typed(p)}, {llvm_type(off.type)} {scaled}"
    else:
        gep = f"getelementptr {llvm_type(elem)}, {fe.typed(p)}, {fe.typed(off)}"
    fe.define(op.results[0], fe.assign(gep))


def _invariant(fe: FunctionEmitter) -> str:
    return ", !invariant.load " + fe.m.metadata("empty", "!{}")


def plain_load(fe: FunctionEmitter, ty: str, pty: str, ptr: str, align: int, nc: bool = False) -> str:
    md = _invariant(fe) if nc else ""
    return fe.assign(f"load {ty}, {pty} {ptr}, align {align}{md}")


@emitter("ptr.load")
def emit_load(fe: FunctionEmitter, op: Op) -> None:
    (p,) = op.operands
    t = op.results[0].type
    ty, pty = llvm_type(t), _ptr_ty(p)
    align = _align(op, t)
    cache = op.attrs.get("cache", "") or ""
    space = PointerType.of(p).space
    if cache and cache != "nc":
        r = fe.hooks.cached_load(fe, op, fe.val(p), ty, space, cache)
        if r is not None:
            fe.define(op.results[0], r)
            return
    nc = cache == "nc" and space in (AddressSpace.GLOBAL, AddressSpace.GENERIC)
    fe.define(op.results[0], _load(fe, op, t, pty, fe.val(p), align, nc))


@emitter("ptr.store")
def emit_store(fe: FunctionEmitter, op: Op) -> None:
    v, p = op.operands
    ty, pty = llvm_type(v.type), _ptr_ty(p)
    cache = op.attrs.get("cache", "") or ""
    space = PointerType.of(p).space
    if cache and cache != "nc" and fe.hooks.cached_store(fe, op, fe.val(v), fe.val(p), ty, space, cache):
        return
    _store(fe, op, v.type, fe.val(v), pty, fe.val(p), _align(op, v.type))


@emitter("ptr.masked_load")
def emit_masked_load(fe: FunctionEmitter, op: Op) -> None:
    p, m, other = op.operands
    t = op.results[0].type
    ty, pty = llvm_type(t), _ptr_ty(p)
    align = _align(op, t)
    nc = (op.attrs.get("cache") or "") == "nc"
    if m.type.is_vector:
        name = f"llvm.masked.load.{mangle(ty)}.{mangle(pty)}"
        sym = fe.m.declare(name, ty, [pty, llvm_type(m.type), ty])
        r = fe.assign(f"call {ty} {sym}({pty} align {align} {fe.val(p)}, {fe.typed(m)}, {ty} {fe.val(other)})")
        fe.define(op.results[0], r)
        return
    pre, ld, join = fe.block, fe.label("mload"), fe.label("mload.end")
    fe.cbr(fe.val(m), ld, join)
    fe.start(ld)
    x = _load(fe, op, t, pty, fe.val(p), align, nc)
    ld_end = fe.block
    fe.br(join)
    fe.start(join)
    fe.define(op.results[0], fe.assign(f"phi {ty} [{x}, %{ld_end}], [{fe.val(other)}, %{pre}]"))


@emitter("ptr.masked_store")
def emit_masked_store(fe: FunctionEmitter, op: Op) -> None:
    v, p, m = op.operands
    ty, pty = llvm_type(v.type), _ptr_ty(p)
    align = _align(op, v.type)
    if m.type.is_vector:
        name = f"llvm.masked.store.{mangle(ty)}.{mangle(pty)}"
        sym = fe.m.declare(name, "void", [ty, pty, llvm_type(m.type)])
        fe.emit(f"call void {sym}({ty} {fe.val(v)}, {pty} align {align} {fe.val(p)}, {fe.typed(m)})")
        return
    st, join = fe.label("mstore"), fe.label("mstore.end")
    fe.cbr(fe.val(m), st, join)
    fe.start(st)
    _store(fe, op, v.type, fe.val(v), pty, fe.val(p), align)
    fe.br(join)
    fe.start(join)


@emitter("ptr.cast")
def emit_ptr_cast(fe: FunctionEmitter, op: Op) -> None:
    (p,) = op.operands
    r = op.results[0]
    fe.define(r, fe.cast("addrspacecast", fe.val(p), llvm_type(p.type), llvm_type(r.type)))


@emitter("ptr.to_int")
def emit_to_int(fe: FunctionEmitter, op: Op) -> None:
    (p,) = op.operands
    fe.define(op.results[0], fe.assign(f"ptrtoint {fe.typed(p)} to i64"))


@emitter("ptr.from_int")
def emit_from_int(fe: FunctionEmitter, op: Op) -> None:
    (x,) = op.operands
    fe.define(op.results[0], fe.assign(f"inttoptr {fe.typed(x)} to {llvm_type(op.results[0].type)}"))


def _alloc_bytes(op: Op) -> tuple[int, int]:
    t = PointerType.of(op.results[0])
    n = op.attrs["count"]
    return n * store_size(t.elem), max(int(op.attrs.get("align", 16)), natural_align(t.elem))


@emitter("ptr.shared_alloc")
def emit_shared_alloc(fe: FunctionEmitter, op: Op) -> None:
    """A static shared array: one ``addrspace(3)`` global per op."""
    nbytes, align = _alloc_bytes(op)
    sym = fe.m.add_global("smem", f"internal addrspace(3) global [{nbytes} x i8] poison, align {align}")
    fe.m.fn_smem.setdefault(fe.name, []).append((sym, nbytes, align))
    fe.define(op.results[0], sym)


@emitter("ptr.dynamic_shared")
def emit_dynamic_shared(fe: FunctionEmitter, op: Op) -> None:
    sym = fe.m.named_global("__fly_dynamic_smem", "external addrspace(3) global [0 x i8], align 16")
    fe.m.fn_dyn_smem.add(fe.name)
    fe.define(op.results[0], sym)


@emitter("ptr.alloca")
def emit_alloca(fe: FunctionEmitter, op: Op) -> None:
    """Per-thread memory: a static entry-block alloca, seen through an ``addrspace(5)`` pointer."""
    nbytes, align = _alloc_bytes(op)
    a = fe.entry_assign(f"alloca [{nbytes} x i8], align {align}")
    fe.define(op.results[0], fe.entry_assign(f"addrspacecast ptr {a} to ptr addrspace(5)"))


# -- atomics ---------------------------------------------------------------------------------------

_SCOPES = {"gpu": ' syncscope("device")', "cta": ' syncscope("block")', "sys": ""}
_RMW_INT = {"add": "add", "max": "max", "min": "min", "umax": "umax", "umin": "umin"}
_RMW_INT.update({"and": "and", "or": "or", "xor": "xor", "xchg": "xchg"})
_RMW_FLOAT = {"add": "fadd", "max": "fmax", "min": "fmin", "xchg": "xchg"}


def _scope(op: Op) -> str:
    s = op.attrs.get("scope", "gpu") or "gpu"
    if s not in _SCOPES:
        raise CodegenError(f"unknown atomic scope {s!r}; expected gpu, cta or sys")
    return _SCOPES[s]


@emitter("ptr.atomic_rmw")
def emit_atomic_rmw(fe: FunctionEmitter, op: Op) -> None:
    """``atomicrmw``; float max/min are expanded by LLVM into a compare-and-swap loop on NVPTX."""
    p, v = op.operands
    kind = op.attrs["kind"]
    e = v.type
    if e.is_float:
        if e.bitwidth == 8:
            raise CodegenError("atomics on fp8 values are not supported", fix="use an i8 or wider float type")
        instr = _RMW_FLOAT.get(kind)
    else:
        instr = _RMW_INT.get(kind)
    if instr is None:
        raise CodegenError(f"atomic {kind} is not defined for {e}")
    r = fe.assign(f"atomicrmw {instr} {fe.typed(p)}, {fe.typed(v)}{_scope(op)} monotonic, align {store_size(e)}")
    fe.define(op.results[0], r)


@emitter("ptr.atomic_cas")
def emit_atomic_cas(fe: FunctionEmitter, op: Op) -> None:
    """``cmpxchg`` (floats compare and swap their bits); returns the old value."""
    p, cmp, new = op.operands
    t = cmp.type
    ty = llvm_type(t)
    ity = f"i{t.bitwidth}" if t.is_float else ty
    c = fe.cast("bitcast", fe.val(cmp), ty, ity)
    n = fe.cast("bitcast", fe.val(new), ty, ity)
    pair = fe.assign(f"cmpxchg {fe.typed(p)}, {ity} {c}, {ity} {n}{_scope(op)} monotonic monotonic")
    old = fe.assign(f"extractvalue {{ {ity}, i1 }} {pair}, 0")
    fe.define(op.results[0], fe.cast("bitcast", old, ity, ty))


# -- buffer resources ------------------------------------------------------------------------------


@emitter("ptr.buffer_rsrc")
def emit_buffer_rsrc(fe: FunctionEmitter, op: Op) -> None:
    base, n = op.operands
    s = fe.assign(f"insertvalue {RSRC_TYPE} poison, {fe.typed(base)}, 0")
    fe.define(op.results[0], fe.assign(f"insertvalue {RSRC_TYPE} {s}, {fe.typed(n)}, 1"))


def _pow2_align(nbytes: int) -> int:
    a = 1
    while a < 16 and nbytes % (a * 2) == 0:
        a *= 2
    return a


class _Buffer:
    """Address computation and bounds tests shared by buffer loads and stores."""

    def __init__(self, fe: FunctionEmitter, op: Op, rsrc, off, mask, t):
        self.fe, self.t = fe, t
        self.n = t.numel if isinstance(t, VectorType) else 0
        self.elem = t.elem if isinstance(t, VectorType) else t
        self.esz = store_size(self.elem)
        self.size = store_size(t)
        r = fe.val(rsrc)
        self.base = fe.assign(f"extractvalue {RSRC_TYPE} {r}, 0")
        self.nrec = fe.assign(f"extractvalue {RSRC_TYPE} {r}, 1")
        # AMD semantics: num_records >= 0xFFFFFFFF means no bound
        self.unbounded = fe.assign(f"icmp uge i64 {self.nrec}, 4294967295")
        # AMD semantics: the 32-bit byte offset is unsigned
        self.off = fe.assign(f"zext {fe.typed(off)} to i64")
        self.mask = fe.val(mask) if mask is not None else None
        self.ptr = fe.assign(f"getelementptr i8, ptr addrspace(1) {self.base}, i64 {self.off}")
        self.vec_align = _pow2_align(self.size)
        known = op.attrs.get("align")
        self.known_align = known if isinstance(known, int) and known > 0 else self.esz

    def in_bounds(self, nbytes: int) -> str:
        fe = self.fe
        end = fe.assign(f"add i64 {self.off}, {nbytes}")
        ok = fe.assign(f"or i1 {fe.assign(f'icmp ule i64 {end}, {self.nrec}')}, {self.unbounded}")
        if self.mask is not None:
            ok = fe.assign(f"and i1 {ok}, {self.mask}")
        return ok

    @property
    def tested(self) -> bool:
        """The vector path needs a run-time alignment test (the op's ``align`` does not cover it)."""
        return bool(self.n) and self.vec_align > self.known_align

    def fast_condition(self) -> tuple[str, str]:
        """(whole access in bounds and masked on, that and — for vectors — aligned for one vector access)."""
        fe = self.fe
        whole = ok = self.in_bounds(self.size)
        if self.tested:
            addr = fe.assign(f"ptrtoint ptr addrspace(1) {self.ptr} to i64")
            low = fe.assign(f"and i64 {addr}, {self.vec_align - 1}")
            aligned = fe.assign(f"icmp eq i64 {low}, 0")
            ok = fe.assign(f"and i1 {ok}, {aligned}")
        return whole, ok

    def lane_ptr(self, i: int) -> str:
        ety = llvm_type(self.elem)
        return self.fe.assign(f"getelementptr {ety}, ptr addrspace(1) {self.ptr}, i64 {i}")


@emitter("ptr.buffer_load")
def emit_buffer_load(fe: FunctionEmitter, op: Op) -> None:
    """Bounded load: one vector load when the whole access is in bounds, masked on and aligned
    (a single branch); otherwise lane by lane, where a lane whose bytes end past ``num_records``
    (or any lane when the mask is off) reads 0.
    """
    rsrc, off = op.operands[:2]
    mask = op.operands[2] if len(op.operands) == 3 else None
    t = op.results[0].type
    b = _Buffer(fe, op, rsrc, off, mask, t)
    ty = llvm_type(t)
    fast, slow, join = fe.label("bload.fast"), fe.label("bload.slow"), fe.label("bload.end")
    whole, ok = b.fast_condition()
    fe.cbr(ok, fast, slow)
    fe.start(fast)
    v = plain_load(fe, ty, "ptr addrspace(1)", b.ptr, b.vec_align if b.n else b.esz)
    fe.br(join)
    incoming = [(v, fast)]
    if b.tested and isinstance(t, VectorType):  # in bounds, misaligned (a storage offset): pieces, no lane tests
        split, lanes = fe.label("bload.split"), fe.label("bload.bounded")
        fe.start(slow)
        fe.cbr(whole, split, lanes)
        fe.start(split)
        incoming.append((_split_load(fe, t, "ptr addrspace(1)", b.ptr, b.known_align, False), fe.block))
        fe.br(join)
        slow = lanes
    fe.start(slow)
    zero = const_literal(0, t)
    if not b.n:
        slow_val = zero  # a scalar access is either entirely in bounds or reads 0
    else:
        ety = llvm_type(b.elem)
        acc = zero
        for i in range(b.n):
            ok = b.in_bounds((i + 1) * b.esz)
            pre, ld, nxt = fe.block, fe.label("bload.lane"), fe.label("bload.next")
            fe.cbr(ok, ld, nxt)
            fe.start(ld)
            x = plain_load(fe, ety, "ptr addrspace(1)", b.lane_ptr(i), b.esz)
            fe.br(nxt)
            fe.start(nxt)
            lane = fe.assign(f"phi {ety} [{x}, %{ld}], [{const_literal(0, b.elem)}, %{pre}]")
            acc = fe.assign(f"insertelement {ty} {acc}, {ety} {lane}, i64 {i}")
        slow_val = acc
    incoming.append((slow_val, fe.block))
    fe.br(join)
    fe.start(join)
    fe.define(op.results[0], fe.assign(f"phi {ty} " + ", ".join(f"[{x}, %{blk}]" for x, blk in incoming)))


@emitter("ptr.buffer_store")
def emit_buffer_store(fe: FunctionEmitter, op: Op) -> None:
    """Bounded store: the vector fast path as for loads; lanes out of bounds are never written."""
    val, rsrc, off = op.operands[:3]
    mask = op.operands[3] if len(op.operands) == 4 else None
    t = val.type
    b = _Buffer(fe, op, rsrc, off, mask, t)
    ty = llvm_type(t)
    fast, slow, join = fe.label("bstore.fast"), fe.label("bstore.slow"), fe.label("bstore.end")
    whole, ok = b.fast_condition()
    fe.cbr(ok, fast, slow if b.n else join)
    fe.start(fast)
    fe.emit(f"store {ty} {fe.val(val)}, ptr addrspace(1) {b.ptr}, align {b.vec_align if b.n else b.esz}")
    fe.br(join)
    if b.tested and isinstance(t, VectorType):  # in bounds but misaligned: pieces of the proven alignment
        split, lanes = fe.label("bstore.split"), fe.label("bstore.bounded")
        fe.start(slow)
        fe.cbr(whole, split, lanes)
        fe.start(split)
        _split_store(fe, t, fe.val(val), "ptr addrspace(1)", b.ptr, b.known_align)
        fe.br(join)
        slow = lanes
    if b.n:
        fe.start(slow)
        ety = llvm_type(b.elem)
        for i in range(b.n):
            ok = b.in_bounds((i + 1) * b.esz)
            st, nxt = fe.label("bstore.lane"), fe.label("bstore.next")
            fe.cbr(ok, st, nxt)
            fe.start(st)
            x = fe.assign(f"extractelement {ty} {fe.val(val)}, i64 {i}")
            fe.emit(f"store {ety} {x}, ptr addrspace(1) {b.lane_ptr(i)}, align {b.esz}")
            fe.br(nxt)
            fe.start(nxt)
        fe.br(join)
    fe.start(join)
