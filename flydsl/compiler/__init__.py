"""flydsl.compiler (``flyc``): decorators, compilation, caches and diagnostics — FlyDSL's public surface.

* ``@flyc.kernel`` — a GPU kernel; ``kernel(*args).launch(grid=, block=, smem=, stream=)`` inside a
  launcher.
* ``@flyc.jit`` — a host launcher: traced, compiled, cached and launched on the GPU (or the CPU
  interpreter) when called; ``jit_fn.cache_info()``, ``jit_fn.compile_hints``.
* ``flyc.compile(jit_fn, *args)`` → :class:`CompiledFunction` (``flyc.compile[hints](...)``).
* ``flyc.from_torch_tensor(t)`` / ``flyc.from_dlpack(t)`` — tensor arguments with static layouts;
  ``flyc.from_c_void_p(dtype, address)`` — a raw-pointer argument (``fx.Pointer``).
* :class:`FlyDSLError` and its family — every error reported at the user's line.

See docs/compiler.md for the data flow, the control-flow rewrite, the ABI and the caches.
"""

from ..runtime.args import TensorAdaptor, from_dlpack, from_torch_tensor
from .diagnostics import (
    CompileError,
    ControlFlowError,
    DSLIndexError,
    DSLNameError,
    DSLTypeError,
    DSLValueError,
    FlyDSLError,
    GlobalChangedError,
    LaunchError,
    TraceLimitError,
)
from .jit import CacheInfo, CompiledFunction, JitFunction, compile, jit
from .kernel import KernelFunction, KernelLauncher, kernel
from .raw_pointer import from_c_void_p
from .trace import current_kernel

__all__ = [
    "jit",
    "kernel",
    "compile",
    "CompiledFunction",
    "JitFunction",
    "KernelFunction",
    "KernelLauncher",
    "CacheInfo",
    "from_torch_tensor",
    "from_dlpack",
    "from_c_void_p",
    "TensorAdaptor",
    "current_kernel",
    "FlyDSLError",
    "DSLTypeError",
    "DSLValueError",
    "DSLNameError",
    "DSLIndexError",
    "ControlFlowError",
    "TraceLimitError",
    "CompileError",
    "GlobalChangedError",
    "LaunchError",
]
