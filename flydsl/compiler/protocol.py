"""``flydsl.compiler.protocol``: FlyDSL's value protocol functions over ours.

FlyDSL names the protocol ``__extract_to_ir_values__`` / ``__construct_from_ir_values__`` /
``__cache_signature__``; flydsl's classes implement ``__fly_values__`` / ``__fly_rebuild__`` (and fx
numbers and vectors are one IR value each). These functions accept both spellings, and containers
(list, tuple, dict, ``SimpleNamespace``) leaf by leaf, so FlyDSL code that walks values works here.
"""

from __future__ import annotations

from types import SimpleNamespace

from ..expr.numeric import Boolean, Float32, Int32, Int64
from ..expr.struct import dsl_align_of, dsl_size_of
from ..ir import Value

__all__ = [
    "extract_to_ir_values", "construct_from_ir_values", "get_ir_types", "cache_signature", "c_abi_spec",
    "dsl_size_of", "dsl_align_of",
]  # fmt: skip


def extract_to_ir_values(obj) -> list:
    """The flat list of IR values ``obj`` consists of."""
    if type(obj) is Value:
        return [obj]
    for name in ("__extract_to_ir_values__", "__fly_values__"):
        f = getattr(obj, name, None)
        if f is not None:
            return list(f())
    if getattr(obj, "_is_numeric", False) or getattr(obj, "_is_vector", False):
        return [obj.ir_value()]
    if isinstance(obj, SimpleNamespace):
        obj = vars(obj)
    if isinstance(obj, dict):
        return [v for x in obj.values() for v in extract_to_ir_values(x)]
    if isinstance(obj, (list, tuple)):
        return [v for x in obj for v in extract_to_ir_values(x)]
    raise TypeError(f"Cannot extract IR values from {obj!r}")


def get_ir_types(obj) -> list:
    """The IR types of :func:`extract_to_ir_values`."""
    f = getattr(obj, "__get_ir_types__", None)
    if f is not None:
        return list(f())
    return [v.type for v in extract_to_ir_values(obj)]


def construct_from_ir_values(dsl_type, exemplar, values: list):
    """Rebuild a value of ``dsl_type`` shaped like ``exemplar`` from ``values``."""
    values = list(values)
    if isinstance(exemplar, SimpleNamespace):
        return SimpleNamespace(**construct_from_ir_values(dict, vars(exemplar), values))
    if isinstance(exemplar, dict):
        out, pos = {}, 0
        for k, x in exemplar.items():
            n = len(extract_to_ir_values(x))
            out[k] = construct_from_ir_values(type(x), x, values[pos : pos + n])
            pos += n
        return out
    if isinstance(exemplar, (list, tuple)):
        out, pos = [], 0
        for x in exemplar:
            n = len(extract_to_ir_values(x))
            out.append(construct_from_ir_values(type(x), x, values[pos : pos + n]))
            pos += n
        return type(exemplar)(out)
    f = getattr(dsl_type, "__construct_from_ir_values__", None)
    if f is not None:
        return f(values, exemplar)
    if exemplar is not None and hasattr(exemplar, "__fly_rebuild__"):
        return exemplar.__fly_rebuild__(values)
    if len(values) == 1 and isinstance(dsl_type, type):
        return dsl_type(values[0])
    raise TypeError(f"Cannot construct {dsl_type!r} from {len(values)} IR values")


def cache_signature(obj):
    """What of ``obj`` enters a jit cache key: ``__cache_signature__``, else the structure of containers.

    Raises:
        TypeError: a leaf object without a signature (FlyDSL does not fall back to ``str``).
    """
    f = getattr(obj, "__cache_signature__", None)
    if f is not None:
        return f()
    if isinstance(obj, SimpleNamespace):
        return tuple((k, cache_signature(v)) for k, v in vars(obj).items())
    if isinstance(obj, (list, tuple)):
        return tuple(cache_signature(x) for x in obj)
    if getattr(obj, "_is_numeric", False):
        return (type(obj),)
    raise TypeError(
        f"Cannot derive cache signature for {obj!r}: type {type(obj).__name__} does not implement __cache_signature__."
    )


def c_abi_spec(obj) -> list:
    """How a host function receives ``obj`` in C terms: ``[(ctype, fill), ...]`` (``__c_abi_spec__``; a
    Python int, float or bool as the run-time Int32/Int64, Float32 or Boolean it becomes).

    Raises:
        TypeError: an object without a C-ABI description.
    """
    f = getattr(obj, "__c_abi_spec__", None)
    if f is not None:
        return f()
    if type(obj) in (bool, int, float):
        cls = {bool: Boolean, float: Float32}.get(type(obj)) or (Int32 if -(1 << 31) <= obj < 1 << 31 else Int64)
        return cls(0).__c_abi_spec__()
    raise TypeError(f"Cannot derive C-ABI spec for {obj!r}: type {type(obj).__name__}.")
