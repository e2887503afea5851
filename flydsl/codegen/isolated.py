"""Running LLVM in a forked child: :func:`run_isolated`.

LLVM's fatal errors abort the process and its command-line options are process-wide; code that may hit
either (codegen with per-compilation options, checking options against LLVM) runs in a child, which
reports a :class:`CodegenError` back with its text.
"""

from __future__ import annotations

import faulthandler
import os
import tempfile

from .errors import CodegenError

__all__ = ["run_isolated"]

_CHILD_ERROR = "\0CodegenError\0"


def run_isolated(fn, *args) -> str:
    """Run ``fn(*args) -> str`` in a forked child: an LLVM fatal error becomes a CodegenError, and LLVM
    state the child changes (command-line options) stays there. The child's stderr goes to a file (a pipe
    could fill up and stall it); a CodegenError raised in the child is re-raised here with its text."""
    r, w = os.pipe()
    err = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            faulthandler.disable()
            os.close(r)
            os.dup2(err.fileno(), 2)
            out = fn(*args).encode()
            with os.fdopen(w, "wb") as f:
                f.write(out)
            os._exit(0)
        except CodegenError as e:
            os.write(2, f"{_CHILD_ERROR}{e.raw_message}\0{e.fix or ''}".encode())
            os._exit(4)
        except BaseException as e:  # noqa: BLE001
            os.write(2, f"{type(e).__name__}: {e}".encode())
            os._exit(3)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    err.seek(0)
    text = err.read().decode(errors="replace")
    err.close()
    if status != 0:
        if _CHILD_ERROR in text:
            message, fix = text.split(_CHILD_ERROR, 1)[1].split("\0", 1)
            raise CodegenError(message, fix=fix or None)
        raise CodegenError(f"LLVM failed in the isolated code generator (status {status}): {text.strip()[-2000:]}")
    return data.decode()
