"""Copy atoms and tiled copies: ``fx.make_copy_atom``, ``fx.make_tiled_copy(_tv)``, ``fx.copy``.

A *copy atom* is one data-movement instruction: ``UniversalCopy128b`` moves 128 bits, i.e.
``128 / elem_bits`` contiguous elements, as ONE vector access (``ptr.load`` of ``vector<4xf32>`` with
``align = 16`` for Float32 → ``ld.global.v4.f32``). Statically checkable facts (contiguity of the
atom's elements, static offsets, a base alignment known exactly) are checked at trace time. In shared
and local memory the atom asserts its alignment (the interpreter checks it); in global memory the access
claims only the alignment the specialization proves (the argument's alignment carried through the
offsets) and, where that is less than the atom's size, tests the address at run time: the vector
instruction when it is aligned, narrower accesses otherwise (see :func:`_claim`), so an argument with a
storage offset is read correctly instead of faulting.

A *tiled copy* spreads a ``tile_mn`` tile over threads with a thread-value layout ``layout_tv``
(``(thread, value) -> colexicographic index in the tile``; ``make_tiled_copy_tv(atom, thr, val)`` builds
it with CuTe's ``make_layout_tv``). ``tiled_copy.get_slice(tid).partition_S(t)`` views thread ``tid``'s
part of ``t`` as ``((AtomVal, RestVal), RestM, RestN, …)`` — CuTe's ``tidfrg_S`` — and
``fx.copy(atom, src, dst, pred=p)`` issues one atom per element of the modes after the atom's values,
skipping (neither reading nor writing) the calls whose predicate ``p[i]`` is false.

Everything here is static layout algebra done at trace time; only the thread index and run-time
extents become IR.
"""

from __future__ import annotations

from .. import layout as L
from ..layout import ComposedLayout, Layout, Swizzle, Tile
from ..layout.inttuple import iadd
from ._sem.inttuple import StaticInt, as_tiler, is_tensor
from ._sem.iterators import MemIter
from ._sem.numeric import Numeric, numeric_type_of
from .layout_api import make_layout_tv

__all__ = [
    "CopyOp", "UniversalCopy", "UniversalCopy8b", "UniversalCopy16b", "UniversalCopy32b", "UniversalCopy64b",
    "UniversalCopy128b", "CopyAtom", "TiledCopy", "ThrCopy", "make_copy_atom", "make_tiled_copy",
    "make_tiled_copy_tv", "make_layout_tv", "copy", "copy_atom_call", "CopyError",
]  # fmt: skip


class CopyError(ValueError):
    """A copy whose tensors cannot be moved by the chosen atom (sizes, contiguity, alignment, types)."""


# ---------------------------------------------------------------------------------------------------------
# Copy operations and atoms
# ---------------------------------------------------------------------------------------------------------


