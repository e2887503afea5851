"""MMA atoms and tiled MMAs: ``fx.make_mma_atom``, ``fx.make_tiled_mma``, ``fx.gemm``, ``fx.make_tiled_copy_A/B/C``.

An *MMA op* is one matrix-multiply-accumulate instruction, ``D (M×N) = A (M×K) · B (K×N) + C``, executed
by a group of threads that each hold a fragment of every operand. The op says which element of which
operand each (thread, value) owns with three thread-value layouts (CuTe's ``MMA_Traits``); the layout
algebra does everything else: :class:`TiledMma` repeats the atom over threads (``atom_layout``) and over
an optional permutation tile, ``partition_A/B/C`` give every thread its part of a tile, ``make_fragment_*``
its registers, ``make_tiled_copy_A/B/C`` copies that deliver operands in exactly the MMA's order, and
``fx.gemm`` issues one atom per (m, n, k) fragment.

The MMA-op protocol — implemented by ``fx.nvvm``'s warp ops (``mma.sync``), by the Hopper warpgroup ops,
and by :class:`UniversalFMA` here — is the class :class:`MmaOp`; docs/mma.md explains it with examples.

Everything here is static layout algebra done at trace time; only the thread index and the data become IR.
"""

from __future__ import annotations

import numpy as np

from .. import layout as L
from ..layout import ComposedLayout, Layout, Tile
from .copy import CopyAtom, TiledCopy
from .layout_api import IntTuple, StaticInt, is_tensor
from .numeric import Float32, Numeric
from .tensor import make_fragment_like

__all__ = [
    "MmaOp", "MmaAtom", "TiledMma", "ThrMma", "UniversalFMA", "make_mma_atom", "make_tiled_mma", "gemm",
    "mma_atom_call", "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "MmaError", "fit_tv_layout",
]  # fmt: skip


class MmaError(ValueError):
    """Operands whose shapes or types do not fit the MMA they are given to."""


# ---------------------------------------------------------------------------------------------------------
# The MMA-op protocol
# ---------------------------------------------------------------------------------------------------------


class MmaOp:
    """One MMA instruction (what ``fx.make_mma_atom`` specializes). Subclasses define:

    * ``shape_mnk``: ``(M, N, K)`` of one instruction;
    * ``thr_id``: a layout of the threads executing it together (``1:0`` for one thread, ``32:1`` for a
      warp, ``128:1`` for a warpgroup) — CuTe's ``ThrID``;
    * ``layout_A_tv``, ``layout_B_tv``, ``layout_C_tv``: ``(thread, value) -> index`` of the element that
      the thread holds as that value, in the column-major M×K (A), N×K (B) and M×N (C and D) tile;
    * ``a_dtype``, ``b_dtype``, ``c_dtype``: element types of the fragments (C and D share ``c_dtype``,
      the accumulator: Float32, or Int32 for 8-bit integers);
    * ``call(d, a, b, c, **state)``: emit the instruction. ``a``, ``b``, ``c``, ``d`` are this thread's
      values of one atom (tensors of ``size(layout_X_tv, 1)`` elements in that layout's value order); the
      result is written into ``d``. ``state`` are atom fields (FlyDSL's ``atom.set_value``); an op that
      has none raises ``TypeError`` for any.

    Optional hooks: ``make_fragment(operand, part, dtype)`` (default: registers shaped like ``part``, the
    partition of thread 0 — an op whose A or B stays in shared memory returns ``part`` itself) and
    ``name`` (for messages). Ops are static, compared by ``_key()``.
    """

    shape_mnk: tuple = (1, 1, 1)
    thr_id: Layout = Layout._make(1, 0)
    layout_A_tv: Layout
    layout_B_tv: Layout
    layout_C_tv: Layout
    a_dtype: type = Float32
    b_dtype: type = Float32
    c_dtype: type = Float32

    @property
    def name(self) -> str:
        return type(self).__name__

    def _key(self) -> tuple:
        return (self.shape_mnk, self.a_dtype, self.b_dtype, self.c_dtype)

    def make_fragment(self, operand: str, part, dtype):
        """The fragment of ``operand`` ("A", "B", "C") given ``part``, thread 0's partition of the tile."""
        return make_fragment_like(part, dtype)

    def call(self, d, a, b, c, **state) -> None:
        raise NotImplementedError(f"{self.name} does not implement call()")

    def dtype_of(self, operand: str):
        return {"A": self.a_dtype, "B": self.b_dtype, "C": self.c_dtype, "D": self.c_dtype}[operand]

    def layout_tv(self, operand: str) -> Layout:
        return {"A": self.layout_A_tv, "B": self.layout_B_tv, "C": self.layout_C_tv, "D": self.layout_C_tv}[operand]

    def __eq__(self, other):
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__, self._key()))

    def __repr__(self) -> str:
        m, n, k = self.shape_mnk
        names = ", ".join(t.__name__ for t in (self.a_dtype, self.b_dtype, self.c_dtype))
        return f"{self.name}({m}x{n}x{k}, {names})"


