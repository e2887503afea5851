"""CUDA driver runtime: load PTX/cubin into the device's primary context and launch kernels.

Uses the ``cuda-bindings`` driver API (an optional dependency, imported on first use). The primary
context is the one torch uses, so pointers from torch tensors are valid here and launches can go on
torch's streams (pass ``torch.cuda.current_stream().cuda_stream`` or the stream object itself).

Launching: :class:`CudaKernel` generates one launch function per kernel (:mod:`._cuda_launch`): the
launch config and the parameter values are written into one buffer built once, with one
``struct.pack_into``, and ``cuLaunchKernelEx`` is called through one cached ctypes entry. Driver errors
raise :class:`CudaError` naming the kernel and the driver's message.

    >>> ck = compile_module(mod, Target(arch=device_arch()))
    >>> k = CudaKernel.from_compiled(ck, "vadd")
    >>> k.launch((blocks, 1, 1), (128, 1, 1), 0, stream, (a, b, c, n))
"""

from __future__ import annotations

import ctypes
import struct
import threading

from ..codegen.compile import ptx_to_cubin
from ..codegen.errors import CodegenError
from ..dialects.capabilities import max_registers, registers_fit
from ._cuda_launch import make_launch, raw_params
from ._cuda_params import ParamPack, pointer_of
from .streams import stream_handle as _stream_handle

__all__ = [
    "CudaError",
    "CudaKernel",
    "CudaModule",
    "is_available",
    "device_count",
    "device_arch",
    "device_name",
    "synchronize",
    "pointer_of",
]

_LOCK = threading.RLock()
_STATE: dict = {}
_DEFAULT_SMEM = 48 * 1024


class CudaError(RuntimeError):
    """A CUDA driver call failed. ``code`` is the CUresult; ``kernel`` the kernel involved, if any."""

    def __init__(self, what: str, code=None, kernel: str | None = None, detail: str = ""):
        self.code = code
        self.kernel = kernel
        self.what = what
        msg = f"CUDA error in {what}"
        if kernel:
            msg += f" (kernel {kernel})"
        if code is not None:
            msg += f": {_error_name(code)}: {_error_string(code)}"
        if detail:
            msg += f"\n{detail}"
        super().__init__(msg)


def _driver():
    """The cuda-bindings driver module (imported lazily; a clear error when it is missing)."""
    d = _STATE.get("driver")
    if d is None:
        try:
            from cuda.bindings import driver as d  # optional dependency (the cuda extra)
        except ImportError:
            try:
                from cuda import cuda as d  # cuda-python < 12.6 layout
            except ImportError:
                raise ImportError(
                    "the CUDA runtime of flydsl needs cuda-bindings: pip install 'cuda-bindings>=12.6' "
                    "(or run on the CPU interpreter: FLYDSL_RUNTIME_KIND=cpu)"
                ) from None
        _STATE["driver"] = d
        _STATE["success"] = d.CUresult.CUDA_SUCCESS
    return d


_OUT_OF_RESOURCES = 701  # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES


def launch_detail(code, grid, block, smem: int, regs: int | None = None) -> str:
    """A failed launch's details for :class:`CudaError`: its shape and, where it ran out of resources because the
    block's registers do not fit an SM (:func:`flydsl.dialects.capabilities.registers_fit`), that and the fix."""
    detail = f"grid={tuple(grid)} block={tuple(block)} smem={smem}"
    threads = block[0] * block[1] * block[2]
    if int(getattr(code, "value", code)) == _OUT_OF_RESOURCES and regs and not registers_fit(regs, threads):
        detail += (
            f"\nthe kernel takes {regs} registers per thread: a block of {threads} threads does not fit an SM's 65536 "
            f"(allocated per warp in units of 256, over four sub-partitions); cap its registers at "
            f"{max_registers(threads)} (max_registers, the launch's value_attrs, or the maxnreg compile hint) or "
            "launch fewer threads per block"
        )
    return detail


def _error_name(code) -> str:
    try:
        err, name = _driver().cuGetErrorName(code)
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001 - reporting must not fail
        return str(code)


def _error_string(code) -> str:
    try:
        err, s = _driver().cuGetErrorString(code)
        return s.decode() if isinstance(s, bytes) else str(s)
    except Exception:  # noqa: BLE001
        return "unknown error"


def _check(res, what: str, kernel: str | None = None):
    """Unpack a driver call's ``(CUresult, *values)``; raise CudaError on failure."""
    err = res[0]
    ok = _STATE["success"]
    if err is not ok and err != ok:
        raise CudaError(what, err, kernel)
    if len(res) == 1:
        return None
    if len(res) == 2:
        return res[1]
    return res[1:]