class CopyOp:
    """A data-movement instruction of ``bits`` per thread (what ``make_copy_atom`` specializes).

    ``kind``: ``"universal"`` (plain loads/stores, any memory) or ``"buffer"`` (AMD buffer semantics: the
    global side must be a buffer tensor from ``fx.rocdl.make_buffer_tensor``).

    The copy-op protocol (CuTe's ``Copy_Traits``), which other ops implement by subclassing
    (``fx.nvvm.LdMatrix8x8x16bOp``, ``fx.nvvm.CopyG2SOp`` …):

    * ``thr_id``: the atom's threads (``1:0`` for one thread, ``32:1`` for a warp-collective op);
    * ``layouts_bits()``: ``(src, dst, ref)`` thread-value layouts in **bits**: ``(thr, bit) -> bit index``
      in the atom's reference tile (``make_copy_atom`` recasts them to elements); ``ref`` is the
      layout partitions and ``retile`` follow (the destination for ``ldmatrix``);
    * ``call(atom, src, dst, pred)``: emit one call on this thread's values (``src``/``dst`` are tensors
      of exactly the atom's source/destination values; ``pred`` None or a Boolean). Ops that keep
      ``call = None`` are plain vector loads and stores (or buffer accesses), done by ``fx.copy``.
    """

    __slots__ = ("bits", "kind", "cache_modifier", "cache")
    _KINDS = {"universal": "UniversalCopy", "buffer": "BufferCopy"}
    call = None
    thr_id = Layout._make(1, 0)

    def layouts_bits(self) -> tuple:
        """``(src, dst, ref)``: one thread moving ``bits`` contiguous bits."""
        lay = Layout._make((1, self.bits), (0, 1))
        return lay, lay, lay

    def __init__(self, bits: int, kind: str = "universal", cache_modifier: int = 0, cache: str = ""):
        if type(bits) is not int or bits < 8 or bits & (bits - 1):
            raise ValueError(f"a copy moves 8, 16, 32, 64 or 128 bits (a power of two >= 8), got {bits!r}")
        if bits > 128:
            raise ValueError(f"a copy atom moves at most 128 bits per thread (one vector access), got {bits}")
        if kind not in self._KINDS:
            raise ValueError(f"unknown copy kind {kind!r}")
        if cache not in ("", "cs", "cg"):
            raise ValueError(f"a universal copy's cache hint is 'cs' (streaming) or 'cg' (L2 only), got {cache!r}")
        self.bits, self.kind, self.cache_modifier, self.cache = bits, kind, int(cache_modifier), cache

    @property
    def name(self) -> str:
        return f"{self._KINDS[self.kind]}{self.bits}b"

    def __eq__(self, other):
        return type(other) is CopyOp and (self.bits, self.kind, self.cache_modifier, self.cache) == (
            other.bits,
            other.kind,
            other.cache_modifier,
            other.cache,
        )

    def __hash__(self):
        return hash(("CopyOp", self.bits, self.kind, self.cache_modifier, self.cache))

    def __repr__(self) -> str:
        return f"{self.name}()"


def UniversalCopy(bits: int, cache: str = "") -> CopyOp:
    """A plain copy of ``bits`` per thread (8/16/32/64/128): one (vector) load and one store.

    ``cache`` (an extension; NVIDIA targets): ``"cs"`` marks the global accesses streaming (``ld/st.global.cs``:
    evict first, for data touched once), ``"cg"`` caches them in L2 only. The hint applies to unpredicated
    accesses of 2-16 aligned bytes; predicated ones and other memory spaces are plain (a hint is a hint)."""
    return CopyOp(bits, "universal", cache=cache)


def UniversalCopy8b() -> CopyOp:
    """``UniversalCopy(8)``."""
    return CopyOp(8)


def UniversalCopy16b() -> CopyOp:
    """``UniversalCopy(16)``."""
    return CopyOp(16)


def UniversalCopy32b() -> CopyOp:
    """``UniversalCopy(32)``."""
    return CopyOp(32)


def UniversalCopy64b() -> CopyOp:
    """``UniversalCopy(64)``."""
    return CopyOp(64)


def UniversalCopy128b() -> CopyOp:
    """``UniversalCopy(128)``: four Float32 (eight 16-bit) elements as one 16-byte vector access."""
    return CopyOp(128)


class CopyAtom:
    """A copy op specialized to an element type: each of its ``size(thr_layout)`` threads moves
    ``num_vals_src`` elements from the source and ``num_vals_dst`` to the destination per call.

    Introspection as FlyDSL: ``thr_layout`` (``1:0`` for one thread), ``tv_layout_src``/``tv_layout_dst``/
    ``tv_layout_ref`` (``(thr, val) -> element`` of the atom's tile: ``(1, num_vals):(0, 1)`` for a
    one-thread op of ``num_vals`` contiguous values).
    """

    __slots__ = ("op", "dtype", "val_bits", "_tvs")

    def __init__(self, op: CopyOp, dtype, val_bits: int):
        self.op, self.dtype, self.val_bits = op, dtype, val_bits
        self._tvs = tuple(L.upcast(lay, val_bits) for lay in op.layouts_bits())

    @property
    def num_vals(self) -> int:
        """Values per thread and call in the reference layout (the destination's for ``ldmatrix``)."""
        return _vals(self._tvs[2])

    @property
    def num_vals_src(self) -> int:
        return _vals(self._tvs[0])

    @property
    def num_vals_dst(self) -> int:
        return _vals(self._tvs[1])

    @property
    def thr_layout(self) -> Layout:
        return self.op.thr_id

    @property
    def num_threads(self) -> int:
        return L.size(self.op.thr_id)

    @property
    def tv_layout_src(self) -> Layout:
        return self._tvs[0]

    @property
    def tv_layout_dst(self) -> Layout:
        return self._tvs[1]

    @property
    def tv_layout_ref(self) -> Layout:
        return self._tvs[2]

    layout_src_tv, layout_dst_tv, layout_ref_tv = tv_layout_src, tv_layout_dst, tv_layout_ref

    def vals_for(self, dtype, side: str = "ref") -> int:
        """Elements of ``dtype`` per call on ``side`` (checks the element width against the atom's)."""
        if dtype.width != self.val_bits:
            raise CopyError(
                f"{self} copies {self.val_bits}-bit elements, but the tensors hold {dtype.__name__} "
                f"({dtype.width} bits); make the atom with fx.make_copy_atom(op, {dtype.__name__})"
            )
        return {"src": self.num_vals_src, "dst": self.num_vals_dst}.get(side, self.num_vals)

    def __eq__(self, other):
        return type(other) is CopyAtom and (self.op, self.dtype, self.val_bits) == (
            other.op,
            other.dtype,
            other.val_bits,
        )

    def __hash__(self):
        return hash(("CopyAtom", self.op, self.dtype, self.val_bits))

    def __repr__(self) -> str:
        d = self.dtype.__name__ if self.dtype is not None else f"{self.val_bits}b"
        return f"CopyAtom({self.op.name}, {d})"


