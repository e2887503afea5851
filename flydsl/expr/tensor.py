"""``fx.Tensor``: an *iterator* (where the elements live) plus a *layout* (which element is where).

``t[crd]`` maps a coordinate through the layout to an offset (CuTe's ``crd2idx``; an integer into a
multi-mode shape splits colexicographically; a ``ComposedLayout`` applies its swizzle to
``offset + outer(crd)``) and reads the element there. Four kinds of iterators (see
:mod:`flydsl.expr._sem.iterators`):

==============  =============================================  ==========================================
memory          ``fx.Pointer`` into global/shared memory        ``t[crd]`` is a load, ``t[crd] = v`` a store
buffer          AMD-style buffer resource + element offset      loads past ``num_records`` read 0
registers       a Python list of DSL scalars (no IR storage)    compile-time coordinates only
coordinates     a coordinate tuple (``make_identity_tensor``)   ``t[crd]`` is the coordinate itself
==============  =============================================  ==========================================

A ``None`` in a coordinate slices: ``t[None, j]`` views column ``j`` (same memory, the iterator moved
to the fixed coordinates). ``t.load()`` reads every element into one ``fx.Vector`` (colexicographic
order), ``t.store(v)`` writes one, ``t.fill(x)`` broadcasts a scalar; memory tensors use one vector
access per contiguous run (static unit stride), element accesses otherwise.

Static layouts fold at trace time: indexing a fully static tensor with static coordinates emits the
access and its constant offset, no index arithmetic. A tensor crosses regions and kernel boundaries
through the value protocol (``__fly_values__``/``__fly_rebuild__``): its iterator's IR values, then
the run-time leaves of its layout.
"""

from __future__ import annotations

import enum

from .. import layout as L
from ..ir import PointerType, Value
from ..layout import ComposedLayout, Layout
from ..layout.inttuple import format_int_tuple
from ._sem import flyir
from ._sem import iterators as _it
from ._sem.inttuple import (
    IntTuple,
    StaticInt,
    as_int_tuple,
    is_tensor,
    layout_key,
    layout_leaves,
    layout_rebuild,
    offset_divisibility,
    unwrap_single_mode,
)
from ._sem.numeric import Int32, Numeric, as_numeric, numeric_type_of
from ._sem.pointer import Pointer
from ._sem.vector import Vector, as_vector_operand

__all__ = [
    "Tensor", "IntTupleView", "make_view", "make_tensor", "make_rmem_tensor", "make_fragment_like",
    "make_identity_tensor", "get_iter", "AddressSpace", "MemRefType", "LayoutType", "memref_alloca",
    "memref_load", "memref_store", "memref_load_vec", "memref_store_vec", "make_fragment_layout_like",
    "add_offset", "recast_iter",
]  # fmt: skip

IntTupleView = IntTuple  # the compiler's name for the shape/stride view


