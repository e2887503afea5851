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

from ..codegen.kernel_info import param_kind
from ..interp import compile_host
from ..utils.env import env
from ..utils.target import ArchInfo
from . import cuda
from .arch import (
    bf16_global_atomics_arch_description,
    default_fp8_format,
    get_hip_arch,
    get_rocm_arch,
    get_rocm_device_count,
    get_warp_size,
    is_nvidia_arch,
    is_rdna_arch,
    supports_bf16_global_atomics,
)
from .args import DEFAULT_STREAM, ArgError, TensorRef
from .cpu import CpuLauncher
from .launch_plan import check_launch_dims, launch_plan
from .streams import torch_stream_getter

__all__ = [
    "Device",
    "get_device",
    "CudaLauncher",
    "DeviceError",
    "StandInCudaDevice",
    # FlyDSL's architecture queries (flydsl.runtime.arch)
    "get_rocm_arch",
    "get_hip_arch",
    "get_rocm_device_count",
    "is_rdna_arch",
    "is_nvidia_arch",
    "get_warp_size",
    "supports_bf16_global_atomics",
    "bf16_global_atomics_arch_description",
    "default_fp8_format",
]


class DeviceError(ArgError):
    """A device-level failure with a catalogue entry (``diag``) and its fields."""


class Device:
    """A place to run kernels: ``kind`` is ``"cuda"`` or ``"cpu"``.

    ``kernel_factory(image, name, kinds, pdl=False)`` builds the CUDA kernels of a launcher (default: load
    ``image`` into the driver, :class:`flydsl.runtime.cuda.CudaKernel`); a stand-in measures or tests the launch
    path without a GPU (``benchmarks/launch_overhead.py``, ``tests/unit/test_jit_cuda_path.py``).
    """

    def __init__(self, kind: str, kernel_factory=None):
        self.kind = kind
        self.kernel_factory = kernel_factory

    def launcher(self, artifact, target: ArchInfo):
        """A callable ``launcher(abi_values)`` for one compiled specialization."""
        if self.kind == "cpu":
            return CpuLauncher(artifact, target.warp_size)
        return CudaLauncher(artifact, self.kernel_factory)

    def __repr__(self) -> str:
        return f"Device({self.kind!r})"


_DEVICES: dict[str, Device] = {}
DEVICE = 0  # the CUDA device ordinal kernels are loaded on (flydsl.runtime.cuda.CudaModule's default)


