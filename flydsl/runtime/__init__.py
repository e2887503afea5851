"""flydsl.runtime: devices and arguments.

* :mod:`.args` — launcher arguments (torch, numpy, DLPack, scalars, streams) → key parts + ABI values.
* :mod:`.device` — device selection (``FLYDSL_RUNTIME_KIND``) and launchers.
* :mod:`.cpu` — the CPU device (the IR interpreter).
* :mod:`.cuda` — the CUDA driver API (the GPU device).
"""

from .args import TensorAdaptor, TensorRef, from_dlpack, from_torch_tensor
from .device import Device, get_device

__all__ = ["Device", "get_device", "TensorAdaptor", "TensorRef", "from_dlpack", "from_torch_tensor"]
