"""Compilation targets and the target-hook interface of the LLVM emitter.

A :class:`Target` names the GPU (``sm_90a``, ``sm_80``; later ``gfx942``) and the codegen choices
(PTX version, math mode, optimization levels). :class:`TargetHooks` is the seam between the generic
emitter and a back end: everything whose LLVM spelling differs between NVPTX and AMDGPU (special
registers, barriers, warp shuffles, printf, transcendental math, fp8 conversions, kernel function
attributes) goes through it. ``nvptx.py`` implements it; an ``amdgcn.py`` implements the same class.
"""

from __future__ import annotations

import abc
import re
from dataclasses import dataclass, replace

__all__ = ["Target", "TargetHooks", "MATH_MODES"]

MATH_MODES = ("auto", "libdevice", "approx")

_SM_RE = re.compile(r"^sm_(\d+)([af]?)$")


@dataclass(frozen=True)
class Target:
    """What to compile for.

    Args:
        arch: ``sm_80``, ``sm_90a`` (the default), … (NVPTX).
        ptx_version: PTX ISA version as an int (``83`` = 8.3); None picks the lowest version that the
            architecture and the features used by the kernel need.
        max_ptx_version: the highest PTX version the driver can JIT (CUDA 13.0 driver: 9.0).
        math: ``"auto"`` uses libdevice for transcendental functions when it is found and the
            hardware approximations otherwise; ``"libdevice"`` requires libdevice; ``"approx"``
            always uses the approximations (as does the ``afn``/``fast`` fastmath flag on an op).
        opt_level: LLVM middle-end level 0-3; None chooses by module size (see docs/codegen.md).
        codegen_opt: LLVM back-end level 0-3; None chooses by module size.
        libdevice: explicit path of ``libdevice.10.bc`` (None: search the usual places).
        cubin: also produce a cubin with nvJitLink when it is installed.
        maxnreg: a register cap for every kernel that sets none itself (PTX ``.maxnreg``; FlyDSL's
            ``maxnreg`` compile hint): more blocks per SM at the price of the registers ptxas may use.
        llvm_options: LLVM command-line options for this compilation only, ``(("name", "text"), ...)``
            (:func:`flydsl.codegen.llvm_options.normalize` of the ``llvm_options`` compile hint).
    """

    arch: str = "sm_90a"
    ptx_version: int | None = None
    max_ptx_version: int = 90
    math: str = "auto"
    opt_level: int | None = None
    codegen_opt: int | None = None
    libdevice: str | None = None
    cubin: bool = False
    maxnreg: int | None = None
    llvm_options: tuple = ()

    def __post_init__(self):
        if self.math not in MATH_MODES:
            raise ValueError(f"math must be one of {MATH_MODES}, got {self.math!r}")
        if self.backend == "nvptx" and not _SM_RE.match(self.arch):
            raise ValueError(f"unknown NVIDIA architecture {self.arch!r}; expected e.g. 'sm_80' or 'sm_90a'")

    @property
    def backend(self) -> str:
        """``"nvptx"`` for ``sm_*``, ``"amdgcn"`` for ``gfx*``."""
        return "amdgcn" if self.arch.startswith("gfx") else "nvptx"

    @property
    def sm(self) -> int:
        """Compute capability as an int (``sm_90a`` → 90)."""
        m = _SM_RE.match(self.arch)
        if m is None:
            raise ValueError(f"{self.arch} is not an NVIDIA architecture")
        return int(m.group(1))

    @property
    def arch_specific(self) -> bool:
        """True for the ``a`` (architecture-specific) variants such as sm_90a (wgmma, setmaxnreg)."""
        m = _SM_RE.match(self.arch)
        return bool(m and m.group(2) == "a")

    def with_(self, **changes) -> Target:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def cache_key(self) -> str:
        """A canonical string of every field that affects the generated code."""
        return (
            f"{self.arch}|ptx={self.ptx_version}|max={self.max_ptx_version}|math={self.math}|"
            f"O{self.opt_level}|cg{self.codegen_opt}|ld={self.libdevice}|cubin={self.cubin}|maxnreg={self.maxnreg}|"
            f"llvm={self.llvm_options}"
        )


class TargetHooks(abc.ABC):
    """Everything the generic emitter asks of a back end.

    ``fe`` is the :class:`~flydsl.codegen.llvm_emitter.FunctionEmitter` of the function being emitted;
    hooks append instructions through it and return LLVM operand text. ``op`` is the IR op, used for
    error locations.
    """

    triple: str = ""
    datalayout: str = ""
    # address space of read-only module constants (format strings)
    const_addrspace: int = 0

    def __init__(self, target: Target):
        self.target = target

    @abc.abstractmethod
    def begin_module(self, me) -> None:
        """Called once before any function is emitted (reset per-module state)."""

    @abc.abstractmethod
    def function_attributes(self, me, fn_op, is_kernel: bool) -> tuple[str, list[str]]:
        """``(calling-convention prefix, function attribute strings)`` of a function definition."""

    @abc.abstractmethod
    def special_register(self, fe, op, kind: str, dim: str) -> str:
        """``kind`` in thread_id / block_id / block_dim / grid_dim / lane_id; returns an i32 value."""

    @abc.abstractmethod
    def barrier(self, fe, op) -> None:
        """Block-wide barrier with memory ordering."""

    @abc.abstractmethod
    def fence(self, fe, op, scope: str) -> None:
        """Memory fence at scope cta / gpu / sys."""

    @abc.abstractmethod
    def shuffle(self, fe, op) -> None:
        """``gpu.shuffle``: define the op's result."""

    @abc.abstractmethod
    def vote(self, fe, op) -> None:
        """``gpu.vote``: define the op's result."""

    @abc.abstractmethod
    def printf(self, fe, op) -> None:
        """``gpu.printf``."""

    @abc.abstractmethod
    def math(self, fe, op, fn: str, args: list[str], llty: str) -> str:
        """A transcendental function ``fn`` (``exp``, ``erf`` …) on f32/f64 scalars; returns the value."""

    @abc.abstractmethod
    def convert_fp8(self, fe, op, value: str, src, dst) -> str:
        """Convert between an fp8 type and another float type (scalars or vectors); returns the value."""

    @abc.abstractmethod
    def supports(self, feature: str) -> bool:
        """True when the target has ``feature`` (an entry of :data:`flydsl.dialects.capabilities.CAPABILITIES`)."""

    @abc.abstractmethod
    def require(self, op, feature: str) -> None:
        """Raise :class:`CodegenError` unless the target supports ``feature`` (same table); record its PTX need."""

    @abc.abstractmethod
    def cached_load(self, fe, op, ptr: str, llty: str, space: int, cache: str) -> str | None:
        """A load with a cache modifier, or None to use a plain load (hints are performance-only)."""

    @abc.abstractmethod
    def cached_store(self, fe, op, value: str, ptr: str, llty: str, space: int, cache: str) -> bool:
        """A store with a cache modifier; False to use a plain store."""
