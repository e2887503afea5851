"""Which GPU architecture this process compiles for, in FlyDSL's vocabulary (``flydsl.runtime.device``).

FlyDSL programs ask ``get_rocm_arch()`` and branch on the answer (``"gfx95" in arch``,
``is_rdna_arch()``, ``get_warp_size()``). Here the answer is the architecture the compiler targets:
``ARCH`` or ``FLYDSL_GPU_ARCH`` when set, else the CUDA device's (``sm_90`` reported as ``sm_90a``, the
H100/H200 feature set), else ``sm_90a`` — also on the CPU interpreter, which executes with that
target's warp size (32). So a program that gates on an AMD family skips cleanly on NVIDIA, and one
that sizes its reductions by ``get_warp_size()`` gets 32.
"""

from __future__ import annotations

import functools

from ..utils.env import env

__all__ = [
    "hardware_arch",
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

DEFAULT_ARCH = "sm_90a"


@functools.lru_cache(maxsize=1)
def hardware_arch() -> str | None:
    """The CUDA device's architecture (``sm_90`` → ``sm_90a``), or None without a usable driver."""
    try:
        from . import cuda

        if not cuda.is_available():
            return None
        arch = cuda.device_arch()
    except Exception:  # no driver, no bindings: not a CUDA machine
        return None
    return "sm_90a" if arch == "sm_90" else arch


def get_rocm_arch() -> str:
    """The target architecture, lower-cased: ``ARCH``, ``FLYDSL_GPU_ARCH``, the device's, or ``sm_90a``."""
    arch = env.arch or env.gpu_arch or hardware_arch() or DEFAULT_ARCH
    return arch.strip().lower()


#: FlyDSL's kernels import ``get_rocm_arch`` under this name too.
get_hip_arch = get_rocm_arch


def get_rocm_device_count() -> int:
    """GPUs this process can launch on (CUDA devices; 0 without a driver)."""
    try:
        from . import cuda

        return cuda.device_count() if cuda.is_available() else 0
    except Exception:
        return 0


def is_rdna_arch(arch: str | None = None) -> bool:
    """True for AMD RDNA (gfx10*, gfx11*, gfx120*: wave32). NVIDIA architectures are not RDNA."""
    arch = (arch if arch is not None else get_rocm_arch()).lower()
    return arch.startswith(("gfx10", "gfx11", "gfx120"))


def is_nvidia_arch(arch: str | None = None) -> bool:
    """True for an NVIDIA ``sm_*`` architecture."""
    return (arch if arch is not None else get_rocm_arch()).lower().startswith("sm_")


def get_warp_size(arch: str | None = None) -> int:
    """Lanes per warp: 32 on NVIDIA and RDNA (gfx10-12), 64 on CDNA (gfx9*)."""
    arch = (arch if arch is not None else get_rocm_arch()).lower()
    if arch.startswith("sm_") or arch.startswith(("gfx10", "gfx11", "gfx12")):
        return 32
    return 64


def supports_bf16_global_atomics(arch: str | None = None) -> bool:
    """Whether ``atomic add`` of bf16 to global memory is a native instruction.

    NVIDIA: sm_90 and newer (``red.global.add.noftz.bf16``); AMD: gfx94*, gfx95*, gfx12*.
    """
    arch = (arch if arch is not None else get_rocm_arch()).lower()
    if arch.startswith("sm_"):
        digits = "".join(ch for ch in arch[3:] if ch.isdigit())
        return int(digits or 0) >= 90
    return arch.startswith(("gfx94", "gfx95", "gfx12"))


def bf16_global_atomics_arch_description() -> str:
    """The architectures :func:`supports_bf16_global_atomics` accepts, for error messages."""
    return "sm_90+ (NVIDIA), gfx94+/gfx95+/gfx12+ (AMD)"


def default_fp8_format(arch: str | None = None) -> str:
    """The fp8 e4m3 format of the architecture: ``"e4m3fnuz"`` on gfx94*, OCP ``"e4m3fn"`` elsewhere."""
    arch = (arch if arch is not None else get_rocm_arch()).lower()
    return "e4m3fnuz" if arch.startswith("gfx94") else "e4m3fn"
