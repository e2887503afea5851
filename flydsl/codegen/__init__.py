"""flydsl.codegen: IR → LLVM IR text → PTX (NVIDIA), through llvmlite.

- :func:`emit_llvm` lowers a module's ``gpu.func``s to LLVM IR text (one emit function per op,
  registered by op name in :data:`EMITTERS`; target specifics behind :class:`TargetHooks`).
- :func:`compile_ptx` turns LLVM IR text into PTX (parse, verify, libdevice, optimize, emit).
- :func:`compile_module` does both and returns :class:`CompiledKernels` (PTX, kernel parameter lists,
  static shared memory; optionally a cubin via nvJitLink).

Every failure is a :class:`CodegenError` naming the op, the user's source line and a fix; LLVM is
never given IR that would make it abort the process.
"""

from __future__ import annotations

from . import (  # noqa: F401 - each registers its ops' emitters
    emit_arith,
    emit_control,
    emit_gpu,
    emit_math,
    emit_memory,
    emit_nvvm,
    emit_sm90,
    emit_vector,
)
from .backends import BACKENDS, has_code_generator, hooks_for
from .compile import (
    CompiledKernels,
    choose_opt_levels,
    compile_module,
    compile_ptx,
    find_ptxas,
    ptx_to_cubin,
    run_ptxas,
)
from .errors import CodegenError
from .kernel_info import KernelInfo, ParamSpec, param_kind
from .libdevice import find_libdevice
from .llvm_emitter import EMITTERS, emit_llvm, emitter
from .target import Target, TargetHooks

__all__ = [
    "Target",
    "BACKENDS",
    "hooks_for",
    "has_code_generator",
    "TargetHooks",
    "CodegenError",
    "emit_llvm",
    "compile_ptx",
    "compile_module",
    "CompiledKernels",
    "KernelInfo",
    "ParamSpec",
    "param_kind",
    "EMITTERS",
    "emitter",
    "choose_opt_levels",
    "ptx_to_cubin",
    "find_ptxas",
    "run_ptxas",
    "find_libdevice",
]
