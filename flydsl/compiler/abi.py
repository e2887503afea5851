"""From a specialization key part (see :mod:`.specialize`) to the host function's parameter
types and to the DSL value the traced body receives.

==================================  ======================================  ==========================
key part                            host parameter types                    value in the body
==================================  ======================================  ==========================
a Numeric class (``Int32`` …)       its IR type                             that Numeric (run-time)
``"stream"``                        ``i64``                                 ``fx.Stream``
``("dyn_tensor", dt, n, u, al, c, d)`` ``!fly.ptr<dt>``, n × i32, (n-1) × i32  ``fx.Tensor``, stride[u] = 1,
 (``…, d, 64)``: a stride past 32 bits  (n-1) × i64 strides                   other strides multiples of d
``("tensor", dt, shape, stride, …)``  ``!fly.ptr<dt>``, i32 per ``None``    ``fx.Tensor``, static ints
                                    shape, i32 or i64 (part 9) per
                                    ``None`` stride
``("pointer", dt, space, align)``    ``!fly.ptr<dt, space>``                 ``fx.Pointer``
``None``                            —                                       ``None``
``("const", value)``                —                                       the Python value
==================================  ======================================  ==========================
"""

from __future__ import annotations

from ..expr._sem.iterators import MemIter
from ..expr.numeric import Int32, Int64, Numeric
from ..expr.pointer import Pointer
from ..expr.tensor import Tensor
from ..expr.typing import Stream
from ..ir import AddressSpace, PointerType, i32, i64
from ..layout import make_layout

__all__ = ["param_types", "make_param", "param_arg_names"]


def _is_numeric_cls(part) -> bool:
    return isinstance(part, type) and issubclass(part, Numeric)


def param_types(part) -> list:
    """The host-function parameter types of one launcher argument."""
    if _is_numeric_cls(part):
        return [part.ir_type]
    if part == "stream":
        return [i64]
    if part is None or (isinstance(part, tuple) and part[0] in ("const", "self")):
        return []
    kind, dt = part[0], part[1]
    if kind == "pointer":
        return [PointerType(dt.ir_type, part[2])]
    ptr = PointerType(dt.ir_type, AddressSpace.GLOBAL)
    if kind == "dyn_tensor":
        n = part[2]
        return [ptr] + [i32] * n + [i64 if len(part) > 7 else i32] * (n - 1)
    _, _, shape, stride = part[:4]
    wide = i64 if part[9] == 64 else i32
    return [ptr] + [i32] * sum(s is None for s in shape) + [wide] * sum(s is None for s in stride)


def make_param(part, values: list, value=None):
    """The DSL value the body sees for one argument (``values``: its host block arguments)."""
    if _is_numeric_cls(part):
        return part._make(values[0])
    if part == "stream":
        return Stream(values[0])
    if part is None:
        return None
    if part[0] in ("const", "self"):
        return value
    kind, dt = part[0], part[1]
    if kind == "pointer":
        return MemIter.of(Pointer(values[0], dt), dt, part[3])
    dyn = iter(Int32._make(v) for v in values[1:])
    if kind == "dyn_tensor":
        n, u, align = part[2], part[3], part[4]
        shape = tuple(next(dyn) for _ in range(n))
        if len(part) > 7:  # 64-bit strides (one is past 32 bits): the kernel computes offsets in 64 bits
            dyn = iter(Int64._make(v) for v in values[1 + n :])
        stride = tuple(1 if i == u else next(dyn) for i in range(n))
        div = part[6] if part[6] > 1 else None
    else:
        shape = tuple(next(dyn) if s is None else s for s in part[2])
        if part[9] == 64:  # 64-bit dynamic strides: the kernel computes offsets in 64 bits
            dyn = iter(Int64._make(v) for v in values[1 + sum(s is None for s in part[2]) :])
        stride = tuple(next(dyn) if s is None else s for s in part[3])
        align = part[4]
        div = part[8] if part[8] > 1 else None
    return Tensor(values[0], dt, make_layout(shape, stride), alignment=align, divisibility=div)


def param_arg_names(name: str, part) -> list[str]:
    """Names of the host parameters of one argument (for messages): ``a``, ``a.shape[0]`` …"""
    n = len(param_types(part))
    if n == 0:
        return []
    if n == 1:
        return [name]
    if part[0] == "dyn_tensor":
        k, u = part[2], part[3]
        return [name] + [f"{name}.shape[{i}]" for i in range(k)] + [f"{name}.stride[{i}]" for i in range(k) if i != u]
    shape, stride = part[2], part[3]
    return (
        [name]
        + [f"{name}.shape[{i}]" for i, s in enumerate(shape) if s is None]
        + [f"{name}.stride[{i}]" for i, s in enumerate(stride) if s is None]
    )
