"""flydsl.runtime: devices and arguments.

* :mod:`.args` — tensor arguments (torch, numpy, DLPack) read into facts; ``flyc.from_torch_tensor``.
* :mod:`.launch_plan` — a specialization's host function as straight-line Python.
* :mod:`.streams` — stream handles (torch's current stream, cheaply).
* :mod:`.device` — device selection (``FLYDSL_RUNTIME_KIND``) and launchers.
* :mod:`.cpu` — the CPU device (the IR interpreter); :mod:`.graph` records and replays its launches.
* :mod:`.cuda` — the CUDA driver API (the GPU device); :mod:`._cuda_launch` its per-kernel launch function.
"""

from .args import TensorAdaptor, TensorRef, from_dlpack, from_torch_tensor
from .device import Device, get_device
from .graph import CpuGraph

__all__ = ["CpuGraph", "Device", "get_device", "TensorAdaptor", "TensorRef", "from_dlpack", "from_torch_tensor"]
