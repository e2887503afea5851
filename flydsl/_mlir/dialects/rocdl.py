"""``flydsl._mlir.dialects.rocdl``: the ROCDL operations FlyDSL code calls, on every target.

* Target-neutral in meaning, mapped to our ops (so the kernel runs on NVIDIA and the interpreter):
  buffer resources and raw buffer loads/stores (``MakeBufferRsrcOp``, ``RawPtrBufferLoadOp``,
  ``RawPtrBufferStoreOp``: AMD's bounds semantics, our ``ptr.buffer_*``), ``readfirstlane`` (the value
  of the lowest active lane), ``mbcnt_lo``/``mbcnt_hi`` (lane-mask prefix counts, hence lane ids),
  ``workitem_id_*``/``workgroup_id_*``/``workgroup_dim_*``, ``s_barrier``, ``ds_bpermute`` (a lane
  permute by byte address).
* Pure scheduling hints (``sched_barrier``, ``sched_group_barrier``, ``s_setprio``, ``iglp_opt`` and
  FlyDSL's ``sched_*`` helpers): no-ops — they order AMD instructions and change no result.
* AMD-only instructions (MFMA, WMMA, DPP, ``s_waitcnt``, LDS DMA, buffer atomics …): FLY501 at the
  user's line, naming the op and the target.
"""

from __future__ import annotations

from ... import ir as _ir
from ...dialects import arith as _a
from ...dialects import gpu as _g
from ...dialects import ptr as _p
from ...expr._compat import SyncScope
from ...ir import types as _t
from .. import ir
from ._ods import amd_only, build

__all__ = [
    "MakeBufferRsrcOp", "make_buffer_rsrc", "RawPtrBufferLoadOp", "raw_ptr_buffer_load", "RawPtrBufferStoreOp",
    "raw_ptr_buffer_store", "readfirstlane", "mbcnt_lo", "mbcnt_hi", "workitem_id_x", "workitem_id_y",
    "workitem_id_z", "workgroup_id_x", "workgroup_id_y", "workgroup_id_z", "workgroup_dim_x", "workgroup_dim_y",
    "workgroup_dim_z", "s_barrier", "barrier", "ds_bpermute", "SCHEDULING_HINTS", "AMD_ONLY", "SyncScope",
]  # fmt: skip


def _cast_int(v, t):
    """``v`` (an integer value) as integer type ``t`` (zero-extended or truncated)."""
    v = ir.unwrap(v)
    if v.type is t:
        return v
    if v.type.is_index or t.is_index:
        return build(_a.index_cast, [v], [t]).results[0]
    if v.type.bitwidth < t.bitwidth:
        return build(_a.extui, [v], [t]).results[0]
    return build(_a.trunci, [v], [t]).results[0]


def _global(p):
    p = ir.unwrap(p)
    t = p.type
    if isinstance(t, _t.PointerType) and t.space != _t.AddressSpace.GLOBAL:
        p = build(_p.cast, [p], [_t.PointerType(t.elem, _t.AddressSpace.GLOBAL)]).results[0]
    return p


def make_buffer_rsrc(res, base, stride, num_records, flags, *, loc=None, ip=None):
    """A buffer resource over ``base`` bounded at ``num_records`` bytes (stride and flags: AMD encoding
    details with no effect on the bounds semantics)."""
    n = _cast_int(num_records, _t.i64)
    return build(_p.buffer_rsrc, [_global(base), n], None, loc=loc, ip=ip).results[0]


def MakeBufferRsrcOp(res, base, stride, num_records, flags, *, loc=None, ip=None):
    return ir.OpView(make_buffer_rsrc(res, base, stride, num_records, flags, loc=loc, ip=ip).owner)


def _byte_offset(offset, soffset):
    off = _cast_int(offset, _t.i32)
    if soffset is not None:
        s = _cast_int(soffset, _t.i32)
        off = build(_a.addi, [off, s]).results[0]
    return off


def raw_ptr_buffer_load(res, rsrc, offset, soffset, aux, *, loc=None, ip=None):
    """``res`` read at byte ``offset + soffset`` of the resource (0 past ``num_records``)."""
    op = build(_p.buffer_load, [rsrc, _byte_offset(offset, soffset)], [ir._unwrap_type(res)], loc=loc, ip=ip)
    return ir.wrap(op.results[0])


def RawPtrBufferLoadOp(res, rsrc, offset, soffset, aux, *, loc=None, ip=None):
    v = raw_ptr_buffer_load(res, rsrc, offset, soffset, aux, loc=loc, ip=ip)
    return ir.OpView(ir.unwrap(v).owner)


def raw_ptr_buffer_store(vdata, rsrc, offset, soffset, aux, *, loc=None, ip=None):
    """Write ``vdata`` at byte ``offset + soffset`` (dropped past ``num_records``)."""
    build(_p.buffer_store, [vdata, rsrc, _byte_offset(offset, soffset)], [], loc=loc, ip=ip)


def RawPtrBufferStoreOp(vdata, rsrc, offset, soffset, aux, *, loc=None, ip=None):
    raw_ptr_buffer_store(vdata, rsrc, offset, soffset, aux, loc=loc, ip=ip)


