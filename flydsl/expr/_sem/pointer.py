"""``fx.Pointer``: a typed pointer value (``!fly.ptr<T, space>``) with element offsets, loads, stores and
atomics.

Offsets count elements of the pointee type (``p + 3`` is three elements on). ``p[i]`` loads and
``p[i] = v`` stores one element; ``p.load(vec_width=4)`` reads four consecutive elements as a Vector.
Values stored are converted to the pointee type first (as ``T(x)`` would). A Pointer never falls into
Python's sequence protocol: ``list(p)``/``iter(p)``/``x in p`` raise at once.
"""

from __future__ import annotations

from ...dialects import ptr as _d
from ...ir import AddressSpace, PointerType, Value, VectorType
from .numeric import Boolean, Int32, Int64, Numeric, numeric_type_of, resolve_dtype
from .vector import Vector, as_vector_operand, splat_ir, to_dtype

__all__ = ["Pointer", "as_pointer", "space_number"]


def space_number(space) -> int:
    """An address space number from a name (``"global"``, ``"shared"``…) or a number."""
    if isinstance(space, str):
        if space not in AddressSpace.BY_NAME:
            raise ValueError(f"unknown address space {space!r}; known: {', '.join(AddressSpace.BY_NAME)}")
        return AddressSpace.BY_NAME[space]
    return int(space)


