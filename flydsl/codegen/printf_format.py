"""FlyDSL printf formats (``{}`` placeholders, Python format specs) → C printf formats.

Each placeholder consumes one argument. The conversion follows the argument's type unless the spec
names one: integers up to 32 bits print with ``%d`` (promoted to i32; ``i1`` as 0/1), 64-bit integers
and ``index`` with ``%lld``, floats (promoted to double, as C varargs require) with ``%f``, pointers
with ``%p``. A spec such as ``{:>8.3f}``, ``{:x}``, ``{:+d}`` or ``{:e}`` maps to the matching C flags,
width, precision and conversion. Vectors print as ``[a, b, …]`` with one conversion per lane.
``{{``/``}}`` are literal braces and ``%`` is escaped. The result is back-end neutral; the back end
packs the arguments (``vprintf`` on NVIDIA).
"""

from __future__ import annotations

import re

from ..ir import FloatType, IndexType, IntegerType, PointerType, Type, VectorType
from .errors import CodegenError

__all__ = ["translate_format", "PrintfArg"]

# Python format spec: [[fill]align][sign][#][0][width][.precision][type]
_SPEC = re.compile(r"^(?:(?P<fill>.)?(?P<align>[<>^=]))?(?P<sign>[-+ ])?(?P<alt>#)?(?P<zero>0)?(?P<width>\d+)?"
                   r"(?:\.(?P<prec>\d+))?(?P<type>[bcdeEfFgGnosxX%]?)$")  # fmt: skip
_INT_CONV = set("dcxXo")
_FLOAT_CONV = set("eEfFgG")


class PrintfArg:
    """One C vararg: how to convert (``i32``, ``i64``, ``f64`` or ``ptr``) which IR value lane."""

    __slots__ = ("kind", "index", "lane", "from_type")

    def __init__(self, kind: str, index: int, lane: int | None, from_type: Type):
        self.kind, self.index, self.lane, self.from_type = kind, index, lane, from_type

    def __repr__(self) -> str:
        return f"PrintfArg({self.kind}, arg {self.index}, lane {self.lane})"


def _conversion(spec: str, t: Type, where: str) -> tuple[str, str]:
    """(C conversion text, vararg kind) for one scalar of type ``t``."""
    m = _SPEC.match(spec)
    if m is None:
        raise CodegenError(f"printf: cannot understand the format spec {{:{spec}}} {where}")
    conv = m.group("type") or ""
    if conv in ("b", "n", "s", "%") or m.group("align") in ("^", "="):
        raise CodegenError(f"printf: the spec {{:{spec}}} has no C printf equivalent {where}")
    flags = ""
    if m.group("align") == "<":
        flags += "-"
    if m.group("sign") in ("+", " "):
        flags += m.group("sign")
    if m.group("alt"):
        flags += "#"
    if m.group("zero"):
        flags += "0"
    width = m.group("width") or ""
    prec = "." + m.group("prec") if m.group("prec") is not None else ""
    e = t
    if isinstance(e, PointerType):
        if conv and conv not in "xX":
            raise CodegenError(f"printf: {{:{spec}}} does not apply to a pointer {where}")
        return (f"%{flags}{width}p", "ptr") if not conv else (f"%{flags}{width}ll{conv}", "i64")
    if isinstance(e, FloatType):
        if conv in _INT_CONV:
            raise CodegenError(f"printf: {{:{spec}}} is an integer format but the value is {e} {where}")
        return f"%{flags}{width}{prec}{conv or 'f'}", "f64"
    if isinstance(e, (IntegerType, IndexType)):
        wide = e.bitwidth > 32
        if conv in _FLOAT_CONV:
            return f"%{flags}{width}{prec}{conv}", "f64"
        c = conv or "d"
        if c == "c":
            return f"%{flags}{width}c", "i32"
        return f"%{flags}{width}{prec}{'ll' if wide else ''}{c}", ("i64" if wide else "i32")
    raise CodegenError(f"printf: cannot print a value of type {t} {where}")


def translate_format(fmt: str, types: list[Type], where: str = "") -> tuple[str, list[PrintfArg]]:
    """Translate a ``{}`` format into a C format and the list of varargs to pass."""
    out: list[str] = []
    args: list[PrintfArg] = []
    i, n, k = 0, len(fmt), 0
    while i < n:
        ch = fmt[i]
        if ch == "{":
            if i + 1 < n and fmt[i + 1] == "{":
                out.append("{")
                i += 2
                continue
            j = fmt.find("}", i)
            if j < 0:
                raise CodegenError(f"printf: unclosed '{{' in format {fmt!r} {where}")
            field = fmt[i + 1 : j]
            name, _, spec = field.partition(":")
            if name.strip():
                raise CodegenError(f"printf: only '{{}}' placeholders are supported, got '{{{field}}}' {where}")
            if k >= len(types):
                raise CodegenError(f"printf: format {fmt!r} has more placeholders than the {len(types)} arguments")
            t = types[k]
            if isinstance(t, VectorType):
                parts = []
                for lane in range(t.numel):
                    c, kind = _conversion(spec, t.elem, where)
                    parts.append(c)
                    args.append(PrintfArg(kind, k, lane, t.elem))
                out.append("[" + ", ".join(parts) + "]")
            else:
                c, kind = _conversion(spec, t, where)
                out.append(c)
                args.append(PrintfArg(kind, k, None, t))
            k += 1
            i = j + 1
        elif ch == "}":
            if i + 1 < n and fmt[i + 1] == "}":
                i += 2
            else:
                i += 1
            out.append("}")
        elif ch == "%":
            out.append("%%")
            i += 1
        else:
            out.append(ch)
            i += 1
    if k != len(types):
        raise CodegenError(f"printf: format {fmt!r} has {k} placeholders but {len(types)} arguments were given")
    return "".join(out), args
