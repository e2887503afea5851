"""Formatting of ``gpu.printf`` the way the GPU's device printf prints it.

The format has ``{}`` placeholders (``{{`` and ``}}`` are literal braces), one per operand, each
with an optional Python format spec (``{:>8.3f}``, ``{:x}``, ``{:+d}``, ``{:e}``). The mapping to a
C conversion is the one the LLVM back end emits (``flydsl.codegen.printf_format``), and the C
conversion is then applied exactly as C's printf does:

- integers up to 32 bits are promoted to i32 (``%d``; ``i1`` prints 0/1; ``{:x}`` of an i8 -1 prints
  ``ffffffff``), 64-bit integers and ``index`` use ``%lld``;
- floats are promoted to double and print with ``%f`` unless the spec names another conversion;
- pointers print with ``%p`` (``0x…``), or ``%llx`` for ``{:x}``;
- a vector prints as ``[a, b, …]`` with one conversion per lane;
- ``<`` alignment is the ``-`` flag; sign, ``#``, ``0``, width and precision carry over.

Nothing is appended: the text (including any ``\\n``) is printed as given.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from ..ir import FloatType
from .errors import InterpError

__all__ = ["format_lane_values", "parse_format"]

# Python format spec: [[fill]align][sign][#][0][width][.precision][type]
_SPEC = re.compile(
    r"^(?:(?P<fill>.)?(?P<align>[<>^=]))?(?P<sign>[-+ ])?(?P<alt>#)?(?P<zero>0)?(?P<width>\d+)?"
    r"(?:\.(?P<prec>\d+))?(?P<type>[bcdeEfFgGnosxX%]?)$"
)
_INT_CONV = set("dcxXo")
_FLOAT_CONV = set("eEfFgG")


@functools.lru_cache(maxsize=256)
def parse_format(fmt: str) -> tuple:
    """``(literals, specs)`` with ``len(literals) == len(specs) + 1``; raises ValueError on a bad field."""
    lits, specs, cur, i, n = [], [], [], 0, len(fmt)
    while i < n:
        ch = fmt[i]
        if ch == "{":
            if fmt[i + 1 : i + 2] == "{":
                cur.append("{")
                i += 2
                continue
            j = fmt.find("}", i)
            if j < 0:
                raise ValueError(f"printf: unclosed '{{' in format {fmt!r}")
            name, _, spec = fmt[i + 1 : j].partition(":")
            if name.strip():
                raise ValueError(f"printf: only '{{}}' placeholders are supported, got '{{{fmt[i + 1 : j]}}}'")
            specs.append(spec)
            lits.append("".join(cur))
            cur = []
            i = j + 1
        elif ch == "}":
            cur.append("}")
            i += 2 if fmt[i + 1 : i + 2] == "}" else 1
        else:
            cur.append(ch)
            i += 1
    lits.append("".join(cur))
    return tuple(lits), tuple(specs)


def _converter(spec: str, elem, is_ptr: bool):
    """A function ``python number -> str`` applying the C conversion of ``{:spec}`` for type ``elem``."""
    m = _SPEC.match(spec)
    if m is None:
        raise ValueError(f"printf: cannot understand the format spec {{:{spec}}}")
    conv = m.group("type") or ""
    if conv in ("b", "n", "s", "%") or m.group("align") in ("^", "="):
        raise ValueError(f"printf: the spec {{:{spec}}} has no C printf equivalent")
    flags = ("-" if m.group("align") == "<" else "") + (m.group("sign") if m.group("sign") in ("+", " ") else "")
    flags += ("#" if m.group("alt") else "") + ("0" if m.group("zero") else "")
    width = m.group("width") or ""
    prec = "." + m.group("prec") if m.group("prec") is not None else ""
    if is_ptr:
        if conv and conv not in "xX":
            raise ValueError(f"printf: {{:{spec}}} does not apply to a pointer")
        if not conv:
            f = "%" + flags + width + "s"
            return lambda x: f % ("0x%x" % (int(x) & (2**64 - 1)))
        f = "%" + flags + width + conv
        return lambda x: f % (int(x) & (2**64 - 1))
    if isinstance(elem, FloatType):
        if conv in _INT_CONV:
            raise ValueError(f"printf: {{:{spec}}} is an integer format but the value is {elem}")
        f = "%" + flags + width + prec + (conv or "f")
        return lambda x: f % float(x)
    if conv in _FLOAT_CONV:
        f = "%" + flags + width + prec + conv
        return lambda x: f % float(int(x))
    c = conv or "d"
    bits = 64 if elem.bitwidth > 32 else 32
    if c == "c":
        f = "%" + flags + width + "c"
        return lambda x: f % chr(int(x) & 0xFF)
    f = "%" + flags + width + prec + c
    if c in "xXo":
        mask = (1 << bits) - 1
        return lambda x: f % (int(x) & mask)
    return lambda x: f % int(x)


def _pylist(col: np.ndarray, elem) -> list:
    if isinstance(elem, FloatType):
        return col.astype(np.float64).tolist()
    return col.astype(np.int64).tolist()


def format_lane_values(op, fmt: str, kinds: list, cols: list, k: int) -> list[str]:
    """The printed text of each of ``k`` lanes.

    Args:
        kinds: per operand ``(is_vector, element type, is_pointer)``.
        cols: per operand an array with 1 row (uniform) or ``k`` rows (one per printing lane).
    Raises:
        InterpError: a malformed format, or a placeholder count that differs from the operand count.
    """
    try:
        lits, specs = parse_format(fmt)
        if len(specs) != len(kinds):
            raise ValueError(f"printf: format {fmt!r} has {len(specs)} placeholders but {len(kinds)} operands")
        convs = [_converter(spec, elem, is_ptr) for spec, (_, elem, is_ptr) in zip(specs, kinds)]
    except ValueError as e:
        raise InterpError(str(e), op=op) from None
    parts = []
    for conv, (is_vec, elem, _), col in zip(convs, kinds, cols):
        vals = _pylist(col, elem)
        if is_vec:
            strs = ["[" + ", ".join(conv(x) for x in row) + "]" for row in vals]
        else:
            strs = [conv(x) for x in vals]
        parts.append(strs if len(strs) == k else strs * k)
    out = []
    for j in range(k):
        s = [lits[0]]
        for i, strs in enumerate(parts):
            s.append(strs[j])
            s.append(lits[i + 1])
        out.append("".join(s))
    return out
