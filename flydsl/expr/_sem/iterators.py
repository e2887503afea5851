"""The iterators behind ``fx.Tensor``: where a tensor's elements live and how they are read and written.

Every iterator takes element offsets (Python ints or run-time ``Int32``; coordinate tuples for
coordinate tensors) relative to itself and offers the same operations:

* ``advance(off, div)`` — the iterator moved by ``off`` (``div()`` says what ``off`` is a multiple of);
* ``read_elem``/``write_elem`` — one element; ``read_all``/``write_all``/``fill`` — a whole layout;
* ``read_vec``/``write_vec`` — ``n`` contiguous elements at once (what a copy atom does), with an
  optional Boolean ``mask`` (off: nothing is read or written; a read yields ``other``, else 0);
* the value protocol pieces ``values``/``rebuild``/``signature``.

=============  ===================================================================================
:class:`MemIter`    an ``fx.Pointer`` (global/shared/generic) plus the byte alignment known for it
:class:`BufIter`    a buffer resource and an element offset: accesses past ``num_records`` read 0
                    and are not written (AMD's buffer semantics, on every target)
:class:`RegIter`    registers: a Python list of DSL scalars (:class:`RegStore`) and a static offset;
                    no IR storage exists, so every register offset must be a compile-time int
:class:`CoordIter`  a coordinate; reading yields ``coordinate + offset`` (identity tensors)
=============  ===================================================================================
"""

from __future__ import annotations

from ... import ir
from ... import layout as L
from ...dialects import ptr as _p
from ...ir import BufferRsrcType, PointerType, Value, VectorType
from ...layout import ComposedLayout
from ...layout.inttuple import iadd
from .inttuple import as_int_tuple, divisibility, leaf_values, replace_leaves, static_part, wrap
from .multiple import pow2_multiple
from .numeric import Boolean, Int32, Numeric, as_numeric, numeric_type_of
from .pointer import Pointer
from .vector import Vector

__all__ = ["MemIter", "BufIter", "RegIter", "RegStore", "CoordIter", "as_iterator", "is_pointer", "concat"]


def is_pointer(x) -> bool:
    return isinstance(x, Pointer)


def _pow2_le(n: int) -> int:
    """The largest power of two dividing ``n`` (n > 0)."""
    return n & -n


def _align_after(align: int, div: int, esz: int) -> int:
    """Alignment of ``base + off`` elements when ``base`` is ``align``-aligned and ``off`` a multiple of
    ``div`` (0: ``off`` is 0)."""
    if div == 0:
        return align
    return min(align, _pow2_le(div * esz))


def _align_plus(align: int, exact: bool, off, esz: int) -> tuple[int, bool]:
    """(alignment, exact) of ``base + off`` elements of ``esz`` bytes when ``base`` is ``align``-aligned
    (exactly, when ``exact``): the offset's bytes are a multiple of ``b`` (its proven power of two); the
    sum keeps the smaller alignment, exactly when one side's is exact and smaller, or when both are exact
    and equal the sum's is at least twice that (odd + odd multiples of ``a`` are even ones)."""
    b = pow2_multiple(off) * esz  # not capped: shared-memory bases are known to 128 or 1024 bytes
    off_exact = type(off) is int
    if b < align:
        return b, off_exact
    if align >= 16 or b > align:  # an exact 16 means "a multiple of 16" (arguments' alignment is capped there)
        return align, exact
    return (2 * align, False) if exact and off_exact else (align, False)


def _i32(x) -> Int32:
    if type(x) is int:
        return Int32(x)
    x = as_numeric(x)
    return x if type(x) is Int32 else x.to(Int32)


def _mask_arg(mask):
    """``None`` for an always-on mask, else a Boolean (a static False stays static)."""
    if mask is None:
        return None
    m = mask if isinstance(mask, Numeric) else Boolean(bool(mask)) if isinstance(mask, bool) else as_numeric(mask)
    m = m if type(m) is Boolean else m.to(Boolean)
    if m.is_static() and m.value:
        return None
    return m