def _vals(tv: Layout) -> int:
    return L.size(tv, 1) if type(tv._shape) is tuple else 1


def make_copy_atom(copy_op: CopyOp, elem_type) -> CopyAtom:
    """The atom of ``copy_op`` for elements of ``elem_type``.

    Args:
        copy_op: ``fx.UniversalCopy128b()`` … or ``fx.rocdl.BufferCopy32b()`` ….
        elem_type: a Numeric class (``fx.Float32``), an IR type with a width (``fx.T.f32()``) or a bit
            width (int).

    Raises:
        ValueError: the op's width is not a multiple of the element width. TypeError: bad arguments.
    """
    if not isinstance(copy_op, CopyOp):
        raise TypeError(f"make_copy_atom needs a copy op such as fx.UniversalCopy128b(), got {copy_op!r}")
    if isinstance(elem_type, type) and issubclass(elem_type, Numeric):
        dtype, bits = elem_type, elem_type.width
    elif isinstance(elem_type, int) and not isinstance(elem_type, bool):
        dtype, bits = None, int(elem_type)
    elif hasattr(elem_type, "bitwidth"):
        dtype = numeric_type_of(elem_type)
        bits = dtype.width
    else:
        raise TypeError(f"make_copy_atom: elem_type must be a Numeric class, IR type or bit count, got {elem_type!r}")
    if bits <= 0 or copy_op.bits % bits:
        raise ValueError(f"{copy_op.name} cannot move whole {bits}-bit elements ({copy_op.bits} % {bits} != 0)")
    check = getattr(copy_op, "check_elem_bits", None)
    if check is not None:
        check(bits)
    return CopyAtom(copy_op, dtype, bits)


# ---------------------------------------------------------------------------------------------------------
# Tiled copies
# ---------------------------------------------------------------------------------------------------------


def _tile_sizes(tile):
    """``(8, 64)`` for a tiler of sizes or ``n:1`` layouts; None when a mode is another layout."""
    out = []
    for m in tile if type(tile) is tuple else (tile,):
        if type(m) is int:
            out.append(m)
        elif isinstance(m, Layout) and type(m._shape) is int and m._stride == 1:
            out.append(m._shape)
        else:
            return None
    return tuple(out)


