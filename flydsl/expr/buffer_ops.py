"""``fx.buffer_ops``: bounds-checked loads and stores through a buffer resource (AMD buffer semantics on
every target).

A buffer resource is a global base pointer plus ``num_records``, a size in bytes. A load of an element
whose bytes lie at or past ``num_records`` (or whose mask is false) reads 0; such a store is dropped. On
AMD this is the hardware range check of ``buffer_load``/``buffer_store``; on NVIDIA it is predication; on
the interpreter a mask. Offsets are in elements of ``dtype`` (FlyDSL's convention) and become byte
offsets (i32) here; ``soffset_bytes`` is added to the byte offset.

The ops (``ptr.buffer_rsrc``/``ptr.buffer_load``/``ptr.buffer_store``) are target-neutral.
"""

from __future__ import annotations

from ..dialects import arith as _a
from ..dialects import ptr as _p
from ..ir import AddressSpace, BufferRsrcType, Value, VectorType, i64
from ._sem.numeric import Boolean, Float32, Index, Int8, Int32, Int64, Numeric, resolve_dtype
from ._sem.pointer import Pointer, as_pointer
from ._sem.vector import Vector, as_vector_operand

__all__ = ["BufferResource", "create_buffer_resource", "buffer_load", "buffer_store", "MAX_NUM_RECORDS"]

MAX_NUM_RECORDS = 0xFFFFFFFF  # the descriptor's 32-bit byte count: "unbounded"


class BufferResource:
    """A buffer resource (``!fly.buffer_rsrc``): a global base pointer and a byte bound.

    Attributes:
        base: the base Pointer (None when rebuilt from IR values alone).
    """

    __slots__ = ("_v", "base")

    def __init__(self, value: Value, base: Pointer | None = None):
        if type(value) is not Value or not isinstance(value.type, BufferRsrcType):
            raise TypeError(f"a BufferResource wraps a !fly.buffer_rsrc value, got {value!r}")
        self._v, self.base = value, base

    def ir_value(self) -> Value:
        return self._v

    def __fly_values__(self) -> list[Value]:
        """The DSL value protocol: one IR value."""
        return [self._v]

    def __fly_rebuild__(self, values) -> BufferResource:
        """The DSL value protocol: the same resource kind over a new IR value."""
        return BufferResource(values[0], self.base)

    def __repr__(self) -> str:
        return "BufferResource(!fly.buffer_rsrc)"


