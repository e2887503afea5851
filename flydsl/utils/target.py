"""What the front end knows about a GPU architecture: warp size, shared-memory limits, the default fp8 format.

:class:`ArchInfo` is one architecture's facts (``get_arch("sm_90a")``). The compiler picks the
architecture of a trace before tracing (``ARCH``/``FLYDSL_GPU_ARCH``, else the CUDA device's compute
capability, else ``sm_90a``) and keeps it in the trace's context, where the front end reads it
(:func:`flydsl.expr._sem.context.current_target`). What each architecture's *instructions* need (minimum
sm and PTX versions) is one table read by the trace-time check and by codegen
(``flydsl/dialects/capabilities.py``); the PTX version each architecture starts at is codegen's
(``flydsl/codegen/nvptx.py``: ``ARCH_MIN_PTX``), measured against LLVM 22; and what to compile for
(PTX version, math mode, optimization levels) is :class:`flydsl.codegen.Target` — one source of truth
each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ArchInfo", "get_arch", "KNOWN_ARCHS", "DEFAULT_ARCH"]

DEFAULT_ARCH = "sm_90a"


@dataclass(frozen=True)
class ArchInfo:
    """The front end's facts about one GPU architecture."""

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


KNOWN_ARCHS: dict[str, ArchInfo] = {
    "sm_80": ArchInfo("nvptx", "sm_80", 32, 48 * 1024, 163 * 1024),
    "sm_86": ArchInfo("nvptx", "sm_86", 32, 48 * 1024, 99 * 1024),
    "sm_89": ArchInfo("nvptx", "sm_89", 32, 48 * 1024, 99 * 1024),
    "sm_90": ArchInfo("nvptx", "sm_90", 32, 48 * 1024, 227 * 1024),
    "sm_90a": ArchInfo("nvptx", "sm_90a", 32, 48 * 1024, 227 * 1024),
    "gfx942": ArchInfo("amdgcn", "gfx942", 64, 64 * 1024, 64 * 1024, frozenset({"fp8_fnuz"})),
    "gfx950": ArchInfo("amdgcn", "gfx950", 64, 160 * 1024, 160 * 1024),
}


def get_arch(arch: str) -> ArchInfo:
    """The facts of ``arch`` (``"sm_90a"``, ``"gfx942"``…).

    Raises:
        ValueError: an unknown architecture.
    """
    try:
        return KNOWN_ARCHS[arch]
    except KeyError:
        raise ValueError(f"unknown target architecture {arch!r}; known: {', '.join(KNOWN_ARCHS)}") from None
