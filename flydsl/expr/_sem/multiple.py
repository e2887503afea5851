"""What a run-time integer is provably a multiple of: the power of two read off the ops that computed it.

Alignment claims of memory accesses rest on it: ``ptr + bid * 8192`` keeps ``ptr``'s 16-byte alignment
for 2-byte elements because the offset is a multiple of 8192, whatever ``bid`` is. Only powers of two
are tracked, so wrap-around (arithmetic modulo ``2**width``) and truncation keep every fact true as long
as the power is below the width, which :data:`CAP` guarantees for the widths that address memory.

The walk follows integer arithmetic (``muli``, ``addi``/``subi``, ``shli`` by a constant, ``andi``/``ori``
with a constant, ``select``, ``remsi``/``remui`` by a power of two), casts between integer widths and
index, and constants; anything else (block arguments such as loop counters, thread ids, loads) is a
multiple of 1 only.
"""

from __future__ import annotations

from ...ir import Value

__all__ = ["CAP", "pow2_multiple"]

#: The largest power of two reported (also the answer for 0, a multiple of everything).
CAP = 1 << 16

_CASTS = frozenset(
    ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui", "arith.bitcast")
)
_DEPTH = 32  # ops followed back from the value (offsets are short expressions; this bounds the walk)


def _low(n: int) -> int:
    n = abs(int(n))
    return CAP if n == 0 else min(CAP, n & -n)


def _const(v: Value):
    op = v.defining_op
    if op is None or op.defn.name != "arith.constant":
        return None
    c = op.attrs.get("value")
    return c if type(c) is int else None


def _walk(v: Value, depth: int) -> int:
    c = _const(v)
    if c is not None:
        return _low(c)
    op = v.defining_op
    if op is None or depth <= 0:
        return 1
    name, ins, d = op.defn.name, op.operands, depth - 1
    if name in _CASTS:
        return _walk(ins[0], d)
    if name == "arith.muli":
        return min(CAP, _walk(ins[0], d) * _walk(ins[1], d))
    if name in ("arith.addi", "arith.subi"):
        return min(_walk(ins[0], d), _walk(ins[1], d))
    if name == "arith.shli":
        k = _const(ins[1])
        return min(CAP, _walk(ins[0], d) << k) if k is not None and 0 <= k < 32 else _walk(ins[0], d)
    if name == "arith.andi":  # a bit clear in either operand is clear in the result
        return max(_walk(ins[0], d), _walk(ins[1], d))
    if name == "arith.ori":
        return min(_walk(ins[0], d), _walk(ins[1], d))
    if name == "arith.select":
        return min(_walk(ins[1], d), _walk(ins[2], d))
    if name in ("arith.remsi", "arith.remui"):  # x % 2^k keeps x's low bits below 2^k
        m = _const(ins[1])
        if m is not None and m > 0 and m & (m - 1) == 0:
            return min(_walk(ins[0], d), m)
        return 1
    return 1


def pow2_multiple(x) -> int:
    """The largest power of two (at most :data:`CAP`) that the integer ``x`` is known to be a multiple of.

    ``x``: a Python int, a DSL integer (static or run-time) or an integer IR value; 0 gives :data:`CAP`.
    """
    if isinstance(x, bool):
        return 1
    if isinstance(x, int):
        return _low(x)
    is_static = getattr(x, "is_static", None)
    if is_static is not None and is_static():
        v = x.value
        return _low(v) if isinstance(v, int) else 1
    v = x.ir_value() if hasattr(x, "ir_value") else x
    return _walk(v, _DEPTH) if isinstance(v, Value) else 1