class TiledCopy:
    """A copy atom tiled over threads: ``layout_tv`` maps (thread, value) to the colexicographic index in
    the ``tile_mn`` tile. Static and hashable (it may be passed to a kernel as an argument)."""

    __slots__ = ("atom", "_tv", "_tile")

    def __init__(self, atom: CopyAtom, layout_tv: Layout, tile_mn):
        if not isinstance(atom, CopyAtom):
            raise TypeError(f"a tiled copy needs a CopyAtom (fx.make_copy_atom), got {atom!r}")
        if not isinstance(layout_tv, Layout) or not layout_tv.is_static:
            raise ValueError(f"a tiled copy needs a static thread-value layout, got {layout_tv!r}")

        tile = as_tiler(tile_mn)
        tile = tile if type(tile) is tuple else (tile,)
        sizes = _tile_sizes(tile)
        self.atom, self._tv, self._tile = atom, layout_tv, sizes if sizes is not None else tile
        nval = L.size(layout_tv, 1) if type(layout_tv._shape) is tuple else 1
        if nval % atom.num_vals:
            raise ValueError(
                f"{atom} moves {atom.num_vals} values per call, but layout_tv {layout_tv} gives each thread "
                f"{nval}; use a value layout whose size is a multiple of {atom.num_vals}"
            )
        nthr = L.size(layout_tv, 0) if type(layout_tv._shape) is tuple else layout_tv._shape
        if nthr % atom.num_threads:
            raise ValueError(
                f"{atom} is executed by {atom.num_threads} threads together, but layout_tv {layout_tv} spans "
                f"{nthr}; use a multiple of {atom.num_threads} threads"
            )

    @property
    def layout_tv(self) -> Layout:
        """(thread, value) -> index in the tile."""
        return self._tv

    tiled_tv_layout_S = tiled_tv_layout_D = layout_tv

    @property
    def tile_mn(self):
        """The tile, a :class:`Tile` of one mode per dimension (FlyDSL's): sizes where the tiler's modes are
        unit-stride (``tile_m, tile_n = tiled.tile_mn.unpack()``), else the tiler's modes."""
        return Tile(self._tile)

    @property
    def num_threads(self) -> int:
        """Threads the tiled copy spans (``size(layout_tv, 0)``)."""
        return StaticInt(L.size(self._tv, 0) if type(self._tv._shape) is tuple else self._tv._shape)

    size = num_threads

    def get_slice(self, thr_idx) -> ThrCopy:
        """Thread ``thr_idx``'s view (a run-time ``Int32`` or an int)."""
        return ThrCopy(self, thr_idx)

    thr_slice = get_slice

    def _thrval2mn(self, side: str) -> Layout:
        """``(thread, (atom_val, rest_val)) -> tile index`` for the ``side`` ("src"/"dst") of the atom
        (CuTe's ``tile2thrfrg``: the tiled TV layout cut into atom calls, each atom's reference values
        mapped to the side's values, threads coalesced)."""
        atom = self.atom
        trg = atom.tv_layout_src if side == "src" else atom.tv_layout_dst
        ref2trg = L.composition(L.right_inverse(atom.tv_layout_ref), trg)
        a = L.zipped_divide(self._tv, (atom.num_threads, atom.num_vals))  # ((atom_t, atom_v), (rest_t, rest_v))
        a = L.composition(a, (ref2trg, None))  # ((trg_t, trg_v), (rest_t, rest_v))
        thr = L.coalesce(L.make_layout(L.get(a, 0, 0), L.get(a, 1, 0)))
        val = L.make_layout(L.coalesce(L.get(a, 0, 1)), L.coalesce(L.get(a, 1, 1)))
        return L.make_layout(thr, val)

    def tidfrg(self, layout, side: str = "src"):
        """``layout`` (M, N, …) as ``(Thr, (AtomVal, RestVal), (RestM, RestN, …))`` (CuTe's ``tidfrg_S`` /
        ``tidfrg_D``)."""
        z = L.zipped_divide(layout, self._tile)
        tv = L.composition(z, (self._thrval2mn(side), None))
        if isinstance(tv, ComposedLayout):
            return ComposedLayout(tv.inner, tv.offset, _unfold(tv.outer))
        return _unfold(tv)

    def partition(self, t, thr_idx, side: str = "src"):
        """Thread ``thr_idx``'s part of tensor ``t``: ``((AtomVal, RestVal), RestM, RestN, …)``."""
        if not is_tensor(t):
            raise TypeError(f"partition_S/partition_D take a tensor, got {t!r}")
        frg = t._with_layout(self.tidfrg(t.layout, side))
        rest = L.rank(L.get(frg.layout, 2)._shape) if type(L.get(frg.layout, 2)._shape) is tuple else 1
        return frg._slice((thr_idx, None, (None,) * rest if rest > 1 else None))

    def retile(self, t):
        """A thread's fragment ``(V, RestM, RestN, …)`` — its values in the order of this copy's thread-value
        layout, e.g. an MMA fragment for a copy made by ``make_tiled_copy_A`` — regrouped as
        ``((AtomVal, RestVal), RestM, RestN, …)`` for ``fx.copy`` (CuTe's ``retile``)."""
        if not is_tensor(t):
            raise TypeError(f"retile takes a tensor, got {t!r}")
        lay = t.layout
        modes = list(lay) if type(lay._shape) is tuple else [lay]
        v = L.size(modes[0])
        n = self.atom.num_vals
        if type(v) is not int or (v % n and n % v):
            raise CopyError(f"retile: the first mode of {t} holds {v} values, which do not group into calls of {n}")
        tile = _tile_sizes(self._tile) or tuple(L.size(m) for m in self._tile)
        nthr = L.size(self._tv, 0) if type(self._tv._shape) is tuple else self._tv._shape
        inv = L.right_inverse(self._tv).with_shape(tile)
        frg_mn = L.upcast(inv, nthr * v)  # (m, n) -> which group of v values
        frg_v = L.zipped_divide(L.logical_product(Layout._make(v, 1), L.right_inverse(frg_mn)), Layout._make(n, 1))
        tiler = (v,) + tuple(L.product_each(frg_mn._shape) if type(frg_mn._shape) is tuple else (frg_mn._shape,))
        rank = len(modes)
        padded = L.make_layout(*modes, *([Layout._make(1, 0)] * max(0, len(tiler) - rank)))
        vt = L.composition(L.zipped_divide(padded, tiler), (frg_v, None))  # ((atom_v, rest_v), (1, RM, RN, ...))
        rest = L.get(vt, 1)
        rest_modes = list(rest)[1:rank] if type(rest._shape) is tuple else []
        return t._with_layout(L.make_layout(L.get(vt, 0), *rest_modes))

    def __eq__(self, other):
        return type(other) is TiledCopy and (self.atom, self._tv, self._tile) == (other.atom, other._tv, other._tile)

    def __hash__(self):
        return hash(("TiledCopy", self.atom, self._tv, self._tile))

    def __repr__(self) -> str:
        return f"TiledCopy({self.atom}, layout_tv={self._tv}, tile_mn={L.format_int_tuple(self._tile)})"


