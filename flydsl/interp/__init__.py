"""flydsl.interp: the IR interpreter — the executable specification of the IR.

It runs a ``gpu.func`` kernel over a whole grid on numpy/ml_dtypes, all threads of a batch of blocks
in lock-step (values are arrays over lanes), exactly as the GPU backends compute it; and it runs the
host ``func.func`` that computes launch parameters and launches kernels. See docs/interpreter.md.

Public surface:
    Memory: the virtual global address space (``register(array, name) -> base address``).
    run_kernel: run a kernel over a grid.
    compile_host / run_host: precompile / run a host function (``gpu.launch_func`` → ``launch``).
    InterpError: a run-time fault, naming kernel, source line, buffer, index and thread.
    IMPLS / impl: the per-op implementation table (extension point for new dialects).
"""

from .errors import InterpError
from .host import build_host_function, compile_host, run_host
from .kernel import compile_kernel, run_kernel
from .machine import IMPLS, clear_cache, impl
from .memory import Memory

__all__ = [
    "Memory",
    "run_kernel",
    "compile_kernel",
    "compile_host",
    "run_host",
    "build_host_function",
    "InterpError",
    "IMPLS",
    "impl",
    "clear_cache",
]
