"""Specialization keys: launcher arguments → (key part, flat host-ABI values).

Every argument of a ``@flyc.jit`` call is converted by a converter chosen by its Python type
(:data:`CONVERTERS`) or by its parameter's annotation (:class:`Param`). A converter appends the argument's
*key part* (what the compiled code depends on: dtypes, static shapes, alignment, Constexpr values — never
data values) and its *ABI values* (what the host function receives, in order). The host ABI of a
parameter:

=====================  =========================================================================
tensor (dynamic)        data pointer, every shape dim (i32), every stride except the unit one (i32)
tensor (static)         data pointer, then only the dims/strides marked dynamic (i32)
int / float / bool      one value: ``Int32`` (``Int64`` outside i32), ``Float32``, ``Boolean``
fx numeric              one value of its own type
stream                  one ``i64`` handle (0 = default stream)
fx.Constexpr            nothing: the value is part of the key and passed to the body as is
=====================  =========================================================================

Key parts are tuples of ints, strings and Numeric classes; :func:`flydsl.compiler.cache.canonical` turns
them into the disk key, :mod:`.abi` into the host function's parameters. This is the full (slow) path: a
cached call usually takes :mod:`.fastpath`, which checks a few cheap attributes instead and comes here
only on a miss. The runtime (:mod:`flydsl.runtime.args`) reads tensors into facts and knows no DSL type.
"""

from __future__ import annotations

import inspect

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
from ..expr.pointer import Pointer
from ..expr.typing import Constexpr, Stream, Tensor, stream_handle
from ..runtime.args import (
    DEFAULT_STREAM,
    I32_MAX,
    ArgError,
    TensorAdaptor,
    TensorRef,
    alignment_of,
    check_i32,
    dlpack_ref,
    numpy_ref,
    torch_ref,
    unit_axis,
)
from .deps import TRACKED_MAX, compile_time_value, freeze, freeze_object
from .raw_pointer import PointerArg, convert_pointer_arg

__all__ = ["CONVERTERS", "convert_arg", "numeric_of", "Param", "value_conv", "tensor_conv", "const_key"]


def _numeric_by_dtype() -> dict:
    import ml_dtypes

    return {
        np.dtype(np.float32): Float32, np.dtype(np.float64): Float64, np.dtype(np.float16): Float16,
        np.dtype(np.int8): Int8, np.dtype(np.int16): Int16, np.dtype(np.int32): Int32, np.dtype(np.int64): Int64,
        np.dtype(np.uint8): Uint8, np.dtype(np.uint16): Uint16, np.dtype(np.uint32): Uint32,
        np.dtype(np.uint64): Uint64, np.dtype(np.bool_): Boolean,
        np.dtype(ml_dtypes.bfloat16): BFloat16, np.dtype(ml_dtypes.float8_e4m3fn): Float8E4M3FN,
        np.dtype(ml_dtypes.float8_e5m2): Float8E5M2, np.dtype(ml_dtypes.float8_e4m3fnuz): Float8E4M3FNUZ,
        np.dtype(ml_dtypes.float8_e5m2fnuz): Float8E5M2FNUZ,
    }  # fmt: skip


_NUMERIC: dict = _numeric_by_dtype()


def numeric_of(dtype: np.dtype):
    """The DSL element type of a numpy element type (every dtype the runtime accepts has one)."""
    return _NUMERIC[dtype]


# ---------------------------------------------------------------------------------------------------
# tensors
# ---------------------------------------------------------------------------------------------------


def _dynamic_tensor(ref: TensorRef, key: list, vals: list) -> None:
    shape, strides = ref.shape, ref.strides
    dt = _NUMERIC[ref.dtype]
    n = len(shape)
    if n == 1 and strides[0] == 1 and shape[0] <= I32_MAX:  # the common case, short
        ptr = ref.ptr
        key.append(("dyn_tensor", dt, 1, 0, min(16, ptr & -ptr) if ptr else 16, ref.is_cuda, 16))
        vals.append(ref)
        vals.append(shape[0])
        return
    if not n:
        key.append(("tensor", dt, (1,), (1,), alignment_of(ref.ptr), ref.is_cuda, (None,), (None,), 1, 32))
        vals.append(ref)
        return
    # NOTE: the last mode whenever its stride is 1 (also of size 1): the cached call's fast path assumes it
    u = n - 1 if strides[-1] == 1 else unit_axis(shape, strides)
    if u < 0:
        raise ArgError("TENSOR_NO_UNIT_STRIDE", shape=tuple(shape), strides=tuple(strides))
    wide = False
    if max(shape) > I32_MAX or max(strides) > I32_MAX or min(strides) < -I32_MAX:
        check_i32(shape, ())  # dims are 32-bit; a stride past 32 bits makes every stride 64-bit
        wide = True
    ptr = ref.ptr
    rest = 0  # the run-time strides' common power of two (capped at 16): rows 16-byte aligned stay provably so
    for i, s in enumerate(strides):
        if i != u:
            rest |= s
    sdiv = min(16, rest & -rest) if rest else 16
    part = ("dyn_tensor", dt, n, u, min(16, ptr & -ptr) if ptr else 16, ref.is_cuda, sdiv)
    key.append(part + (64,) if wide else part)  # the 64-bit form (rare: the fast path's guards leave it)
    vals.append(ref)
    vals.extend(shape)
    vals.extend(strides[:u])
    vals.extend(strides[u + 1 :])


