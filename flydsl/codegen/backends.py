"""The back ends: which :class:`~flydsl.codegen.target.TargetHooks` implementation generates code for a
target's backend (``Target.backend``: ``"nvptx"`` for ``sm_*``, ``"amdgcn"`` for ``gfx*``).

To add a back end: implement ``TargetHooks`` in its own module (as ``nvptx.py`` does) and list its class
in :data:`BACKENDS` under the backend's name.
"""

from __future__ import annotations

import threading

from .nvptx import NVPTXHooks
from .target import Target, TargetHooks

__all__ = ["BACKENDS", "hooks_for", "has_code_generator"]

BACKENDS: dict[str, type[TargetHooks]] = {"nvptx": NVPTXHooks}

_HOOKS: dict[Target, TargetHooks] = {}
_LOCK = threading.Lock()


def has_code_generator(arch: str) -> bool:
    """Whether device code can be generated for ``arch`` (an ``sm_*`` arch: yes; ``gfx*``: not yet)."""
    return Target(arch).backend in BACKENDS


def hooks_for(target: Target) -> TargetHooks:
    """The hook object of ``target`` (one per target, created on first use).

    Raises:
        NotImplementedError: a backend without a code generator yet.
    """
    h = _HOOKS.get(target)
    if h is None:
        cls = BACKENDS.get(target.backend)
        if cls is None:
            raise NotImplementedError(f"no code generator for {target.arch} yet (AMD targets come later)")
        with _LOCK:
            h = _HOOKS.setdefault(target, cls(target))
    return h
