"""Launcher arguments: Python values → (specialization key part, flat host-ABI values).

Every argument of a ``@flyc.jit`` call is converted once per call by a converter chosen by its Python
type (:data:`CONVERTERS`). A converter appends the argument's *key part* (what the compiled code
depends on: dtypes, static shapes, alignment, Constexpr values — never data values) and its *ABI
values* (what the host function receives, in order). The host ABI of a parameter:

=====================  =========================================================================
tensor (dynamic)        data pointer, every shape dim (i32), every stride except the unit one (i32)
tensor (static)         data pointer, then only the dims/strides marked dynamic (i32)
int / float / bool      one value: ``Int32`` (``Int64`` outside i32), ``Float32``, ``Boolean``
fx numeric              one value of its own type
stream                  one ``i64`` handle (0 = default stream)
fx.Constexpr            nothing: the value is part of the key and passed to the body as is
=====================  =========================================================================

A tensor's pointer slot holds a :class:`TensorRef` until the device resolves it (a CUDA pointer, or an
interpreter address for the CPU device). Key parts are tuples of ints, strings and Numeric classes;
:func:`flydsl.compiler.cache.canonical` turns them into the disk key.
"""

from __future__ import annotations

from ctypes import addressof as _addressof
from ctypes import c_char as _c_char

import numpy as np

from ..expr.numeric import (
    BFloat16,
    Boolean,
    Float8E4M3FN,
    Float8E4M3FNUZ,
    Float8E5M2,
    Float8E5M2FNUZ,
    Float16,
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Numeric,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
)
from ..expr.typing import Stream, stream_handle

__all__ = [
    "TensorRef",
    "TensorAdaptor",
    "from_torch_tensor",
    "from_dlpack",
    "convert_arg",
    "CONVERTERS",
    "ArgError",
    "NP_DTYPES",
    "torch_dtype_map",
    "DEFAULT_STREAM",
    "alignment_of",
]

_I32_MAX = (1 << 31) - 1


class ArgError(Exception):
    """A conversion failure: ``diag`` names the catalogue entry, ``fields`` fill its templates."""

    def __init__(self, diag: str, **fields):
        self.diag = diag
        self.fields = fields
        super().__init__(f"{diag}: {fields}")


DEFAULT_STREAM = object()  # placeholder for the implicit stream, resolved by the device


def _np_dtypes() -> dict:
    import ml_dtypes

    m = {
        np.dtype(np.float32): Float32, np.dtype(np.float64): Float64, np.dtype(np.float16): Float16,
        np.dtype(np.int8): Int8, np.dtype(np.int16): Int16, np.dtype(np.int32): Int32, np.dtype(np.int64): Int64,
        np.dtype(np.uint8): Uint8, np.dtype(np.uint16): Uint16, np.dtype(np.uint32): Uint32,
        np.dtype(np.uint64): Uint64, np.dtype(np.bool_): Boolean,
        np.dtype(ml_dtypes.bfloat16): BFloat16, np.dtype(ml_dtypes.float8_e4m3fn): Float8E4M3FN,
        np.dtype(ml_dtypes.float8_e5m2): Float8E5M2, np.dtype(ml_dtypes.float8_e4m3fnuz): Float8E4M3FNUZ,
        np.dtype(ml_dtypes.float8_e5m2fnuz): Float8E5M2FNUZ,
    }  # fmt: skip
    return m


NP_DTYPES: dict = _np_dtypes()
_TORCH_DTYPES: dict | None = None


def torch_dtype_map() -> dict:
    """torch dtype → Numeric class (empty when torch is not installed)."""
    global _TORCH_DTYPES
    if _TORCH_DTYPES is None:
        try:
            import torch
        except ImportError:
            _TORCH_DTYPES = {}
            return _TORCH_DTYPES
        pairs = {
            "float32": Float32, "float64": Float64, "float16": Float16, "bfloat16": BFloat16, "int8": Int8,
            "int16": Int16, "int32": Int32, "int64": Int64, "uint8": Uint8, "uint16": Uint16, "uint32": Uint32,
            "uint64": Uint64, "bool": Boolean, "float8_e4m3fn": Float8E4M3FN, "float8_e5m2": Float8E5M2,
            "float8_e4m3fnuz": Float8E4M3FNUZ, "float8_e5m2fnuz": Float8E5M2FNUZ,
        }  # fmt: skip
        _TORCH_DTYPES = {getattr(torch, k): v for k, v in pairs.items() if hasattr(torch, k)}
    return _TORCH_DTYPES