def _torch_tensor(t, key, vals):
    _dynamic_tensor(torch_ref(t), key, vals)


def _numpy_array(a, key, vals):
    _dynamic_tensor(numpy_ref(a), key, vals)


def _dlpack(x, key, vals):
    _dynamic_tensor(dlpack_ref(x), key, vals)


def _static_tensor(a: TensorAdaptor, key, vals):
    r = a.ref
    shape, strides = (r.shape, r.strides) if r.shape else ((1,), (1,))
    wide = not a.use_32bit_stride
    check_i32(shape, () if wide else strides)
    if wide and strides and (max(strides) >= 1 << 63 or min(strides) < -(1 << 63)):
        raise ArgError("TENSOR_TOO_LARGE", what="stride", value=max(strides))
    ds, dd = tuple(a.shape_div) or (None,), tuple(a.stride_div) or (None,)
    key_shape = tuple(s if d is None else None for s, d in zip(shape, ds))
    key_stride = tuple(s if d is None else None for s, d in zip(strides, dd))
    # part 8: what every run-time leaf is a multiple of (the smallest declared divisibility); 9: the width
    # of a dynamic stride (64: FlyDSL's default, ``use_32bit_stride=False``)
    key.append(("tensor", _NUMERIC[r.dtype], key_shape, key_stride, alignment_of(r.ptr), r.is_cuda, ds, dd,
                a.divisibility, 64 if wide else 32))  # fmt: skip
    vals.append(r)
    for values, marks, what in ((shape, ds, "dimension"), (strides, dd, "stride")):
        for v, d in zip(values, marks):
            if d is not None:
                if d > 1 and v % d:
                    raise ArgError("DIVISIBILITY", what=what, value=v, div=d)
                vals.append(v)


# ---------------------------------------------------------------------------------------------------
# scalars and streams
# ---------------------------------------------------------------------------------------------------


def _int(x, key, vals):
    if -(1 << 31) <= x <= I32_MAX:
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
    dt = _NUMERIC.get(x.dtype)
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
    PointerArg: convert_pointer_arg,
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
        fn = _dlpack
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


def pointer_conv():
    """The converter of a launcher parameter annotated ``fx.Pointer``: a
    :class:`~flydsl.compiler.raw_pointer.PointerArg`, or — as FlyDSL's compiled functions take them — a
    plain integer address, which gets the element type, address space and ``assumed_align`` of the first
    pointer passed to this parameter, and otherwise its own alignment (a later aligned address is not held
    to the alignment of a first misaligned one)."""
    last: list = []

    def conv(a, key, vals):
        if isinstance(a, int) and not isinstance(a, bool):
            if not last:
                raise ArgError(
                    "UNSUPPORTED_ARG",
                    got="an integer address before any flyc.from_c_void_p(dtype, address) (no element type yet)",
                )
            dtype, space, assumed = last[0]
            a = PointerArg(dtype, a, space, min(assumed, alignment_of(a)) if assumed and a else assumed)
        if isinstance(a, PointerArg):
            if not last:
                last.append((a.dtype, a.address_space, a.assumed))
            convert_pointer_arg(a, key, vals)
            return
        convert_arg(a, key, vals)

    return conv


def is_torch_tensor_type(tp) -> bool:
    """``tp`` converts as a torch tensor (with the dynamic layout)."""
    return CONVERTERS.get(tp) is _torch_tensor or (tp not in CONVERTERS and _resolve_converter(tp) is _torch_tensor)


# ---------------------------------------------------------------------------------------------------
# the parameters of a jit function
# ---------------------------------------------------------------------------------------------------


def const_key(v):
    """The key of a compile-time value: the value itself, or a capture-free function's code."""
    if callable(v) and hasattr(v, "__code__") and not isinstance(v, type):
        code = v.__code__
        if code.co_freevars:
            raise ArgError("UNSUPPORTED_ARG", got="a function that captures variables (use a plain lambda)")
        return ("fn", code.co_code, code.co_consts, code.co_names, v.__defaults__)
    if isinstance(v, (list, dict, set)):
        return freeze(v)  # by content: a list is as good a compile-time constant as a tuple
    hash(v)
    return v


