"""``fx.Pointer``: a typed pointer value (``!fly.ptr<T, space>``) with element offsets, loads, stores and
atomics.

Offsets count elements of the pointee type (``p + 3`` is three elements on). ``p[i]`` loads and
``p[i] = v`` stores one element; ``p.load(vec_width=4)`` reads four consecutive elements as a Vector.
Values stored are converted to the pointee type first (as ``T(x)`` would). A Pointer never falls into
Python's sequence protocol: ``list(p)``/``iter(p)``/``x in p`` raise at once.
"""

from __future__ import annotations

from ..dialects import ptr as _d
from ..ir import AddressSpace, PointerType, Value, VectorType
from ._convert import resolve_dtype
from .numeric import Boolean, Int32, Int64, Numeric, numeric_type_of
from .vector import Vector, _to_dtype, as_vector_operand, splat_ir

__all__ = [
    "Pointer", "as_pointer", "inttoptr", "ptrtoint", "register_view", "atomic_add", "atomic_max", "atomic_min",
    "atomic_and", "atomic_or", "atomic_xor", "atomic_exchange", "atomic_cas", "ATOMIC_SCOPES", "as_dsl_value",
]  # fmt: skip

ATOMIC_SCOPES = ("cta", "gpu", "sys")
_view_hook = None


def register_view(fn) -> None:
    """Install ``fn(pointer, *args, **kwargs)`` as the implementation of :meth:`Pointer.view` (the layout
    engine provides it)."""
    global _view_hook
    _view_hook = fn


def _space(space) -> int:
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

    def load(self, vec_width: int = 1, align=None, cache=None, *, mask=None, other=None, dtype=None):
        """Read one element (``vec_width=1``: a scalar of ``dtype``) or ``vec_width`` consecutive elements
        (a Vector).

        Args:
            vec_width: lanes to read.
            align: the access alignment in bytes (default: the element size).
            cache: a cache modifier (``"ca"``, ``"cg"``, ``"cs"``, ``"lu"``, ``"cv"``, ``"nc"``).
            mask: a Boolean (or one per lane): masked-off lanes are not read and give ``other``.
            other: the value of masked-off lanes (default 0).
            dtype: read through a pointer recast to this element type.

        Raises:
            ValueError: an unknown cache modifier or a bad ``vec_width``.
        """
        if dtype is not None:
            return self.recast(dtype).load(vec_width, align, cache, mask=mask, other=other)
        d = self._dtype
        n = int(vec_width)
        if n < 1:
            raise ValueError(f"vec_width must be >= 1, got {vec_width}")
        rt = d.ir_type if n == 1 else VectorType(n, d.ir_type)
        attrs = _mem_attrs(align, cache)
        if mask is None:
            r = _d.load(self._v, result_types=[rt], **attrs)
        else:
            fill = _to_dtype(0 if other is None else other, d)
            fill_v = fill.ir_value() if n == 1 else splat_ir(fill, n)
            r = _d.masked_load(self._v, _mask_value(mask, n), fill_v, **attrs)
        return d._make(r) if n == 1 else Vector._make(r, (n,), d)

    def store(self, value, align=None, cache=None, *, mask=None) -> None:
        """Write a scalar or a Vector (consecutive elements), converted to the element type.

        Args:
            value: a scalar (DSL or Python) or a Vector.
            align, cache: as for :meth:`load`.
            mask: a Boolean (or one per lane): masked-off lanes are not written.
        """
        v = as_vector_operand(value)
        if v is None:
            raise TypeError(f"cannot store {value!r} through a pointer")
        v = v.to(self._dtype) if isinstance(v, Vector) else _to_dtype(value, self._dtype)
        attrs = _mem_attrs(align, cache)
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
        if _view_hook is not None:
            return _view_hook(self, layout, **kwargs)
        from .tensor import make_view  # NOTE: tensor.py imports this module

        return make_view(self, layout, **kwargs)


def _mem_attrs(align, cache) -> dict:
    attrs = {}
    if align is not None:
        a = int(align)
        if a <= 0 or a & (a - 1):
            raise ValueError(f"align must be a power of two, got {align}")
        attrs["align"] = a
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


