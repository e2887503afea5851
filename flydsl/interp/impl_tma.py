"""TMA (``cp.async.bulk.tensor``) and 1-D bulk copies on the interpreter, and the host op that makes TMA
descriptors.

A copy is executed when it is issued (one valid schedule of the asynchronous hardware), by each active
thread in linear order; a load then completes its bytes on its mbarrier. Tile mode, as the hardware:

- the box at ``coords`` (dimension 0 fastest) is laid out densely in shared memory, row after row of
  ``box[0]`` elements, starting at the destination (128-byte aligned);
- with a 32/64/128-byte swizzle, each element's shared address has bits [4, 4+B) xor-ed with bits
  [7, 7+B) (B = 1, 2, 3) — the same absolute-address swizzle the wgmma descriptors read through;
- elements outside the tensor (a coordinate < 0 or ≥ the extent) are loaded as zero (NaN with the
  NaN fill) and are not stored; the transaction count is always the whole box;
- the coordinate along dimension 0 times the element size must be a multiple of 16 bytes, and a store's
  coordinates must not be negative (a load's may: the part before the tensor loads as zero). The GPU
  raises a sticky illegal-instruction error for either (the H200 did for stores at (-3, 104) and (66, -8);
  the CUDA C++ Programming Guide states the store rule, Triton's TMA tutorial the 16-byte one), so both
  are faults here.

The descriptor's tensor must lie inside one registered buffer; violations of the driver's encoding
rules (alignment, strides, box limits) are faults naming the rule.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..dialects.nvvm_sm90 import TMA_DTYPES, TmaFields, tma_desc_decode, tma_desc_encode
from ..ir import Op, PointerType
from .access import GLOBAL, cluster_dims, cluster_peer, resolve
from .errors import InterpError
from .host import HOST_IMPLS
from .machine import Compiler, impl
from .tasks import active_lanes, get_barrier

__all__ = ["swizzle_bytes", "tma_box_copy", "make_desc", "desc_maker"]

_DECODED: OrderedDict = OrderedDict()


def _fields(lanes, op, row: np.ndarray) -> TmaFields:
    key = row.tobytes()
    f = _DECODED.get(key)
    if f is None:
        f = tma_desc_decode(row)
        if f is None:
            raise lanes.fault(op, "the TMA descriptor operand is not a descriptor made by tma_make_desc", None)
        err = f.check()
        if err:
            raise lanes.fault(op, f"invalid TMA descriptor: {err}", None)
        if f.elem_strides != (1,) * f.rank:
            raise lanes.fault(op, "TMA element strides other than 1 are not supported by the interpreter", None)
        _DECODED[key] = f
        if len(_DECODED) > 256:
            _DECODED.popitem(last=False)
    return f


def swizzle_bytes(addr: np.ndarray, swizzle: int) -> np.ndarray:
    """Apply the 32/64/128-byte swizzle to absolute shared byte addresses (identity for 0)."""
    if not swizzle:
        return addr
    mask = swizzle // 16 - 1
    return addr ^ (((addr >> 7) & mask) << 4)


def _box(f: TmaFields, coords) -> tuple[np.ndarray, np.ndarray]:
    """Global byte offsets (from the base) and in-bounds flags of the box, shape ``box[::-1]``."""
    strides = (f.elem_bytes,) + f.strides
    g = np.zeros((), np.int64)
    ok = np.ones((), np.bool_)
    for i in reversed(range(f.rank)):
        idx = int(coords[i]) + np.arange(f.box[i], dtype=np.int64)
        g = g[..., None] + idx * strides[i]
        ok = ok[..., None] & (idx >= 0) & (idx < f.dims[i])
    return g, ok


def _global_buffer(lanes, op, f: TmaFields, write: bool):
    """The registered buffer holding the whole tensor of ``f`` (else a fault)."""
    span = f.elem_bytes + sum((d - 1) * s for d, s in zip(f.dims, (f.elem_bytes,) + f.strides))
    buf = lanes.memory.find(f.address)
    if buf is None or f.address + span > buf.end:
        where = f"buffer '{buf.name}' ends at 0x{buf.end:x}" if buf is not None else "no buffer is registered there"
        raise lanes.fault(
            op,
            f"the TMA descriptor's tensor covers bytes [0x{f.address:x}, 0x{f.address + span:x}) but {where} "
            f"(extents {f.dims}, byte strides {f.strides})",
            None,
        )
    if write and not buf.u8.flags.writeable:
        raise lanes.fault(op, f"TMA store into read-only buffer '{buf.name}'", None)
    return buf


def _smem(lanes, op, blk: int, dst: int, nbytes: int, lane: int, align: int, what: str) -> np.ndarray:
    """The block's shared bytes after checking ``[dst, dst + nbytes)`` (and the alignment)."""
    if lanes.shared is None:
        raise lanes.fault(op, f"{what} into shared memory, but the kernel has none", lane)
    if dst % align:
        raise lanes.fault(op, f"{what}: shared address 0x{dst:x} is not {align}-byte aligned", lane)
    resolve(lanes, op, 3, np.array([dst], np.int64), np.array([lane], np.int64), 1, "i8", what, nbytes)
    S = lanes.S
    return lanes.shared.u8[blk * S : (blk + 1) * S]