def _static_nbytes(t) -> int | None:
    """The static byte size of a tensor-like object, or None: ``static_nbytes``/``nbytes`` (int), else a
    static ``shape`` (nested ints) times ``dtype.width // 8``."""
    for attr in ("static_nbytes", "nbytes"):
        n = getattr(t, attr, None)
        if isinstance(n, int) and not isinstance(n, bool):
            return n
    shape, dtype = getattr(t, "shape", None), getattr(t, "dtype", None)
    width = getattr(dtype, "width", None)
    if shape is None or not isinstance(width, int):
        return None
    total = 1
    stack = [shape]
    while stack:
        s = stack.pop()
        if isinstance(s, (tuple, list)):
            stack.extend(s)
        elif isinstance(s, int) and not isinstance(s, bool):
            total *= s
        elif isinstance(s, Numeric) and s.is_static():
            total *= int(s.value)
        else:
            return None
    return total * max(1, width // 8)


def _num_records(x, max_size: bool, num_records_bytes) -> Value:
    if num_records_bytes is not None:
        if isinstance(num_records_bytes, int):
            return _a.const(min(max(num_records_bytes, 0), MAX_NUM_RECORDS), i64)
        n = as_vector_operand(num_records_bytes)
        if not isinstance(n, Numeric) or not n.dtype.is_integer:
            raise TypeError(f"num_records_bytes must be an integer, got {num_records_bytes!r}")
        if n.is_static():
            return _a.const(min(max(int(n.value) % (1 << 64), 0), MAX_NUM_RECORDS), i64)
        if n.dtype is Index:
            return n.to(Int64).ir_value()
        if n.dtype.width < 64:  # a byte count: zero-extend (FlyDSL's extui)
            return _a.extui(n.ir_value(), result_types=[i64])
        return n.ir_value()
    if max_size:
        return _a.const(MAX_NUM_RECORDS, i64)
    n = _static_nbytes(x)
    return _a.const(MAX_NUM_RECORDS if n is None else min(n, MAX_NUM_RECORDS), i64)


def create_buffer_resource(
    tensor_or_pointer, stride=0, max_size=True, *, num_records_bytes=None, base_byte_offset=None
) -> BufferResource:
    """A buffer resource over a global tensor or pointer.

    Args:
        tensor_or_pointer: an ``fx.Pointer`` to global memory, a raw pointer IR value, or a tensor (any
            object with ``.ptr``/``.iterator`` giving one; its static size is read from ``static_nbytes``,
            ``nbytes`` or ``shape`` × ``dtype.width``).
        stride: the structured-buffer stride; only 0 (raw buffers) is supported.
        max_size: without ``num_records_bytes``: True → 0xFFFFFFFF bytes (unbounded); False → the tensor's
            static byte size (unbounded when unknown).
        num_records_bytes: the bound in bytes: an int (clamped to [0, 0xFFFFFFFF]) or a run-time integer
            (extended to i64). Takes precedence over ``max_size``.
        base_byte_offset: bytes added to the base address (int or run-time integer).

    Returns:
        A :class:`BufferResource`.

    Raises:
        TypeError: not a global pointer/tensor. ValueError: a non-zero stride.
    """
    if stride not in (0, None):
        raise ValueError(f"buffer resources support stride=0 (raw buffers) only, got stride={stride}")
    base = as_pointer(tensor_or_pointer)
    if base.address_space != AddressSpace.GLOBAL:
        raise TypeError(f"a buffer resource needs a global pointer, got a {base.memspace} pointer")
    if base_byte_offset is not None:
        base = (base.recast(Int8) + base_byte_offset).recast(base.dtype)
    n = _num_records(tensor_or_pointer, max_size, num_records_bytes)
    return BufferResource(_p.buffer_rsrc(base.ir_value(), n), base)


def _rsrc_value(rsrc) -> Value:
    if isinstance(rsrc, BufferResource):
        return rsrc.ir_value()
    if type(rsrc) is Value and isinstance(rsrc.type, BufferRsrcType):
        return rsrc
    raise TypeError(f"expected a buffer resource from create_buffer_resource, got {rsrc!r}")


def _byte_offset(offset, elem_bytes: int, soffset_bytes) -> Value:
    """``offset * elem_bytes + soffset_bytes`` as an i32 IR value (compile-time parts fold)."""
    o = as_vector_operand(offset)
    if not isinstance(o, Numeric) or not o.dtype.is_integer:
        raise TypeError(f"a buffer offset must be an integer (elements), got {offset!r}")
    b = o.to(Int32) * elem_bytes
    if soffset_bytes is not None:
        s = as_vector_operand(soffset_bytes)
        if not isinstance(s, Numeric) or not s.dtype.is_integer:
            raise TypeError(f"soffset_bytes must be an integer, got {soffset_bytes!r}")
        b = b + s.to(Int32)
    return b.ir_value()


def _mask(mask) -> list:
    if mask is None:
        return []
    m = as_vector_operand(mask)
    if not isinstance(m, Numeric):
        raise TypeError(f"a buffer mask is one Boolean per access, got {mask!r}")
    m = m.to(Boolean)
    if m.is_static() and m.value:
        return []
    return [m.ir_value()]


def _attrs(cache_modifier) -> dict:
    c = int(cache_modifier or 0)
    return {"cache_modifier": c} if c else {}


def buffer_load(
    rsrc, offset, vec_width=4, dtype=None, mask=None, cache_modifier=0, soffset_bytes=None, is_scalar=False
):
    """Load ``vec_width`` consecutive elements at element ``offset`` of a buffer.

    Args:
        rsrc: from :func:`create_buffer_resource`.
        offset: the element offset (Python int, DSL integer or raw integer value; cast to i32).
        vec_width: lanes to load (1 gives a scalar).
        dtype: the element type: a Numeric class or IR type (``T.f32``); default Float32.
        mask: a Boolean; false loads zeros.
        cache_modifier: target cache-policy bits (AMD ``aux``), kept as the op's ``cache_modifier``.
        soffset_bytes: bytes added to the offset.
        is_scalar: FlyDSL's scalar-unit load: here the same load of Int32 elements.

    Returns:
        A scalar of ``dtype`` for ``vec_width == 1``, else a Vector of ``vec_width`` lanes. Bytes at or past
        the resource's ``num_records`` read as 0.
    """
    d = Int32 if is_scalar else (Float32 if dtype is None else resolve_dtype(dtype))
    n = int(vec_width)
    if n < 1:
        raise ValueError(f"vec_width must be >= 1, got {vec_width}")
    rt = d.ir_type if n == 1 else VectorType(n, d.ir_type)
    byte_off = _byte_offset(offset, max(1, d.width // 8), soffset_bytes)
    r = _p.buffer_load(_rsrc_value(rsrc), byte_off, *_mask(mask), result_types=[rt], **_attrs(cache_modifier))
    return d._make(r) if n == 1 else Vector._make(r, (n,), d)


def buffer_store(data, rsrc, offset, mask=None, cache_modifier=0, *, soffset_bytes=None, offset_is_bytes=False):
    """Store a scalar or Vector at element ``offset`` of a buffer (elements of ``data``'s type).

    Args:
        data: a DSL scalar or Vector (a Python number stores as its DSL type: Int32/Float32).
        rsrc, mask, cache_modifier, soffset_bytes: as for :func:`buffer_load`; a false mask drops the store.
        offset: in elements of ``data``'s type, or in bytes with ``offset_is_bytes=True``.

    Bytes at or past the resource's ``num_records`` are not written.
    """
    v = as_vector_operand(data)
    if v is None:
        raise TypeError(f"cannot store {data!r} through a buffer")
    elem_bytes = 1 if offset_is_bytes else max(1, v.dtype.width // 8)
    byte_off = _byte_offset(offset, elem_bytes, soffset_bytes)
    _p.buffer_store(v.ir_value(), _rsrc_value(rsrc), byte_off, *_mask(mask), **_attrs(cache_modifier))
