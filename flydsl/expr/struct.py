"""Composite storage types: ``@fx.struct``, ``@fx.union``, ``fx.Array[E, N, A]``, ``fx.Align[T, A]`` and
``fx.Storage[T]`` (FlyDSL's ``docs/language/storage_and_allocator.md``).

A *storable* type has a static byte size and alignment and is read/written through a pointer:

=====================================  ====================================  ===========================
type                                   size                                  alignment
=====================================  ====================================  ===========================
Numeric of at least 8 bits             its byte width                        its byte width
vector alias (``fx.Float32x4``)        ``numel × element bytes``             the element's
``fx.Array[E, N]`` / ``[E, N, A]``     ``N × dsl_size_of(E)``                ``A`` (default: E's)
``fx.Align[T, A]``                     T's                                   ``A`` (≥ T's, a power of 2)
``@fx.struct``                         fields in order, each aligned;        the largest field's
                                       total rounded up to the alignment
``@fx.union``                          the largest field, rounded up         the largest field's
=====================================  ====================================  ===========================

``fx.Storage[T](ptr)`` is a typed address (C's ``T*``): ``.field`` is the ``Storage`` of a field at its
byte offset, ``.peek()`` reads a ``T`` value, ``.poke(v)`` writes one. A peeked ``Array`` is an
:class:`ArrayValue`: ``a[i]`` / ``a[i] = v`` (static or run-time ``i``), ``a.ptr``, ``a.view(layout)``
(an ``fx.Tensor`` over the array). Allocators (:mod:`flydsl.expr.smem`) return Storages.
"""

from __future__ import annotations

import typing as _typing  # the standard library's (``.typing`` below is fx.typing)

from ._sem.numeric import Boolean, Int8, Numeric
from ._sem.pointer import Pointer
from ._sem.vector import Vector
from .tensor import make_view
from .typing import Constexpr

__all__ = [
    "struct", "union", "Struct", "Union", "Array", "Align", "Storage", "ArrayValue", "dsl_size_of",
    "dsl_align_of", "is_storable",
]  # fmt: skip


# ---------------------------------------------------------------------------------------------------------
# The Storable protocol
# ---------------------------------------------------------------------------------------------------------


def _is_pow2(a) -> bool:
    return type(a) is int and a > 0 and a & (a - 1) == 0


def _numeric_storable(t) -> bool:
    return isinstance(t, type) and issubclass(t, Numeric) and t is not Boolean and (t.width or 0) >= 8


def _alias_storable(t) -> bool:
    return isinstance(t, type) and issubclass(t, Vector) and getattr(t, "_alias_dtype", None) is not None


def is_storable(t) -> bool:
    """Whether ``t`` has a storage layout (see the module table)."""
    if _numeric_storable(t):
        return True
    if _alias_storable(t):
        return _numeric_storable(t._alias_dtype)
    return hasattr(t, "__dsl_size_of__")


def _not_storable(t, where: str = "") -> TypeError:
    name = getattr(t, "__name__", repr(t))
    why = (
        " (sub-byte and Boolean values have no byte layout)"
        if isinstance(t, type) and issubclass(t, Numeric)
        else " (a value of this type lives in registers, not memory)"
    )
    return TypeError(f"{name}{where} is not Storable{why}; store Numerics, Arrays, Aligns, structs or unions")


def dsl_size_of(t) -> int:
    """Bytes ``t`` occupies in memory.

    Raises:
        TypeError: ``t`` is not Storable.
    """
    if _numeric_storable(t):
        return t.width // 8
    if _alias_storable(t) and _numeric_storable(t._alias_dtype):
        return t._alias_dtype.width // 8 * _numel(t._alias_shape)
    f = getattr(t, "__dsl_size_of__", None)
    if f is None:
        raise _not_storable(t)
    return f()


def dsl_align_of(t) -> int:
    """The byte alignment of ``t`` in memory.

    Raises:
        TypeError: ``t`` is not Storable.
    """
    if _numeric_storable(t):
        return t.width // 8
    if _alias_storable(t) and _numeric_storable(t._alias_dtype):
        return t._alias_dtype.width // 8
    f = getattr(t, "__dsl_align_of__", None)
    if f is None:
        raise _not_storable(t)
    return f()


def _numel(shape) -> int:
    if isinstance(shape, tuple):
        n = 1
        for s in shape:
            n *= _numel(s)
        return n
    return shape


def _byte_ptr(ptr) -> Pointer:
    p = ptr if isinstance(ptr, Pointer) else Pointer(ptr)
    return p.recast(Int8) if p.dtype is not Int8 else p


