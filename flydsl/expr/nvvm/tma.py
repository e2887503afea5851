"""TMA copies (``cp.async.bulk.tensor``) and 1-D bulk copies: ``fx.nvvm.make_tma_atom`` and friends.

CuTe DSL's ``cpasync.make_tiled_tma_atom(op, gmem_tensor, smem_layout, cta_tiler)`` makes the atom on the
host from a global tensor and the shared-memory layout of one tile; here::

    # in the @flyc.jit launcher (host): the descriptor is encoded there, cached per (pointer, shape,
    # strides, box, swizzle), and passed to the kernel as a 128-byte grid-constant parameter
    tma_a = fx.nvvm.make_tma_atom(A, sA_layout)            # A: (M, K) tensor; sA_layout: (BM, BK) smem layout
    kernel(tma_a, ...).launch(...)

    # in the kernel
    fx.nvvm.mbarrier_arrive_expect_tx(full, tma_a.tile_bytes)
    fx.nvvm.tma_load(tma_a, sA_stage, full, (m * BM, k * BK))          # element coordinates of the tile
    fx.copy(tma_a, tma_a.tile(m, k), sA_stage, mbar=full)              # the same, CuTe-style
    ...
    fx.nvvm.fence_proxy_async()                                        # smem written by threads ...
    fx.nvvm.tma_store(tma_c, sC, (m * BM, n * BN))                     # ... then read by TMA
    fx.nvvm.bulk_commit_group(); fx.nvvm.bulk_wait_group(0, read=True)

The box, the swizzle and the number of copies per tile are **derived from the shared-memory layout**
(:func:`flydsl.layout.gmma.tma_box_plan`): the layout must be one a TMA box writes (row after row along
the global tensor's unit-stride mode, with a 32/64/128-byte swizzle or none), which every layout from
:func:`~flydsl.expr.nvvm.wgmma.make_smem_layout_gmma` is. Elements outside the tensor load as zero (a
partial tile at the edge needs no masking) and are not stored. Two rules on the coordinates, where the
GPU raises a sticky illegal-instruction error otherwise: a copy's coordinate along the unit-stride mode
must be a multiple of 16 bytes, and a *store's* coordinates must not be negative (a load's may be: the
box part before the tensor is zero-filled; a store's box may run past the tensor's end, but not start
before its beginning — CUDA C++ Programming Guide, TMA, "Negative indices and out of bounds"). Static
coordinates are checked when tracing, run-time ones by the interpreter.
"""

from __future__ import annotations

from ... import layout as L
from ...dialects import nvvm_sm90 as _d
from ...dialects import scf
from ...ir import AddressSpace, InsertionPoint, Value
from ...layout import ComposedLayout, Layout
from ...layout.gmma import GmmaLayoutError, split_swizzle, tma_box_plan
from .._sem import iterators as _it
from ..layout_api import is_tensor
from ..numeric import Int32, Int64, Numeric, as_numeric
from ..pointer import Pointer, as_pointer
from ..tensor import Tensor
from ._common import _bar, _i32

__all__ = [
    "TmaAtom", "make_tma_atom", "tma_load", "tma_store", "tma_prefetch_descriptor", "bulk_copy_g2s",
    "bulk_copy_s2g", "bulk_prefetch_l2", "bulk_commit_group", "bulk_wait_group",
]  # fmt: skip

_L2 = {0: 0, 64: 1, 128: 2, 256: 3}


def _static_int(x):
    if isinstance(x, Numeric):
        return x.value if x.is_static() else None
    return x if type(x) is int else None


