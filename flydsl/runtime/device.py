"""Devices: where a compiled specialization runs. ``cuda`` (the GPU, through the driver API) or ``cpu``
(the IR interpreter).

``FLYDSL_RUNTIME_KIND=cuda|cpu`` forces one; by default the GPU is used when
:func:`flydsl.runtime.cuda.is_available` says so, else the interpreter. A device turns an artifact
(host function + kernels + PTX) into a *launcher*: ``launcher(abi_values)`` runs the host function,
whose ``gpu.launch_func`` ops launch the kernels. Everything that can be prepared per specialization
(kernel handles, parameter packers, the compiled host function) is prepared when the launcher is
built, so a cached call does only argument conversion, packing and the launch itself.
"""

from __future__ import annotations

from ..interp import compile_host
from ..utils.env import env
from ..utils.target import Target
from .args import DEFAULT_STREAM, ArgError, TensorRef
from .cpu import CpuLauncher
from .launch_plan import launch_plan

__all__ = ["Device", "get_device", "CudaLauncher", "DeviceError"]


class DeviceError(ArgError):
    """A device-level failure with a catalogue entry (``diag``) and its fields."""


class Device:
    """A place to run kernels: ``kind`` is ``"cuda"`` or ``"cpu"``."""

    def __init__(self, kind: str):
        self.kind = kind

    def launcher(self, artifact, target: Target):
        """A callable ``launcher(abi_values)`` for one compiled specialization."""
        if self.kind == "cpu":
            return CpuLauncher(artifact, target.warp_size)
        return CudaLauncher(artifact)

    def __repr__(self) -> str:
        return f"Device({self.kind!r})"


_DEVICES: dict[str, Device] = {}


def _cuda_available() -> bool:
    try:
        from . import cuda
    except ImportError:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:
        return False


def get_device() -> Device:
    """The device selected by ``FLYDSL_RUNTIME_KIND`` (default: cuda when available, else cpu)."""
    kind = (env.runtime_kind or "").strip().lower()
    dev = _DEVICES.get(kind)
    if dev is not None:
        return dev
    if kind == "":
        dev = Device("cuda" if _cuda_available() else "cpu")
    elif kind == "cpu":
        dev = Device("cpu")
    elif kind == "cuda":
        if not _cuda_available():
            raise DeviceError("NO_DEVICE", kind=kind, why="no CUDA device or driver is available")
        dev = Device("cuda")
    else:
        raise DeviceError("NO_DEVICE", kind=kind, why="the only devices are 'cuda' and 'cpu'")
    _DEVICES[kind] = dev
    return dev


class CudaLauncher:
    """Launches one compiled specialization on the GPU: kernels loaded once, arguments packed per call."""

    __slots__ = ("host", "kernels", "param_names")

    def __init__(self, artifact):
        from .cuda import CudaKernel, CudaModule

        if not artifact.ptx:
            raise DeviceError("NO_DEVICE", kind="cuda", why="the compiled kernel has no PTX")
        self.host = launch_plan(artifact.host_op()) or compile_host(artifact.host_op())
        module = CudaModule(artifact.cubin or artifact.ptx)
        self.kernels = {}
        for name, info in artifact.kernels.items():
            kinds = info.get("param_types") or _param_kinds(artifact.kernel_op(name))
            self.kernels[name] = CudaKernel(module, info.get("symbol") or name, kinds)
        self.param_names = artifact.param_names

    def __call__(self, vals: list) -> None:
        args = list(vals)
        torch_stream = False
        default_at = -1
        for i, v in enumerate(args):
            if type(v) is TensorRef:
                if not v.is_cuda:
                    name = self.param_names[i] if i < len(self.param_names) else f"arg{i}"
                    raise DeviceError(
                        "DEVICE_MISMATCH",
                        name=name,
                        got="a tensor in host (CPU) memory",
                        device="cuda",
                        fix="move it to the GPU (`t.cuda()`), or run on the interpreter with FLYDSL_RUNTIME_KIND=cpu",
                    )
                torch_stream = torch_stream or type(v.obj).__module__.startswith("torch")
                args[i] = v.ptr
            elif v is DEFAULT_STREAM:
                default_at = i
        if default_at >= 0:  # the default stream: torch's current one when torch tensors are passed
            args[default_at] = _current_torch_stream() if torch_stream else 0
        self.host(args, self._launch)

    def _launch(self, kernel, grid, block, smem, stream, kargs) -> None:
        self.kernels[str(kernel)].launch(grid, block, int(smem), int(stream), kargs)


def _param_kinds(kernel_op) -> list[str]:
    """Parameter kinds (``"ptr"``, ``"i32"``, ``"f32"`` …) from a kernel's IR signature."""
    kinds = []
    for t in kernel_op.attrs["function_type"].inputs:
        if t.is_pointer:
            kinds.append("ptr")
        elif t.is_index:
            kinds.append("i64")
        else:
            kinds.append(str(t))
    return kinds


def _current_torch_stream() -> int:
    """The raw handle of torch's current stream on the current device (the fast private call when torch
    has it: ``torch.cuda.current_stream()`` builds a Python object per call)."""
    f = _RAW_STREAM[0]
    if f is None:
        import torch

        c = torch._C
        if hasattr(c, "_cuda_getCurrentRawStream") and hasattr(c, "_cuda_getDevice"):
            get, dev = c._cuda_getCurrentRawStream, c._cuda_getDevice
            f = _RAW_STREAM[0] = lambda: get(dev())
        else:
            f = _RAW_STREAM[0] = lambda: torch.cuda.current_stream().cuda_stream
    return f()


_RAW_STREAM: list = [None]