def fit_tv_layout(index, thr_shape, val_shape) -> Layout:
    """The layout ``(thr_shape, val_shape) -> index[thread, value]`` for an ``(threads, values)`` integer
    table that is linear in the colexicographic coordinates of both shapes (every MMA fragment table of
    the PTX ISA is). Strides are read off the unit coordinates; the whole table is checked.

    Raises:
        ValueError: the table is not such a layout.
    """
    index = np.asarray(index)
    shape = (thr_shape, val_shape)
    lay = Layout._make(shape, _strides_of(index, thr_shape, val_shape))
    nt, nv = L.size(thr_shape), L.size(val_shape)
    got = np.array([[L.crd2idx((t, v), lay) for v in range(nv)] for t in range(nt)])
    if got.shape != index.shape or not (got == index).all():
        raise ValueError(f"the fragment table is not a layout of shape {L.format_int_tuple(shape)}")
    return lay


def _strides_of(index, thr_shape, val_shape):
    def unit(shape, axis):
        flat = L.flatten(shape) if type(shape) is tuple else (shape,)
        out, step = [], 1
        for s in flat:
            i = (step, 0) if axis == 0 else (0, step)
            out.append(int(index[i] - index[0, 0]) if s > 1 else 0)
            step *= s
        return L.unflatten(tuple(out), shape) if type(shape) is tuple else out[0]

    return (unit(thr_shape, 0), unit(val_shape, 1))


class UniversalFMA(MmaOp):
    """A 1×1×1 MMA of one thread: ``d = a * b + c`` in the accumulator type (FlyDSL's ``UniversalFMA``;
    CuTe's ``UniversalFMA``). Portable: any numeric types, every target."""

    def __init__(self, ab_dtype=Float32, acc_dtype=None, b_dtype=None):
        for t in (ab_dtype, acc_dtype, b_dtype):
            if t is not None and not (isinstance(t, type) and issubclass(t, Numeric)):
                raise TypeError(f"UniversalFMA takes Numeric classes (fx.Float32 …), got {t!r}")
        self.a_dtype = ab_dtype
        self.b_dtype = b_dtype or ab_dtype
        self.c_dtype = acc_dtype or ab_dtype
        one = Layout._make((1, 1), (0, 0))
        self.layout_A_tv = self.layout_B_tv = self.layout_C_tv = one

    def call(self, d, a, b, c, **state) -> None:
        if state:
            raise TypeError(f"UniversalFMA has no atom state, got {sorted(state)}")
        t = self.c_dtype
        d[0] = a[0].to(t) * b[0].to(t) + c[0].to(t)


# ---------------------------------------------------------------------------------------------------------
# Atoms
# ---------------------------------------------------------------------------------------------------------