class Pointer:
    """A typed pointer to elements of ``dtype`` in an address space (global, shared, local…).

    Args:
        value: an IR value of pointer type, another Pointer, or anything with ``ir_value()``.
        dtype: the element type (a Numeric class) when it carries signedness the IR type lacks
            (``Uint32`` over ``i32``); must match the pointee IR type.

    Raises:
        TypeError: a value that is not a pointer. ValueError: a dtype that does not match.
    """

    __slots__ = ("_v", "_dtype")
    __module__ = "flydsl.expr.pointer"  # its public name
    _is_pointer = True

    def __init__(self, value, dtype=None):
        if isinstance(value, Pointer):
            value, dtype = value._v, dtype or value._dtype
        elif type(value) is not Value and hasattr(value, "ir_value"):
            value = value.ir_value()
        if type(value) is not Value or not isinstance(value.type, PointerType):
            raise TypeError(f"fx.Pointer wraps an IR pointer value, got {value!r}")
        d = numeric_type_of(value.type.elem) if dtype is None else resolve_dtype(dtype)
        if d.ir_type is not value.type.elem:
            raise ValueError(f"dtype {d.__name__} does not match the pointee type {value.type.elem}")
        self._v, self._dtype = value, d

    @classmethod
    def _make(cls, v: Value, dtype) -> Pointer:
        o = object.__new__(cls)
        o._v, o._dtype = v, dtype
        return o

    # -- properties and protocol ---------------------------------------------------------------
    @property
    def dtype(self) -> type[Numeric]:
        """The element type."""
        return self._dtype

    element_type = dtype

    @property
    def address_space(self) -> int:
        """The LLVM address space number (1 global, 3 shared, 5 local, 0 generic)."""
        return self._v.type.space

    @property
    def memspace(self) -> str:
        """The address space's name (``"global"``, ``"shared"``…)."""
        return self._v.type.space_name

    @property
    def type(self) -> PointerType:
        return self._v.type

    def ir_value(self) -> Value:
        """The IR pointer value."""
        return self._v

    def __fly_values__(self) -> list[Value]:
        """The DSL value protocol: the IR values carrying this pointer (one)."""
        return [self._v]

    def __fly_rebuild__(self, values) -> Pointer:
        """The DSL value protocol: a Pointer of the same dtype over a new IR value."""
        return Pointer._make(values[0], self._dtype)

    def __repr__(self) -> str:
        return f"Pointer({self._dtype.__name__}, {self.memspace})"

    def __iter__(self):
        raise TypeError("a Pointer is not iterable; load elements with p[i] or p.load(vec_width=n)")

    def __len__(self):
        raise TypeError("a Pointer has no length; it points at memory whose extent the kernel knows")

    def __contains__(self, item):
        raise TypeError("`x in pointer` is not supported; a Pointer is not a sequence")

    def __bool__(self):
        raise TypeError("a Pointer has no Python truth value at trace time")

    # -- address arithmetic --------------------------------------------------------------------
    def _offset(self, off, negate=False) -> Pointer:
        if isinstance(off, int) and not isinstance(off, bool):
            off = -off if negate else off
            if off == 0:
                return self
            n = Int32(off) if -(1 << 31) <= off < (1 << 31) else Int64(off)
        else:
            n = as_vector_operand(off)
            if not isinstance(n, Numeric) or not n.dtype.is_integer:
                raise TypeError(f"a pointer offset must be an integer, got {off!r}")
            if n.dtype is Boolean or (not n.dtype.signed and n.dtype.width < 64):
                n = n.to(Int64)
            if n.is_static() and n.value == 0:
                return self
            if negate:
                n = -n
        return Pointer._make(_d.add(self._v, n.ir_value()), self._dtype)

    def __add__(self, off) -> Pointer:
        """``p + off``: ``off`` elements further (``ptr.add``)."""
        return self._offset(off)

    __radd__ = __add__

    def __sub__(self, other):
        """``p - off`` (a Pointer) or ``p - q`` (the element distance, Int64)."""
        if isinstance(other, Pointer):
            nbytes = max(1, self._dtype.width // 8)
            return (self.to_int() - other.to_int()) // nbytes
        return self._offset(other, negate=True)

    # -- memory --------------------------------------------------------------------------------
    def __getitem__(self, i):
        """``p[i]``: load element ``i``."""
        if isinstance(i, slice):
            raise TypeError("pointer slices are not supported; use p + start and p.load(vec_width=n)")
        return (self + i).load()

    def __setitem__(self, i, value):
        """``p[i] = v``: store ``v`` (converted to the element type) at element ``i``."""
        (self + i).store(value)

    def load(self, vec_width: int = 1, align=None, cache=None, *, mask=None, other=None, dtype=None, fast_align=None):
        """Read one element (``vec_width=1``: a scalar of ``dtype``) or ``vec_width`` consecutive elements
        (a Vector).

        Args:
            vec_width: lanes to read.
            align: the access alignment in bytes (default: the element size).
            cache: a cache modifier (``"ca"``, ``"cg"``, ``"cs"``, ``"lu"``, ``"cv"``, ``"nc"``).
            mask: a Boolean (or one per lane): masked-off lanes are not read and give ``other``.
            other: the value of masked-off lanes (default 0).
            dtype: read through a pointer recast to this element type.
            fast_align: a larger alignment the access may use when the address has it at run time (the
                generated code tests the address; ``align`` stays what is guaranteed).

        Raises:
            ValueError: an unknown cache modifier or a bad ``vec_width``.
        """
        if dtype is not None:
            return self.recast(dtype).load(vec_width, align, cache, mask=mask, other=other, fast_align=fast_align)
        d = self._dtype
        n = int(vec_width)
        if n < 1:
            raise ValueError(f"vec_width must be >= 1, got {vec_width}")
        rt = d.ir_type if n == 1 else VectorType(n, d.ir_type)
        attrs = _mem_attrs(align, cache, fast_align)
        if mask is None:
            r = _d.load(self._v, result_types=[rt], **attrs)
        else:
            fill = to_dtype(0 if other is None else other, d)
            fill_v = fill.ir_value() if n == 1 else splat_ir(fill, n)
            r = _d.masked_load(self._v, _mask_value(mask, n), fill_v, **attrs)
        return d._make(r) if n == 1 else Vector._make(r, (n,), d)

    def store(self, value, align=None, cache=None, *, mask=None, fast_align=None) -> None:
        """Write a scalar or a Vector (consecutive elements), converted to the element type.

        Args:
            value: a scalar (DSL or Python) or a Vector.
            align, cache, fast_align: as for :meth:`load`.
            mask: a Boolean (or one per lane): masked-off lanes are not written.
        """
        v = as_vector_operand(value)
        if v is None:
            raise TypeError(f"cannot store {value!r} through a pointer")
        v = v.to(self._dtype) if isinstance(v, Vector) else to_dtype(value, self._dtype)
        attrs = _mem_attrs(align, cache, fast_align)
        n = v.numel if isinstance(v, Vector) else 1
        if mask is None:
            _d.store(v.ir_value(), self._v, **attrs)
        else:
            _d.masked_store(v.ir_value(), self._v, _mask_value(mask, n), **attrs)

    # -- views and casts -----------------------------------------------------------------------
    def recast(self, dtype) -> Pointer:
        """The same address as a pointer to ``dtype`` (``ptr.cast``)."""
        d = resolve_dtype(dtype)
        if d.ir_type is self._dtype.ir_type:
            return Pointer._make(self._v, d)
        return Pointer._make(_d.cast(self._v, result_types=[PointerType(d.ir_type, self.address_space)]), d)

    def to_int(self) -> Int64:
        """The address as an Int64 (``ptr.to_int``)."""
        return Int64._make(_d.to_int(self._v))

    def view(self, layout, **kwargs):
        """A tensor of ``layout`` over this memory (``fx.make_view(ptr, layout)``; FlyDSL's ``ptr.view``)."""
        from ..tensor import make_view  # cycle: tensors are built on pointers (the surface's tensor.py)

        return make_view(self, layout, **kwargs)


def _mem_attrs(align, cache, fast_align=None) -> dict:
    attrs = {}
    for name, value in (("align", align), ("fast_align", fast_align)):
        if value is not None:
            a = int(value)
            if a <= 0 or a & (a - 1):
                raise ValueError(f"{name} must be a power of two, got {value}")
            attrs[name] = a
    if attrs.get("fast_align", 0) <= attrs.get("align", 0):
        attrs.pop("fast_align", None)  # nothing to test at run time
    if cache is not None:
        if cache not in _d.CACHE_MODIFIERS or not cache:
            known = ", ".join(m for m in _d.CACHE_MODIFIERS if m)
            raise ValueError(f"unknown cache modifier {cache!r}; expected one of {known}")
        attrs["cache"] = cache
    return attrs


def _mask_value(mask, lanes: int) -> Value:
    m = as_vector_operand(mask)
    if m is None:
        raise TypeError(f"a mask must be a Boolean, got {mask!r}")
    if isinstance(m, Vector):
        if m.numel != lanes:
            raise ValueError(f"a mask of {m.numel} lanes for an access of {lanes}")
        return m.to(Boolean).ir_value()
    return m.to(Boolean).ir_value()


def as_pointer(x) -> Pointer:
    """A Pointer from a Pointer, a raw pointer IR value, or an object with ``.ptr``/``.iterator``
    (a tensor).

    Raises:
        TypeError: none of these.
    """
    if isinstance(x, Pointer):
        return x
    if type(x) is Value and isinstance(x.type, PointerType):
        return Pointer(x)
    for attr in ("ptr", "iterator"):
        p = getattr(x, attr, None)
        if p is not None and not callable(p):
            return as_pointer(p)
    raise TypeError(f"expected a pointer (fx.Pointer, a tensor with .ptr, or a pointer IR value), got {x!r}")
