"""``gpu.printf`` formats (``{}`` placeholders, Python format specs) → C printf formats.

The grammar and the C conversion of each placeholder are the op's own (:mod:`flydsl.dialects.gpu`:
``parse_printf_format``, ``printf_conversion``); here they become one C format string, ``%`` escaped,
vectors expanded to ``[a, b, …]`` with one conversion per lane, and the list of varargs. The result is
back-end neutral; the back end packs the arguments (``vprintf`` on NVIDIA).
"""

from __future__ import annotations

from ..dialects.gpu import PrintfFormatError, check_printf, printf_conversion
from ..ir import Type, VectorType
from .errors import CodegenError

__all__ = ["translate_format", "PrintfArg"]


class PrintfArg:
    """One C vararg: how to convert (``i32``, ``i64``, ``f64`` or ``ptr``) which IR value lane."""

    __slots__ = ("kind", "index", "lane", "from_type")

    def __init__(self, kind: str, index: int, lane: int | None, from_type: Type):
        self.kind, self.index, self.lane, self.from_type = kind, index, lane, from_type

    def __repr__(self) -> str:
        return f"PrintfArg({self.kind}, arg {self.index}, lane {self.lane})"


def translate_format(fmt: str, types: list[Type], where: str = "") -> tuple[str, list[PrintfArg]]:
    """Translate a ``{}`` format (the grammar of ``gpu.printf``: :func:`flydsl.dialects.gpu.check_printf`)
    into a C format and the list of varargs to pass.

    Raises:
        CodegenError: a format the op cannot print (the message names ``where``).
    """
    try:
        lits, specs = check_printf(fmt, types)
    except PrintfFormatError as e:
        raise CodegenError(f"{e} {where}".rstrip()) from None
    out = [lits[0].replace("%", "%%")]
    args: list[PrintfArg] = []
    for k, (spec, t, lit) in enumerate(zip(specs, types, lits[1:])):
        if isinstance(t, VectorType):
            parts = []
            for lane in range(t.numel):
                c, kind = printf_conversion(spec, t.elem)
                parts.append(c)
                args.append(PrintfArg(kind, k, lane, t.elem))
            out.append("[" + ", ".join(parts) + "]")
        else:
            c, kind = printf_conversion(spec, t)
            out.append(c)
            args.append(PrintfArg(kind, k, None, t))
        out.append(lit.replace("%", "%%"))
    return "".join(out), args