class TmaAtom:
    """A TMA copy of one tile between a global tensor and shared memory (load or store).

    Attributes (static): ``dtype``, ``smem_layout`` (one tile, ``(T0, T1)`` over the tensor's modes 0 and
    1), ``plan`` (:class:`~flydsl.layout.gmma.TmaBoxPlan`: box, swizzle, copies per tile), ``contiguous``
    (the tensor's unit-stride mode), ``rank``, ``kind`` ("load"/"store"), ``tile_bytes``. Run-time:
    the descriptor and ``shape`` (the tensor's extents). A DSL value: pass it to a kernel as an argument.
    An atom made with ``box_rows`` also has ``rows_plan`` and a second descriptor, ``rows_desc``, whose boxes
    span ``box_rows`` rows of the tile: :func:`tma_load`'s ``rows=`` loads only the row groups that hold data.
    """

    __slots__ = ("desc", "shape", "dtype", "smem_layout", "plan", "contiguous", "rank", "kind", "rows_desc",
                 "rows_plan")  # fmt: skip

    def __init__(self, desc, shape, dtype, smem_layout, plan, contiguous, rank, kind, rows_desc=None,
                 rows_plan=None):  # fmt: skip
        self.desc, self.shape, self.dtype, self.smem_layout = desc, tuple(shape), dtype, smem_layout
        self.plan, self.contiguous, self.rank, self.kind = plan, contiguous, rank, kind
        self.rows_desc, self.rows_plan = rows_desc, rows_plan

    @property
    def tile_bytes(self) -> int:
        """Bytes one tile moves (what a load adds to its mbarrier's transaction count)."""
        return self.plan.tile_bytes

    @property
    def tile_rows(self) -> int:
        """The tile's extent along the tensor's mode that is not unit-stride (its rows)."""
        return self.tile_shape[1 - self.contiguous]

    def whole_tile(self, rows):
        """Whether ``tma_load(self, ..., rows=rows)`` copies the whole tile: when the groups of ``box_rows`` rows that
        hold ``rows`` leave at most one group out (a group of rows past the tensor measured free on the H200, more
        cost about a read each). A Boolean: static for an int ``rows``; a kernel may branch on it once per tile and
        load without ``rows`` on the whole side (no per-copy test)."""
        br = self._rows_plan("whole_tile").box[1]
        return _rows(rows) > self.tile_rows - 2 * br

    def load_bytes(self, rows=None):
        """The bytes ``tma_load(self, ..., rows=rows)`` completes on its mbarrier: :attr:`tile_bytes` for the whole
        tile (``rows`` None, or :meth:`whole_tile`), else the groups of ``box_rows`` rows that cover ``rows`` (an int,
        or an Int32 at run time)."""
        if rows is None:
            return self.tile_bytes
        rp = self._rows_plan("load_bytes")
        br = rp.box[1]
        group = rp.tile_bytes // (self.tile_rows // br)
        r = _rows(rows)
        whole = self.whole_tile(r)
        if r.is_static():
            return self.tile_bytes if whole.value else -(-r.value // br) * group
        return whole.select(Int32(self.tile_bytes), (r + (br - 1)) // br * group)

    def _rows_plan(self, what: str):
        if self.rows_plan is None:
            raise ValueError(f"{what}(rows=...) needs a TMA atom made with box_rows= (make_tma_atom)")
        return self.rows_plan

    @property
    def tile_shape(self) -> tuple:
        s = self.smem_layout._shape
        return tuple(L.size(x) for x in s[:2])

    def tile(self, *tile_crd):
        """The coordinate tile of tile index ``tile_crd`` (CuTe: ``local_tile(tma_tensor, tile, crd)``): a
        coordinate tensor whose iterator is the tile's first element, what ``fx.copy(atom, ...)`` takes.
        Indices after the first two address the tensor's further (batch) modes one element at a time."""
        t0, t1 = self.tile_shape
        crd = [as_numeric(tile_crd[0]) * t0, as_numeric(tile_crd[1]) * t1] + [as_numeric(c) for c in tile_crd[2:]]
        return self.at(*crd)

    def at(self, *crd):
        """The coordinate tile whose first element is at element coordinates ``crd``."""
        c = list(crd) + [Int32(0)] * (self.rank - len(crd))
        return Tensor._make(_it.CoordIter(tuple(c)), Int32, L.make_identity_layout(self.tile_shape))

    # -- value protocol ------------------------------------------------------------------------------------
    def __fly_values__(self):
        descs = [self.desc] + ([self.rows_desc] if self.rows_plan is not None else [])
        return descs + [as_numeric(s).ir_value() for s in self.shape if _static_int(s) is None]

    def __fly_rebuild__(self, values) -> TmaAtom:
        it = iter(values)
        desc = next(it)
        rows_desc = next(it) if self.rows_plan is not None else None
        shape = [s if _static_int(s) is not None else Int32._make(next(it)) for s in self.shape]
        return TmaAtom(desc, shape, self.dtype, self.smem_layout, self.plan, self.contiguous, self.rank, self.kind,
                       rows_desc, self.rows_plan)  # fmt: skip

    def __fly_signature__(self):
        stat = tuple(_static_int(s) for s in self.shape)
        rows = None if self.rows_plan is None else (self.rows_plan.box, self.rows_plan.boxes)
        return ("TmaAtom", self.dtype, str(self.smem_layout), self.plan.box, self.plan.swizzle, self.plan.boxes,
                self.contiguous, self.rank, self.kind, stat, rows)  # fmt: skip

    def __fly_describe__(self) -> str:
        return f"TmaAtom({self.kind}, {self.dtype.__name__}, tile {self.tile_shape}, box {self.plan.box})"

    __repr__ = __fly_describe__

    # -- fx.copy ---------------------------------------------------------------------------------------------
    def __fly_copy_atom__(self, src, dst, *, pred=None, mbar=None, tma_bar_ptr=None, mcast_mask=None, **state):
        """``fx.copy(tma_atom, src, dst, mbar=bar)``: a load from a coordinate tile (``atom.tile(m, k)``) into
        shared memory (``mcast_mask=m``: into every block of the cluster that ``m`` names, :func:`tma_load`), or a
        store from shared memory into a coordinate tile."""
        if state:
            raise TypeError(f"fx.copy with a TMA atom takes mbar= and mcast_mask= (loads), got {sorted(state)}")
        if pred is not None:
            raise TypeError("a TMA copy has no predicate: elements outside the tensor are zero-filled (loads) "
                            "or dropped (stores)")  # fmt: skip
        bar = mbar if mbar is not None else tma_bar_ptr
        if self.kind == "load":
            tma_load(self, dst, bar, _coords_of(src), multicast_mask=mcast_mask)
        else:
            if bar is not None or mcast_mask is not None:
                raise TypeError("a TMA store completes through bulk_commit_group/bulk_wait_group, not an mbarrier, "
                                "and writes one block's tile (no mcast_mask)")  # fmt: skip
            tma_store(self, src, _coords_of(dst))


def _coords_of(t) -> tuple:
    if not is_tensor(t) or t.memspace != "coord":
        raise TypeError(f"the global side of a TMA copy is a coordinate tile (tma_atom.tile(m, k)), got {t!r}")
    c = t._it.crd
    return c if type(c) is tuple else (c,)


def make_tma_atom(tensor, smem_layout, *, store: bool = False, oob_fill: str = "zero", l2_promotion: int = 128,
                  box_rows: int | None = None):  # fmt: skip
    """A TMA atom for tiles of ``tensor`` stored in shared memory with ``smem_layout`` (host side, in the
    ``@flyc.jit`` launcher; CuTe DSL: ``cpasync.make_tiled_tma_atom``).

    Args:
        tensor: a global tensor of rank 2-5 whose mode 0 or 1 has unit stride; tiles cover modes 0 and 1,
            further modes (batch) are addressed one index per copy.
        smem_layout: the tile's shared-memory layout over (mode 0, mode 1) (a third mode, e.g. stages, is
            ignored): e.g. ``fx.nvvm.make_smem_layout_gmma(fx.BFloat16, (128, 64))``.
        store: a TMA store atom (shared → global) instead of a load.
        oob_fill: ``"zero"`` or ``"nan"`` for elements outside the tensor (loads).
        l2_promotion: 0, 64, 128 or 256 bytes of L2 promotion.
        box_rows: (loads) also encode boxes of this many of the tile's rows (along the mode that is not unit-stride;
            a divisor of the tile's rows), so that ``tma_load(..., rows=n)`` copies only the row groups holding the
            first ``n`` rows. The copy engine zero-fills rows past the tensor one by one in the queue of the SM's
            other copies: a GEMM whose 64-row tiles held 33 rows of the tensor ran slower than with all 64 there
            (bf16: 17-18 against 12.0 us on the H200, docs/hopper.md).

    Raises:
        GmmaLayoutError: the layout is not one a TMA box writes. ValueError: no unit-stride mode among the
            first two, static strides that are not multiples of 16 bytes, or a bad option.
    """
    if not is_tensor(tensor) or tensor.memspace != "global":
        raise TypeError(f"make_tma_atom needs a global-memory tensor, got {tensor!r}")
    if oob_fill not in ("zero", "nan") or l2_promotion not in _L2:
        raise ValueError(f"oob_fill is 'zero' or 'nan' and l2_promotion one of {sorted(_L2)}")
    lay = tensor.layout
    if isinstance(lay, ComposedLayout):
        raise ValueError("make_tma_atom: the global tensor must have a plain (unswizzled) layout")
    rank = L.rank(lay._shape) if type(lay._shape) is tuple else 1
    if not 2 <= rank <= 5:
        raise ValueError(f"make_tma_atom: a TMA tensor has 2 to 5 modes, got {rank} ({lay})")
    shape = [lay._shape[i] for i in range(rank)]
    stride = [lay._stride[i] for i in range(rank)]
    for s, d in zip(shape, stride):
        if type(s) is tuple or type(d) is tuple:
            raise ValueError(f"make_tma_atom: the tensor's modes must be flat, got {lay}")
    contig = next((i for i in (0, 1) if _static_int(stride[i]) == 1), None)
    if contig is None:
        raise ValueError(f"make_tma_atom: mode 0 or 1 of the tensor must have stride 1, got strides {lay._stride}")
    bits = tensor.dtype.width
    plan = tma_box_plan(_two_modes(smem_layout), bits, contig)
    e = bits // 8
    other = 1 - contig
    order = [contig, other] + list(range(2, rank))
    for i in order[1:]:
        si = _static_int(stride[i])
        if si is not None and (si * e) % 16:
            raise ValueError(
                f"make_tma_atom: mode {i} has a stride of {si * e} bytes; TMA needs multiples of 16 bytes "
                "(pad the rows of the tensor)"
            )
    box = [plan.box[0], plan.box[1]] + [1] * (rank - 2)
    ptr = tensor._it.ir_value()
    ops = [ptr] + [_as_i32(shape[i]) for i in order] + [_as_i64(stride[i]) for i in order[1:]]
    desc = _d.tma_make_desc(
        *ops, box=box, swizzle=plan.swizzle, oob_nan=oob_fill == "nan", l2_promotion=_L2[l2_promotion]
    )
    atom = TmaAtom(desc, shape, tensor.dtype, _two_modes(smem_layout), plan, contig, rank, "store" if store else "load")
    if box_rows is not None:
        rows = atom.tile_rows
        if store or type(box_rows) is not int or box_rows < 1 or rows % box_rows:
            raise ValueError(f"make_tma_atom: box_rows is for loads, a divisor of the tile's {rows} rows, got "
                             f"{box_rows!r}{' (a store atom)' if store else ''}")  # fmt: skip
        try:
            atom.rows_plan = tma_box_plan(atom.smem_layout, bits, contig, max_rows=box_rows)
        except GmmaLayoutError as ex:
            raise GmmaLayoutError(f"make_tma_atom: box_rows={box_rows}: {ex}") from None
        rbox = [atom.rows_plan.box[0], atom.rows_plan.box[1]] + [1] * (rank - 2)
        atom.rows_desc = _d.tma_make_desc(
            *ops, box=rbox, swizzle=plan.swizzle, oob_nan=oob_fill == "nan", l2_promotion=_L2[l2_promotion]
        )
    return atom


def _as_i32(x) -> Value:
    v = as_numeric(x)
    return (v if v.dtype is Int32 else v.to(Int32)).ir_value()


def _as_i64(x) -> Value:
    v = as_numeric(x)
    return (v if v.dtype is Int64 else v.to(Int64)).ir_value()


def _two_modes(layout):
    """Modes 0 and 1 of a tile layout (a trailing stage mode is dropped at index 0)."""
    sw, off, outer = split_swizzle(layout)
    if outer.rank > 2:
        outer = Layout._make(tuple(outer._shape[:2]), tuple(outer._stride[:2]))
    return outer if sw is None else ComposedLayout(sw, off, outer)


def _smem_base(t, atom: TmaAtom, what: str) -> Pointer:
    """The shared address the atom's layout starts at, for a tile tensor ``t`` laid out like the atom says."""
    if not is_tensor(t) or t.memspace != "shared":
        raise TypeError(f"{what}: the shared-memory side must be a shared tensor, got {t!r}")
    sw, off, outer = split_swizzle_dyn(t.layout)
    want_sw, want_off, want_outer = split_swizzle(atom.smem_layout)
    if sw != want_sw or L.coalesce(_first2(outer)) != L.coalesce(_first2(want_outer)):
        raise GmmaLayoutError(
            f"{what}: the shared tile {t.layout} is not laid out as the TMA atom's {atom.smem_layout}"
        )
    base = t._it
    return base if (type(off) is int and off == 0) else Pointer.__add__(base, off)


def _first2(outer):
    if type(outer._shape) is tuple and len(outer._shape) > 2:
        return Layout._make(tuple(outer._shape[:2]), tuple(outer._stride[:2]))
    return outer


def split_swizzle_dyn(layout):
    """Like :func:`split_swizzle`, allowing a run-time offset (a stage index folded into the layout)."""
    if isinstance(layout, ComposedLayout):
        return layout.inner, layout.offset, layout.outer
    return None, 0, layout


def _coords(atom: TmaAtom, coord) -> list:
    c = list(coord) if isinstance(coord, (tuple, list)) else [coord]
    if len(c) < 2:
        raise ValueError(f"a TMA copy needs the tile's coordinates in modes 0 and 1 (at least), got {coord!r}")
    while len(c) < atom.rank:
        c.append(0)
    if len(c) != atom.rank:
        raise ValueError(f"a rank-{atom.rank} TMA tensor takes {atom.rank} coordinates, got {coord!r}")
    return [as_numeric(x) for x in c]


def _check_inner_alignment(atom: TmaAtom, c) -> None:
    """A box must start at a 16-byte boundary along the tensor's unit-stride mode: the GPU raises an
    illegal-instruction error for a TMA copy whose innermost coordinate times the element size is not a
    multiple of 16 (negative coordinates are fine). Checked here when the coordinate is static, by the
    interpreter at run time otherwise."""
    x = _static_int(c[atom.contiguous])
    e = atom.dtype.width // 8
    if x is not None and (x * e) % 16:
        raise ValueError(
            f"a TMA box must start at a multiple of {16 // e} elements along mode {atom.contiguous} (the tensor's "
            f"unit-stride mode: 16 bytes of {atom.dtype.__name__}), got coordinate {x}; the GPU raises an "
            "illegal-instruction error for it. Start tiles at multiples of 16 bytes (e.g. tile indices times the "
            "tile size); a partial tile at the edge is fine (zero-filled / clipped)"
        )


def _check_store_not_negative(atom: TmaAtom, c) -> None:
    """A TMA store's box must not start before the tensor (the GPU raises an illegal-instruction error for
    a negative store coordinate, while a load zero-fills): checked here for static coordinates, by the
    interpreter at run time otherwise."""
    for i, x in enumerate(c):
        v = _static_int(x)
        if v is not None and v < 0:
            raise ValueError(
                f"a TMA store's box must not start before the tensor: coordinate {v} in mode {i} is negative "
                "(the GPU raises an illegal-instruction error for it; a TMA load may start there, its elements "
                "before the tensor load as zero). Store at coordinates >= 0: a box may run past the end of the "
                "tensor (the elements outside are dropped), not before its start"
            )


def _issue(atom: TmaAtom, base: Pointer, coord, bar, mask=None, rows=None) -> None:
    c = _coords(atom, coord)
    _check_inner_alignment(atom, c)
    if bar is None:
        _check_store_not_negative(atom, c)
    if rows is None:
        _issue_boxes(atom, atom.desc, atom.plan.boxes, base, c, bar, mask)
        return
    rp = atom._rows_plan("tma_load")
    r = _rows(rows)
    whole = atom.whole_tile(r)  # at most one group's rows missing: the tile's own boxes
    groups = sorted({co for _, _, co in rp.boxes if co < atom.tile_rows - 2 * rp.box[1]})  # (the others: whole)
    step = _group_step(rp)

    def some_groups():
        if step is not None and not r.is_static():  # one loop over the groups below r (small code)
            _issue_group_loop(atom, rp, step, base, c, bar, mask, (r + (rp.box[1] - 1)) // rp.box[1])
            return
        for g in groups:  # the groups that hold rows below r
            _when(r > g, lambda g=g: _issue_boxes(atom, atom.rows_desc, [b for b in rp.boxes if b[2] == g], base, c,
                                                  bar, mask))  # fmt: skip

    if whole.is_static():
        _issue_boxes(atom, atom.desc, atom.plan.boxes, base, c, bar, mask) if whole.value else some_groups()
        return
    op = scf.build_if(whole.ir_value(), with_else=True)
    with InsertionPoint(op.regions[0].blocks[0]):
        _issue_boxes(atom, atom.desc, atom.plan.boxes, base, c, bar, mask)
        scf.yield_()
    with InsertionPoint(op.regions[1].blocks[0]):
        some_groups()
        scf.yield_()


def _rows(rows) -> Numeric:
    """A ``rows=`` argument as an Int32, negative counts taken as 0 (no group, no bytes)."""
    r = as_numeric(rows)
    r = r if r.dtype is Int32 else r.to(Int32)
    if r.is_static():
        return Int32(max(0, r.value))
    return (r > 0).select(r, Int32(0))


def _group_step(rp):
    """The shared-memory element offset from one row group's boxes to the next's when it is the same for every group
    (the boxes of group ``g`` are group 0's moved by ``g`` times it: a loop can issue them), else None."""
    br = rp.box[1]
    first = [(s0, cc) for s0, cc, co in rp.boxes if co == 0]
    at = {(cc, co): s0 for s0, cc, co in rp.boxes}
    if len(at) == len(first):
        return 0
    step = at.get((first[0][1], br), 0) - first[0][0]
    ok = all(at.get((cc, co)) == s0 + co // br * step for s0, cc in first for co in {b[2] for b in rp.boxes})
    return step if ok else None


def _issue_group_loop(atom: TmaAtom, rp, step: int, base: Pointer, c, bar, mask, n) -> None:
    """Group 0's boxes moved by ``g`` groups, for ``g`` in ``range(n)`` (an ``scf.for``)."""
    op = scf.build_for(Int32(0).ir_value(), n.ir_value(), Int32(1).ir_value())
    body = op.regions[0].blocks[0]
    with InsertionPoint(body):
        g = Int32._make(body.args[0])
        first = [b for b in rp.boxes if b[2] == 0]
        _issue_boxes(atom, atom.rows_desc, first, base, c, bar, mask, shift=(g * step, g * rp.box[1]))
        scf.yield_()


def _when(cond, emit) -> None:
    """``emit()`` under ``cond`` (a Boolean numeric): at trace time when static, else in an ``scf.if``."""
    if cond.is_static():
        if cond.value:
            emit()
        return
    op = scf.build_if(cond.ir_value(), with_else=False)
    with InsertionPoint(op.regions[0].blocks[0]):
        emit()
        scf.yield_()


def _issue_boxes(atom: TmaAtom, desc, boxes, base: Pointer, c, bar, mask, shift=(0, 0)) -> None:
    """One copy per box ``(smem element offset, coordinate offsets)`` of ``boxes``, every box moved by ``shift``
    (shared elements, rows: run-time values in a loop over row groups)."""
    contig, other = atom.contiguous, 1 - atom.contiguous
    rest = [x.ir_value() if x.dtype is Int32 else x.to(Int32).ir_value() for x in c[2:]]
    for s_off, cc, co in boxes:
        s_off, co = shift[0] + s_off, shift[1] + co
        p = base if type(s_off) is int and s_off == 0 else Pointer.__add__(base, s_off)
        crd = [_as_i32(c[contig] + cc), _as_i32(c[other] + co)] + rest
        if bar is None:
            _d.tma_store(desc, p.ir_value(), *crd)
        elif mask is not None:
            _d.tma_load_multicast(desc, p.ir_value(), bar.ir_value(), mask, *crd)
        else:
            _d.tma_load(desc, p.ir_value(), bar.ir_value(), *crd)


def _multicast_mask(multicast_mask):
    """The i32 IR value of a multicast block mask (None: no multicast); a static one must name 1-16 blocks."""
    if multicast_mask is None:
        return None
    m = _static_int(as_numeric(multicast_mask))
    if m is not None and not 0 < m < 1 << 16:
        raise ValueError(f"a multicast mask names 1-16 blocks of the cluster (bits 0-15), got {m:#x}")
    return _i32(multicast_mask, "the multicast mask")


def tma_load(atom: TmaAtom, dst, mbar, coord, *, rows=None, multicast_mask=None) -> None:
    """Load the tile whose first element is at ``coord`` (element coordinates in the tensor's modes) into
    the shared tensor ``dst`` (laid out as the atom's ``smem_layout``), completing ``atom.tile_bytes``
    on ``mbar``. Issue it from one thread (e.g. under ``fx.nvvm.elect_one()``).

    ``multicast_mask`` (sm_90, a cluster launch): the tile is read once and lands at ``dst``'s offset in the shared
    memory of every block of the cluster whose rank (:func:`cluster_ctarank`) has its bit set (bits 0-15), each
    completing its bytes on its own mbarrier at ``mbar``'s offset — every receiver arms its own barrier for them
    (``.multicast::cluster``; one L2 read for the cluster, as CUTLASS's multicast TMA of a GEMM's shared operand).

    ``rows`` (an atom made with ``box_rows``; an int or a run-time Int32): only the tile's first ``rows`` rows
    are wanted — e.g. the rows before the end of the tensor. The load copies the whole tile when at most one
    group of ``box_rows`` rows would be left out (:meth:`TmaAtom.whole_tile`), else only the groups holding those
    rows (rows past the tensor within them zero-filled); the shared rows of the groups left out keep what they held.
    It completes ``atom.load_bytes(rows)`` on ``mbar``."""
    if not isinstance(atom, TmaAtom) or atom.kind != "load":
        raise TypeError(f"tma_load needs a load TmaAtom (make_tma_atom(...)), got {atom!r}")
    _issue(atom, _smem_base(dst, atom, "tma_load"), coord, _bar(mbar), _multicast_mask(multicast_mask), rows)


def tma_store(atom: TmaAtom, src, coord) -> None:
    """Store the shared tensor ``src`` into the tile at ``coord``; out-of-bounds elements are dropped.
    ``coord`` must not be negative in any mode (the box may run past the tensor's end, not start before it).
    Precede it with ``fence_proxy_async()`` (and a barrier) after the threads wrote ``src``; follow with
    ``bulk_commit_group()`` and, before ``src`` is overwritten, ``bulk_wait_group(0, read=True)``."""
    if not isinstance(atom, TmaAtom) or atom.kind != "store":
        raise TypeError(f"tma_store needs a store TmaAtom (make_tma_atom(..., store=True)), got {atom!r}")
    _issue(atom, _smem_base(src, atom, "tma_store"), coord, None)


def tma_prefetch_descriptor(atom: TmaAtom) -> None:
    """Prefetch the atom's descriptor(s) (``prefetch.tensormap``), e.g. once at kernel start."""
    _d.tma_prefetch_desc(atom.desc)
    if atom.rows_plan is not None:
        _d.tma_prefetch_desc(atom.rows_desc)


def _ptr(x, space: int, what: str) -> Pointer:
    p = as_pointer(x)
    if p.address_space != space:
        raise TypeError(f"{what} must be a {AddressSpace.NAMES[space]} pointer, got a {p.memspace} one")
    return p


def bulk_copy_g2s(dst, src, nbytes, mbar, *, multicast_mask=None) -> None:
    """1-D bulk copy of ``nbytes`` (a multiple of 16, 16-byte aligned addresses) from global ``src`` to
    shared ``dst``, completing its bytes on ``mbar`` (``cp.async.bulk``; no descriptor).

    ``multicast_mask`` (sm_90, a cluster launch): the bytes are read once and land at ``dst``'s offset in the
    shared memory of every block of the cluster whose rank (:func:`cluster_ctarank`) has its bit set (bits 0-15),
    each completing them on its own mbarrier at ``mbar``'s offset — so every receiver arms its own barrier
    (``mbarrier_arrive_expect_tx``) for the bytes, and no receiver may reuse ``dst`` before it has waited
    (``.multicast::cluster``; one L2 read for the whole cluster)."""
    n = _static_int(as_numeric(nbytes))
    if n is not None and (n <= 0 or n % 16):
        raise ValueError(f"a bulk copy moves a positive multiple of 16 bytes, got {n}")
    d = _ptr(dst, AddressSpace.SHARED, "the destination")
    s = _ptr(src, AddressSpace.GLOBAL, "the source")
    ops = [d.ir_value(), s.ir_value(), _i32(nbytes, "the byte count"), _bar(mbar).ir_value()]
    if multicast_mask is None:
        _d.bulk_load(*ops)
        return
    _d.bulk_load_multicast(*ops, _multicast_mask(multicast_mask))


def bulk_prefetch_l2(src, nbytes) -> None:
    """Bring ``nbytes`` (a multiple of 16) of global memory at ``src`` (16-byte aligned) into L2, with no
    destination and nothing to wait for (``cp.async.bulk.prefetch.L2``): later loads of them hit L2."""
    n = _static_int(as_numeric(nbytes))
    if n is not None and (n <= 0 or n % 16):
        raise ValueError(f"a bulk prefetch moves a positive multiple of 16 bytes, got {n}")
    s = _ptr(src, AddressSpace.GLOBAL, "the source")
    _d.bulk_prefetch_l2(s.ir_value(), _i32(nbytes, "the byte count"))


def bulk_copy_s2g(dst, src, nbytes) -> None:
    """1-D bulk copy of ``nbytes`` from shared ``src`` to global ``dst`` (a bulk async-group member)."""
    n = _static_int(as_numeric(nbytes))
    if n is not None and (n <= 0 or n % 16):
        raise ValueError(f"a bulk copy moves a positive multiple of 16 bytes, got {n}")
    d = _ptr(dst, AddressSpace.GLOBAL, "the destination")
    s = _ptr(src, AddressSpace.SHARED, "the source")
    _d.bulk_store(d.ir_value(), s.ir_value(), _i32(nbytes, "the byte count"))


def bulk_commit_group() -> None:
    """Close the group of bulk/TMA stores issued since the last commit (``cp.async.bulk.commit_group``)."""
    _d.bulk_commit()


def bulk_wait_group(pending: int = 0, *, read: bool = False) -> None:
    """Wait until at most ``pending`` bulk groups are in flight; ``read=True`` waits only until their
    shared-memory sources were read (enough to overwrite the buffer)."""
    if type(pending) is not int or not 0 <= pending <= 63:
        raise ValueError(f"bulk_wait_group takes a static count in [0, 63], got {pending!r}")
    _d.bulk_wait(pending=pending, read=bool(read))