class MmaAtom:
    """An MMA op as an atom (FlyDSL's ``MmaAtom``): ``shape_mnk``, ``thr_id``/``thr_layout``,
    ``layout_A_tv``/``layout_B_tv``/``layout_C_tv``, and atom state (``set_value``)."""

    __slots__ = ("op", "state")

    def __init__(self, op: MmaOp, state=()):
        if not isinstance(op, MmaOp):
            raise TypeError(
                f"make_mma_atom needs an MMA op (fx.nvvm.MmaF16BF16Op(...), fx.UniversalFMA(...)), got {op!r}"
            )
        self.op, self.state = op, tuple(state)

    @property
    def shape_mnk(self) -> IntTuple:
        return IntTuple(self.op.shape_mnk)

    @property
    def thr_layout(self) -> Layout:
        return self.op.thr_id

    thr_id = thr_layout

    @property
    def layout_A_tv(self) -> Layout:
        return self.op.layout_A_tv

    @property
    def layout_B_tv(self) -> Layout:
        return self.op.layout_B_tv

    @property
    def layout_C_tv(self) -> Layout:
        return self.op.layout_C_tv

    tv_layout_A, tv_layout_B, tv_layout_C = layout_A_tv, layout_B_tv, layout_C_tv

    def set_value(self, field, value=None) -> MmaAtom:
        """An atom with state ``field = value`` (or a dict of fields), passed to the op's ``call``."""
        items = dict(self.state)
        items.update(field if isinstance(field, dict) else {str(field): value})
        return MmaAtom(self.op, tuple(items.items()))

    def call(self, d, a, b, c) -> None:
        """One instruction on one atom's values (see :func:`mma_atom_call`)."""
        self.op.call(d, a, b, c, **dict(self.state))

    def __eq__(self, other):
        return type(other) is MmaAtom and self.op == other.op and self.state == other.state

    def __hash__(self):
        return hash(("MmaAtom", self.op, self.state))

    def __repr__(self) -> str:
        return f"MmaAtom({self.op!r})"


def make_mma_atom(op) -> MmaAtom:
    """The atom of an MMA op (``fx.nvvm.MmaF16BF16Op(fx.BFloat16, fx.Float32, (16, 8, 16))``, …)."""
    return op if isinstance(op, MmaAtom) else MmaAtom(op)


# ---------------------------------------------------------------------------------------------------------
# Tiled MMA
# ---------------------------------------------------------------------------------------------------------

_OPERANDS = {"A": (0, 2), "B": (1, 2), "C": (0, 1), "D": (0, 1)}


def _mode_size(lay: Layout, i: int) -> int:
    return L.size(L.get(lay, i)) if type(lay._shape) is tuple else (lay._shape if i == 0 else 1)


