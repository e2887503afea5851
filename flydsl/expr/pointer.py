"""``fx.Pointer`` and the functions on pointers: ``inttoptr``/``ptrtoint``, atomics, ``as_dsl_value``.

The class lives in the semantic layer (:mod:`flydsl.expr._sem.pointer`): a typed pointer value
(``!fly.ptr<T, space>``) with element offsets, loads and stores.
"""

from __future__ import annotations

from ..dialects import ptr as _d
from ..ir import PointerType, Value
from ._sem.numeric import Int64, Numeric, resolve_dtype
from ._sem.pointer import Pointer, as_pointer, space_number
from ._sem.vector import as_vector_operand, to_dtype

__all__ = [
    "Pointer", "as_pointer", "inttoptr", "ptrtoint", "atomic_add", "atomic_max", "atomic_min", "atomic_and",
    "atomic_or", "atomic_xor", "atomic_exchange", "atomic_cas", "ATOMIC_SCOPES", "as_dsl_value",
]  # fmt: skip

ATOMIC_SCOPES = ("cta", "gpu", "sys")


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
    t = PointerType(d.ir_type, space_number(address_space))
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
    v = to_dtype(value, d)
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
    c, v = to_dtype(compare, p.dtype), to_dtype(value, p.dtype)
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