def _init() -> None:
    if _STATE.get("init"):
        return
    with _LOCK:
        if _STATE.get("init"):
            return
        d = _driver()
        _check(d.cuInit(0), "cuInit")
        _STATE["init"] = True


def is_available() -> bool:
    """True when cuda-bindings, a driver and at least one GPU are present."""
    try:
        return device_count() > 0
    except Exception:  # noqa: BLE001 - any failure means "no usable CUDA"
        return False


def device_count() -> int:
    _init()
    return int(_check(_driver().cuDeviceGetCount(), "cuDeviceGetCount"))


def _device(ordinal: int):
    _init()
    return _check(_driver().cuDeviceGet(ordinal), "cuDeviceGet")


def device_arch(ordinal: int = 0) -> str:
    """The codegen architecture of a device: ``sm_90a`` for compute capability 9.0 (the ``a``
    variant unlocks wgmma/setmaxnreg), ``sm_100a`` for 10.0, else ``sm_<major><minor>``."""
    d = _driver()
    dev = _device(ordinal)
    A = d.CUdevice_attribute
    major = _check(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
    minor = _check(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
    arch = f"sm_{major}{minor}"
    return arch + "a" if (major, minor) in ((9, 0), (10, 0), (10, 3), (12, 0)) else arch


def device_name(ordinal: int = 0) -> str:
    name = _check(_driver().cuDeviceGetName(256, _device(ordinal)), "cuDeviceGetName")
    return (name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)).strip()


def _context(ordinal: int):
    """Make the device's primary context (shared with torch) current on this thread; returns it."""
    d = _driver()
    ctxs = _STATE.setdefault("ctx", {})
    ctx = ctxs.get(ordinal)
    if ctx is None:
        with _LOCK:
            ctx = ctxs.get(ordinal)
            if ctx is None:
                ctx = _check(d.cuDevicePrimaryCtxRetain(_device(ordinal)), "cuDevicePrimaryCtxRetain")
                ctxs[ordinal] = ctx
    cur = _check(d.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if cur is None or int(cur) != int(ctx):
        _check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def synchronize(ordinal: int = 0) -> None:
    """Wait for all work on the device's primary context."""
    _context(ordinal)
    _check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")


class CudaModule:
    """A PTX or cubin image loaded into a device's primary context."""

    def __init__(self, image: str | bytes, device: int = 0):
        d = _driver()
        self.device = device
        _context(device)
        self.is_ptx = isinstance(image, str)
        data = (image.encode() + b"\0") if self.is_ptx else bytes(image)
        res = d.cuModuleLoadData(data)
        if res[0] != _STATE["success"]:
            raise CudaError("cuModuleLoadData", res[0], detail=_ptx_diagnostic(image) if self.is_ptx else "")
        self.handle = res[1]
        self._functions: dict[str, object] = {}

    def function(self, name: str, kernel: str | None = None):
        f = self._functions.get(name)
        if f is None:
            f = _check(_driver().cuModuleGetFunction(self.handle, name.encode()), "cuModuleGetFunction", kernel or name)
            self._functions[name] = f
        return f

    # No ``__del__`` that unloads the module: a CUDA graph captured from one of its launches (``torch.cuda.graph``
    # around a jit call) holds the CUfunction, not this object, and the driver crashes the process when such a
    # graph is replayed after ``cuModuleUnload`` (seen on the H200: a benchmark's compiled launcher collected by the
    # garbage collector between capture and replay, then a segfault in ``graph.replay()``). The capture cannot be
    # seen from here (torch begins it on its stream), so a loaded module stays loaded until the context is
    # destroyed at exit — as Triton and CUDA's own runtime keep theirs.


def _ptx_diagnostic(ptx: str) -> str:
    """The assembler's message for PTX the driver refused (through nvJitLink when installed)."""
    try:
        target = ptx.split(".target", 1)[1].split()[0] if ".target" in ptx else "sm_90a"
        ptx_to_cubin(ptx, target)
    except CodegenError as e:
        return str(e)
    except Exception:  # noqa: BLE001
        return ""
    return ""


def _ctypes_launch():
    """``cuLaunchKernelEx`` of libcuda as one cached ctypes entry (four ``void*`` arguments), or None when
    libcuda cannot be opened or is older than CUDA 12.

    The launch is the one driver call made per kernel call. Four pointer arguments cost ~0.4 µs through
    ctypes where ``cuLaunchKernel``'s eleven cost ~1.5 µs (grid, block, smem and stream travel in the
    config struct that :mod:`._cuda_launch` packs); cuda-bindings' conversion costs several µs.
    """
    f = _STATE.get("ctypes_launch")
    if f is None:
        try:
            # no argtypes: every argument is a c_void_p object or None, passed as is (argtypes cost a
            # conversion per argument per call)
            f = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
            f.restype = ctypes.c_int
        except (OSError, AttributeError):
            f = False
        _STATE["ctypes_launch"] = f
    return f or None


# The driver entry the native helper calls, and how (its ``Launch`` flags: 1 cuLaunchKernel's eleven
# arguments, 2 the GIL kept across the call). See benchmarks/launch_probe.py for the measurements.
_NATIVE_ENTRY = ("cuLaunchKernelEx", 0)


def _native_entry():
    """``(address, flags)`` of libcuda's entry for the native helper (:data:`_NATIVE_ENTRY`), or None."""
    e = _STATE.get("native_entry")
    if e is None:
        name, flags = _NATIVE_ENTRY
        try:
            e = (ctypes.cast(getattr(ctypes.CDLL("libcuda.so.1"), name), ctypes.c_void_p).value, flags)
        except (OSError, AttributeError):
            e = False
        _STATE["native_entry"] = e
    return e or None


def _handle_value(obj) -> int | None:
    """The raw pointer value of a bindings handle (``CUfunction`` …), read from its storage."""
    try:
        return ctypes.c_void_p.from_address(int(obj.getPtr())).value
    except Exception:  # noqa: BLE001 - an unexpected bindings layout: use the bindings' own launch
        return None


_INVALID_CONTEXT = 201  # CUDA_ERROR_INVALID_CONTEXT: a thread without a current context


class CudaKernel:
    """One kernel of a loaded module.

    Args:
        image: PTX text (str) or a cubin (bytes), or a loaded :class:`CudaModule`.
        name: the kernel's entry name in the image.
        param_types: one kind per parameter (``"ptr"``, ``"i32"``, ``"f32"``, ``"bf16"``, ``"rsrc"`` …)
            or :class:`flydsl.codegen.ParamSpec` objects.
        device: the device ordinal.
        pdl: launch with programmatic stream serialization allowed (a kernel that calls
            ``griddepcontrol.wait``: :attr:`flydsl.codegen.KernelInfo.pdl`); the cuda-bindings fallback
            launch (no libcuda entry) launches it in plain stream order, which is correct as well.

    :attr:`launcher` is ``launcher(gx, gy, gz, bx, by, bz, smem, stream, *params)`` with raw values
    (pointers as ints, stream as an int handle): what the jit's launch plans call. :meth:`launch` is the
    public API on top of it (tensors, streams objects and dim3 tuples accepted).
    """

    def __init__(self, image, name: str, param_types, device: int = 0, *, driver_call=None, func_handle=None,
                 pdl: bool = False):  # fmt: skip
        self.name = name
        if func_handle is None:
            self.module = image if isinstance(image, CudaModule) else CudaModule(image, device)
            self.device = self.module.device
            self.func = self.module.function(name)
            func_handle = _handle_value(self.func)
        else:  # a stand-in driver (tests, benchmarks): no module, the handle as given
            self.module, self.device, self.func = None, device, None
        self.params = ParamPack(param_types)
        self._lock = threading.Lock()
        # the dynamic shared memory a launch may ask for before the limit is raised: 48 KB less the kernel's static
        # shared memory (a block's total may not pass 48 KB without the opt-in; at exactly 48 KB of dynamic memory
        # beside a reduction's static partials the launch failed with CUDA_ERROR_INVALID_VALUE)
        static = self.attribute("SHARED_SIZE_BYTES") if self.func is not None else 0
        self._smem_limit = [_DEFAULT_SMEM - static]
        self._stream_cache = (None, None)
        self._retrying = False
        call = driver_call if driver_call is not None else _ctypes_launch()
        entry = None if driver_call is not None else _native_entry()
        if call is not None and func_handle:
            self.launcher = make_launch(name, func_handle, self.params.kinds, call, self._failed, self._smem_limit,
                                        native_entry=entry, pdl=pdl)  # fmt: skip
        else:
            self.launcher = self._bindings_launch

    @classmethod
    def from_compiled(cls, compiled, name: str, device: int = 0, module: CudaModule | None = None) -> CudaKernel:
        """A kernel of a :class:`flydsl.codegen.CompiledKernels` (its cubin when present, else PTX)."""
        info = compiled.kernel(name)
        if module is None:
            module = CudaModule(compiled.cubin if compiled.cubin else compiled.ptx, device)
        return cls(module, info.symbol or info.name, info.params, device, pdl=info.pdl)

    def attribute(self, attr: str) -> int:
        """A ``CU_FUNC_ATTRIBUTE_*`` value, e.g. ``attribute("NUM_REGS")``."""
        d = _driver()
        a = getattr(d.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{attr}")
        return int(_check(d.cuFuncGetAttribute(a, self.func), "cuFuncGetAttribute", self.name))

    def _regs(self) -> int | None:
        """The kernel's registers per thread, for an error message (None where the driver cannot say)."""
        try:
            return self.attribute("NUM_REGS") if self.func is not None else None
        except Exception:  # noqa: BLE001 - reporting must not fail
            return None

    def _allow_smem(self, smem: int) -> None:
        if self.func is not None:
            d = _driver()
            a = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            what = "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"
            _check(d.cuFuncSetAttribute(self.func, a, smem), what, self.name)
        self._smem_limit[0] = smem

    def _failed(self, err, grid, block, smem, stream, params):
        """The launch function's slow branch: raise the shared-memory limit (``err`` None), set the context
        of a new thread and retry once, or raise :class:`CudaError`."""
        if err is None:
            self._allow_smem(smem)
            return None
        if err == _INVALID_CONTEXT and not self._retrying:
            _context(self.device)
            self._retrying = True
            try:
                return self.launcher(*grid, *block, smem, stream, *params)
            finally:
                self._retrying = False
        try:
            code = _driver().CUresult(err)
        except Exception:  # noqa: BLE001 - no bindings to name the code: report the number
            code = err
        raise CudaError("cuLaunchKernel", code, self.name, launch_detail(code, grid, block, smem, self._regs()))

    def _stream(self, stream):
        """The CUstream object for a stream (cached for the last one used)."""
        h = _stream_handle(stream)
        last_h, obj = self._stream_cache
        if last_h != h or obj is None:
            obj = _driver().CUstream(h)
            self._stream_cache = (h, obj)
        return obj

    def _bindings_launch(self, gx, gy, gz, bx, by, bz, smem, stream, *args) -> None:
        """The launch through cuda-bindings (when libcuda's ``cuLaunchKernelEx`` cannot be called)."""
        if smem > self._smem_limit[0]:
            self._allow_smem(smem)
        s = self._stream(stream)
        d = _driver()
        with self._lock:
            self.params.set(args, self.name)
            res = d.cuLaunchKernel(self.func, gx, gy, gz, bx, by, bz, smem, s, self.params.address, 0)
        err = res[0]
        ok = _STATE["success"]
        if err is ok or err == ok:
            return None
        if err == d.CUresult.CUDA_ERROR_INVALID_CONTEXT and not self._retrying:
            _context(self.device)
            self._retrying = True
            try:
                return self._bindings_launch(gx, gy, gz, bx, by, bz, smem, stream, *args)
            finally:
                self._retrying = False
        detail = launch_detail(err, (gx, gy, gz), (bx, by, bz), smem, self._regs())
        raise CudaError("cuLaunchKernel", err, self.name, detail)

    def launch(self, grid, block, smem: int = 0, stream=None, args=()) -> None:
        """Launch on ``grid`` blocks of ``block`` threads with ``smem`` bytes of dynamic shared memory."""
        kinds = self.params.kinds
        if len(args) != len(kinds):
            raise TypeError(f"kernel {self.name} takes {len(kinds)} arguments, got {len(args)}")
        try:
            raw = raw_params(kinds, args)
        except (TypeError, ValueError) as e:
            raise TypeError(f"kernel {self.name}: {e}") from None
        try:
            return self.launcher(*_dim3(grid), *_dim3(block), int(smem), _stream_handle(stream), *raw)
        except (struct.error, OverflowError, TypeError):
            self.params.set(args, self.name)  # names the argument that does not fit its slot
            raise

    __call__ = launch


def _dim3(v) -> tuple[int, int, int]:
    if type(v) is tuple and len(v) == 3 and type(v[0]) is int and type(v[1]) is int and type(v[2]) is int:
        return v
    if isinstance(v, int):
        return v, 1, 1
    t = tuple(int(x) for x in v)
    return (t + (1, 1, 1))[:3]