class TiledMma:
    """An MMA atom repeated over threads and values (CuTe's ``TiledMMA``).

    ``atom_layout`` (M, N, K) places ``size(atom_layout)`` atoms' thread groups over the tile (e.g.
    ``(2, 2, 1)``: four warps, 2 along M and 2 along N); ``permutation`` (a tiler per mode, or None) gives
    the tile each repetition of the atom grid covers and the order of its rows/columns (``(32, 32, 16)``
    makes each warp of a 2×2 grid cover two 16×8 atoms along N). Static and hashable.
    """

    __slots__ = ("atom", "atom_layout", "permutation", "_vmnk", "_tile")

    def __init__(self, atom: MmaAtom, atom_layout=None, permutation=None):
        if not isinstance(atom, MmaAtom):
            atom = make_mma_atom(atom)
        if atom_layout is None:
            atom_layout = Layout._make((1, 1, 1), (0, 0, 0))
        elif not isinstance(atom_layout, Layout):
            atom_layout = L.make_layout(tuple(atom_layout))
        if not atom_layout.is_static or L.rank(atom_layout._shape) > 3:
            raise ValueError(f"make_tiled_mma: atom_layout must be a static (M, N, K) layout, got {atom_layout}")
        while L.rank(atom_layout._shape) < 3:
            atom_layout = L.append(atom_layout, Layout._make(1, 0))
        perm = tuple(permutation) if permutation is not None else (None, None, None)
        if len(perm) > 3:
            raise ValueError(f"make_tiled_mma: a permutation has at most 3 modes (M, N, K), got {permutation!r}")
        perm = perm + (None,) * (3 - len(perm))
        self.atom, self.atom_layout, self.permutation = atom, atom_layout, perm
        self._vmnk = L.tiled_product(atom.op.thr_id, atom_layout)
        self._tile = tuple(self._tile_size(i) for i in range(3))

    def _tile_size(self, i: int) -> int:
        p = self.permutation[i]
        if p is None:
            return self.atom.op.shape_mnk[i] * _mode_size(self.atom_layout, i)
        s = L.size(p) if isinstance(p, Layout) else L.size(L.make_tile(p)[0]) if type(p) is tuple else p
        if type(s) is not int:
            raise ValueError(f"make_tiled_mma: permutation mode {i} must be static, got {p!r}")
        return s

    # -- introspection (FlyDSL's names) ---------------------------------------------------------------------
    @property
    def mma_atom(self) -> MmaAtom:
        return self.atom

    @property
    def op(self) -> MmaOp:
        return self.atom.op

    @property
    def thr_layout_vmnk(self) -> Layout:
        """thread index -> (atom thread, atom m, atom n, atom k)."""
        return self._vmnk

    @property
    def permutation_mnk(self) -> Tile:
        """The permutation as FlyDSL's :class:`Tile` of the (M, N, K) modes (``None``: the atoms' own order)."""
        return Tile(self.permutation)

    @property
    def tile_size_mnk(self) -> IntTuple:
        """The (M, N, K) tile one step of the tiled MMA covers."""
        return IntTuple(self._tile)

    @property
    def num_threads(self) -> int:
        return StaticInt(L.size(self._vmnk))

    size = num_threads

    # -- thread-value views ---------------------------------------------------------------------------------
    def thrfrg(self, operand: str, layout):
        """``layout`` of an (M, K) / (N, K) / (M, N) tensor as ``((ThrV, (Thr0, Thr1)), (FrgV, (Rest0,
        Rest1)))`` (CuTe's ``thrfrg_A/B/C``)."""
        i0, i1 = _OPERANDS[operand]
        op = self.atom.op
        perm = []
        for i in (i0, i1):
            p = self.permutation[i]
            perm.append(op.shape_mnk[i] * _mode_size(self.atom_layout, i) if p is None else p)
        permuted = L.logical_divide(layout, tuple(perm))
        atom_div = L.zipped_divide(permuted, (op.shape_mnk[i0], op.shape_mnk[i1]))  # ((atom tile), (rest))
        tv = L.composition(atom_div, (op.layout_tv(operand), None))  # ((ThrV, FrgV), (Rest0, Rest1))
        plain = _as_plain(tv)
        thr_div = L.zipped_divide(L.get(plain, 1), (_mode_size(self.atom_layout, i0), _mode_size(self.atom_layout, i1)))
        z = L.make_layout(  # ((ThrV, (Thr0, Thr1)), (FrgV, (Rest0, Rest1)))
            L.make_layout(L.get(plain, 0, 0), L.get(thr_div, 0)), L.make_layout(L.get(plain, 0, 1), L.get(thr_div, 1))
        )
        if isinstance(tv, ComposedLayout):
            return ComposedLayout(tv.inner, tv.offset, z)
        return z

    def _thr_coord(self, operand: str, thr_idx):
        """``(v, (m, k))`` (A), ``(v, (n, k))`` (B) or ``(v, (m, n))`` (C) of thread ``thr_idx``."""
        v, m, n, k = L.idx2crd(thr_idx, self._vmnk)
        return {"A": (v, (m, k)), "B": (v, (n, k)), "C": (v, (m, n)), "D": (v, (m, n))}[operand]

    def partition(self, operand: str, t, thr_idx):
        """Thread ``thr_idx``'s part of tensor ``t``: ``(FrgV, Rest0, Rest1)``."""
        if not is_tensor(t):
            raise TypeError(f"partition_{operand} takes a tensor, got {t!r}")
        frg = t._with_layout(self.thrfrg(operand, t.layout))
        return frg._slice((self._thr_coord(operand, thr_idx), (None, (None, None))))

    def make_fragment(self, operand: str, t, *, stages=None):
        """The fragment of ``operand`` for a tile ``t`` (a tensor or layout of the CTA's M×K / N×K / M×N
        tile): the op's registers shaped like one thread's partition, ``(FrgV, Rest0, Rest1[, stages])``."""
        op = self.atom.op
        if is_tensor(t):
            part = self.partition(operand, t, 0)
        else:
            lay = t if isinstance(t, (Layout, ComposedLayout)) else L.make_layout(tuple(t))
            part_lay = L.slice((self._thr_coord(operand, 0), (None, (None, None))), self.thrfrg(operand, lay))
            part = part_lay
        if stages is not None:
            if type(stages) is not int or stages <= 0:
                raise ValueError(f"make_fragment_{operand}: stages must be a positive int, got {stages!r}")
            lay = part.layout if is_tensor(part) else part
            lay = L.append(lay.outer if isinstance(lay, ComposedLayout) else lay, Layout._make(stages, 0))
            part = part._with_layout(lay) if is_tensor(part) else lay
        return op.make_fragment(operand, part, op.dtype_of(operand))

    def make_fragment_A(self, a, *, stages=None):
        return self.make_fragment("A", a, stages=stages)

    def make_fragment_B(self, b, *, stages=None):
        return self.make_fragment("B", b, stages=stages)

    def make_fragment_C(self, c, *, stages=None):
        return self.make_fragment("C", c, stages=stages)

    partition_fragment_A, partition_fragment_B, partition_fragment_C = make_fragment_A, make_fragment_B, make_fragment_C

    def tv_layout_tiled(self, operand: str) -> Layout:
        """``(thread index, value) -> index`` in the column-major tile of ``operand`` for all the tiled
        MMA's threads (CuTe's ``get_layoutA_TV``): threads that share an operand (A across N) map alike."""
        i0, i1 = _OPERANDS[operand]
        tile = (self._tile[i0], self._tile[i1])
        tv = self.thrfrg(operand, L.make_layout(tile))
        tm, tn, tk = (_mode_size(self.atom_layout, i) for i in range(3))
        if operand == "A":  # (ThrM, ThrK) -> ((ThrM, ThrN), ThrK): A is the same for every N
            atile = (None, (Layout._make((tm, tn), (1, 0)), None))
        elif operand == "B":  # (ThrN, ThrK) -> ((ThrM, ThrN), ThrK)
            atile = (None, (Layout._make((tm, tn), (0, 1)), None))
        else:  # (ThrM, ThrN) -> (ThrM, (ThrN, ThrK))
            atile = (None, (None, Layout._make((tn, tk), (1, 0))))
        tv = L.composition(tv, (atile, None))
        return L.composition(tv, (L.right_inverse(self._vmnk), None))

    @property
    def tv_layout_A_tiled(self) -> Layout:
        return self.tv_layout_tiled("A")

    @property
    def tv_layout_B_tiled(self) -> Layout:
        return self.tv_layout_tiled("B")

    @property
    def tv_layout_C_tiled(self) -> Layout:
        return self.tv_layout_tiled("C")

    def get_slice(self, thr_idx) -> ThrMma:
        """Thread ``thr_idx``'s view (a run-time ``Int32`` or an int)."""
        return ThrMma(self, thr_idx)

    thr_slice = get_slice

    def __eq__(self, other):
        return type(other) is TiledMma and (self.atom, self.atom_layout, self.permutation) == (
            other.atom,
            other.atom_layout,
            other.permutation,
        )

    def __hash__(self):
        return hash(("TiledMma", self.atom, self.atom_layout, self.permutation))

    def __repr__(self) -> str:
        return f"TiledMma({self.atom}, atom_layout={self.atom_layout}, tile={L.format_int_tuple(self._tile)})"


