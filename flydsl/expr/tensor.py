"""``fx.Tensor``: a typed pointer plus a layout — what a tensor argument is inside a kernel.

``Tensor(ptr, dtype, layout)``: ``ptr`` is an IR value of type ``!fly.ptr<elem, space>``, ``dtype`` a
Numeric class, ``layout`` a :class:`flydsl.layout.Layout` whose leaves are Python ints (static) or
run-time ``fx.Int32`` values (dynamic). Indexing maps a coordinate through the layout to an element
offset (CuTe's ``crd2idx``: ``sum(crd_i * stride_i)``, an integer into a multi-mode shape splits
colexicographically) and loads or stores one element there. Every access goes through
:meth:`Tensor._offset`, the one place the layout engineer extends (slicing, divides, copy atoms).

A tensor crosses regions and kernel boundaries through the value protocol: its IR values are the
pointer followed by the dynamic shape leaves then the dynamic stride leaves.
"""

from __future__ import annotations

from ..dialects import ptr as dptr
from ..ir import PointerType, Value
from ..layout import Layout, crd2idx, make_layout
from ..layout.inttuple import flatten as _flat
from ..layout.inttuple import format_int_tuple
from .numeric import Int32, Numeric, as_numeric

__all__ = ["Tensor", "IntTupleView"]


class IntTupleView(tuple):
    """A shape or stride as seen by kernel code: a tuple (ints and ``fx.Int32``) with FlyDSL's helpers."""

    __slots__ = ()

    def unpack(self) -> tuple:
        """The leaves as a plain tuple (``m, n = t.shape.unpack()``)."""
        return tuple(self)

    def to_py_value(self):
        """Nested Python ints; raises ``TypeError`` if a leaf is a run-time value."""
        return tuple(_py(x) for x in self)

    @property
    def rank(self) -> int:
        return len(self)

    @property
    def is_static(self) -> bool:
        return all(type(x) is int for x in _flat(tuple(self)))


def _py(x):
    if isinstance(x, tuple):
        return tuple(_py(e) for e in x)
    if type(x) is int:
        return x
    return int(x)  # a static Numeric converts; a run-time one raises with the DSL's hint


def _dynamic_leaves(t) -> list:
    return [x for x in _flat(t) if type(x) is not int]


