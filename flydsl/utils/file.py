"""``atomic_write(path)``: write a file so that readers see the old content or the complete new one.

The data goes to a temporary file in the same folder, which replaces ``path`` (``os.replace``) only when
the ``with`` block finishes without an exception; on an exception the temporary file is removed and
``path`` is untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ["atomic_write"]


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", encoding: str | None = None):
    """Open a temporary file next to ``path`` for writing; replace ``path`` with it on success."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