def _as_plain(lay):
    return lay.outer if isinstance(lay, ComposedLayout) else lay


class ThrMma:
    """One thread's view of a :class:`TiledMma`: ``partition_A/B/C`` (and the tiled MMA's other methods)."""

    __slots__ = ("tiled_mma", "thr_idx")

    def __init__(self, tiled_mma: TiledMma, thr_idx):
        self.tiled_mma, self.thr_idx = tiled_mma, thr_idx

    def partition_A(self, a):
        """This thread's part of an (M, K) tensor: ``(FrgV, MMA_M, MMA_K)``."""
        return self.tiled_mma.partition("A", a, self.thr_idx)

    def partition_B(self, b):
        """This thread's part of an (N, K) tensor: ``(FrgV, MMA_N, MMA_K)``."""
        return self.tiled_mma.partition("B", b, self.thr_idx)

    def partition_C(self, c):
        """This thread's part of an (M, N) tensor: ``(FrgV, MMA_M, MMA_N)``."""
        return self.tiled_mma.partition("C", c, self.thr_idx)

    def __getattr__(self, name):
        return getattr(self.tiled_mma, name)

    def __repr__(self) -> str:
        return f"ThrMma({self.tiled_mma}, thr={self.thr_idx})"


def make_tiled_mma(mma_atom, atom_layout=None, permutation=None) -> TiledMma:
    """A tiled MMA: ``mma_atom`` repeated over the (M, N, K) thread grid ``atom_layout`` (a layout or a
    shape, default ``(1, 1, 1)``) and over ``permutation`` (one tiler per mode, e.g. ``(32, 32, 16)``).

    Raises:
        ValueError: a run-time layout or a permutation of more than three modes.
    """
    return TiledMma(mma_atom, atom_layout, permutation)


