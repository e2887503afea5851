"""``fx.rocdl``: FlyDSL's AMD-flavoured tensor API, target-neutral here.

* :func:`make_buffer_tensor` — a global tensor viewed through a buffer resource: loads of elements whose
  bytes lie at or past ``num_records`` read 0 and such stores are dropped (AMD's buffer semantics; on
  NVIDIA predication, on the interpreter a mask — the ``ptr.buffer_*`` ops).
* ``BufferCopy8b … BufferCopy128b`` / :func:`BufferCopy` — copy atoms that move their bits through the
  buffer resource (one ``ptr.buffer_load``/``ptr.buffer_store`` of ``bits`` per call).

So AMD-style kernels (FlyDSL's ``examples/01-vectorAdd.py``) run unmodified on NVIDIA GPUs and on the
CPU interpreter. AMD-only instructions (MFMA, LDS DMA, ``s_buffer_load``) are not provided.
"""

from __future__ import annotations

from .. import layout as L
from ..ir import AddressSpace
from ..layout.inttuple import imul
from ._compat import SyncScope
from ._sem import iterators as _it
from ._sem.inttuple import is_tensor
from .buffer_ops import MAX_NUM_RECORDS, create_buffer_resource
from .copy import CopyOp

__all__ = [
    "make_buffer_tensor", "BufferCopy", "BufferCopy8b", "BufferCopy16b", "BufferCopy32b", "BufferCopy64b",
    "BufferCopy128b", "MAX_NUM_RECORDS", "SyncScope",
]  # fmt: skip


def BufferCopy(bits: int, cache_modifier: int = 0) -> CopyOp:
    """A copy of ``bits`` per thread through a buffer tensor (FlyDSL's ``rocdl.BufferCopy``).

    The global side of the copy must be a buffer tensor (:func:`make_buffer_tensor`); elements past its
    ``num_records`` read 0 and are not written. ``cache_modifier`` is kept on the op (AMD ``aux`` bits).
    """
    return CopyOp(bits, "buffer", cache_modifier)


def BufferCopy8b() -> CopyOp:
    """``BufferCopy(8)``."""
    return BufferCopy(8)


def BufferCopy16b() -> CopyOp:
    """``BufferCopy(16)``."""
    return BufferCopy(16)


def BufferCopy32b() -> CopyOp:
    """``BufferCopy(32)``."""
    return BufferCopy(32)


def BufferCopy64b() -> CopyOp:
    """``BufferCopy(64)``."""
    return BufferCopy(64)


def BufferCopy128b() -> CopyOp:
    """``BufferCopy(128)``."""
    return BufferCopy(128)


def make_buffer_tensor(tensor, max_size: bool = True, *, num_records_bytes=None):
    """``tensor`` (global memory) viewed through a buffer resource with AMD's bounds semantics.

    Args:
        tensor: an ``fx.Tensor`` in global memory (a buffer tensor is returned as is).
        max_size: without ``num_records_bytes``: True → ``0xFFFFFFFF`` bytes (no practical bound, as
            FlyDSL, so a kernel cached for one size stays correct for larger tensors); False → the
            layout's ``cosize * element bytes`` (computed at run time when the layout is dynamic).
        num_records_bytes: the bound in bytes (an int or a run-time integer); takes precedence.

    Returns:
        A tensor with the same layout whose accesses go through ``ptr.buffer_load``/``ptr.buffer_store``:
        bytes at or past the bound read as 0 and are never written.

    Raises:
        TypeError: not a tensor, or a tensor outside global memory.
    """
    if not is_tensor(tensor):
        raise TypeError(f"make_buffer_tensor takes an fx.Tensor in global memory, got {tensor!r}")
    if tensor.memspace == "buffer":
        return tensor
    it = tensor._it
    if not isinstance(it, _it.MemIter) or it.address_space != AddressSpace.GLOBAL:
        raise TypeError(f"make_buffer_tensor needs a global-memory tensor, got a {tensor.memspace} tensor {tensor}")
    if num_records_bytes is None and not max_size:
        num_records_bytes = imul(L.cosize(tensor.layout), max(1, tensor.dtype.width // 8))
        if type(num_records_bytes) is int:
            num_records_bytes = min(num_records_bytes, MAX_NUM_RECORDS)
    rsrc = create_buffer_resource(it, max_size=True, num_records_bytes=num_records_bytes)
    buf = _it.BufIter(rsrc.ir_value(), 0, tensor.dtype, it.align)
    return type(tensor)._make(buf, tensor.dtype, tensor.layout, tensor._div)


def __getattr__(name: str):
    """FlyDSL's ``fx.rocdl`` also holds the ROCDL operations: those with a portable meaning run here
    (``readfirstlane``, ``mbcnt_lo``, raw buffer loads/stores …), scheduling hints are no-ops and AMD-only
    instructions raise FLY501 (:mod:`flydsl._mlir.dialects.rocdl`, resolved on first use)."""
    from .._mlir.dialects import rocdl as ops  # cycle: flydsl._mlir is a facade built on fx

    return getattr(ops, name)
