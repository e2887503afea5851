"""Formatting of ``gpu.printf`` the way the GPU's device printf prints it.

The format has ``{}`` placeholders (``{{`` and ``}}`` are literal braces), one per operand, each
with an optional Python format spec (``{:>8.3f}``, ``{:x}``, ``{:+d}``, ``{:e}``). The grammar and the
mapping to a C conversion are the op's own (``flydsl.dialects.gpu.printf_conversion``, the one the LLVM
back end emits too), and the C conversion is then applied exactly as C's printf does:

- integers up to 32 bits are promoted to i32 (``%d``; ``i1`` prints 0/1; ``{:x}`` of an i8 -1 prints
  ``ffffffff``), 64-bit integers and ``index`` use ``%lld``;
- floats are promoted to double and print with ``%f`` unless the spec names another conversion;
- pointers print with ``%p`` (``0x…``), or ``%llx`` for ``{:x}``;
- a vector prints as ``[a, b, …]`` with one conversion per lane;
- ``<`` alignment is the ``-`` flag; sign, ``#``, ``0``, width and precision carry over.

Nothing is appended: the text (including any ``\\n``) is printed as given.
"""

from __future__ import annotations

import numpy as np

from ..dialects.gpu import PrintfFormatError, parse_printf_format, printf_conversion
from ..ir import FloatType
from .errors import InterpError

__all__ = ["format_lane_values"]


def _converter(spec: str, elem):
    """A function ``python number -> str`` applying the C conversion of ``{:spec}`` for type ``elem`` (Python's
    ``%`` formats as C's printf does once the ``ll`` length modifier is dropped; ``%p`` prints ``0x`` and the
    address)."""
    cfmt, kind = printf_conversion(spec, elem)
    cfmt = cfmt.replace("ll", "")
    if cfmt.endswith("p"):
        f = cfmt[:-1] + "s"
        return lambda x: f % ("0x%x" % (int(x) & (2**64 - 1)))
    if kind == "f64":
        return lambda x: cfmt % float(x)
    c = cfmt[-1]
    if c == "c":
        return lambda x: cfmt % chr(int(x) & 0xFF)
    if c in "xXo":
        mask = (1 << (64 if kind in ("i64", "ptr") else 32)) - 1
        return lambda x: cfmt % (int(x) & mask)
    return lambda x: cfmt % int(x)


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
        lits, specs = parse_printf_format(fmt)
        if len(specs) != len(kinds):
            raise PrintfFormatError(f"printf: format {fmt!r} has {len(specs)} placeholders but {len(kinds)} operands")
        convs = [_converter(spec, elem) for spec, (_, elem, _) in zip(specs, kinds)]
    except PrintfFormatError as e:
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