def tma_box_copy(lanes, op, f: TmaFields, smem: np.ndarray, s_off: int, coords, to_smem: bool) -> None:
    """Copy one box between global memory and ``smem`` (the block's bytes) at shared offset ``s_off``."""
    e = f.elem_bytes
    g, ok = _box(f, coords)
    n = g.size
    lin = np.arange(n, dtype=np.int64) * e + s_off
    saddr = swizzle_bytes(lin, f.swizzle)[:, None] + np.arange(e, dtype=np.int64)
    if int(saddr.max()) >= smem.shape[0]:
        raise lanes.fault(op, f"the TMA box ({n * e} bytes at shared offset 0x{s_off:x}) runs past the end of "
                          f"shared memory ({smem.shape[0]} bytes)", None)  # fmt: skip
    buf = _global_buffer(lanes, op, f, write=not to_smem)
    okf = ok.reshape(-1)
    gaddr = (f.address - buf.base + g.reshape(-1))[okf][:, None] + np.arange(e, dtype=np.int64)
    if to_smem:
        data = np.zeros((n, e), np.uint8)
        if f.oob_nan and f.dtype_code in (6, 7, 8, 9):
            data[:] = _nan_bytes(f.dtype_code)
        data[okf] = buf.u8[gaddr]
        smem[saddr] = data
    else:
        buf.u8[gaddr] = smem[saddr[okf]]


def _nan_bytes(code: int) -> np.ndarray:
    dt = {6: np.float16, 7: np.float32, 8: np.float64}.get(code)
    if dt is None:  # bf16
        return np.array([0xC0, 0x7F], np.uint8)
    return np.array([np.nan], dt).view(np.uint8)


def _coords(lanes, op, env, cs, f: TmaFields, ln: int, what: str) -> list[int]:
    """Lane ``ln``'s box coordinates, checked as the hardware does (rank; 16-byte aligned innermost)."""
    coords = [_at(env[c], lanes, ln) for c in cs]
    if len(coords) != f.rank:
        raise lanes.fault(op, f"a rank-{f.rank} descriptor takes {f.rank} coordinates, got {len(coords)}", ln)
    if (coords[0] * f.elem_bytes) % 16:
        raise lanes.fault(
            op,
            f"{what} with box coordinates {tuple(coords)} (innermost dimension first): the innermost "
            f"coordinate {coords[0]} is {coords[0] * f.elem_bytes} bytes, not a multiple of 16 (the GPU raises an "
            f"illegal-instruction error); start boxes at multiples of {16 // f.elem_bytes} elements along the "
            "unit-stride mode",
            ln,
        )
    return coords


def _at(value, lanes, ln: int) -> int:
    """Lane ``ln``'s value of a scalar (uniform or per lane)."""
    return int(np.broadcast_to(np.asarray(value).reshape(-1), (lanes.T,))[ln])