class Tensor:
    """A view of elements: an iterator and a layout (``Tensor(ptr, dtype, layout)`` over memory).

    Args:
        ptr: an IR pointer value (``!fly.ptr<elem, space>``) or an ``fx.Pointer`` — or an existing tensor
            alone (``fx.Tensor(fx.make_view(...))``, FlyDSL's spelling): the same view, except that a register
            tensor is copied (registers are values; the copy belongs to the block being traced).
        dtype: the element type (a Numeric class).
        layout: a ``Layout`` or ``ComposedLayout`` whose leaves are ints or run-time ``Int32``.
        alignment: the byte alignment of ``ptr`` when known exactly (kernel arguments); 0: the element's.
        divisibility: what every run-time stride is known to be a multiple of (or None); offsets, and so the
            alignment vector accesses claim, follow from it.

    Raises:
        TypeError: ``ptr`` is not a pointer.
    """

    _is_fly_tensor = True
    __slots__ = ("_it", "_dtype", "_layout", "_div")

    def __init__(self, ptr, dtype=None, layout=None, *, alignment: int = 0, divisibility=None):
        if getattr(type(ptr), "_is_fly_tensor", False) and dtype is None and layout is None:
            copy = getattr(ptr._it, "copy", None)  # registers are values: a copy owned by this block
            self._it = ptr._it if copy is None else copy()
            self._dtype, self._layout, self._div = ptr._dtype, ptr._layout, ptr._div
            return  # FlyDSL's fx.Tensor(view)
        if layout is None:
            raise TypeError("Tensor(ptr, dtype, layout) needs a layout (or wrap an existing view: fx.Tensor(view))")
        if not (type(ptr) is Value and isinstance(ptr.type, PointerType)) and not _it.is_pointer(ptr):
            raise TypeError(f"Tensor needs a pointer (IR value or fx.Pointer), got {ptr!r}")
        self._it = _it.MemIter.of(ptr, dtype, alignment)
        self._dtype = self._it.dtype
        self._layout = _check_layout(layout)
        self._div = divisibility

    @classmethod
    def _make(cls, it, dtype, layout, div=None) -> Tensor:
        o = object.__new__(cls)
        o._it, o._dtype, o._layout, o._div = it, dtype, layout, div
        return o

    # -- queries ---------------------------------------------------------------------------------------
    @property
    def dtype(self) -> type[Numeric]:
        """The element type."""
        return self._dtype

    element_type = dtype

    @property
    def layout(self):
        """The layout (a ``Layout`` or a swizzled ``ComposedLayout``)."""
        return self._layout

    @property
    def shape(self) -> IntTuple:
        """The shape as an IntTuple (``m, n = t.shape.unpack()``)."""
        s = self._layout._shape
        return IntTuple(s if type(s) is tuple else (s,))

    @property
    def stride(self) -> IntTuple:
        """The stride as an IntTuple (raises for a swizzled layout, which has none)."""
        d = self._layout._stride
        return IntTuple(d if type(d) is tuple else (d,))

    @property
    def iterator(self):
        """Where element 0 of the layout's codomain lives: an ``fx.Pointer`` (memory), a buffer iterator,
        a register iterator, or a coordinate tuple. ``fx.make_view(t.iterator, layout)`` re-views it."""
        return self._it.user_iterator()

    ptr = iter = iterator

    @property
    def alignment(self) -> int:
        """Byte alignment known for the iterator (memory and buffer tensors; else the element size)."""
        return getattr(self._it, "align", max(1, self._dtype.width // 8))

    @property
    def memspace(self) -> str:
        """``"global"``, ``"shared"``, ``"generic"``, ``"buffer"``, ``"register"`` or ``"coord"``."""
        return self._it.memspace

    address_space = memspace

    @property
    def type(self) -> MemRefType:
        """The tensor's type (FlyDSL's memref type: element type, address space, layout)."""
        space = _SPACE_OF.get(self.memspace, AddressSpace.Generic)
        return MemRefType(self._dtype, self._layout, space)

    @property
    def rank(self) -> int:
        return L.rank(self._layout._shape)

    def size(self):
        """Number of elements (a StaticInt when the shape is static, else an Int32)."""
        n = self._layout.size()
        return StaticInt(n) if type(n) is int else n

    numel = property(size)

    @property
    def leading_dim(self) -> int | None:
        """The top-level mode with static stride 1 (None if there is none)."""
        if isinstance(self._layout, ComposedLayout):
            return None
        for i, d in enumerate(self.stride):
            if type(d) is int and d == 1:
                return i
        return None

    def __repr__(self) -> str:
        return self.__fly_describe__()

    def __fly_describe__(self) -> str:
        return f"Tensor<{self._dtype.__name__}, {self._layout}, {self.memspace}>"

    # -- views -----------------------------------------------------------------------------------------
    def _with_layout(self, layout) -> Tensor:
        """The same iterator through another layout (divides, composition, coalesce …)."""
        return Tensor._make(self._it, self._dtype, _check_layout(layout), self._div)

    def _slice(self, crd) -> Tensor:
        """The sub-tensor of the ``None`` modes of ``crd`` (fixed modes move the iterator)."""
        crd = _norm_coord(crd)
        _check_static_bounds(crd, self._layout._shape)
        sub, off = L.slice_and_offset(crd, self._layout)
        it = self._it.advance(
            off, lambda: abs(off) if type(off) is int else offset_divisibility(crd, self._layout, self._div)
        )
        return Tensor._make(it, self._dtype, unwrap_single_mode(sub), self._div)

    def _offset(self, crd):
        """The offset (int, Int32 or coordinate tuple) of a full coordinate."""
        crd = _norm_coord(crd)
        shape = self._layout._shape
        if type(crd) is tuple and type(shape) is tuple and len(crd) != len(shape):
            raise IndexError(
                f"tensor of rank {len(shape)} (shape {format_int_tuple(shape)}) indexed with {len(crd)} "
                "coordinates; index with one integer per mode, or one integer for the flattened index"
            )
        _check_static_bounds(crd, shape)
        return L.crd2idx(crd, self._layout)

    def __getitem__(self, crd):
        """``t[crd]``: the element at ``crd``; with a ``None`` anywhere, the sub-tensor of those modes.

        Raises:
            IndexError: a static coordinate out of range, or the wrong number of modes.
            TypeError: a run-time coordinate into registers.
        """
        if L.has_none(_norm_coord(crd)):
            return self._slice(crd)
        return self._it.read_elem(self._offset(crd), self._dtype)

    def __setitem__(self, crd, value):
        """``t[crd] = v``: store ``v`` converted to the element type."""
        self._it.write_elem(self._offset(crd), _as_elem(value, self._dtype))

    def load(self) -> Vector:
        """Every element as one flat ``fx.Vector`` in the layout's colexicographic order.

        Memory tensors read each contiguous run (static stride 1) with one vector access (aligned as far
        as the iterator's alignment is known) and other elements one by one.

        Raises:
            TypeError: a run-time size, or a coordinate tensor.
        """
        n = _static_size(self, "load")
        return self._it.read_all(self._layout, n, self._dtype, self._div)

    def store(self, value) -> None:
        """Write a Vector of ``size(t)`` lanes (converted to the element type), or a scalar to every
        element.

        Raises:
            ValueError: a Vector with another number of lanes. TypeError: a run-time size.
        """
        n = _static_size(self, "store")
        v = as_vector_operand(value) if not isinstance(value, (list, tuple)) else Vector(list(value), dtype=self._dtype)
        if v is None:
            raise TypeError(f"cannot store {value!r} into a tensor; store an fx.Vector or a scalar")
        if not isinstance(v, Vector):
            return self.fill(v)
        if v.numel != n:
            raise ValueError(f"storing a Vector of {v.numel} lanes into a tensor of {n} elements ({self._layout})")
        self._it.write_all(self._layout, n, v.to(self._dtype) if v.dtype is not self._dtype else v, self._div)

    def fill(self, value) -> None:
        """Set every element to the scalar ``value`` (converted to the element type)."""
        n = _static_size(self, "fill")
        x = _as_elem(value, self._dtype)
        self._it.fill(self._layout, n, x, self._div)

    # -- the value protocol --------------------------------------------------------------------------------
    def __fly_values__(self) -> list[Value]:
        leaves = [as_numeric(x).ir_value() for x in layout_leaves(self._layout)]
        return self._it.values() + leaves

    def __fly_rebuild__(self, values) -> Tensor:
        it, rest = self._it.rebuild(values)
        vals = iter(rest)
        layout = layout_rebuild(self._layout, vals)
        return Tensor._make(it, self._dtype, layout, self._div)

    def __fly_copy__(self) -> Tensor:
        """A copy for one branch of a run-time ``if``: register tensors get their own registers (they are
        values, and each branch changes its own); other tensors are views and are returned as is."""
        copy = getattr(self._it, "copy", None)
        return self if copy is None else Tensor._make(copy(), self._dtype, self._layout, self._div)

    def __fly_signature__(self):
        return (self._dtype, self._it.signature(), layout_key(self._layout))

    # -- Python protocol: a tensor is not a Python sequence ----------------------------------------------
    def __iter__(self):
        raise TypeError("a Tensor is not iterable; index it (`t[i]`) inside a loop over `range(...)`")

    def __len__(self):
        raise TypeError("len() of a Tensor is not defined; use `fx.size(t)` or `t.shape[0]`")

    def __bool__(self):
        raise TypeError("a Tensor has no truth value")


# ---------------------------------------------------------------------------------------------------------
# Construction
# ---------------------------------------------------------------------------------------------------------


def make_view(iterator, layout, *, alignment: int = 0) -> Tensor:
    """A tensor of ``layout`` over ``iterator``.

    Args:
        iterator: a tensor (its iterator is used), an ``fx.Pointer`` or raw pointer value (memory), the
            iterator of a buffer or register tensor, or a coordinate — an int or a tuple of ints/run-time
            integers — giving a coordinate tensor (``make_view((0, 0), make_identity_layout((M, N)))``).
        layout: a ``Layout`` or ``ComposedLayout``.
        alignment: for a pointer: its known byte alignment (default: that of ``fx.Pointer.alignment`` if
            it has one, else the element size).

    Raises:
        TypeError: an iterator of another kind, or a layout that is not one.
    """

    if is_tensor(iterator):
        t = iterator
        return Tensor._make(t._it, t._dtype, _check_layout(layout), t._div)
    it = _it.as_iterator(iterator, alignment)
    return Tensor._make(it, it.dtype, _check_layout(layout))


def make_tensor(iterator, layout_or_shape) -> Tensor:
    """CuTe's ``make_tensor``: ``make_view`` accepting a shape (compact column-major layout) as well."""
    lay = layout_or_shape
    if not isinstance(lay, (Layout, ComposedLayout)):
        lay = L.make_layout(as_int_tuple(lay, "make_tensor"))
    return make_view(iterator, lay)


def make_rmem_tensor(shape_or_layout, dtype) -> Tensor:
    """A register tensor: ``cosize(layout)`` registers of ``dtype`` (values, never local memory).

    Args:
        shape_or_layout: a static shape (laid out column-major) or a static layout.
        dtype: the element type (a Numeric class; ``fx.Boolean`` for predicates).

    Raises:
        TypeError: a run-time shape or stride, or a dtype that is not a Numeric class.
    """
    if not (isinstance(dtype, type) and issubclass(dtype, Numeric)):
        raise TypeError(f"make_rmem_tensor: dtype must be a Numeric class (fx.Float32 …), got {dtype!r}")
    lay = shape_or_layout
    if not isinstance(lay, (Layout, ComposedLayout)):
        shape = as_int_tuple(shape_or_layout, "make_rmem_tensor")
        lay = L.make_layout(shape)
        recorded = flyir.ordered_layout(lay, shape, None) if lay.is_static else None
    else:
        recorded = flyir.layout(lay) if isinstance(lay, Layout) and lay.is_static else None
    if not lay.is_static:
        raise TypeError(
            f"make_rmem_tensor: registers need a compile-time layout, got {lay}; tile the tensor first so "
            "each thread holds a static number of elements"
        )
    flyir.memref(recorded, lay, dtype.ir_type, "register")
    n = L.cosize(lay)
    return Tensor._make(_it.RegIter(_it.RegStore(max(1, n), dtype)), dtype, lay)


def _fragment_layout(layout):
    if isinstance(layout, ComposedLayout):
        layout = layout.outer
    if not L.is_static(layout._shape):
        raise TypeError(
            f"make_fragment_like: registers need a compile-time shape, got {layout}; partition or slice the "
            "tensor to a static per-thread tile first"
        )
    strides = L.flatten(layout._stride) if type(layout._stride) is tuple else (layout._stride,)
    if any(type(d) is not int for d in strides):  # basis (coordinate tensors) or run-time strides
        return L.make_layout(layout._shape)
    if type(layout._shape) is tuple and len(layout._shape) > 1:  # mode 0 compact as in t, the rest after it
        m0 = L.make_layout_like(L.get(layout, 0))
        rest = layout._shape[1:]
        rest_d = L.compact_col_major(rest, L.cosize(m0))
        return Layout._make((m0._shape, *rest), (m0._stride, *rest_d))
    return L.make_layout_like(layout)


def make_fragment_like(t, dtype=None) -> Tensor:
    """Registers shaped like ``t`` (a tensor or layout; same shape): the first mode compact in ``t``'s
    stride order (stride-0 modes stay broadcast), the other modes column-major after it (CuTe's
    ``make_fragment_like``); ``dtype`` defaults to ``t``'s. Coordinate tensors give column-major.

    Raises:
        TypeError: a run-time shape.
    """

    lay = t.layout if is_tensor(t) else t
    if dtype is None:
        if not is_tensor(t) or t.memspace == "coord":
            raise TypeError("make_fragment_like of a layout or coordinate tensor needs dtype=")
        dtype = t.dtype
    return make_rmem_tensor(_fragment_layout(lay), dtype)


def make_identity_tensor(shape) -> Tensor:
    """The coordinate tensor of ``shape``: element ``crd`` is ``crd`` itself (``make_view`` of the zero
    coordinate through ``make_identity_layout(shape)``)."""
    lay = L.make_identity_layout(as_int_tuple(shape, "make_identity_tensor"))
    return Tensor._make(_it.CoordIter(L.coprofile(lay)), Int32, lay)


def make_fragment_layout_like(t):
    """The layout :func:`make_fragment_like` gives ``t`` (a tensor or layout)."""

    return _fragment_layout(t.layout if is_tensor(t) else t)


def get_iter(t):
    """The iterator of a tensor (``t.iterator``)."""
    return t.iterator


def add_offset(iterator, offset):
    """``iterator`` moved by ``offset`` elements (a pointer, a buffer/register iterator, or a coordinate)."""
    if getattr(type(iterator), "_is_fly_tensor", False):
        iterator = iterator.iterator
    off = as_int_tuple(offset, "add_offset")
    if isinstance(iterator, (tuple, int)) or isinstance(iterator, Numeric):
        return L.int_tuple_add(as_int_tuple(iterator, "add_offset"), off)
    return iterator + off


def recast_iter(dtype, iterator):
    """A pointer iterator reinterpreted as pointing at ``dtype`` elements (``ptr.cast``)."""

    if not isinstance(iterator, Pointer):
        raise TypeError(f"recast_iter needs a pointer iterator, got {iterator!r}")
    return iterator.recast(dtype)


# ---------------------------------------------------------------------------------------------------------
# FlyDSL's memref spelling (examples/01-vectorAdd.py)
# ---------------------------------------------------------------------------------------------------------


class AddressSpace(enum.IntEnum):
    """FlyDSL's address spaces (``fx.AddressSpace.Register`` …); the memory ones are the IR's numbers."""

    Generic = 0
    Global = 1
    Shared = 3
    Constant = 4
    Local = 5
    BufferDesc = 7
    Register = 16


class MemRefType:
    """``fx.MemRefType.get(elem_type, layout, space)``: what :func:`memref_alloca` allocates."""

    __slots__ = ("dtype", "layout", "space")

    def __init__(self, dtype, layout, space):
        self.dtype, self.layout, self.space = dtype, layout, AddressSpace(int(space))

    @classmethod
    def get(cls, elem_type, layout, address_space=AddressSpace.Register) -> MemRefType:
        """``elem_type``: a Numeric class or IR type (``fx.T.f32()``); ``layout``: a layout (``LayoutType.get``)."""
        d = elem_type if isinstance(elem_type, type) and issubclass(elem_type, Numeric) else numeric_type_of(elem_type)
        return cls(d, layout, address_space)

    def __repr__(self) -> str:
        return f"MemRefType({self.dtype.__name__}, {self.layout}, {self.space.name})"

    def __str__(self) -> str:
        return f"!fly.memref<{self.dtype.ir_type}, {self.space.name.lower()}, {self.layout}>"

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, MemRefType)
            and (self.dtype, self.space) == (other.dtype, other.space)
            and str(self.layout) == str(other.layout)
        )

    def __hash__(self) -> int:
        return hash((self.dtype, self.space, str(self.layout)))


