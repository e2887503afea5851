"""Compilation targets: what each GPU architecture can do (the table every layer consults).

The compiler picks the target before tracing (``ARCH``/``FLYDSL_GPU_ARCH``, else the CUDA device's
compute capability, else ``sm_90a``) and installs it with :func:`use_target`; the front end reads the
warp size and shared-memory capacity from :func:`current_target`; codegen checks capabilities before
emitting an instruction, so LLVM never sees something it cannot select.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

__all__ = ["Target", "get_target", "current_target", "use_target", "KNOWN_ARCHS"]


@dataclass(frozen=True)
class Target:
    backend: str  # "nvptx" | "amdgcn"
    arch: str  # "sm_90a", "gfx942", …
    warp_size: int
    smem_static_max: int  # bytes of static shared memory per block
    smem_dynamic_max: int  # bytes of shared memory per block with the opt-in attribute
    features: frozenset = field(default_factory=frozenset)
    ptx_version: int = 0  # lowest PTX ISA version (×10) that supports the arch

    @property
    def sm(self) -> int:
        """Compute capability ×10 for NVIDIA targets (90 for sm_90a), 0 otherwise."""
        if self.backend != "nvptx":
            return 0
        return int("".join(ch for ch in self.arch[3:] if ch.isdigit()))

    def has(self, feature: str) -> bool:
        return feature in self.features

    def __str__(self) -> str:
        return f"{self.backend}:{self.arch}"


_NV_COMMON = {"shfl", "vote", "atomic_f32_add", "f16", "tanh_approx"}
_NV80 = _NV_COMMON | {"bf16", "cp_async", "mma_sync", "ldmatrix", "redux"}
_NV89 = _NV80 | {"fp8_cvt", "fp8_mma"}
_NV90 = _NV89 | {"tma", "mbarrier_tx", "cluster", "stmatrix", "fence_proxy"}
_NV90A = _NV90 | {"wgmma", "setmaxnreg"}

KNOWN_ARCHS: dict[str, Target] = {
    "sm_80": Target("nvptx", "sm_80", 32, 48 * 1024, 163 * 1024, frozenset(_NV80), 70),
    "sm_86": Target("nvptx", "sm_86", 32, 48 * 1024, 99 * 1024, frozenset(_NV80), 71),
    "sm_89": Target("nvptx", "sm_89", 32, 48 * 1024, 99 * 1024, frozenset(_NV89), 78),
    "sm_90": Target("nvptx", "sm_90", 32, 48 * 1024, 227 * 1024, frozenset(_NV90), 78),
    "sm_90a": Target("nvptx", "sm_90a", 32, 48 * 1024, 227 * 1024, frozenset(_NV90A), 80),
    "gfx942": Target("amdgcn", "gfx942", 64, 64 * 1024, 64 * 1024, frozenset({"fp8_fnuz", "mfma"})),
    "gfx950": Target("amdgcn", "gfx950", 64, 160 * 1024, 160 * 1024, frozenset({"fp8_ocp", "mfma", "mfma_scale"})),
}


def get_target(arch: str) -> Target:
    try:
        return KNOWN_ARCHS[arch]
    except KeyError:
        raise ValueError(f"unknown target architecture {arch!r}; known: {', '.join(KNOWN_ARCHS)}") from None


_stack: list[Target] = [KNOWN_ARCHS["sm_90a"]]


def current_target() -> Target:
    """The target of the trace in progress (sm_90a outside any trace)."""
    return _stack[-1]


@contextlib.contextmanager
def use_target(t: Target | str):
    _stack.append(get_target(t) if isinstance(t, str) else t)
    try:
        yield _stack[-1]
    finally:
        _stack.pop()