def _cuda_available() -> bool:
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
    """Launches one compiled specialization on the GPU: kernels loaded once, arguments packed per call.

    ``run(*abi)`` takes the host function's arguments with every value raw (tensor pointers as ints, the
    stream as an int handle) and launches: it is the host function's launch plan calling each kernel's
    launch function (:attr:`flydsl.runtime.cuda.CudaKernel.launcher`) directly — what a cached jit call
    runs. ``launcher(abi_values)`` also accepts :class:`TensorRef` values and :data:`DEFAULT_STREAM`, checks
    them and resolves them (the first call of a specialization, and argument types the jit's fast path
    does not cover).
    """

    __slots__ = ("run", "kernels", "param_names", "_host")

    def __init__(self, artifact, kernel_factory=None):
        if not artifact.ptx:
            raise DeviceError("NO_DEVICE", kind="cuda", why="the compiled kernel has no PTX")
        if kernel_factory is None:
            try:  # through the module: tests replace it
                module = cuda.CudaModule(artifact.cubin or artifact.ptx)
            except Exception:
                if not artifact.cubin:
                    raise
                module = cuda.CudaModule(artifact.ptx)  # a cubin this driver cannot load: its PTX

            def kernel_factory(image, name, kinds, pdl=False):
                return cuda.CudaKernel(module, name, kinds, **({"pdl": True} if pdl else {}))

        self.kernels = {}
        for name, info in artifact.kernels.items():
            # the kinds recorded by code generation (a cached artifact need not parse its kernels' IR)
            kinds = info.param_kinds or [param_kind(t) for t in artifact.kernel_op(name).attrs["function_type"].inputs]
            self.kernels[name] = kernel_factory(artifact.cubin or artifact.ptx, info.symbol or name, kinds,
                                                pdl=info.pdl)  # fmt: skip
        direct = {name: _launch_function(k) for name, k in self.kernels.items()}
        self.run = launch_plan(artifact.host_op(), direct)
        if self.run is None:  # loops or branches in the host function: the interpreter runs it
            self._host = compile_host(artifact.host_op())
            self.run = self._run_host
        self.param_names = artifact.param_names

    def _run_host(self, *args) -> None:
        self._host(list(args), self._launch)

    def _launch(self, kernel, grid, block, smem, stream, kargs) -> None:
        check_launch_dims(grid, block)  # the interpreted host function's launches (plans check inline)
        k = self.kernels[str(kernel)]
        _launch_function(k)(*grid, *block, int(smem), int(stream), *kargs)

    def default_stream(self, torch_tensors: bool):
        """The function giving the default stream's handle: torch's current stream when torch tensors are
        passed (so launches inside ``torch.cuda.stream(s)`` or a graph capture go there), else 0. The
        stream is the one of the device the kernels are loaded on (:data:`DEVICE`): where they launch."""
        return _torch_stream_getter(DEVICE) if torch_tensors else _zero

    def __call__(self, vals: list) -> None:
        args = list(vals)
        torch_stream = False
        defaults = []  # every stream argument left to the default (a launcher may take several)
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
                defaults.append(i)
        if defaults:  # the default stream: torch's current one when torch tensors are passed
            handle = self.default_stream(torch_stream)()
            for i in defaults:
                args[i] = handle
        self.run(*args)


def _zero() -> int:
    return 0


class _StandInLauncher(CudaLauncher):
    """A :class:`CudaLauncher` whose tensors may live anywhere: nothing is dereferenced."""

    __slots__ = ()

    def __call__(self, vals: list) -> None:
        self.run(*[v.ptr if type(v) is TensorRef else (0 if v is DEFAULT_STREAM else v) for v in vals])

    @staticmethod
    def default_stream(torch_tensors: bool):
        return _zero


class StandInCudaDevice(Device):
    """The CUDA device's launch path with the driver replaced at its ctypes boundary.

    ``driver_call(config, function, params, extra)`` receives what ``cuLaunchKernelEx`` would (addresses of
    the packed ``CUlaunchConfig`` and of the ``void*[]`` of parameters) and returns a ``CUresult``. No module
    is loaded and no pointer is dereferenced, so host tensors can stand for device ones and every stream
    is 0: the jit's fast path, the host functions and the packing run exactly as on a GPU. For measuring the
    host path without a GPU (``benchmarks/launch_overhead.py``) and testing what reaches the driver.
    Install it with ``FLYDSL_RUNTIME_KIND=cuda`` and ``_DEVICES["cuda"] = StandInCudaDevice(call)``.
    """

    def __init__(self, driver_call, func_handle: int = 0x1000):
        def factory(image, name, kinds, pdl=False):
            return cuda.CudaKernel(None, name, kinds, driver_call=driver_call, func_handle=func_handle, pdl=pdl)

        super().__init__("cuda", factory)

    def launcher(self, artifact, target: ArchInfo):
        return _StandInLauncher(artifact, self.kernel_factory)


def _launch_function(kernel):
    """A kernel's ``launch(gx, gy, gz, bx, by, bz, smem, stream, *params)`` (an object with only the public
    ``launch(grid, block, smem, stream, args)`` gets a wrapper)."""
    fn = getattr(kernel, "launcher", None)
    if fn is not None:
        return fn

    def launch(gx, gy, gz, bx, by, bz, smem, stream, *params):
        kernel.launch((gx, gy, gz), (bx, by, bz), smem, stream, list(params))

    return launch


# torch's current stream on a device, as a callable (a module attribute: tests replace it)
_torch_stream_getter = torch_stream_getter