def _tiled_copy(copy_atom: CopyAtom, tiled_mma: TiledMma, operand: str) -> TiledCopy:
    if not isinstance(tiled_mma, TiledMma):
        raise TypeError(f"make_tiled_copy_{operand} needs a TiledMma (fx.make_tiled_mma), got {tiled_mma!r}")
    i0, i1 = _OPERANDS[operand]
    t = tiled_mma.tile_size_mnk
    return TiledCopy(copy_atom, tiled_mma.tv_layout_tiled(operand), (t[i0], t[i1]))


def make_tiled_copy_A(copy_atom: CopyAtom, tiled_mma: TiledMma) -> TiledCopy:
    """A tiled copy that moves the (M, K) tile of A exactly as ``tiled_mma``'s threads hold it: its
    ``retile`` of an A fragment gives the copy's view of the MMA's registers."""
    return _tiled_copy(copy_atom, tiled_mma, "A")


def make_tiled_copy_B(copy_atom: CopyAtom, tiled_mma: TiledMma) -> TiledCopy:
    """Like :func:`make_tiled_copy_A`, for the (N, K) tile of B."""
    return _tiled_copy(copy_atom, tiled_mma, "B")


def make_tiled_copy_C(copy_atom: CopyAtom, tiled_mma: TiledMma) -> TiledCopy:
    """Like :func:`make_tiled_copy_A`, for the (M, N) tile of C/D."""
    return _tiled_copy(copy_atom, tiled_mma, "C")