def _at(ptr, offset) -> Pointer:
    """``ptr`` moved by ``offset`` bytes (an i8 pointer)."""
    return _byte_ptr(ptr) + offset


def _pow2_gcd(align: int, offset) -> int:
    if type(offset) is not int:
        return 1
    return align if offset == 0 else min(align, offset & -offset)


def peek(t, ptr, align: int = 1):
    """Read a ``t`` at ``ptr`` (``align``: the alignment known for the address)."""
    if _numeric_storable(t):
        return _byte_ptr(ptr).recast(t).load(align=max(align, t.width // 8))
    if _alias_storable(t):
        d = t._alias_dtype
        v = _byte_ptr(ptr).recast(d).load(_numel(t._alias_shape), align=max(align, d.width // 8))
        return t(v)
    f = getattr(t, "__peek_from_ptr__", None)
    if f is None:
        raise _not_storable(t)
    return f(ptr, align) if getattr(t, "_fly_takes_align", False) else f(ptr)


def poke(t, ptr, value, align: int = 1) -> None:
    """Write ``value`` (converted to ``t``) at ``ptr``."""
    if _numeric_storable(t):
        _byte_ptr(ptr).recast(t).store(value, align=max(align, t.width // 8))
        return
    if _alias_storable(t):
        d = t._alias_dtype
        v = value if isinstance(value, Vector) else t(value)
        if v.dtype is not d or v.numel != _numel(t._alias_shape):
            raise TypeError(f"Storage[{t.__name__}].poke expects {t.__name__}, got {v!r}")
        _byte_ptr(ptr).recast(d).store(v, align=max(align, d.width // 8))
        return
    f = getattr(t, "__poke_into_ptr__", None)
    if f is None:
        raise _not_storable(t)
    if getattr(t, "_fly_takes_align", False):
        f(ptr, value, align)
    else:
        f(ptr, value)


# ---------------------------------------------------------------------------------------------------------
# Array and Align
# ---------------------------------------------------------------------------------------------------------


class _ArrayMeta(type):
    _cache: dict = {}

    def __getitem__(cls, params):
        if cls is not Array:
            raise TypeError(f"{cls.__name__} is already specialized")
        if not isinstance(params, tuple) or len(params) not in (2, 3):
            raise TypeError("fx.Array takes Array[ElementType, N] or Array[ElementType, N, alignment]")
        elem, n = params[0], params[1]
        if not is_storable(elem):
            raise _not_storable(elem, " (an Array element)")
        if type(n) is not int or n <= 0:
            raise ValueError(f"fx.Array count must be a positive int, got {n!r}")
        ea = dsl_align_of(elem)
        a = params[2] if len(params) == 3 else ea
        if not _is_pow2(a):
            raise ValueError(f"fx.Array alignment must be a positive power of two, got {a!r}")
        if a % ea:
            raise ValueError(f"fx.Array alignment {a} must be a multiple of the element alignment {ea}")
        key = (elem, n, a)
        sub = _ArrayMeta._cache.get(key)
        if sub is None:
            name = f"Array[{elem.__name__}, {n}]" if a == ea else f"Array[{elem.__name__}, {n}, {a}]"
            sub = _ArrayMeta(name, (Array,), {"dtype": elem, "size": n, "align": a, "__module__": cls.__module__})
            _ArrayMeta._cache[key] = sub
        return sub


class Array(metaclass=_ArrayMeta):
    """``fx.Array[E, N]`` / ``fx.Array[E, N, A]``: ``N`` elements of storable ``E`` (array of structures),
    the base aligned to ``A`` (default: E's alignment; the element stride stays ``dsl_size_of(E)``)."""

    dtype = None
    size = 0
    align = 1
    _fly_takes_align = True

    @classmethod
    def __dsl_size_of__(cls) -> int:
        return cls.size * dsl_size_of(cls.dtype)

    @classmethod
    def __dsl_align_of__(cls) -> int:
        return cls.align

    @classmethod
    def __peek_from_ptr__(cls, ptr, align: int = 1):
        return ArrayValue(cls, ptr, max(align, cls.align))

    @classmethod
    def __poke_into_ptr__(cls, ptr, value, align: int = 1):
        raise TypeError(f"{cls.__name__} is written element by element: storage.peek()[i] = value")


class ArrayValue:
    """A peeked ``fx.Array``: element access through its address.

    ``a[i]`` reads element ``i`` (an int or run-time integer; the caller keeps it in range), ``a[i] = v``
    writes it, ``a.ptr`` is a pointer to the first element, ``a.view(layout)`` an ``fx.Tensor``.
    """

    __slots__ = ("type", "_ptr", "_align")

    def __init__(self, array_type, ptr, align: int):
        self.type, self._ptr, self._align = array_type, _byte_ptr(ptr), align

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def size(self) -> int:
        return self.type.size

    @property
    def ptr(self) -> Pointer:
        """A pointer to element 0, typed as the element (bytes for struct elements)."""
        e = self.type.dtype
        return self._ptr.recast(e) if _numeric_storable(e) else self._ptr

    def _elem_ptr(self, i):
        return _at(self._ptr, i * dsl_size_of(self.type.dtype))

    def _elem_align(self, i) -> int:
        return _pow2_gcd(self._align, i * dsl_size_of(self.type.dtype) if type(i) is int else dsl_size_of(self.dtype))

    def __getitem__(self, i):
        return peek(self.type.dtype, self._elem_ptr(i), self._elem_align(i))

    def __setitem__(self, i, value):
        poke(self.type.dtype, self._elem_ptr(i), value, self._elem_align(i))

    def view(self, layout):
        """An ``fx.Tensor`` of ``layout`` over the array's elements (numeric elements only).

        Raises:
            TypeError: struct elements.
        """
        if not _numeric_storable(self.type.dtype):
            raise TypeError(f"{self.type.__name__}.view requires Numeric elements")
        return make_view(self.ptr, layout, alignment=self._align)

    def __fly_values__(self):
        return [self._ptr.ir_value()]

    def __fly_rebuild__(self, values):
        return ArrayValue(self.type, Pointer(values[0]), self._align)

    def __repr__(self) -> str:
        return f"ArrayValue({self.type.__name__}, {self._ptr.memspace})"


class _AlignMeta(type):
    _cache: dict = {}

    def __getitem__(cls, params):
        if not isinstance(params, tuple) or len(params) != 2:
            raise TypeError("fx.Align takes Align[Type, N]")
        t, a = params
        if type(a) is not int:
            raise TypeError(f"fx.Align alignment must be an int, got {a!r}")
        if a <= 0:
            raise ValueError(f"fx.Align alignment must be positive, got {a}")
        if a & (a - 1):
            raise ValueError(f"fx.Align alignment must be a power of two, got {a}")
        if a < dsl_align_of(t):
            raise ValueError(f"fx.Align alignment {a} is smaller than natural alignment {dsl_align_of(t)}")
        key = (t, a)
        sub = _AlignMeta._cache.get(key)
        if sub is None:
            name = f"Align[{t.__name__}, {a}]"
            sub = _AlignMeta(name, (Align,), {"dtype": t, "align": a, "__module__": cls.__module__})
            _AlignMeta._cache[key] = sub
        return sub


class Align(metaclass=_AlignMeta):
    """``fx.Align[T, A]``: ``T`` placed at an ``A``-byte boundary (C's ``alignas(A) T``); size and access
    are ``T``'s, and a struct field of this type holds a ``T`` value."""

    dtype = None
    align = 1
    _fly_takes_align = True

    @classmethod
    def __dsl_size_of__(cls) -> int:
        return dsl_size_of(cls.dtype)

    @classmethod
    def __dsl_align_of__(cls) -> int:
        return cls.align

    @classmethod
    def __peek_from_ptr__(cls, ptr, align: int = 1):
        return peek(cls.dtype, ptr, max(align, cls.align))

    @classmethod
    def __poke_into_ptr__(cls, ptr, value, align: int = 1):
        poke(cls.dtype, ptr, value, max(align, cls.align))


def _value_type(t):
    """The type of a field's value (Align[T, A] holds a T)."""
    while isinstance(t, type) and issubclass(t, Align) and t is not Align:
        t = t.dtype
    return t


# ---------------------------------------------------------------------------------------------------------
# Structs and unions
# ---------------------------------------------------------------------------------------------------------

_RESERVED = ("replace", "peek", "poke")


def _is_constexpr(t) -> bool:
    return isinstance(t, type) and issubclass(t, Constexpr)


class _Composite:
    """Base of ``@fx.struct`` classes: field values in declaration order; compile-time fields specialize."""

    _fields: dict = {}
    _is_union = False
    _fly_takes_align = True

    def __init__(self, *args, **kwargs):
        if self._is_union:
            raise TypeError(f"{type(self).__name__} is a union: it has no value form; use Storage[...] variants")
        names = list(self._fields)
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes {len(names)} fields, got {len(args)} values")
        vals = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in self._fields or k in vals:
                raise TypeError(f"{type(self).__name__}: unexpected or repeated field {k!r}")
            vals[k] = v
        missing = [n for n in names if n not in vals]
        if missing:
            raise TypeError(f"{type(self).__name__}: missing field(s) {', '.join(missing)}")
        for n, t in self._fields.items():
            object.__setattr__(self, n, _coerce(n, t, vals[n]))

    def __setattr__(self, name, value):
        raise TypeError(f"{type(self).__name__} is immutable; use .replace({name}=...)")

    def replace(self, **changes):
        """A copy with some fields replaced."""
        vals = {n: getattr(self, n) for n in self._fields}
        vals.update(changes)
        return type(self)(**vals)

    # -- storage --------------------------------------------------------------------------------------------
    @classmethod
    def __dsl_size_of__(cls) -> int:
        return _storage_layout(cls)[0]

    @classmethod
    def __dsl_align_of__(cls) -> int:
        return _storage_layout(cls)[1]

    @classmethod
    def __peek_from_ptr__(cls, ptr, align: int = 1):
        if cls._is_union:
            raise NotImplementedError(f"union {cls.__name__} has no value form: read one variant (storage.variant)")
        _, _, offs = _storage_layout(cls)
        vals = {}
        for n, t in cls._fields.items():
            vals[n] = cls._const.get(n) if _is_constexpr(t) else peek(t, _at(ptr, offs[n]), _pow2_gcd(align, offs[n]))
        return cls(**vals)

    @classmethod
    def __poke_into_ptr__(cls, ptr, value, align: int = 1):
        if cls._is_union:
            raise NotImplementedError(f"union {cls.__name__} has no value form: write one variant (storage.variant)")
        if not isinstance(value, cls.__base_struct__):
            raise TypeError(f"Storage[{cls.__name__}].poke expects {cls.__name__} value, got {value!r}")
        _, _, offs = _storage_layout(cls)
        for n, t in cls._fields.items():
            if not _is_constexpr(t):
                poke(t, _at(ptr, offs[n]), getattr(value, n), _pow2_gcd(align, offs[n]))

    # -- the value protocol (carrying through regions, kernel arguments) --------------------------------------
    def __fly_values__(self):
        out = []
        for n, t in self._fields.items():
            if not _is_constexpr(t):
                out.extend(getattr(self, n).__fly_values__())
        return out

    def __fly_rebuild__(self, values):
        vals, pos = {}, 0
        for n, t in self._fields.items():
            v = getattr(self, n)
            if _is_constexpr(t):
                vals[n] = v
                continue
            k = len(v.__fly_values__())
            vals[n] = v.__fly_rebuild__(values[pos : pos + k])
            pos += k
        return type(self)(**vals)

    def __fly_signature__(self):
        return (type(self), tuple(_sig(getattr(self, n)) for n in self._fields))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"


def _sig(v):
    f = getattr(v, "__fly_signature__", None)
    return f() if f is not None else type(v)


def _coerce(name, t, v):
    vt = _value_type(t)
    if _is_constexpr(vt):
        if not vt.accepts(v):
            raise TypeError(f"field {name!r} is {vt!r}, got {v!r}")
        return v
    if isinstance(vt, type) and issubclass(vt, Numeric):
        try:
            return v if type(v) is vt else (v.to(vt) if isinstance(v, Numeric) else vt(v))
        except (TypeError, ValueError) as e:
            raise TypeError(f"field {name!r} expects {vt.__name__}, got {v!r}: {e}") from None
    if isinstance(vt, type) and issubclass(vt, _Composite):
        if not isinstance(v, vt.__base_struct__):
            raise TypeError(f"field {name!r} expects a {vt.__name__} value, got {v!r}")
        return v
    if _alias_storable(vt):
        return v if isinstance(v, vt) else vt(v)
    return v


def _storage_layout(cls) -> tuple:
    """``(size, alignment, {field: byte offset})`` of a struct or union (Constexpr fields have none)."""
    cached = cls.__dict__.get("_layout_cache")
    if cached is not None:
        return cached
    off, align, offs = 0, 1, {}
    for n, t in cls._fields.items():
        if _is_constexpr(t):
            continue
        if not is_storable(t):
            raise _not_storable(t, f" (field {n!r} of {cls.__name__})")
        a, s = dsl_align_of(t), dsl_size_of(t)
        align = max(align, a)
        if cls._is_union:
            offs[n] = 0
            off = max(off, s)
        else:
            off = (off + a - 1) // a * a
            offs[n] = off
            off += s
    size = (off + align - 1) // align * align
    cls._layout_cache = (size, align, offs)
    return cls._layout_cache


def _make_composite(name: str, fields: dict, is_union: bool, module=None, doc=None):
    for n in fields:
        if n in _RESERVED or n.startswith("_"):
            raise TypeError(f"{name}: field name {n!r} is reserved (replace, peek, poke and _-prefixed names)")
    ns = {"_fields": dict(fields), "_is_union": is_union, "_const": {}, "__module__": module, "__doc__": doc}
    cls = type(name, (_Composite,), ns)
    cls.__base_struct__ = cls
    cls.__annotations__ = dict(fields)
    return cls


def _fields_of(cls) -> dict:
    hints = _typing.get_type_hints(cls) if "__annotations__" in cls.__dict__ else {}
    return {n: hints[n] for n in cls.__dict__.get("__annotations__", {})}


def struct(cls):
    """``@fx.struct``: a frozen product type from the class's annotated fields (Numerics, nested structs,
    Arrays, Aligns, vector aliases, ``fx.Constexpr[...]``). Instances carry through control flow and
    kernel arguments; ``fx.Storage[cls]`` reads and writes them in memory."""
    return _make_composite(cls.__name__, _fields_of(cls), False, cls.__module__, cls.__doc__)


def union(cls):
    """``@fx.union``: every field at offset 0 (no value form: reach it through ``fx.Storage``)."""
    return _make_composite(cls.__name__, _fields_of(cls), True, cls.__module__, cls.__doc__)


class _Anon(type):
    def __getitem__(cls, spec):
        spec = spec if isinstance(spec, tuple) else (spec,)
        fields = {}
        for s in spec:
            if not isinstance(s, slice) or not isinstance(s.start, str) or s.step is not None:
                raise TypeError(f'fx.{cls.__name__}["name": Type, ...] takes name: type pairs, got {s!r}')
            fields[s.start] = s.stop
        name = f"{cls.__name__}[" + ", ".join(f"{k}: {getattr(v, '__name__', v)}" for k, v in fields.items()) + "]"
        return _make_composite(name, fields, cls._is_union, __name__)


class Struct(metaclass=_Anon):
    """``fx.Struct["a": fx.Int32, "b": fx.Float32]``: an anonymous ``@fx.struct``."""

    _is_union = False


class Union(metaclass=_Anon):
    """``fx.Union["a": T, "b": U]``: an anonymous ``@fx.union``."""

    _is_union = True


# ---------------------------------------------------------------------------------------------------------
# Storage
# ---------------------------------------------------------------------------------------------------------


class _StorageMeta(type):
    _cache: dict = {}

    def __getitem__(cls, t):
        sub = _StorageMeta._cache.get(t)
        if sub is None:
            name = f"Storage[{getattr(t, '__name__', t)}]"
            sub = _StorageMeta(name, (Storage,), {"_target_type": t, "__module__": cls.__module__})
            _StorageMeta._cache[t] = sub
        return sub


class Storage(metaclass=_StorageMeta):
    """``fx.Storage[T](ptr)``: the typed address of a ``T`` (C's ``T*``).

    ``.field`` → ``Storage`` of that field (at its byte offset; union variants at 0); ``.peek()`` → a
    ``T`` value (an :class:`ArrayValue` for arrays); ``.poke(v)`` writes one; ``.ptr`` the address.
    """

    _target_type = None

    def __init__(self, ptr, align: int = 1):
        object.__setattr__(self, "_ptr", ptr)
        object.__setattr__(self, "_align", align)

    @property
    def ptr(self):
        return self._ptr

    def peek(self):
        """Read the ``T`` at this address."""
        return peek(self._target_type, self._ptr, self._align)

    def poke(self, value) -> None:
        """Write ``value`` (a ``T``) at this address."""
        poke(self._target_type, self._ptr, value, self._align)

    def __getattr__(self, name):
        t = _value_type(type(self)._target_type)
        fields = getattr(t, "_fields", None)
        if fields is None or name not in fields:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        ft = fields[name]
        if _is_constexpr(ft):
            raise AttributeError(f"field {name!r} of {t.__name__} is compile-time only: it has no storage")
        off = _storage_layout(t)[2][name]
        return Storage[ft](_at(self._ptr, off), _pow2_gcd(self._align, off))

    def __setattr__(self, name, value):
        raise TypeError(f"write a field with storage.{name}.poke(value)")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._ptr!r})"
