"""Parameter and value types of kernels and launchers (FlyDSL's ``flydsl.expr.typing``).

* :class:`Constexpr` — ``fx.Constexpr[int]`` marks a compile-time parameter: the Python value is
  passed to the body as is and becomes part of the kernel's specialization (cache key).
* :class:`Stream` — a CUDA stream argument (``None`` = the default stream, a raw handle, or any
  object with ``.cuda_stream`` such as ``torch.cuda.Stream``).
* :class:`Tensor` — a tensor parameter inside a kernel (see :mod:`flydsl.expr.tensor`).

It also re-exports the numeric types, ``T``, ``Vector`` (and the ``Float32x4``-style aliases) and
``Pointer``, as FlyDSL's module does.
"""

from __future__ import annotations

import collections.abc
import typing

from ..dialects import arith
from ..ir import Value, i64
from ._sem.numeric import (
    BFloat16,
    Boolean,
    Float,
    Float8E4M3FN,
    Float8E4M3FNUZ,
    Float8E5M2,
    Float8E5M2FNUZ,
    Float16,
    Float32,
    Float64,
    Index,
    Int8,
    Int16,
    Int32,
    Int64,
    Integer,
    Numeric,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
)
from ._sem.pointer import Pointer
from ._sem.vector import Vector
from .irtypes import T, Types
from .tensor import Tensor
from .vector import alias_by_name

__all__ = [
    "Constexpr",
    "Stream",
    "Tensor",
    "Numeric",
    "Integer",
    "Float",
    "Boolean",
    "Index",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Uint8",
    "Uint16",
    "Uint32",
    "Uint64",
    "Float16",
    "BFloat16",
    "Float32",
    "Float64",
    "Float8E4M3FN",
    "Float8E5M2",
    "Float8E4M3FNUZ",
    "Float8E5M2FNUZ",
    "T",
    "Types",
    "Vector",
    "Pointer",
]

_CALLABLES = (typing.Callable, collections.abc.Callable)
_ALLOWED = (int, bool, float, str, tuple)


class _ConstexprMeta(type):
    _cache: dict = {}

    def __getitem__(cls, t):
        if typing.get_origin(t) is tuple:  # Constexpr[Tuple[int, Tuple[bool, float]]]: checked by structure
            return cls._tuple_of(t)
        if t not in _ALLOWED and t not in _CALLABLES:
            raise TypeError(
                f"fx.Constexpr[{getattr(t, '__name__', t)}] is not supported; "
                "use one of int, bool, float, str, tuple, Callable"
            )
        key = "Callable" if t in _CALLABLES else t
        sub = _ConstexprMeta._cache.get(key)
        if sub is None:
            name = key if isinstance(key, str) else key.__name__
            sub = _ConstexprMeta(f"Constexpr[{name}]", (cls,), {"value_type": key, "__module__": cls.__module__})
            _ConstexprMeta._cache[key] = sub
        return sub

    def __repr__(cls) -> str:
        return f"fx.{cls.__name__}"

    def _tuple_of(cls, t):
        sub = _ConstexprMeta._cache.get(t)
        if sub is None:
            _check_tuple_spec(t)
            name = repr(t).replace("typing.", "")
            sub = _ConstexprMeta(f"Constexpr[{name}]", (cls,), {"value_type": t, "__module__": cls.__module__})
            _ConstexprMeta._cache[t] = sub
        return sub


def _check_tuple_spec(t) -> None:
    for a in typing.get_args(t):
        if a is Ellipsis:
            continue
        if typing.get_origin(a) is tuple:
            _check_tuple_spec(a)
        elif a not in _ALLOWED:
            raise TypeError(f"fx.Constexpr[{t!r}]: tuple elements must be int, bool, float, str or tuples of them")


def _matches(spec, value) -> bool:
    """Whether ``value`` has exactly the structure and element types of ``spec`` (``Tuple[int, ...]`` too)."""
    if typing.get_origin(spec) is not tuple:
        return isinstance(value, tuple) if spec is tuple else type(value) is spec
    if not isinstance(value, tuple):
        return False
    args = typing.get_args(spec)
    if len(args) == 2 and args[1] is Ellipsis:
        return all(_matches(args[0], v) for v in value)
    if args == ((),):  # Tuple[()]
        return value == ()
    return len(args) == len(value) and all(_matches(a, v) for a, v in zip(args, value))


class Constexpr(metaclass=_ConstexprMeta):
    """Annotation of a compile-time parameter: ``n: fx.Constexpr[int]`` (or bare ``fx.Constexpr``).

    The value must have exactly the declared type (``True`` is not an ``int`` here); a Callable must be
    a function without captured variables (its bytecode identifies it in the cache key).
    """

    value_type = None  # None: any value

    @classmethod
    def accepts(cls, value) -> bool:
        t = cls.value_type
        if t is None:
            return True
        if t == "Callable":
            return callable(value)
        if typing.get_origin(t) is tuple:
            return _matches(t, value)
        if t is tuple:
            return isinstance(value, tuple)
        return type(value) is t

    @staticmethod
    def is_constexpr_annotation(ann) -> bool:
        return isinstance(ann, type) and issubclass(ann, Constexpr)


class Stream:
    """A stream argument: ``Stream()``/``Stream(None)`` is the default stream, ``Stream(int)`` a raw
    ``CUstream`` handle, ``Stream(obj)`` any object with ``.cuda_stream`` (``torch.cuda.Stream``).

    Inside a trace it holds the stream's IR value (``i64``), which ``launch(stream=...)`` accepts.
    """

    __slots__ = ("value",)

    def __init__(self, value=None):
        if isinstance(value, Stream):
            value = value.value
        self.value = value

    @property
    def handle(self) -> int:
        """The raw ``CUstream`` as an int (0 = the default stream)."""
        return stream_handle(self.value)

    def __fly_values__(self) -> list[Value]:
        v = self.value
        if type(v) is Value:
            return [v]
        return [arith.constant(value=self.handle, result_types=[i64])]

    def __fly_rebuild__(self, values) -> Stream:
        return Stream(values[0])

    def __repr__(self) -> str:
        return f"Stream({self.value!r})"


def stream_handle(value) -> int:
    """The integer handle of ``None``, an int, a :class:`Stream` or an object with ``.cuda_stream``."""
    if value is None:
        return 0
    if isinstance(value, Stream):
        return value.handle
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    h = getattr(value, "cuda_stream", None)
    if h is None:
        h = getattr(value, "handle", None)
    if isinstance(h, int):
        return h
    raise TypeError(f"cannot use {type(value).__name__} as a stream; pass None, an int handle or a torch stream")


def __getattr__(name: str):
    """The vector aliases ``<Dtype>x<N>`` (``Float32x4``…), for any lane count (see ``fx.vector``), and, as
    FlyDSL's ``typing`` module does, the rest of ``fx``'s names (``ReductionOp``, ``full``, ``as_ir_value``…)."""
    alias = alias_by_name(name)
    if alias is not None:
        return alias
    from flydsl import expr as fx  # cycle: the package imports this module

    if name in fx.__all__ or name in fx.COMPAT_NAMES:
        return getattr(fx, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
