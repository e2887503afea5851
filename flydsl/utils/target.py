"""Compilation targets as the front end sees them: warp size, shared-memory limits, the default fp8 format.

The compiler picks the target before tracing (``ARCH``/``FLYDSL_GPU_ARCH``, else the CUDA device's
compute capability, else ``sm_90a``) and installs it with :func:`use_target`; the front end reads it with
:func:`current_target`. What each architecture's *instructions* need (minimum sm and PTX versions) is
one table read by the trace-time check and by codegen (``flydsl/dialects/capabilities.py``); the PTX
version each architecture starts at is codegen's (``flydsl/codegen/nvptx.py``: ``ARCH_MIN_PTX``), measured
against LLVM 22 — one source of truth each.
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
    features: frozenset = field(default_factory=frozenset)  # front-end facts only (e.g. "fp8_fnuz")

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


KNOWN_ARCHS: dict[str, Target] = {
    "sm_80": Target("nvptx", "sm_80", 32, 48 * 1024, 163 * 1024),
    "sm_86": Target("nvptx", "sm_86", 32, 48 * 1024, 99 * 1024),
    "sm_89": Target("nvptx", "sm_89", 32, 48 * 1024, 99 * 1024),
    "sm_90": Target("nvptx", "sm_90", 32, 48 * 1024, 227 * 1024),
    "sm_90a": Target("nvptx", "sm_90a", 32, 48 * 1024, 227 * 1024),
    "gfx942": Target("amdgcn", "gfx942", 64, 64 * 1024, 64 * 1024, frozenset({"fp8_fnuz"})),
    "gfx950": Target("amdgcn", "gfx950", 64, 160 * 1024, 160 * 1024),
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
