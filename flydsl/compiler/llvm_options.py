"""``flydsl.compiler.llvm_options``: FlyDSL's scoped LLVM command-line options.

``with llvm_options({"enable-post-misched": False}):`` (and the ``llvm_options`` compile hint) name
options of AMD's LLVM back end for tuning its instruction scheduler. Values must be bool, int or str
(anything else is a ``TypeError``, as in FlyDSL). Our NVPTX/CPU code generation does not pass them to
LLVM — an unknown ``cl::opt`` makes LLVM exit the process — so each option set here is reported once
with a ``UserWarning`` naming it, never ignored silently; :func:`current_options` returns the scope's
values (they enter the compile-hint cache key when given as a hint).
"""

from __future__ import annotations

import contextlib
import threading
import warnings

__all__ = ["llvm_options", "current_options", "set_option"]

_tls = threading.local()
_warned: set = set()


def current_options() -> dict:
    """The LLVM options of the innermost :func:`llvm_options` scope (empty outside any)."""
    return dict(getattr(_tls, "opts", None) or {})


def _check(name: str, value) -> None:
    if not isinstance(value, (bool, int, str)):
        raise TypeError(f"Unsupported type {type(value).__name__} for LLVM option '{name}'; use bool, int, or str")
    if name not in _warned:
        _warned.add(name)
        warnings.warn(
            f"LLVM option '{name}' is recorded but not applied: flydsl's NVPTX/CPU code generation does not take "
            "AMD back-end scheduling options (docs/compatibility.md)",
            UserWarning,
            stacklevel=4,
        )


def set_option(name: str, value):
    """Set one option in the current scope; returns its previous value (None if unset)."""
    _check(name, value)
    opts = getattr(_tls, "opts", None)
    if opts is None:
        opts = _tls.opts = {}
    old = opts.get(name)
    opts[name] = value
    return old


@contextlib.contextmanager
def llvm_options(opts: dict):
    """Set LLVM options for the ``with`` block, restoring the previous values on exit."""
    for name, value in opts.items():
        _check(name, value)
    saved = getattr(_tls, "opts", None)
    _tls.opts = {**(saved or {}), **opts}
    try:
        yield
    finally:
        _tls.opts = saved