def readfirstlane(res, src, *, loc=None, ip=None):
    """The value of ``src`` in the lowest-numbered active lane, in every lane."""
    from ...expr import gpu as fxg
    from ...expr import math as fxm

    first = fxm.cttz(fxg.vote_ballot(True))
    return fxg.shuffle_idx(ir.wrap(ir.unwrap(src)), first)


def _u32(x):
    from ...expr.numeric import Uint32

    if isinstance(x, int):
        return Uint32(x & 0xFFFFFFFF)
    return Uint32(ir.wrap(ir.unwrap(x))) if not getattr(x, "_is_numeric", False) else x.to(Uint32)


def _i32(x):
    from ...expr.numeric import Int32

    if isinstance(x, int):
        return Int32(x)
    return Int32(ir.wrap(ir.unwrap(x))) if not getattr(x, "_is_numeric", False) else x.to(Int32)


def _mbcnt(high: bool):
    def fn(res, mask, base, *, loc=None, ip=None):
        from ...expr import gpu as fxg
        from ...expr import math as fxm
        from ...expr.numeric import Int32, Uint32

        lane = Int32(fxg.lane_id() - (32 if high else 0))
        shift = (lane >= 32).select(Int32(31), (lane <= 0).select(Int32(0), lane)).to(Uint32)
        below = (Uint32(1) << shift) - Uint32(1)
        below = (lane >= 32).select(Uint32(0xFFFFFFFF), (lane <= 0).select(Uint32(0), below))
        return _i32(base) + fxm.ctpop(_u32(mask) & below).to(Int32)

    fn.__name__ = "mbcnt_hi" if high else "mbcnt_lo"
    fn.__doc__ = (
        f"``base`` + the number of set bits of ``mask`` below this lane ({'lanes 32-63' if high else 'lanes 0-31'})"
    )
    return fn


mbcnt_lo = _mbcnt(False)
mbcnt_hi = _mbcnt(True)


def _sreg(defn, dim):
    def fn(*args, loc=None, ip=None):
        return ir.wrap(build(defn, [], None, {"dimension": dim}, loc=loc, ip=ip).results[0])

    fn.__name__ = f"{defn.name}_{dim}"
    return fn


workitem_id_x, workitem_id_y, workitem_id_z = (_sreg(_g.thread_id, d) for d in "xyz")
workgroup_id_x, workgroup_id_y, workgroup_id_z = (_sreg(_g.block_id, d) for d in "xyz")
workgroup_dim_x, workgroup_dim_y, workgroup_dim_z = (_sreg(_g.block_dim, d) for d in "xyz")


def s_barrier(*, loc=None, ip=None) -> None:
    build(_g.barrier, [], [], loc=loc, ip=ip)


barrier = s_barrier


def ds_bpermute(res, index, src, *, loc=None, ip=None):
    """Every lane reads ``src`` from lane ``index // 4`` (the index is a byte address)."""
    from ...expr import gpu as fxg

    return fxg.shuffle_idx(ir.wrap(ir.unwrap(src)), _i32(index) >> 2)


def _hint(name):
    def fn(*args, **kwargs) -> None:
        """A scheduling hint for AMD's instruction scheduler: no effect on results; nothing to emit here."""

    fn.__name__ = name
    return fn


#: scheduling hints: no-ops on every target here
SCHEDULING_HINTS = (
    "sched_barrier", "sched_group_barrier", "s_setprio", "iglp_opt", "sched_mfma", "sched_vmem", "sched_dsrd",
    "sched_dswr", "sched_valu", "sched_salu", "s_sleep",
)  # fmt: skip
for _n in SCHEDULING_HINTS:
    globals()[_n] = _hint(_n)
__all__ += list(SCHEDULING_HINTS)

#: AMD-only instructions: FLY501 naming the op and the target
AMD_ONLY = {
    "s_waitcnt": "wait for outstanding memory counters",
    "s_barrier_signal": "split barrier (gfx12)",
    "s_barrier_wait": "split barrier (gfx12)",
    "update_dpp": "DPP cross-lane move",
    "mov_dpp": "DPP cross-lane move",
    "permlanex16": "cross-row lane permute",
    "raw_ptr_buffer_atomic_fadd": "buffer atomic add",
    "raw_ptr_buffer_atomic_fmax": "buffer atomic max",
    "raw_ptr_buffer_load_lds": "buffer load to LDS (DMA)",
    "global_load_lds": "global load to LDS (DMA)",
    "s_buffer_load": "scalar buffer load",
    "cvt_pk_fp8_f32": "packed fp8 conversion",
    "cvt_scalef32_pk_fp8_f32": "scaled fp8 conversion",
}
for _n, _what in AMD_ONLY.items():
    globals()[_n] = amd_only(f"rocdl.{_n}", _what)
__all__ += list(AMD_ONLY)


def __getattr__(name: str):
    """MFMA / WMMA / SMFMAC intrinsics (``mfma_f32_16x16x16f16`` …) and their op classes: FLY501."""
    low = name.lower()
    if low.startswith(("mfma", "wmma", "smfmac", "mfmaop", "wmmaop")) or "mfma" in low or "wmma" in low:
        return amd_only(f"rocdl.{name}", "matrix-core instruction", "fx.gemm with a portable MMA atom")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# keep the IR import used (type annotations of the builders)
_ = _ir