# ---------------------------------------------------------------------------------------------------------
# fx.gemm
# ---------------------------------------------------------------------------------------------------------


def _check_operand(atom: MmaAtom, t, operand: str, want: int):
    if not is_tensor(t):
        raise TypeError(f"fx.gemm: operand {operand} must be a tensor (a fragment), got {t!r}")
    v = L.size(L.get(t.layout, 0)) if type(t.layout._shape) is tuple else t.layout._shape
    per = L.size(atom.op.layout_tv(operand), 1)
    if v != per:
        raise MmaError(
            f"fx.gemm: the first mode of {operand} ({t}) holds {v} values, but one {atom.op.name} takes {per} per "
            "thread; pass fragments from make_fragment_A/B/C or partition_A/B/C of the same tiled MMA"
        )
    return L.rank(t.layout._shape)  # 1 for a leaf shape


def _sub(t, *crd):
    return t[(None, *crd)] if crd else t


def mma_atom_call(mma_atom, d, a, b, c) -> None:
    """One instruction of ``mma_atom`` on fragments holding exactly one atom's values each."""
    atom = mma_atom.atom if isinstance(mma_atom, TiledMma) else make_mma_atom(mma_atom)
    atom.call(d, a, b, c)


def gemm(mma_atom, d, a, b, c, *, traversal_order=None, traversal_layout=None, **state) -> None:
    """``D = A · B + C`` on fragments: one MMA instruction per (m, n, k) (FlyDSL's and CuTe's ``gemm``).

    Args:
        mma_atom: an MMA atom or a tiled MMA (its atom).
        d, c: ``(V, M, N)`` accumulator fragments (``d`` may be ``c``: accumulate in place); a: ``(V, M, K)``
            (or ``(V, M)``), b: ``(V, N, K)`` (or ``(V, N)``); rank-1 fragments make one call.
        traversal_order, traversal_layout: FlyDSL's traversal hints — the order here is k outermost, then m,
            then n in a serpentine (every order gives the same result: calls of one k are independent).
        state: atom fields for this call (``accumulate=False`` …), passed to the op.

    Raises:
        MmaError: fragments whose first mode is not one atom's values, or whose M/N/K extents disagree.
    """
    atom = mma_atom.atom if isinstance(mma_atom, TiledMma) else make_mma_atom(mma_atom)
    if state:
        atom = atom.set_value(state)
    rd = _check_operand(atom, d, "D", 0)
    ra, rb = _check_operand(atom, a, "A", 0), _check_operand(atom, b, "B", 0)
    rc = _check_operand(atom, c, "C", 0)
    if rd == ra == rb == rc == 1:
        atom.call(d, a, b, c)
        return
    if rd != 3 or rc != 3 or ra not in (2, 3) or rb not in (2, 3) or ra != rb:
        raise MmaError(
            f"fx.gemm takes D, C as (V, M, N) and A, B as (V, M, K), (V, N, K) fragments, got ranks D={rd}, "
            f"A={ra}, B={rb}, C={rc}"
        )

    def ext(t, i):
        return L.size(L.get(t.layout, i))

    M, N = ext(d, 1), ext(d, 2)
    K = ext(a, 2) if ra == 3 else 1
    if (ext(a, 1), ext(b, 1), ext(c, 1), ext(c, 2)) != (M, N, M, N) or (rb == 3 and ext(b, 2) != K):
        raise MmaError(f"fx.gemm: the M, N, K extents of D {d}, A {a}, B {b}, C {c} disagree")
    for k in range(K):
        for m in range(M):
            for j in range(N):
                n = j if m % 2 == 0 else N - 1 - j  # serpentine: reuse the B fragment across m
                ka = (m, k) if ra == 3 else (m,)
                kb = (n, k) if rb == 3 else (n,)
                acc = c if k == 0 else d
                atom.call(_sub(d, m, n), _sub(a, *ka), _sub(b, *kb), _sub(acc, m, n))
