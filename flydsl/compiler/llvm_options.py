"""``flydsl.compiler.llvm_options``: FlyDSL's scoped LLVM command-line options.

``with llvm_options({"enable-post-misched": False}):`` sets LLVM options for the jit compilations made in
the block: they become the ``llvm_options`` compile hint of those calls (merged over the function's own
hint, through ``CompilationContext.compile_hints``), which code generation honours or rejects
(docs/compiler.md, ``llvm_options``: an unknown option or a bad value is FLY224, never ignored). Values
must be bool, int or str (anything else is a ``TypeError``, as in FlyDSL). Nested blocks merge; leaving
a block restores the outer options.
"""

from __future__ import annotations

import contextlib

from .kernel_function import CompilationContext, ambient_hints

__all__ = ["llvm_options", "current_options", "set_option"]


def current_options() -> dict:
    """The LLVM options of the innermost :func:`llvm_options` scope (empty outside any)."""
    return dict((ambient_hints() or {}).get("llvm_options") or {})


def _check(name: str, value) -> None:
    if not isinstance(value, (bool, int, str)):
        raise TypeError(f"Unsupported type {type(value).__name__} for LLVM option '{name}'; use bool, int, or str")


def set_option(name: str, value):
    """Set one option in the innermost :func:`llvm_options` scope; returns its previous value (None if unset).

    Raises:
        RuntimeError: outside an ``llvm_options`` block (options here are scoped, never process-wide).
    """
    _check(name, value)
    hints = ambient_hints()
    if hints is None or "llvm_options" not in hints:
        raise RuntimeError(
            f"set_llvm_option('{name}') outside a `with llvm_options({{...}})` block: LLVM options apply to the "
            "compilations of a scope here, not to the whole process"
        )
    opts = hints["llvm_options"]
    old = opts.get(name)
    opts[name] = value
    return old


@contextlib.contextmanager
def llvm_options(opts: dict):
    """Set LLVM options for the jit compilations in the ``with`` block (see the module docstring)."""
    for name, value in opts.items():
        _check(name, value)
    with CompilationContext.compile_hints({"llvm_options": {**current_options(), **opts}}):
        yield