def alignment_of(ptr: int) -> int:
    """Largest power of two (capped at 16) dividing the address; 16 for a null pointer."""
    if ptr == 0:
        return 16
    return min(16, ptr & -ptr)


class TensorRef:
    """A tensor argument of one call: the object, its element type and geometry, and where it lives."""

    __slots__ = ("obj", "dtype", "ptr", "shape", "strides", "is_cuda", "name")

    def __init__(self, obj, dtype, ptr, shape, strides, is_cuda):
        self.obj = obj
        self.dtype = dtype
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.is_cuda = is_cuda
        self.name = ""

    def numpy_view(self) -> np.ndarray:
        """A zero-copy numpy view of a CPU tensor (ml_dtypes for bf16/fp8)."""
        o = self.obj
        if isinstance(o, np.ndarray):
            return o
        return _torch_numpy(o, self.dtype)


def _torch_numpy(t, dtype) -> np.ndarray:
    import torch

    t = t.detach()
    try:
        a = t.numpy()
        if a.dtype == dtype.numpy_dtype:
            return a
    except (TypeError, RuntimeError):
        pass
    carrier = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[max(1, dtype.width // 8)]
    return t.view(carrier).numpy().view(dtype.numpy_dtype)


# ---------------------------------------------------------------------------------------------------
# tensors
# ---------------------------------------------------------------------------------------------------


def _unit_axis(shape, strides) -> int:
    """The mode of stride 1 (the last one; a size-1 mode when no stride is 1), -1 if none."""
    for i in range(len(strides) - 1, -1, -1):
        if strides[i] == 1:
            return i
    for i in range(len(shape) - 1, -1, -1):
        if shape[i] == 1:
            return i
    return -1


def _check_i32(shape, strides) -> None:
    if shape and max(shape) > _I32_MAX:
        raise ArgError("TENSOR_TOO_LARGE", what="dimension", value=max(shape))
    if strides and (max(strides) > _I32_MAX or min(strides) < -_I32_MAX):
        raise ArgError("TENSOR_TOO_LARGE", what="stride", value=max(strides))


def _dynamic_tensor(ref: TensorRef, key: list, vals: list) -> None:
    shape, strides = ref.shape, ref.strides
    n = len(shape)
    if n == 1 and strides[0] == 1 and shape[0] <= _I32_MAX:  # the common case, short
        ptr = ref.ptr
        key.append(("dyn_tensor", ref.dtype, 1, 0, min(16, ptr & -ptr) if ptr else 16, ref.is_cuda))
        vals.append(ref)
        vals.append(shape[0])
        return
    if not n:
        key.append(("tensor", ref.dtype, (1,), (1,), alignment_of(ref.ptr), ref.is_cuda, (False,), (False,), 1))
        vals.append(ref)
        return
    u = n - 1 if strides[-1] == 1 else _unit_axis(shape, strides)
    if u < 0:
        raise ArgError("TENSOR_NO_UNIT_STRIDE", shape=tuple(shape), strides=tuple(strides))
    if max(shape) > _I32_MAX or max(strides) > _I32_MAX or min(strides) < -_I32_MAX:
        _check_i32(shape, strides)
    ptr = ref.ptr
    key.append(("dyn_tensor", ref.dtype, n, u, min(16, ptr & -ptr) if ptr else 16, ref.is_cuda))
    vals.append(ref)
    vals.extend(shape)
    if u == n - 1:
        vals.extend(strides[:u])
    else:
        vals.extend(strides[:u])
        vals.extend(strides[u + 1 :])


def torch_ref(t) -> TensorRef:
    dt = (_TORCH_DTYPES or torch_dtype_map()).get(t.dtype)
    if dt is None:
        raise ArgError("UNSUPPORTED_ARG", got=f"a torch tensor of dtype {t.dtype}")
    return TensorRef(t, dt, t.data_ptr(), t.shape, t.stride(), t.is_cuda)


def numpy_ref(a: np.ndarray) -> TensorRef:
    dt = NP_DTYPES.get(a.dtype)
    if dt is None:
        raise ArgError("UNSUPPORTED_ARG", got=f"a numpy array of dtype {a.dtype}")
    isz = a.itemsize
    bs = a.strides
    if len(bs) == 1 and bs[0] == isz:
        strides = (1,)
    else:
        strides = tuple([s // isz for s in bs])
        if any([s % isz for s in bs]):
            raise ArgError("UNSUPPORTED_ARG", got="a numpy array whose strides are not multiples of its item size")
    try:  # the cheapest way to the data pointer (writable, contiguous buffers)
        ptr = _addressof(_c_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):
        ptr = a.ctypes.data
    return TensorRef(a, dt, ptr, a.shape, strides, False)


def dlpack_ref(x) -> TensorRef:
    try:
        import torch

        return torch_ref(torch.from_dlpack(x))
    except ImportError:
        return numpy_ref(np.from_dlpack(x))


def _torch_tensor(t, key, vals):
    _dynamic_tensor(torch_ref(t), key, vals)


def _numpy_array(a, key, vals):
    _dynamic_tensor(numpy_ref(a), key, vals)


class TensorAdaptor:
    """``flyc.from_torch_tensor(t)`` / ``flyc.from_dlpack(t)``: a tensor argument with a static layout.

    Shapes and strides are compile-time constants (part of the cache key) until marked dynamic with
    :meth:`mark_layout_dynamic`, :meth:`mark_shape_dynamic` or :meth:`mark_stride_dynamic`.
    """

    __slots__ = ("ref", "dyn_shape", "dyn_stride", "divisibility")

    def __init__(self, ref: TensorRef):
        self.ref = ref
        n = len(ref.shape)
        self.dyn_shape = [False] * n
        self.dyn_stride = [False] * n
        self.divisibility = 1

    def mark_layout_dynamic(self, leading_dim: int | None = None, divisibility: int = 1) -> TensorAdaptor:
        """Every dim and every stride dynamic, except the stride of ``leading_dim`` (default: the unit one)."""
        r = self.ref
        lead = _unit_axis(r.shape, r.strides) if leading_dim is None else leading_dim % max(1, len(r.shape))
        if r.shape and r.strides[lead] != 1:
            raise ValueError(f"mark_layout_dynamic: dimension {lead} has stride {r.strides[lead]}, not 1")
        self.dyn_shape = [True] * len(r.shape)
        self.dyn_stride = [i != lead for i in range(len(r.shape))]
        self.divisibility = divisibility
        return self

    def mark_shape_dynamic(self, dims=None, divisibility: int = 1) -> TensorAdaptor:
        for d in _dims(dims, len(self.ref.shape)):
            self.dyn_shape[d] = True
        self.divisibility = divisibility
        return self

    def mark_stride_dynamic(self, dims=None, divisibility: int = 1) -> TensorAdaptor:
        for d in _dims(dims, len(self.ref.shape)):
            self.dyn_stride[d] = True
        self.divisibility = divisibility
        return self

    def __repr__(self) -> str:
        return f"TensorAdaptor({self.ref.dtype.__name__}, shape={self.ref.shape}, strides={self.ref.strides})"


def _dims(dims, n):
    if dims is None:
        return range(n)
    if isinstance(dims, int):
        return [dims % n]
    return [d % n for d in dims]


def _static_tensor(a: TensorAdaptor, key, vals):
    r = a.ref
    shape, strides = (r.shape, r.strides) if r.shape else ((1,), (1,))
    _check_i32(shape, strides)
    ds, dd, div = tuple(a.dyn_shape) or (False,), tuple(a.dyn_stride) or (False,), a.divisibility
    key_shape = tuple(None if d else s for s, d in zip(shape, ds))
    key_stride = tuple(None if d else s for s, d in zip(strides, dd))
    key.append(("tensor", r.dtype, key_shape, key_stride, alignment_of(r.ptr), r.is_cuda, ds, dd, div))
    vals.append(r)
    for values, marks, what in ((shape, ds, "dimension"), (strides, dd, "stride")):
        for v, d in zip(values, marks):
            if d:
                if div > 1 and v % div:
                    raise ArgError("DIVISIBILITY", what=what, value=v, div=div)
                vals.append(v)


def from_torch_tensor(t) -> TensorAdaptor:
    """A torch tensor as an argument with a static layout (FlyDSL's ``flyc.from_torch_tensor``)."""
    return TensorAdaptor(torch_ref(t))


def from_dlpack(x) -> TensorAdaptor:
    """Any DLPack object (torch, numpy, cupy …) as an argument with a static layout."""
    if isinstance(x, np.ndarray):
        return TensorAdaptor(numpy_ref(x))
    if type(x).__module__.startswith("torch"):
        return TensorAdaptor(torch_ref(x))
    return TensorAdaptor(dlpack_ref(x))


# ---------------------------------------------------------------------------------------------------
# scalars and streams
# ---------------------------------------------------------------------------------------------------


def _int(x, key, vals):
    if -(1 << 31) <= x <= _I32_MAX:
        key.append(Int32)
    elif -(1 << 63) <= x < (1 << 64):
        key.append(Int64)
    else:
        raise ArgError("UNSUPPORTED_ARG", got=f"the integer {x} (it does not fit in 64 bits)")
    vals.append(x)


def _float(x, key, vals):
    key.append(Float32)
    vals.append(x)


def _bool(x, key, vals):
    key.append(Boolean)
    vals.append(x)


def _numeric(x, key, vals):
    if not x.is_static():
        raise ArgError("UNSUPPORTED_ARG", got=f"a run-time {type(x).__name__} (outside of a trace)")
    key.append(type(x))
    vals.append(x._v)


def _np_scalar(x, key, vals):
    dt = NP_DTYPES.get(x.dtype)
    if dt is None:
        raise ArgError("UNSUPPORTED_ARG", got=f"a numpy {x.dtype} scalar")
    key.append(dt)
    vals.append(x.item())


def _stream(x, key, vals):
    """A stream argument. ``Stream(None)`` (FlyDSL's default) means "the default stream", which the device
    resolves per call to torch's current stream when torch CUDA tensors are passed (so a launch inside
    ``torch.cuda.stream(s)`` or a CUDA-graph capture goes to that stream), else to stream 0."""
    key.append("stream")
    v = x.value if isinstance(x, Stream) else x
    vals.append(DEFAULT_STREAM if v is None else stream_handle(x))


def _none(x, key, vals):
    key.append(None)


CONVERTERS: dict = {
    type(None): _none,
    int: _int,
    float: _float,
    bool: _bool,
    np.ndarray: _numpy_array,
    TensorAdaptor: _static_tensor,
    Stream: _stream,
}


def _resolve_converter(tp):
    """The converter of a type not in the table yet (found once, then cached in CONVERTERS)."""
    fn = None
    if issubclass(tp, Numeric):
        fn = _numeric
    elif issubclass(tp, np.generic):
        fn = _np_scalar
    elif tp.__module__.startswith("torch"):
        try:
            import torch

            if issubclass(tp, torch.Tensor):
                fn = _torch_tensor
            elif hasattr(tp, "cuda_stream"):
                fn = _stream
        except ImportError:
            pass
    elif hasattr(tp, "__dlpack__"):
        fn = lambda x, key, vals: _dynamic_tensor(dlpack_ref(x), key, vals)  # noqa: E731
    elif hasattr(tp, "cuda_stream"):
        fn = _stream
    if fn is not None:
        CONVERTERS[tp] = fn
    return fn


def convert_arg(x, key: list, vals: list) -> None:
    """Append ``x``'s key part and ABI values (raises :class:`ArgError` for unsupported values)."""
    fn = CONVERTERS.get(type(x))
    if fn is None:
        fn = _resolve_converter(type(x))
        if fn is None:
            raise ArgError("UNSUPPORTED_ARG", got=f"a value of type {type(x).__name__}")
    fn(x, key, vals)