def inttoptr(address, dtype, address_space="global") -> Pointer:
    """A Pointer to ``dtype`` at the integer ``address`` (``ptr.from_int``).

    Args:
        address: an integer (Int64 or narrower; DSL, raw or Python).
        dtype: the element type. address_space: a name (``"global"``) or number.
    """
    a = as_vector_operand(address)
    if not isinstance(a, Numeric) or not a.dtype.is_integer:
        raise TypeError(f"inttoptr needs an integer address, got {address!r}")
    d = resolve_dtype(dtype)
    t = PointerType(d.ir_type, _space(address_space))
    return Pointer._make(_d.from_int(a.to(Int64).ir_value(), result_types=[t]), d)


def ptrtoint(p) -> Int64:
    """The address of a pointer as Int64 (``ptr.to_int``)."""
    return as_pointer(p).to_int()


def _atomic(kind: str, p, value, scope: str):
    p = as_pointer(p)
    if scope not in ATOMIC_SCOPES:
        raise ValueError(f"atomic scope must be one of {', '.join(ATOMIC_SCOPES)}, got {scope!r}")
    d = p.dtype
    if d.is_float and kind in ("and", "or", "xor"):
        raise TypeError(f"atomic_{kind} needs an integer pointer, got a pointer to {d.__name__}")
    why = _d.atomic_type_error(kind, d.ir_type)
    if why is not None:
        raise TypeError(f"atomic_{'exchange' if kind == 'xchg' else kind} on a pointer to {d.__name__}: {why}")
    if d.is_integer and not d.signed and kind in ("max", "min"):
        kind = "u" + kind
    v = _to_dtype(value, d)
    return d._make(_d.atomic_rmw(p.ir_value(), v.ir_value(), kind=kind, scope=scope))


def _atomic_fn(kind: str, what: str):
    def fn(ptr, value, *, scope="gpu"):
        return _atomic(kind, ptr, value, scope)

    fn.__name__ = fn.__qualname__ = f"atomic_{'exchange' if kind == 'xchg' else kind}"
    fn.__doc__ = (
        f"Atomically ``*ptr = {what}`` and return the old value (``ptr.atomic_rmw``).\n\n"
        "Args:\n    ptr: a Pointer (or tensor with .ptr).\n    value: converted to the pointee type.\n"
        '    scope: ``"gpu"`` (default), ``"cta"`` or ``"sys"``.\n\nReturns:\n    The previous value.'
    )
    return fn


atomic_add = _atomic_fn("add", "*ptr + value")
atomic_max = _atomic_fn("max", "max(*ptr, value)")
atomic_min = _atomic_fn("min", "min(*ptr, value)")
atomic_and = _atomic_fn("and", "*ptr & value")
atomic_or = _atomic_fn("or", "*ptr | value")
atomic_xor = _atomic_fn("xor", "*ptr ^ value")
atomic_exchange = _atomic_fn("xchg", "value")


def atomic_cas(ptr, compare, value, *, scope="gpu"):
    """Atomic compare-and-swap: if ``*ptr == compare`` then ``*ptr = value``; returns the old value.

    Args:
        ptr: a Pointer. compare, value: converted to the pointee type. scope: as for :func:`atomic_add`.
    """
    p = as_pointer(ptr)
    if scope not in ATOMIC_SCOPES:
        raise ValueError(f"atomic scope must be one of {', '.join(ATOMIC_SCOPES)}, got {scope!r}")
    why = _d.atomic_type_error("cas", p.dtype.ir_type)
    if why is not None:
        raise TypeError(f"atomic_cas on a pointer to {p.dtype.__name__}: {why}")
    c, v = _to_dtype(compare, p.dtype), _to_dtype(value, p.dtype)
    return p.dtype._make(_d.atomic_cas(p.ir_value(), c.ir_value(), v.ir_value(), scope=scope))


def as_dsl_value(x, template=None):
    """A DSL value for ``x``: Numerics, Vectors and Pointers pass through; raw IR values are wrapped by
    type (``i32`` → Int32, ``vector<4xf32>`` → Vector, ``!fly.ptr`` → Pointer); Python numbers by value.
    With a ``template`` DSL value, a raw value is rebuilt like it (``template.__fly_rebuild__``), keeping
    signedness, logical shape and alias class the IR type cannot carry.

    Raises:
        TypeError: ``x`` is none of these.
    """
    if template is not None and type(x) is Value and hasattr(template, "__fly_rebuild__"):
        return template.__fly_rebuild__([x])
    if isinstance(x, Pointer) or (type(x) is Value and isinstance(x.type, PointerType)):
        return as_pointer(x)
    v = as_vector_operand(x)
    if v is None:
        raise TypeError(f"no DSL value for {x!r}")
    return v