_SPACE_OF = {
    "global": AddressSpace.Global,
    "shared": AddressSpace.Shared,
    "generic": AddressSpace.Generic,
    "buffer": AddressSpace.BufferDesc,
    "register": AddressSpace.Register,
}


class LayoutType:
    """``fx.LayoutType.get(shape, stride)``: a static layout (FlyDSL's type-level spelling)."""

    @staticmethod
    def get(shape, stride=None) -> Layout:
        d = None if stride is None else as_int_tuple(stride, "LayoutType")
        return L.make_layout(as_int_tuple(shape, "LayoutType"), d)


def memref_alloca(memref_type: MemRefType, layout=None) -> Tensor:
    """Registers of ``memref_type`` (its address space must be ``Register``).

    Raises:
        ValueError: another address space (use ``fx.SharedAllocator`` for shared memory).
    """
    if memref_type.space is not AddressSpace.Register:
        raise ValueError(
            f"memref_alloca allocates registers (AddressSpace.Register), got {memref_type.space.name}; "
            "use fx.SharedAllocator for shared memory"
        )
    return make_rmem_tensor(memref_type.layout if layout is None else layout, memref_type.dtype)


def memref_load(t: Tensor, indices):
    """``t[indices]``."""
    return t[indices]


def memref_store(value, t: Tensor, indices) -> None:
    """``t[indices] = value``."""
    t[indices] = value