def _multicast_blocks(op: Op, lanes, mask: int, ln: int, what: str) -> list:
    """The blocks of lane ``ln``'s cluster whose ranks the multicast ``mask`` names (bits 0-15); naming none, or a
    rank outside the cluster, is a fault."""
    cx, cy, cz = cluster_dims(lanes.program)
    size = cx * cy * cz
    mask &= 0xFFFF
    ranks = [r for r in range(16) if mask >> r & 1]
    if not ranks or ranks[-1] >= size:
        raise lanes.fault(op, f"{what}: block mask 0x{mask:x} names no block or a rank outside the cluster of {size} "
                          f"block(s) (ranks 0-{size - 1})", ln)  # fmt: skip
    blocks = cluster_peer(lanes, np.full(len(ranks), ln // lanes.tpb, np.int64), np.array(ranks, np.int64))
    return [int(b) for b in blocks.tolist()]


def _tma_load(op: Op, cc: Compiler, multicast: bool):
    """``cp.async.bulk.tensor`` global → shared, completing the box's bytes on the mbarrier; ``multicast``
    (``.multicast::cluster``): the box read once, written at the same shared offset of every block of the cluster the
    mask names, each completing its bytes on its mbarrier at the barrier's offset."""
    d, dst, bar, *cs = cc.slots_of(op.operands)
    mk, cs = (cs[0], cs[1:]) if multicast else (None, cs)
    what = "multicast TMA load" if multicast else "TMA load"

    def step(env, lanes):
        for ln in active_lanes(lanes).tolist():
            row = np.asarray(env[d])
            f = _fields(lanes, op, row[0] if row.shape[0] == 1 else row[ln])
            s_off, b_off = _at(env[dst], lanes, ln), _at(env[bar], lanes, ln)
            own = [ln // lanes.tpb]
            blocks = _multicast_blocks(op, lanes, _at(env[mk], lanes, ln), ln, what) if multicast else own
            coords = _coords(lanes, op, env, cs, f, ln, "TMA load")
            for blk in blocks:
                smem = _smem(lanes, op, blk, s_off, f.box_bytes, ln, 128, what)
                tma_box_copy(lanes, op, f, smem, s_off, coords, to_smem=True)
                get_barrier(lanes, op, blk, b_off).complete_tx(f.box_bytes)
            if lanes.sched is not None:
                lanes.sched.bump()

    return step


@impl("nvvm.tma_load")
def tma_load(op: Op, cc: Compiler):
    """``cp.async.bulk.tensor`` global → shared, completing the box's bytes on the mbarrier."""
    return _tma_load(op, cc, multicast=False)


@impl("nvvm.tma_load_multicast")
def tma_load_multicast(op: Op, cc: Compiler):
    """``cp.async.bulk.tensor ... .multicast::cluster`` (:func:`_tma_load`)."""
    return _tma_load(op, cc, multicast=True)


@impl("nvvm.tma_store")
def tma_store(op: Op, cc: Compiler):
    """``cp.async.bulk.tensor`` shared → global; out-of-bounds elements are not written."""
    d, src, *cs = cc.slots_of(op.operands)

    def step(env, lanes):
        for ln in active_lanes(lanes).tolist():
            row = np.asarray(env[d])
            f = _fields(lanes, op, row[0] if row.shape[0] == 1 else row[ln])
            s_off = _at(env[src], lanes, ln)
            coords = _coords(lanes, op, env, cs, f, ln, "TMA store")
            if min(coords) < 0:
                raise lanes.fault(
                    op,
                    f"TMA store with box coordinates {tuple(coords)} (innermost dimension first): a store's box "
                    "must not start before the tensor, but a coordinate is negative (the GPU raises an "
                    "illegal-instruction error; only a TMA load may start there, zero-filling). Store at "
                    "coordinates >= 0: the box may run past the tensor's end (those elements are dropped)",
                    ln,
                )
            smem = _smem(lanes, op, ln // lanes.tpb, s_off, f.box_bytes, ln, 128, "TMA store")
            tma_box_copy(lanes, op, f, smem, s_off, coords, to_smem=False)

    return step


def _check_bulk(op: Op, lanes, ln: int, n: int, g_addr: int) -> None:
    """Lane ``ln``'s bulk copy moves a positive multiple of 16 bytes from/to a 16-byte aligned global address."""
    if n <= 0 or n % 16:
        raise lanes.fault(op, f"a bulk copy moves a positive multiple of 16 bytes, got {n}", ln)
    if g_addr % 16:
        raise lanes.fault(op, f"bulk copy: global address 0x{g_addr:x} is not 16-byte aligned", ln)


def _bulk(op: Op, cc: Compiler, to_smem: bool):
    if to_smem:
        dst, src, nb, bar = cc.slots_of(op.operands)
    else:
        dst, src, nb = cc.slots_of(op.operands)
        bar = None

    def step(env, lanes):
        for ln in active_lanes(lanes).tolist():
            n, d_addr, s_addr = (_at(env[s], lanes, ln) for s in (nb, dst, src))
            g_addr, s_off = (s_addr, d_addr) if to_smem else (d_addr, s_addr)
            _check_bulk(op, lanes, ln, n, g_addr)
            smem = _smem(lanes, op, ln // lanes.tpb, s_off, n, ln, 16, "bulk copy")
            ((buf, off, _),) = resolve(lanes, op, GLOBAL, np.array([g_addr], np.int64), np.array([ln]), 1, "i8",
                                       "read" if to_smem else "write", n)  # fmt: skip
            o = int(off[0])
            if to_smem:
                smem[s_off : s_off + n] = buf.u8[o : o + n]
                b = get_barrier(lanes, op, ln // lanes.tpb, _at(env[bar], lanes, ln))
                b.complete_tx(n)
                if lanes.sched is not None:
                    lanes.sched.bump()
            else:
                if not buf.u8.flags.writeable:
                    raise lanes.fault(op, f"bulk store into read-only buffer '{buf.name}'", ln)
                buf.u8[o : o + n] = smem[s_off : s_off + n]

    return step


@impl("nvvm.bulk_load")
def bulk_load(op: Op, cc: Compiler):
    """``cp.async.bulk`` global → shared, completing its bytes on the mbarrier."""
    return _bulk(op, cc, to_smem=True)


@impl("nvvm.bulk_load_multicast")
def bulk_load_multicast(op: Op, cc: Compiler):
    """``cp.async.bulk ... .multicast::cluster``: each active lane's copy reads the bytes once and writes them at
    the same shared offset of every block of its cluster whose rank's bit is set in the mask (bits 0-15; a rank
    outside the cluster is a fault), completing them on each such block's mbarrier at the barrier's offset."""
    dst, src, nb, bar, mk = cc.slots_of(op.operands)

    def step(env, lanes):
        for ln in active_lanes(lanes).tolist():
            n, s_off, g_addr, b_off = (_at(env[s], lanes, ln) for s in (nb, dst, src, bar))
            blocks = _multicast_blocks(op, lanes, _at(env[mk], lanes, ln), ln, "multicast bulk copy")
            _check_bulk(op, lanes, ln, n, g_addr)
            ((buf, off, _),) = resolve(lanes, op, GLOBAL, np.array([g_addr], np.int64), np.array([ln]), 1, "i8",
                                       "read", n)  # fmt: skip
            data = buf.u8[int(off[0]) : int(off[0]) + n].copy()
            for blk in blocks:
                smem = _smem(lanes, op, blk, s_off, n, ln, 16, "multicast bulk copy")
                smem[s_off : s_off + n] = data
                get_barrier(lanes, op, blk, b_off).complete_tx(n)
            if lanes.sched is not None:
                lanes.sched.bump()

    return step


@impl("nvvm.bulk_store")
def bulk_store(op: Op, cc: Compiler):
    """``cp.async.bulk`` shared → global."""
    return _bulk(op, cc, to_smem=False)


@impl("nvvm.tma_make_desc")
def tma_make_desc_in_kernel(op: Op, cc: Compiler):
    def step(env, lanes):
        raise lanes.fault(op, "TMA descriptors are made on the host (in the @flyc.jit launcher), not in a kernel", None)

    return step


# -- the host op ------------------------------------------------------------------------------------


def make_desc(op: Op, ptr: int, dims: list[int], estrides: list[int]) -> np.ndarray:
    """The canonical descriptor of ``tma_make_desc`` for run-time values (element strides → bytes)."""
    code, esize = TMA_DTYPES[str(PointerType.of(op.operands[0]).elem)]
    f = TmaFields(
        address=ptr,
        dtype_code=code,
        dims=dims,
        strides=[s * esize for s in estrides],
        box=op.attrs["box"],
        swizzle=op.attrs.get("swizzle", 0),
        oob_nan=op.attrs.get("oob_nan", False),
        l2_promotion=op.attrs.get("l2_promotion", 0),
    )
    err = f.check()
    if err:
        raise InterpError(f"cannot make a TMA descriptor: {err}", op=op)
    return tma_desc_encode(f)


def desc_maker(op: Op):
    """``make(ptr, *extents, *strides) -> descriptor`` for one ``tma_make_desc`` op, cached per argument tuple
    (a launcher called again with the same tensors gets the same record, ready for the encoder's cache)."""
    rank = len(op.attrs["box"])
    cache: OrderedDict = OrderedDict()

    def make(*key):
        d = cache.get(key)
        if d is None:
            d = cache[key] = make_desc(op, key[0], list(key[1 : 1 + rank]), list(key[1 + rank :]))
            if len(cache) > 64:
                cache.popitem(last=False)
        return d

    return make


def _host_make_desc(op: Op, g, indent: int) -> None:
    """``nvvm.tma_make_desc`` in a host function: the op's cached descriptor maker (:func:`desc_maker`)."""
    make = g.bind(desc_maker(op), "D")
    args = ", ".join(f"int({g.ref(x)})" for x in op.operands)
    g.emit(indent, f"{g.define(op.results[0])} = {make}({args})", op)


HOST_IMPLS["nvvm.tma_make_desc"] = _host_make_desc