def _constexpr_conv(ann):
    def conv(a, key, vals):
        if not ann.accepts(a):
            t = ann.value_type
            want = t if isinstance(t, str) else t.__name__
            raise ArgError("CONSTEXPR_TYPE", want=want, got=f"{type(a).__name__} {a!r}")
        key.append(("const", const_key(a)))

    conv.constexpr = ann
    return conv


def _numeric_conv(cls):
    exact_int = cls.is_integer and cls.width > 1  # Boolean takes any truth value
    if exact_int:
        lo, hi = (-(1 << (cls.width - 1)), (1 << (cls.width - 1)) - 1) if cls.signed else (0, (1 << cls.width) - 1)
    else:
        lo, hi = 1, 0

    def conv(a, key, vals):
        if type(a) is int and lo <= a <= hi:  # the common case, without building a Numeric
            key.append(cls)
            vals.append(a)
            return
        if exact_int and not isinstance(a, Numeric):
            _check_exact_int(a, cls, lo, hi)
        try:
            x = a if type(a) is cls else cls(a)
        except (TypeError, ValueError):
            raise ArgError("UNSUPPORTED_ARG", got=f"{type(a).__name__} {a!r} (declared {cls.__name__})") from None
        if not x.is_static():
            raise ArgError("UNSUPPORTED_ARG", got=f"a run-time {cls.__name__} (outside of a trace)")
        key.append(cls)
        vals.append(x._v)

    conv.numeric = cls
    conv.int_range = (lo, hi)
    return conv


def _check_exact_int(a, cls, lo: int, hi: int) -> None:
    """A Python/numpy number passed to an integer parameter must keep its value (no wrap, no truncation):
    FLY221 otherwise (``fx.Int32(v)`` wraps on purpose)."""
    if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
        if not lo <= int(a) <= hi:
            raise ArgError("ARG_NOT_EXACT", got=f"{int(a)}", type=cls.__name__, why=f"range {lo} to {hi}")
    elif isinstance(a, (float, np.floating)):
        f = float(a)
        if not f.is_integer():
            raise ArgError("ARG_NOT_EXACT", got=f"{a!r}", type=cls.__name__, why="not an integer")
        if not lo <= int(f) <= hi:
            raise ArgError("ARG_NOT_EXACT", got=f"{a!r}", type=cls.__name__, why=f"range {lo} to {hi}")


def stream_conv(a, key, vals):
    """A parameter annotated ``fx.Stream``: any value a :class:`Stream` accepts."""
    CONVERTERS[Stream](a if isinstance(a, Stream) else Stream(a), key, vals)


def value_conv(a, key, vals):
    """An unannotated parameter: by the value's type; strings, tuples, enums, DSL types are compile-time."""
    fn = CONVERTERS.get(type(a))
    if fn is not None:
        fn(a, key, vals)
    elif isinstance(a, (str, tuple, type)) or (compile_time_value(a) and not isinstance(a, Numeric)):
        key.append(("const", const_key(a)))  # str, tuple, enum, DSL type: compile-time by nature
    else:
        convert_arg(a, key, vals)


def tensor_conv(a, key, vals):
    """A parameter annotated ``fx.Tensor``: only a tensor (never a list, None or a number) is accepted."""
    n = len(key)
    value_conv(a, key, vals)
    part = key[n] if len(key) > n else None
    if not (type(part) is tuple and part and part[0] in ("dyn_tensor", "tensor")):
        raise ArgError("TENSOR_EXPECTED", got="None" if a is None else f"a {type(a).__name__}")


def _self_conv(a, key, vals):
    """``self`` of a method launcher: its type and its compile-time attributes, instance and class ones, by
    value (read while tracing; an attribute edited in place recompiles)."""
    try:
        key.append(("self", type(a), freeze_object(a)))
    except ValueError as e:
        raise ArgError("TRACKED_VALUE_TOO_LARGE", fn="a method launcher", what=str(e), limit=TRACKED_MAX) from None


class Param:
    """One parameter of a jit function: its name, default and converter (chosen by its annotation)."""

    __slots__ = ("name", "conv", "default", "is_stream", "kind")

    def __init__(self, p: inspect.Parameter, first: bool):
        ann = p.annotation
        self.name = p.name
        self.default = p.default
        self.kind = p.kind
        self.is_stream = ann is Stream
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"@flyc.jit does not support *{p.name} / **{p.name} parameters")
        if Constexpr.is_constexpr_annotation(ann):
            self.conv = _constexpr_conv(ann)
        elif self.is_stream:
            self.conv = stream_conv
        elif isinstance(ann, type) and issubclass(ann, Numeric) and ann.width:
            self.conv = _numeric_conv(ann)
        elif ann is Tensor:
            self.conv = tensor_conv
        elif first and p.name == "self":
            self.conv = _self_conv
        elif ann is Pointer:  # flyc.from_c_void_p, or an int address (FlyDSL's compiled functions take them)
            self.conv = pointer_conv()
        else:
            self.conv = value_conv