def _unfold(tv: Layout) -> Layout:
    """``((Thr, Val), Rest)`` -> ``(Thr, Val, Rest)``."""
    return L.make_layout(L.get(tv, 0, 0), L.get(tv, 0, 1), L.get(tv, 1))


class ThrCopy:
    """One thread's view of a TiledCopy: ``partition_S``/``partition_D``/``retile``."""

    __slots__ = ("tiled_copy", "thr_idx")

    def __init__(self, tiled_copy: TiledCopy, thr_idx):
        self.tiled_copy, self.thr_idx = tiled_copy, thr_idx

    @property
    def atom(self) -> CopyAtom:
        return self.tiled_copy.atom

    def partition_S(self, src):
        """This thread's part of the source: ``((AtomVal, RestVal), RestM, RestN, …)``."""
        return self.tiled_copy.partition(src, self.thr_idx, "src")

    def partition_D(self, dst):
        """This thread's part of the destination (the atom's destination values)."""
        return self.tiled_copy.partition(dst, self.thr_idx, "dst")

    def retile(self, t):
        """See :meth:`TiledCopy.retile`."""
        return self.tiled_copy.retile(t)

    retile_S = retile_D = retile

    def __repr__(self) -> str:
        return f"ThrCopy({self.tiled_copy}, thr={self.thr_idx})"


def make_tiled_copy(atom: CopyAtom, layout_tv: Layout, tile_mn) -> TiledCopy:
    """A tiled copy from a thread-value layout and its tile (CuTe's ``make_tiled_copy_impl``).

    Raises:
        ValueError: a run-time layout, or threads holding a number of values the atom does not divide.
    """
    return TiledCopy(atom, layout_tv, tile_mn)


def make_tiled_copy_tv(atom: CopyAtom, thr_layout: Layout, val_layout: Layout) -> TiledCopy:
    """A tiled copy with ``thr_layout`` threads each moving a ``val_layout`` block of values.

    ``(tile_mn, layout_tv) = make_layout_tv(thr_layout, val_layout)``: e.g. threads
    ``make_ordered_layout((8, 16), (1, 0))`` and values ``(1, 4)`` give an (8, 64) tile whose rows are
    read with one 128-bit access per thread.
    """
    tile, tv = make_layout_tv(thr_layout, val_layout)
    return TiledCopy(atom, tv, tuple(tile))


