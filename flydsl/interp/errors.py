"""The interpreter's run-time fault: :class:`InterpError`.

A fault names where it happened (kernel, op, the user's ``file:line`` from ``op.loc``), what went
wrong (buffer or argument, address, element index and bound) and who did it (block and thread ids
of the first faulting lane, in linear thread order).
"""

from __future__ import annotations

__all__ = ["InterpError", "format_loc"]


def format_loc(loc) -> str | None:
    """``file:line`` of an op location ``(file, line, col)``, or None when unknown."""
    if not loc:
        return None
    try:
        f, line = loc[0], loc[1]
    except (TypeError, IndexError):
        return str(loc)
    return f"{f}:{line}"


class InterpError(Exception):
    """A run-time fault of an interpreted kernel or host function.

    Attributes:
        kernel: the kernel (or host function) name.
        op: the faulting op (or None).
        loc: ``op.loc`` (``(file, line, col)``) or None.
        block, thread: ``(x, y, z)`` ids of the first faulting lane, or None outside a kernel.
        detail: the message without the location prefix and lane suffix.
    """

    def __init__(self, detail: str, *, kernel: str | None = None, op=None, block=None, thread=None):
        self.detail = detail
        self.kernel = kernel
        self.op = op
        self.loc = getattr(op, "loc", None)
        self.block = block
        self.thread = thread
        super().__init__(self._render())

    def _render(self) -> str:
        head = []
        if self.kernel is not None:
            head.append(f"kernel '{self.kernel}'")
        where = format_loc(self.loc)
        if where:
            head.append(f"at {where}")
        if self.op is not None:
            head.append(f"({self.op.defn.name})")
        text = (" ".join(head) + ": " if head else "") + self.detail
        if self.block is not None:
            b = ", ".join(map(str, self.block))
            t = ", ".join(map(str, self.thread))
            text += f" [first faulting lane: block ({b}) thread ({t})]"
        return text