def concat(parts, dtype) -> Vector:
    """One flat Vector from scalars and Vectors, in order (whole vectors are joined with shuffles)."""
    if len(parts) == 1:
        p = parts[0]
        return p if isinstance(p, Vector) else Vector.from_elements([p], dtype)
    if all(isinstance(p, Vector) for p in parts):
        acc = parts[0]
        for p in parts[1:]:
            acc = acc.shuffle(p, list(range(acc.numel + p.numel)))
        return acc
    lanes = []
    for p in parts:
        lanes.extend(list(p) if isinstance(p, Vector) else [p])
    return Vector.from_elements(lanes, dtype)


# ---------------------------------------------------------------------------------------------------------
# Runs: a static layout cut into contiguous pieces
# ---------------------------------------------------------------------------------------------------------


def runs(layout, n: int, ddiv):
    """``[(lanes, offset, divisibility)]``: ``layout``'s ``n`` elements cut into contiguous runs.

    ``lanes`` are the colexicographic domain indices of a run's elements, in address order. A run
    follows the first mode of the coalesced layout with static stride 1 (any mode: a row-major tile
    gives one run per row); other layouts, and swizzled ones, give runs of one element.
    """

    if not isinstance(layout, ComposedLayout):
        c = L.coalesce(layout)
        shapes = list(L.flatten(c._shape)) if type(c._shape) is tuple else [c._shape]
        strides = list(L.flatten(c._stride)) if type(c._stride) is tuple else [c._stride]
        k = next((i for i, (s, d) in enumerate(zip(shapes, strides)) if type(d) is int and d == 1), None)
        if k is not None and all(type(s) is int for s in shapes) and shapes[k] > 1:
            sk = shapes[k]
            pre = 1
            for s in shapes[:k]:
                pre *= s
            rest_s = tuple(shapes[:k] + shapes[k + 1 :])
            rest_d = tuple(strides[:k] + strides[k + 1 :])
            out = []
            for r in range(n // sk):
                crd = L.idx2crd(r, rest_s) if rest_s else ()
                off = L.crd2idx(crd, rest_s, rest_d) if rest_s else 0
                div = divisibility(crd, rest_s, rest_d, ddiv) if rest_s else 0
                lo, hi = r % pre, r // pre  # the run's position in the modes before / after mode k
                out.append(([lo + pre * (j + sk * hi) for j in range(sk)], off, div))
            return out
    out = []
    for i in range(n):
        crd = L.idx2crd(i, layout._shape)
        off = L.crd2idx(crd, layout)
        div = divisibility(crd, layout._shape, layout._stride, ddiv) if not isinstance(layout, ComposedLayout) else 1
        out.append(([i], off, div))
    return out


def _pick(vec: Vector, lanes: list):
    """The lanes of ``vec`` at ``lanes``: a scalar for one, else a Vector (whole vectors pass through)."""
    if len(lanes) == 1:
        return vec[lanes[0]]
    if lanes == list(range(vec.numel)):
        return Vector._make(vec.ir_value(), (vec.numel,), vec.dtype)
    return vec.shuffle(vec, lanes)


class _Addressed:
    """Shared logic of the iterators whose elements have addresses (memory and buffers)."""

    __slots__ = ()

    def _run_align(self, div: int, n: int) -> int:
        esz = self._esz()
        return max(esz, min(_align_after(self.align, div, esz), _pow2_le(n * esz)))

    def _esz(self) -> int:
        return max(1, self.dtype.width // 8)

    def align_at(self, off) -> int:
        """The byte alignment provable for element offset ``off`` (an int or a run-time integer) from
        this iterator: what a vector access there may claim."""
        return max(self._esz(), _align_plus(self.align, False, off, self._esz())[0])

    def read_elem(self, off, dtype):
        return self.read_vec(off, 1, self._run_align(0, 1))

    def write_elem(self, off, x):
        self.write_vec(off, x, self._run_align(0, 1))

    def read_all(self, layout, n, dtype, ddiv) -> Vector:
        pieces = runs(layout, n, ddiv)
        parts = [self.read_vec(off, len(lanes), self._run_align(div, len(lanes))) for lanes, off, div in pieces]
        v = concat(parts, dtype)
        order = [i for lanes, _, _ in pieces for i in lanes]
        if order != list(range(n)):
            inv = [0] * n
            for pos, i in enumerate(order):
                inv[i] = pos
            v = v.shuffle(v, inv)
        return v

    def write_all(self, layout, n, vec, ddiv) -> None:
        for lanes, off, div in runs(layout, n, ddiv):
            self.write_vec(off, _pick(vec, lanes), self._run_align(div, len(lanes)))

    def fill(self, layout, n, x, ddiv) -> None:
        for lanes, off, div in runs(layout, n, ddiv):
            ln = len(lanes)
            self.write_vec(off, x if ln == 1 else Vector.filled((ln,), x, self.dtype), self._run_align(div, ln))


# ---------------------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------------------


class MemIter(Pointer, _Addressed):
    """A pointer into global, shared or generic memory with the byte alignment known for it.

    ``align`` is a lower bound; ``exact`` says it is the true alignment of the address (kernel arguments:
    a coarser alignment is then a certain misalignment).
    """

    __slots__ = ("align", "exact")

    @classmethod
    def of(cls, ptr, dtype=None, alignment: int = 0) -> MemIter:
        p = ptr if isinstance(ptr, Pointer) else Pointer(ptr, dtype)
        esz = max(1, p.dtype.width // 8)
        known = alignment or getattr(ptr, "align", 0)
        return cls._new(p.ir_value(), p.dtype, max(esz, known or esz), bool(alignment) or getattr(ptr, "exact", False))

    @classmethod
    def _new(cls, v: Value, dtype, align: int, exact: bool) -> MemIter:
        o = object.__new__(cls)
        o._v, o._dtype, o.align, o.exact = v, dtype, align, exact
        return o

    @property
    def alignment(self) -> int:
        return self.align

    @property
    def memspace(self) -> str:
        return self._v.type.space_name

    def user_iterator(self):
        return self

    def advance(self, off, div) -> MemIter:
        if type(off) is int and off == 0:
            return self
        p = Pointer._offset(self, off)
        esz = self._esz()
        if type(off) is int:
            align, exact = _align_plus(self.align, self.exact, off, esz)
        else:  # what the layout says the offset is a multiple of, or what its computation shows
            align = max(_align_after(self.align, div(), esz), _align_plus(self.align, False, off, esz)[0])
            exact = False
        return MemIter._new(p.ir_value(), self._dtype, max(esz, align), exact)

    def _offset(self, off, negate=False) -> MemIter:
        """``p + off`` / ``p - off`` keep what is known of the alignment (``ptr + bid * N`` stays 16-byte
        aligned when ``N`` elements are a multiple of 16 bytes)."""
        p = Pointer._offset(self, off, negate)
        if p is self:
            return self
        esz = self._esz()
        align, exact = _align_plus(self.align, self.exact, off, esz)
        return MemIter._new(p.ir_value(), self._dtype, max(esz, align), exact)

    def _at(self, off) -> Pointer:
        return self if type(off) is int and off == 0 else Pointer.__add__(self, off)

    def read_vec(self, off, n, align, mask=None, other=None, fast_align=0, cache=None):
        """``fast_align`` (> ``align``): a versioned access, issued with it when the address has it."""
        m = _mask_arg(mask)
        d = self._dtype
        if m is not None and m.is_static():  # statically off: nothing is read
            return _fill_value(other, n, d)
        p = self._at(off)
        fast = fast_align if fast_align > align else None
        if m is None:
            return p.load(n, align, cache, fast_align=fast)
        fill = _fill_value(other, n, d)
        extra = {"fast_align": fast} if fast else {}
        r = _p.masked_load(p.ir_value(), m.ir_value(), fill.ir_value(), align=align, **extra)
        return d._make(r) if n == 1 else Vector._make(r, (n,), d)

    def write_vec(self, off, value, align, mask=None, fast_align=0, cache=None):
        m = _mask_arg(mask)
        if m is not None and m.is_static():
            return
        self._at(off).store(value, align, cache, mask=m, fast_align=fast_align if fast_align > align else None)

    def values(self) -> list:
        return [self._v]

    def rebuild(self, values):
        return MemIter._new(values[0], self._dtype, self.align, self.exact), values[1:]

    def signature(self):
        return ("mem", self._v.type, self.align)


def _fill_value(other, n, dtype):
    if other is not None:
        return other
    z = dtype(0)
    return z if n == 1 else Vector.filled((n,), z, dtype)


# ---------------------------------------------------------------------------------------------------------
# Buffers
# ---------------------------------------------------------------------------------------------------------


class BufIter(_Addressed):
    """A buffer resource (global base + ``num_records`` bytes) and an element offset into it."""

    __slots__ = ("rsrc", "off", "dtype", "align")

    def __init__(self, rsrc: Value, off, dtype, align: int):
        if type(rsrc) is not Value or not isinstance(rsrc.type, BufferRsrcType):
            raise TypeError(f"a buffer iterator needs a !fly.buffer_rsrc value, got {rsrc!r}")
        self.rsrc, self.off, self.dtype, self.align = rsrc, off, dtype, align

    memspace = "buffer"

    def user_iterator(self):
        return self

    def __add__(self, off):
        """The iterator ``off`` elements further (same resource: bounds stay those of the buffer)."""
        off = as_numeric(off) if not isinstance(off, int) else off
        return BufIter(self.rsrc, iadd(self.off, off), self.dtype, _align_after(self.align, 1, self._esz()))

    def advance(self, off, div) -> BufIter:
        if type(off) is int and off == 0:
            return self
        return BufIter(self.rsrc, iadd(self.off, off), self.dtype, _align_after(self.align, div(), self._esz()))

    def _byte_offset(self, off) -> Value:
        return (_i32(iadd(self.off, off)) * self._esz()).ir_value()

    def read_vec(self, off, n, align, mask=None, other=None):
        m = _mask_arg(mask)
        d = self.dtype
        if m is not None and m.is_static():
            return _fill_value(other, n, d)
        rt = d.ir_type if n == 1 else VectorType(n, d.ir_type)
        extra = [] if m is None else [m.ir_value()]
        r = _p.buffer_load(self.rsrc, self._byte_offset(off), *extra, result_types=[rt], align=align)
        v = d._make(r) if n == 1 else Vector._make(r, (n,), d)
        if m is not None and other is not None:
            v = m.select(v, other) if n == 1 else Vector.select_whole(m, v, other)
        return v

    def write_vec(self, off, value, align, mask=None):
        m = _mask_arg(mask)
        if m is not None and m.is_static():
            return
        v = value if isinstance(value, (Numeric, Vector)) else self.dtype(value)
        extra = [] if m is None else [m.ir_value()]
        _p.buffer_store(v.ir_value(), self.rsrc, self._byte_offset(off), *extra, align=align)

    def values(self) -> list:
        return [self.rsrc] + ([] if type(self.off) is int else [_i32(self.off).ir_value()])

    def rebuild(self, values):
        if type(self.off) is int:
            return BufIter(values[0], self.off, self.dtype, self.align), values[1:]
        return BufIter(values[0], Int32._make(values[1]), self.dtype, self.align), values[2:]

    def signature(self):
        return ("buffer", self.dtype, self.align, type(self.off) is int and self.off)

    def __repr__(self) -> str:
        return f"BufferIterator({self.dtype.__name__})"


# ---------------------------------------------------------------------------------------------------------
# Registers
# ---------------------------------------------------------------------------------------------------------


class _Lane:
    """Lane ``i`` of a Vector, extracted only when a scalar is needed."""

    __slots__ = ("vec", "i")

    def __init__(self, vec: Vector, i: int):
        self.vec, self.i = vec, i


class RegStore:
    """The registers of one register tensor: a list of DSL scalars (``None``: never written, reads 0)."""

    __slots__ = ("vals", "dtype", "home", "name")

    def __init__(self, n: int, dtype, vals=None):
        self.vals = [None] * n if vals is None else vals
        self.dtype = dtype
        self.home = ir.current_block()

    def get(self, i: int):
        v = self.vals[i]
        if v is None:
            return self.dtype(0)
        if type(v) is _Lane:
            x = v.vec[v.i]
            if ir.current_block() is self.home:  # a lane read inside a nested region stays there
                self.vals[i] = x
            return x
        return v

    def _check_home(self) -> None:
        cur = ir.current_block()
        if cur is not self.home and self.home is not None and cur is not None:
            raise TypeError(
                "registers of a register tensor (make_fragment_like / make_rmem_tensor) are written inside a "
                "run-time `if`/`for`/`while` body that does not carry the tensor. Registers are values, not "
                "memory: rebind the tensor in that body before writing it (`frag = fx.Tensor(frag)`, a copy the "
                "compiler then carries), or use a predicate (`fx.copy(atom, src, frag, pred=p)`) instead of a "
                "run-time branch"
            )

    def set(self, i: int, x) -> None:
        self._check_home()
        self.vals[i] = x

    def gather(self, offs: list) -> Vector:
        """The registers at ``offs`` as one Vector: runs of lanes of one stored vector are taken whole
        (or with one shuffle), other registers one by one."""
        parts, k = [], 0
        while k < len(offs):
            e = self.vals[offs[k]]
            if type(e) is not _Lane:
                parts.append(self.get(offs[k]))
                k += 1
                continue
            lanes = [e.i]
            while k + len(lanes) < len(offs):
                n = self.vals[offs[k + len(lanes)]]
                if type(n) is not _Lane or n.vec is not e.vec or n.i != lanes[-1] + 1:
                    break
                lanes.append(n.i)
            parts.append(_pick(e.vec, lanes))
            k += len(lanes)
        return concat(parts, self.dtype)

    def scatter(self, offs: list, vec: Vector) -> None:
        self._check_home()
        for j, o in enumerate(offs):
            self.vals[o] = _Lane(vec, j)


class RegIter:
    """Registers ``store`` seen from element ``off`` (a static int)."""

    __slots__ = ("store", "off")
    memspace = "register"

    def __init__(self, store: RegStore, off: int = 0):
        self.store, self.off = store, off

    @property
    def dtype(self):
        return self.store.dtype

    def user_iterator(self):
        return self

    def _index(self, off) -> int:
        if type(off) is not int:
            raise TypeError(
                "registers are indexed with compile-time coordinates only: a run-time index into a register "
                "tensor would need local memory. Index with Python ints (a `fx.range_constexpr` loop), select "
                "with `cond.select(a, b)`, or keep the data in shared memory"
            )
        i = self.off + off
        if not 0 <= i < len(self.store.vals):
            raise IndexError(f"register offset {i} is out of range for {len(self.store.vals)} registers")
        return i

    def __add__(self, off) -> RegIter:
        return RegIter(self.store, self._index(off))

    def advance(self, off, div) -> RegIter:
        return self if type(off) is int and off == 0 else self + off

    def read_elem(self, off, dtype):
        return self.store.get(self._index(off))

    def write_elem(self, off, x) -> None:
        self.store.set(self._index(off), x)

    def _offsets(self, layout, n) -> list:
        return [self._index(L.crd2idx(L.idx2crd(i, layout._shape), layout)) for i in range(n)]

    def read_all(self, layout, n, dtype, ddiv) -> Vector:
        return self.store.gather(self._offsets(layout, n))

    def write_all(self, layout, n, vec, ddiv) -> None:
        self.store.scatter(self._offsets(layout, n), vec)

    def fill(self, layout, n, x, ddiv) -> None:
        for o in self._offsets(layout, n):
            self.store.set(o, x)

    def read_elems(self, offs, mask=None, other=None):
        idx = [self._index(o) for o in offs]
        m = _mask_arg(mask)
        if len(idx) == 1:
            v = self.store.get(idx[0])
            return m.select(v, other) if m is not None and other is not None else v
        v = self.store.gather(idx)
        return Vector.select_whole(m, v, other) if m is not None and other is not None else v

    def write_elems(self, offs, value, mask=None) -> None:
        idx = [self._index(o) for o in offs]
        m = _mask_arg(mask)
        if len(idx) == 1:
            x = value[0] if isinstance(value, Vector) else value
            self.store.set(idx[0], m.select(x, self.store.get(idx[0])) if m is not None else x)
            return
        vec = value if isinstance(value, Vector) else Vector.from_elements([value], self.dtype)
        if m is not None:
            vec = Vector.select_whole(m, vec, self.store.gather(idx))
        self.store.scatter(idx, vec)

    def read_vec(self, off, n, align, mask=None, other=None):
        return self.read_elems([off + j for j in range(n)], mask, other)

    def write_vec(self, off, value, align, mask=None) -> None:
        n = value.numel if isinstance(value, Vector) else 1
        self.write_elems([off + j for j in range(n)], value, mask)

    def _word(self) -> int:
        """Registers carried together as one ``vector<p x T>`` (a 32-bit word of 8/16-bit elements), else 1."""
        w = self.store.dtype.width
        n = len(self.store.vals)
        p = 32 // w if w in (8, 16) else 1
        return p if n % p == 0 else 1

    def values(self) -> list:
        # NOTE: narrow registers cross regions as whole 32-bit words (vector<p x T>): as scalars, NVPTX would
        # split and re-pack every word of an MMA fragment at each loop back edge (register pressure, spills)
        s, p = self.store, self._word()
        if p == 1:
            return [s.get(i).ir_value() for i in range(len(s.vals))]
        return [s.gather(list(range(i, i + p))).ir_value() for i in range(0, len(s.vals), p)]

    def copy(self) -> RegIter:
        """The same registers as a new store (each branch of a run-time ``if`` works on its own copy)."""
        s = self.store
        new = RegStore(len(s.vals), s.dtype, list(s.vals))
        return RegIter(new, self.off)

    def rebuild(self, values):
        n = len(self.store.vals)
        d = self.store.dtype
        p = self._word()
        if p == 1:
            new = RegStore(n, d, [d._make(v) for v in values[:n]])
            return RegIter(new, self.off), values[n:]
        vecs = [Vector._make(v, (p,), d) for v in values[: n // p]]
        new = RegStore(n, d, [_Lane(vecs[i // p], i % p) for i in range(n)])
        return RegIter(new, self.off), values[n // p :]

    def signature(self):
        return ("rmem", self.store.dtype, len(self.store.vals), self.off)

    def __repr__(self) -> str:
        return f"RegisterIterator({self.dtype.__name__}, +{self.off})"


# ---------------------------------------------------------------------------------------------------------
# Coordinates
# ---------------------------------------------------------------------------------------------------------


class CoordIter:
    """A coordinate: the tensor's element at ``crd`` is ``coordinate + layout(crd)``."""

    __slots__ = ("crd",)
    memspace = "coord"
    dtype = Int32

    def __init__(self, crd):
        self.crd = crd

    def user_iterator(self):

        return wrap(self.crd)

    def advance(self, off, div) -> CoordIter:
        return self if type(off) is int and off == 0 else CoordIter(iadd(self.crd, off))

    def read_elem(self, off, dtype):

        return wrap(iadd(self.crd, off))

    def _no_data(self, what):
        raise TypeError(f"a coordinate tensor has no data to {what}; index it (`t[i]`) to get a coordinate")

    def write_elem(self, off, x):
        self._no_data("write")

    def read_all(self, layout, n, dtype, ddiv) -> Vector:
        """The coordinates as one Int32 Vector (colexicographic order), for tensors whose elements are
        integers (``make_view(int, layout)``); a tensor of tuple coordinates has no vector form."""
        elems = [iadd(self.crd, L.crd2idx(L.idx2crd(i, layout._shape), layout)) for i in range(n)]
        if any(isinstance(e, tuple) for e in elems):
            raise TypeError(
                "a coordinate tensor whose elements are tuples cannot be loaded as a Vector; index it "
                "(`t[i]`) to get a coordinate, or build it over an integer (`make_view(0, layout)`)"
            )
        return Vector.from_elements([as_numeric(e).to(Int32) for e in elems], Int32)

    def _no_store(self, *a):
        self._no_data("write")

    def read_vec(self, *a):
        self._no_data("load")

    write_all = fill = write_vec = _no_store

    def values(self) -> list:

        return [as_numeric(x).ir_value() for x in leaf_values(self.crd, [])]

    def rebuild(self, values):

        n = len(leaf_values(self.crd, []))
        return CoordIter(replace_leaves(self.crd, iter(values[:n]))), values[n:]

    def signature(self):

        return ("coord", static_part(self.crd))


def as_iterator(x, alignment: int = 0):
    """The iterator of ``make_view``'s first argument.

    Raises:
        TypeError: not a pointer, iterator or coordinate.
    """
    if isinstance(x, (BufIter, RegIter, CoordIter, MemIter)):
        return x
    if isinstance(x, Pointer) or (type(x) is Value and isinstance(x.type, PointerType)):
        return MemIter.of(x, None, alignment)
    if isinstance(x, (int, tuple, list, Numeric)) and not isinstance(x, bool):
        return CoordIter(as_int_tuple(x, "make_view coordinate"))
    if type(x) is Value:
        n = numeric_type_of(x.type)
        if n.is_integer:
            return CoordIter(as_numeric(x).to(Int32))
    raise TypeError(f"make_view needs a pointer, a tensor iterator or a coordinate, got {type(x).__name__} {x!r}")
