"""``gpu.printf`` in MLIR's spelling: a C printf format (``gpu.printf "x=%d y=%.2f\\n" %0, %1 : i32, f32``).

Our ``gpu.printf`` keeps its format in the ``{}`` language of :func:`flydsl.dialects.gpu.parse_printf_format`
(it can print a vector, which C cannot). Where every operand is a scalar, the format has one exact C
spelling — the conversions :func:`~flydsl.dialects.gpu.printf_conversion` maps each placeholder to, the
one the LLVM back end hands to ``vprintf`` — and the op prints in MLIR's custom syntax with it; the parser
reads it back (:func:`c_to_braces`), so the text round-trips. An op with a vector operand prints generically.
:func:`c_to_braces` also reads the C formats of FlyDSL code that calls MLIR's ``gpu.printf`` directly.
"""

from __future__ import annotations

import re

from ..ir import Op, VectorType, format_attr, register_format, register_parse_format
from ..ir.printer import GENERIC
from . import gpu

__all__ = ["braces_to_c", "c_to_braces"]

_CONV = re.compile(
    r"%(?P<flags>[-+ #0]*)(?P<width>\d*)(?:\.(?P<prec>\d+))?(?P<len>hh|h|ll|l|z|j|t|L)?(?P<conv>[diouxXeEfFgGcp%])"
)


def braces_to_c(fmt: str, types) -> str | None:
    """The C format of a ``{}`` format over scalar operands of ``types`` (None when one is a vector)."""
    if any(isinstance(t, VectorType) for t in types):
        return None
    lits, specs = gpu.parse_printf_format(fmt)
    out = [lits[0].replace("%", "%%")]
    for spec, t, lit in zip(specs, types, lits[1:]):
        out.append(gpu.printf_conversion(spec, t)[0])
        out.append(lit.replace("%", "%%"))
    return "".join(out)


def c_to_braces(c_fmt: str) -> str:
    """The ``{}`` format of a C printf format: ``%-8.3f`` is ``{:<8.3f}``, ``%d``/``%ld`` are ``{}``, ``%%`` is
    ``%``; literal braces are doubled.

    Raises:
        gpu.PrintfFormatError: a conversion with no value to print here (``%s``, ``%n``) or a lone ``%``.
    """
    out, i = [], 0
    for m in _CONV.finditer(c_fmt):
        out.append(_literal(c_fmt[i : m.start()]))
        i = m.end()
        if m.group("conv") == "%":
            out.append("%")
            continue
        flags = m.group("flags")
        spec = ("<" if "-" in flags else "") + ("+" if "+" in flags else " " if " " in flags else "")
        spec += ("#" if "#" in flags else "") + ("0" if "0" in flags else "") + m.group("width")
        spec += f".{m.group('prec')}" if m.group("prec") is not None else ""
        conv = m.group("conv")
        spec += "" if conv in "diup" else conv
        out.append("{:" + spec + "}" if spec else "{}")
    out.append(_literal(c_fmt[i:]))
    return "".join(out)


def _literal(text: str) -> str:
    if "%" in text:
        raise gpu.PrintfFormatError(f"printf: cannot print the C conversion in {text!r} (no string arguments here)")
    return text.replace("{", "{{").replace("}", "}}")


def _print(p, op: Op, indent: str) -> str:
    c = braces_to_c(op.attrs["format"], [v.type for v in op.operands]) if set(op.attrs) == {"format"} else None
    if c is None:
        return GENERIC(p, op, indent)
    if not op.operands:
        return f"gpu.printf {format_attr(c)}"
    return f"gpu.printf {format_attr(c)} {p.names_of(op.operands)} : {', '.join(str(v.type) for v in op.operands)}"


def _parse(ps, defn, nres: int) -> Op:
    fmt = c_to_braces(ps.string())
    ops = []
    if ps.peek("%"):
        ops.append(ps.operand())
        while ps.accept(","):
            ops.append(ps.operand())
        ps.expect(":")
        ps.type()
        while ps.accept(","):
            ps.type()
    return Op(defn, ops, [], {"format": fmt}, 0)


register_format("gpu.printf", _print)
register_parse_format("gpu.printf", _parse)
gpu.printf.fmt = "gpu.printf"