def memref_load_vec(t: Tensor) -> Vector:
    """``t.load()``: every element as one Vector."""
    return t.load()


def memref_store_vec(vector, t: Tensor) -> None:
    """``t.store(vector)``."""
    t.store(vector)


# ---------------------------------------------------------------------------------------------------------
# Helpers: coordinates, bounds, divisibility, layout leaves
# ---------------------------------------------------------------------------------------------------------


def _check_layout(layout):
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise TypeError(f"a tensor needs a Layout or ComposedLayout, got {layout!r}")
    return layout


def _norm_coord(c):
    return as_int_tuple(c, "tensor index")


def _check_static_bounds(coord, shape) -> None:
    """A static coordinate out of a static mode's range is a trace-time ``IndexError``."""
    if type(coord) is tuple and type(shape) is tuple:
        for c, s in zip(coord, shape):
            _check_static_bounds(c, s)
        return
    if type(coord) is not int:
        return
    n = L.size(shape)
    if coord < 0 or (type(n) is int and coord >= n):
        raise IndexError(f"tensor index {coord} is out of range for a mode of size {format_int_tuple(shape)}")


def _static_size(t: Tensor, what: str) -> int:
    n = t._layout.size()
    if type(n) is not int:
        raise TypeError(
            f"{what}() needs a tensor of compile-time size, but {t} has run-time extents; slice or divide it "
            "into a static tile first"
        )
    return n


def _as_elem(value, dtype):
    """``value`` as a scalar of ``dtype`` (Python numbers and other DSL scalars are converted)."""
    if isinstance(value, Numeric):
        return value if type(value) is dtype else value.to(dtype)
    if type(value) is Value:
        return as_numeric(value).to(dtype)
    if isinstance(value, Vector):
        raise TypeError(f"cannot store a Vector of {value.numel} lanes into one element; use t.store(vec)")
    return dtype(value)
