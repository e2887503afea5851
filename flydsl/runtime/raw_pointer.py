"""``RawAddress``: the ABI value of a raw-pointer argument (``flyc.from_c_void_p``).

The CUDA launcher passes it as the integer it is; the CPU interpreter refuses it (FLY401), because it
checks every access against the buffer it belongs to and a bare address has no known extent.
"""

from __future__ import annotations

__all__ = ["RawAddress"]


class RawAddress(int):
    """An address passed to a kernel's pointer parameter as is."""
