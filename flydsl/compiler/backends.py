"""``flydsl.compiler.backends``: FlyDSL's compile-backend registry, over our targets.

``get_backend(name=None, *, arch="")`` returns the backend compiling for ``arch`` (default: the target
the jit would pick — ``ARCH``, ``FLYDSL_GPU_ARCH``, the CUDA device, else ``sm_90a``); its ``target`` is a
:class:`GPUTarget` ``(backend, arch, warp_size)``. Backends: ``"nvptx"`` (NVIDIA, compiled and run) and
``"amdgcn"`` (gfx942/gfx950). ``register_backend`` adds a :class:`BaseBackend` subclass under a name.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..utils.target import get_arch
from .trace import select_target

__all__ = ["GPUTarget", "BaseBackend", "get_backend", "register_backend", "compile_backend_name"]


@dataclass(frozen=True)
class GPUTarget:
    backend: str
    arch: str
    warp_size: int

    def __str__(self) -> str:
        return f"{self.backend}:{self.arch}:{self.warp_size}"


class BaseBackend:
    """A compile backend: ``target`` says what it compiles for."""

    def __init__(self, arch: str = ""):
        self.arch = arch

    @property
    def target(self) -> GPUTarget:
        raise NotImplementedError

    def hash(self) -> str:
        return str(self.target)


class _TargetBackend(BaseBackend):
    """One of our targets (flydsl.utils.target)."""

    @property
    def target(self) -> GPUTarget:
        t = get_arch(self.arch)
        return GPUTarget(t.backend, t.arch, t.warp_size)


_BACKENDS: dict[str, type] = {"nvptx": _TargetBackend, "amdgcn": _TargetBackend}


def register_backend(name: str, backend_cls: type, *, force: bool = False) -> None:
    """Register ``backend_cls`` (a :class:`BaseBackend` subclass) under ``name`` (case-insensitive)."""
    key = name.lower()
    if not (isinstance(backend_cls, type) and issubclass(backend_cls, BaseBackend)):
        raise TypeError(f"backend {name!r} must be a BaseBackend subclass, got {backend_cls!r}")
    if key in _BACKENDS and not force:
        raise ValueError(f"backend {name!r} is already registered (pass force=True to replace it)")
    _BACKENDS[key] = backend_cls
    _make_backend.cache_clear()


@functools.cache
def _make_backend(name: str, arch: str) -> BaseBackend:
    """The backend ``name`` for ``arch``, made once per (name, arch) (FlyDSL's cached factory;
    ``_make_backend.cache_clear()`` forgets them, as after a change of ``ARCH``)."""
    cls = _BACKENDS.get(name)
    if cls is None:
        raise ValueError(f"unknown compile backend {name!r}; registered: {', '.join(sorted(_BACKENDS))}")
    return cls(arch)


def _default_arch() -> str:
    return select_target().arch


def compile_backend_name() -> str:
    """The backend of the default target (``"nvptx"`` on NVIDIA machines and the interpreter)."""
    return get_arch(_default_arch()).backend


def get_backend(name: str | None = None, *, arch: str = "") -> BaseBackend:
    """The backend ``name`` (default: the default target's) for ``arch`` (default: the default target)."""
    arch = arch or _default_arch()
    return _make_backend((get_arch(arch).backend if name is None else name).lower(), arch)
