"""Codegen errors: Python exceptions that name the op, the user's source line and the fix.

LLVM reports some failures by killing the process (``LLVM ERROR: Cannot select`` aborts, ``no
libcall available`` exits). Codegen therefore checks the target's capabilities itself before
emitting anything target-specific and raises :class:`CodegenError` instead; llvmlite's parse and
verify failures are wrapped into the same exception with the offending LLVM line.
"""

from __future__ import annotations

import linecache

__all__ = ["CodegenError", "format_location"]


def format_location(loc) -> str:
    """``file:line:col`` (or ``file:line``) for an op location, ``""`` when unknown."""
    if not loc:
        return ""
    parts = [str(p) for p in loc if p is not None]
    return ":".join(parts)


class CodegenError(Exception):
    """The IR cannot be lowered for this target (or LLVM rejected what was emitted).

    Attributes:
        op: the offending IR op, when known.
        loc: its source location ``(file, line, col)``.
        fix: a sentence telling the user what to do instead.
        llvm_line: for LLVM parse/verify failures, the failing line of the LLVM IR text.
    """

    def __init__(self, message: str, op=None, loc=None, fix: str | None = None, llvm_line: str | None = None):
        self.op = op
        self.loc = loc if loc is not None else (getattr(op, "loc", None) if op is not None else None)
        self.fix = fix
        self.llvm_line = llvm_line
        self.raw_message = message
        super().__init__(self._render())

    def _render(self) -> str:
        head = ""
        where = format_location(self.loc)
        if where:
            head = where + ": "
        name = f"{self.op.defn.name}: " if self.op is not None else ""
        lines = [f"{head}error: {name}{self.raw_message}"]
        if self.loc and len(self.loc) >= 2 and self.loc[0] and isinstance(self.loc[1], int):
            src = linecache.getline(str(self.loc[0]), self.loc[1]).rstrip("\n")
            if src.strip():
                lines.append("    " + src)
                col = self.loc[2] if len(self.loc) > 2 and isinstance(self.loc[2], int) else None
                if col is not None and col >= 1:  # MLIR columns are 1-based
                    lines.append("    " + " " * (col - 1) + "^")
        if self.llvm_line:
            lines.append(f"  LLVM line: {self.llvm_line.strip()}")
        if self.fix:
            lines.append(f"  fix: {self.fix}")
        return "\n".join(lines)