# ---------------------------------------------------------------------------------------------------------
# fx.copy
# ---------------------------------------------------------------------------------------------------------


def _modes(lay) -> list:
    return list(lay) if type(lay._shape) is tuple else [lay]


def _split(lay: Layout, n: int, side: str, atom: CopyAtom) -> tuple:
    """``(atom mode, rest modes)``: the leading ``n`` values of ``lay`` (CuTe's recursive peel of mode 0)."""
    modes = _modes(lay)
    head, rest = modes[0], modes[1:]
    while True:
        s = L.size(head)
        if type(s) is not int:
            raise CopyError(f"fx.copy: the {side}'s first mode {head} has a run-time size; tile it statically")
        if s == n:
            return head, rest
        if type(head._shape) is tuple:
            sub = _modes(head)
            head, rest = sub[0], sub[1:] + rest
        elif s % n == 0:
            d = L.logical_divide(head, Layout._make(n, 1))
            head, rest = L.get(d, 0), [L.get(d, 1)] + rest
        else:
            raise CopyError(
                f"{atom} moves {n} elements per call, but the {side}'s first mode {head} holds {s}; "
                f"partition with a tiled copy of this atom or use a narrower atom"
            )


def _prepare(t, n, side, atom):
    """``(call layout (atom, rest), number of calls, atom-mode layout)`` for one side of a copy."""
    lay = t.layout
    outer = lay.outer if isinstance(lay, ComposedLayout) else lay
    head, rest = _split(outer, n, side, atom)
    rest_l = L.make_layout(*rest) if rest else Layout._make(1, 0)
    calls = L.size(rest_l)
    if type(calls) is not int:
        raise CopyError(f"fx.copy: the {side} {t} has a run-time number of atom calls; tile it statically")
    two = L.make_layout(head, rest_l)
    if isinstance(lay, ComposedLayout):
        two = ComposedLayout(lay.inner, lay.offset, two)
    return two, calls, head


def _check_contiguous(t, head, n, atom, side):
    """A memory side must hold the atom's ``n`` values contiguously (one vector access)."""
    if n == 1:
        return
    c = L.coalesce(head)
    if not (c._shape == n and c._stride == 1):
        raise CopyError(
            f"{atom} moves {n} contiguous elements per call, but the {side}'s values are laid out as {head} "
            f"(not {n}:1); choose an atom of {atom.val_bits * max(1, _run(c))} bits or a layout whose first "
            "mode is contiguous"
        )
    lay = t.layout
    if isinstance(lay, ComposedLayout) and isinstance(lay.inner, Swizzle) and (1 << lay.inner.base) < n:
        raise CopyError(
            f"the {side}'s swizzle {lay.inner} keeps {1 << lay.inner.base} elements contiguous, fewer than the "
            f"{n} that {atom} moves; use a swizzle with base >= {n.bit_length() - 1}"
        )


def _run(c: Layout) -> int:
    s = L.flatten(c._shape) if type(c._shape) is tuple else (c._shape,)
    d = L.flatten(c._stride) if type(c._stride) is tuple else (c._stride,)
    return s[0] if type(s[0]) is int and d[0] == 1 else 1