class Tensor:
    """A view of memory: typed pointer + layout. ``t[i, j]`` loads, ``t[i, j] = v`` stores."""

    __slots__ = ("_ptr", "_dtype", "_layout", "_align", "_divisibility")

    def __init__(self, ptr: Value, dtype: type[Numeric], layout: Layout, *, alignment: int = 0, divisibility=None):
        if type(ptr) is not Value or not isinstance(ptr.type, PointerType):
            raise TypeError(f"Tensor needs a pointer IR value, got {ptr!r}")
        self._ptr = ptr
        self._dtype = dtype
        self._layout = layout
        self._align = alignment or max(1, dtype.width // 8)
        self._divisibility = divisibility

    # -- queries ---------------------------------------------------------------------------------------
    @property
    def dtype(self) -> type[Numeric]:
        return self._dtype

    element_type = dtype

    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def shape(self) -> IntTupleView:
        s = self._layout.shape
        return IntTupleView(s if isinstance(s, tuple) else (s,))

    @property
    def stride(self) -> IntTupleView:
        d = self._layout.stride
        return IntTupleView(d if isinstance(d, tuple) else (d,))

    @property
    def iterator(self) -> Value:
        """The base pointer (``!fly.ptr<elem, space>``)."""
        return self._ptr

    ptr = iterator

    @property
    def alignment(self) -> int:
        """Byte alignment the base pointer is known to have (part of the kernel's specialization)."""
        return self._align

    @property
    def memspace(self) -> str:
        return self._ptr.type.space_name

    address_space = memspace

    @property
    def rank(self) -> int:
        return len(self.shape)

    def size(self):
        """Number of elements (a Python int when the shape is static)."""
        return self._layout.size()

    numel = property(size)

    @property
    def leading_dim(self) -> int | None:
        """The mode with static stride 1 (None if there is none)."""
        for i, d in enumerate(self.stride):
            if type(d) is int and d == 1:
                return i
        return None

    def __repr__(self) -> str:
        return self.__fly_describe__()

    def __fly_describe__(self) -> str:
        lay = f"{format_int_tuple(self._layout.shape)}:{format_int_tuple(self._layout.stride)}"
        return f"Tensor<{self._dtype.__name__}, {lay}, {self.memspace}>"

    # -- element access ----------------------------------------------------------------------------------
    def _offset(self, coord):
        """Element offset of ``coord`` from the base pointer (a Python int or an ``fx.Int32``)."""
        coord = _norm_coord(coord)
        shape = self._layout.shape
        if isinstance(coord, tuple) and isinstance(shape, tuple) and len(coord) != len(shape):
            raise IndexError(
                f"tensor of rank {len(shape)} (shape {format_int_tuple(shape)}) indexed with {len(coord)} "
                "coordinates; index with one integer per mode, or one integer for the flattened index"
            )
        _check_static_bounds(coord, shape)
        return crd2idx(coord, self._layout)

    def _element_ptr(self, coord) -> Value:
        off = self._offset(coord)
        if type(off) is int:
            if off == 0:
                return self._ptr
            off = Int32(off)
        elif not isinstance(off, Numeric):
            off = as_numeric(off)
        return dptr.add(self._ptr, off.ir_value())

    def __getitem__(self, coord):
        p = self._element_ptr(coord)
        return self._dtype._make(dptr.load(p, result_types=[self._dtype.ir_type]))

    def __setitem__(self, coord, value):
        p = self._element_ptr(coord)
        dptr.store(_as_elem(value, self._dtype).ir_value(), p)

    def load(self, coord=0):
        """``t[coord]``."""
        return self[coord]

    def store(self, value, coord=0):
        """``t[coord] = value``."""
        self[coord] = value

    # -- the value protocol --------------------------------------------------------------------------------
    def __fly_values__(self) -> list[Value]:
        dyn = _dynamic_leaves(self._layout.shape) + _dynamic_leaves(self._layout.stride)
        return [self._ptr] + [as_numeric(x).ir_value() for x in dyn]

    def __fly_rebuild__(self, values) -> Tensor:
        it = iter(values[1:])
        shape = _replace_dynamic(self._layout.shape, it)
        stride = _replace_dynamic(self._layout.stride, it)
        return Tensor(values[0], self._dtype, make_layout(shape, stride), alignment=self._align,
                      divisibility=self._divisibility)  # fmt: skip

    def __fly_signature__(self):
        return (self._dtype, _static_part(self._layout.shape), _static_part(self._layout.stride), self._align,
                self._ptr.type)  # fmt: skip

    # -- Python protocol: a tensor is not a Python sequence ----------------------------------------------
    def __iter__(self):
        raise TypeError("a Tensor is not iterable; index it (`t[i]`) inside a loop over `range(...)`")

    def __len__(self):
        raise TypeError("len() of a Tensor is not defined; use `t.shape[0]` or `t.size()`")

    def __bool__(self):
        raise TypeError("a Tensor has no truth value")


def _static_part(t):
    if isinstance(t, tuple):
        return tuple(_static_part(x) for x in t)
    return t if type(t) is int else None


def _replace_dynamic(t, it):
    if isinstance(t, tuple):
        return tuple(_replace_dynamic(x, it) for x in t)
    return t if type(t) is int else Int32._make(next(it))


def _norm_leaf(x):
    if type(x) is int:
        return x
    if type(x) is bool:
        raise TypeError(f"tensor index {x!r} is a bool, not an integer")
    if type(x) is Value:
        x = as_numeric(x)
    if isinstance(x, Numeric):
        if not type(x).is_integer:
            raise TypeError(f"tensor index must be an integer, got {type(x).__name__}")
        if x.is_static():
            return int(x._v)
        return x if type(x) is Int32 else x.to(Int32)
    if hasattr(x, "__index__"):
        return x.__index__()
    raise TypeError(f"tensor index must be an integer, got {type(x).__name__}")


def _norm_coord(c):
    if isinstance(c, (tuple, list)):
        return tuple(_norm_coord(x) for x in c)
    return _norm_leaf(c)


def _check_static_bounds(coord, shape) -> None:
    """An out-of-range static coordinate on a static mode is a trace-time ``IndexError``."""
    if isinstance(coord, tuple) and isinstance(shape, tuple):
        for c, s in zip(coord, shape):
            _check_static_bounds(c, s)
        return
    if type(coord) is not int:
        return
    size = _static_size(shape)
    if coord < 0 or (size is not None and coord >= size):
        raise IndexError(f"tensor index {coord} is out of range for a mode of size {format_int_tuple(shape)}")


def _static_size(s):
    n = 1
    for x in _flat(s if isinstance(s, tuple) else (s,)):
        if type(x) is not int:
            return None
        n *= x
    return n


def _as_elem(value, dtype):
    if isinstance(value, Numeric):
        return value if type(value) is dtype else value.to(dtype)
    if type(value) is Value:
        return as_numeric(value).to(dtype)
    return dtype(value)