def _check_alignment(t, two, i, n, atom, side):
    """Static facts that make an ``n``-element vector access misaligned."""
    it = t._it
    nbytes = n * max(1, atom.val_bits // 8)
    if getattr(it, "exact", False) and it.align < nbytes:
        raise CopyError(
            f"{atom} needs {nbytes}-byte aligned {side} addresses, but the {side} tensor's data pointer is only "
            f"{it.align}-byte aligned; pass an aligned tensor or use a narrower atom"
        )
    lay = two.outer if isinstance(two, ComposedLayout) else two
    off = L.crd2idx((0, i), lay)
    if isinstance(two, ComposedLayout):
        off = iadd(two.offset, off)
    if type(off) is int and off % n:
        raise CopyError(
            f"{atom} call {i} starts the {side} at element offset {off}, not a multiple of {n}: the "
            f"{nbytes}-byte access would be misaligned"
        )


def _pred_at(pred, i, calls):
    if pred is None:
        return None
    if is_tensor(pred):
        return pred[i]
    return pred


def _check_pred(pred, calls):
    if pred is None or not is_tensor(pred):
        if pred is not None and not isinstance(pred, (bool, Numeric)):
            raise TypeError(f"fx.copy: pred must be a Boolean tensor (one per atom call) or a Boolean, got {pred!r}")
        return
    n = pred.layout.size()
    if type(n) is not int or n != calls:
        raise CopyError(
            f"fx.copy: the predicate {pred} has {n} elements, but the copy makes {calls} atom calls; give one "
            "Boolean per call (the modes after the atom's values, e.g. partition(cC)[(0, None), None, None])"
        )


def copy(atom, src, dst, *, pred=None, **atom_state) -> None:
    """Copy ``src`` to ``dst`` with ``atom``, one atom call per element of the modes after its values.

    Args:
        atom: a CopyAtom (or a TiledCopy: its atom). Each call moves ``atom.num_vals`` elements: one vector
            access on memory (static unit stride required), register moves otherwise.
        src, dst: tensors of the same element width whose leading values split the same way
            (``((AtomVal, RestVal), RestM, …)`` from ``partition_S``/``partition_D``, fragments from
            ``make_fragment_like``, or any mode-0 of ``num_vals`` elements).
        pred: None, a Boolean, or a Boolean tensor with one element per call: a false call neither reads
            nor writes (register destinations keep their values).
        atom_state: FlyDSL atom state (``soffset=…`` for buffer atoms) — not supported here.

    Raises:
        CopyError: sizes that do not split into whole atom calls, non-contiguous memory values, a static
            misalignment, or a predicate of the wrong size. TypeError: non-tensors or differing types.
    """
    hook = getattr(type(atom), "__fly_copy_atom__", None)
    if hook is not None:  # an atom that moves whole tiles itself (fx.nvvm.TmaAtom)
        return hook(atom, src, dst, pred=pred, **atom_state)
    if atom_state:
        raise TypeError(f"fx.copy: atom state {sorted(atom_state)} is not supported (no AMD-only atom state here)")
    if isinstance(atom, TiledCopy):
        atom = atom.atom
    if not isinstance(atom, CopyAtom):
        raise TypeError(f"fx.copy needs a copy atom (fx.make_copy_atom) or a tiled copy, got {atom!r}")
    for what, t in (("source", src), ("destination", dst)):
        if not is_tensor(t):
            raise TypeError(f"fx.copy: the {what} must be a tensor, got {type(t).__name__} {t!r}")
    if src.dtype.width != dst.dtype.width or (src.dtype.is_float != dst.dtype.is_float):
        raise TypeError(
            f"fx.copy does not convert: {src.dtype.__name__} -> {dst.dtype.__name__}; copy, then "
            "dst.store(src_fragment.load().to(dst.dtype))"
        )
    ns, nd = atom.vals_for(src.dtype, "src"), atom.vals_for(dst.dtype, "dst")
    s2, calls, s_head = _prepare(src, ns, "source", atom)
    d2, d_calls, d_head = _prepare(dst, nd, "destination", atom)
    if calls != d_calls:
        raise CopyError(
            f"fx.copy: the source {src} makes {calls} calls of {atom} but the destination {dst} makes {d_calls}"
        )
    _check_pred(pred, calls)
    _check_kind(atom, src, dst)
    for t, head, n, side in ((src, s_head, ns, "source"), (dst, d_head, nd, "destination")):
        if t.memspace not in ("register", "coord"):
            _check_contiguous(t, head, n, atom, side)
    for i in range(calls):
        for t, two, n, side in ((src, s2, ns, "source"), (dst, d2, nd, "destination")):
            if t.memspace not in ("register", "coord"):
                _check_alignment(t, two, i, n, atom, side)
        if atom.op.call is not None:  # an op with its own instruction (ldmatrix, cp.async …)
            atom.op.call(atom, src._with_layout(s2)._slice((None, i)), dst._with_layout(d2)._slice((None, i)),
                         _pred_at(pred, i, calls))  # fmt: skip
        else:
            _one_call(atom, src, s2, dst, d2, i, ns, _pred_at(pred, i, calls))


def _check_kind(atom, src, dst):
    if atom.op.kind != "buffer":
        return
    for t, side in ((src, "source"), (dst, "destination")):
        if t.memspace in ("global", "generic"):
            raise CopyError(
                f"{atom} needs the {side} in global memory as a buffer tensor; wrap it with "
                "fx.rocdl.make_buffer_tensor(t) (or use fx.UniversalCopy*)"
            )


def _elem_offsets(two, i, n) -> list:
    return [L.crd2idx((j, i), two) for j in range(n)]


def _one_call(atom, src, s2, dst, d2, i, n, p) -> None:
    """Move the ``n`` values of call ``i`` (predicate ``p``)."""
    nbytes = atom.op.bits // 8
    s_it, d_it = src._it, dst._it
    if src.memspace == "coord":
        raise TypeError("fx.copy: a coordinate tensor has no data to copy; index it to read coordinates")
    if dst.memspace == "coord":
        raise TypeError("fx.copy: cannot copy into a coordinate tensor")
    dst_reg = dst.memspace == "register"
    d_offs = _elem_offsets(d2, i, n) if dst_reg else None
    if src.memspace == "register":
        value = s_it.read_elems(_elem_offsets(s2, i, n))
        if dst_reg:
            d_it.write_elems(d_offs, value, mask=p)
        else:
            d_off = L.crd2idx((0, i), d2)
            a, fast = _claim(d_it, d_off, nbytes)
            d_it.write_vec(d_off, value, a, mask=p, **fast, **_hint(atom, d_it, p))
        return
    other = None
    if dst_reg and p is not None and any(d_it.store.vals[d_it.off + o] is not None for o in d_offs):
        other = d_it.read_elems(d_offs)
    s_off = L.crd2idx((0, i), s2)
    a, fast = _claim(s_it, s_off, nbytes)
    value = s_it.read_vec(s_off, n, a, mask=p, other=other, **fast, **_hint(atom, s_it, p))
    if dst_reg:
        d_it.write_elems(d_offs, value)
    else:
        d_off = L.crd2idx((0, i), d2)
        a, fast = _claim(d_it, d_off, nbytes)
        d_it.write_vec(d_off, value, a, mask=p, **fast, **_hint(atom, d_it, p))


_KERNEL_OWNED = frozenset(("shared", "shared_cluster", "local"))


def _claim(it, off, nbytes: int) -> tuple[int, dict]:
    """``(align, {"fast_align": n} or {})``: how an ``nbytes`` access at element ``off`` of ``it`` is
    issued.

    Global (and buffer) addresses come from the caller: the access claims only what is proven (the
    specialization's pointer alignment carried through the offsets), so a tensor or raw pointer with a
    storage offset never faults; where less than ``nbytes`` is proven a memory access is versioned
    (``fast_align = nbytes``: the vector instruction when the address has it at run time, else accesses
    LLVM can prove aligned) and a buffer access tests the address itself. Shared and local memory are
    laid out by the kernel, with the same addresses on the interpreter, which checks every claim there:
    the atom asserts ``nbytes``.
    """
    if it.memspace in _KERNEL_OWNED:
        return nbytes, {}
    a = min(nbytes, it.align_at(off))
    return a, ({"fast_align": nbytes} if a < nbytes and it.memspace != "buffer" else {})


def _hint(atom, it, p) -> dict:
    """The cache hint of a universal copy's unpredicated global access (as a keyword), else nothing."""
    cache = getattr(atom.op, "cache", "")
    if not cache or p is not None or not isinstance(it, MemIter) or it.memspace != "global":
        return {}
    return {"cache": cache}


def copy_atom_call(atom, src, dst, *, pred=None) -> None:
    """One atom call: ``src`` and ``dst`` hold exactly ``atom.num_vals`` elements each.

    Raises:
        CopyError: a tensor of another size (use :func:`copy` for partitioned tensors).
    """
    a = atom.atom if isinstance(atom, TiledCopy) else atom
    for what, t in (("source", src), ("destination", dst)):
        if is_tensor(t) and isinstance(a, CopyAtom):
            sz = t.layout.size()
            if type(sz) is int and sz != a.num_vals:
                raise CopyError(
                    f"copy_atom_call: {a} moves {a.num_vals} elements, but the {what} {t} holds {sz}; "
                    "use fx.copy for tensors of several atoms"
                )
    copy(atom, src, dst, pred=pred)
