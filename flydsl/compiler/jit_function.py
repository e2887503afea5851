"""``flydsl.compiler.jit_function``: FlyDSL's module of the ``@flyc.jit`` machinery, over ours.

``JitFunction``/``jit``/``compile``/``CompiledFunction`` are :mod:`flydsl.compiler.jit`'s.
``CallState`` is :mod:`flydsl.compiler.call_state`'s.
``MlirCompiler.compile(module, *, arch, func_name)`` runs our pipeline (verify, passes, device code) on a
traced module; ``_flydsl_key()`` is the compiler's identity in cache keys (version + source hash).

FlyDSL's cache-key helpers, over :mod:`.deps` (what a jit function's compiled code depends on) and
:mod:`.drift` (a compile-time value that changes): ``_jit_function_cache_key(func, owner_cls=None)`` (the
digest of the dependencies — a jit function's ``manager_key``), ``_collect_dependency_sources(func, root)``
(the functions and classes reached, each as ``name@file:line`` and its source),
``_collect_closure_scalar_vals(func)`` (the compile-time closure values, ``name=value``, no addresses),
``_snapshot_refs(refs, stable=)`` and ``_keys_in_progress()`` (this thread's keys being computed).
"""

from __future__ import annotations

import json

from .. import __version__
from .cache import canonical, compiler_hash, deps_digest
from .call_state import CallState
from .deps import collect, keys_in_progress
from .drift import snapshot_refs
from .jit import CompiledFunction, JitFunction, compile, jit
from .pipeline import compile_traced

__all__ = ["JitFunction", "jit", "compile", "CompiledFunction", "MlirCompiler", "CallState"]


def _flydsl_key() -> str:
    """What identifies this compiler in cache keys: the version and the hash of its sources."""
    return f"{__version__}:{compiler_hash()}"


class MlirCompiler:
    """Compile a traced module (FlyDSL's pipeline entry point; ours is
    :func:`~flydsl.compiler.pipeline.compile_traced`)."""

    @classmethod
    def compile(cls, module, *, arch: str = "sm_90a", func_name: str = "", want_ptx: bool = True, **kwargs):
        op = getattr(module, "_op", module)
        return compile_traced(op, func_name or "module", arch, want_ptx=want_ptx, hints=kwargs.get("hints"))


def _owners(owner_cls) -> tuple:
    return () if owner_cls is None else (owner_cls,)


def _jit_function_cache_key(func, owner_cls=None) -> str:
    """The digest of ``func``'s dependencies (with those reached through ``self`` of class ``owner_cls``): what
    a jit function's ``manager_key`` is (:meth:`JitFunction.deps_hex`)."""
    return deps_digest(collect(getattr(func, "__fly_function__", func), _owners(owner_cls)))


def _collect_dependency_sources(func, rootFile=None, visited=None, owner_cls=None) -> list:  # noqa: N803
    """``name@file:line`` and the source of each function and class ``func`` reaches (itself excluded).
    ``rootFile`` and ``visited`` are FlyDSL's parameters; the walk decides what a user file is itself."""
    deps = collect(getattr(func, "__fly_function__", func), _owners(owner_cls))
    return [f"{name}@{where}\n{src}" for name, where, src in deps.sources[1:]]


def _collect_closure_scalar_vals(func) -> list:
    """``name=value`` of each compile-time closure value ``func`` (and what it reaches) reads, canonical: the
    same value gives the same text in every process (no addresses), different values differ."""
    deps = collect(getattr(func, "__fly_function__", func))
    return [
        f"{label}={json.dumps(canonical(_canonical_ready(v)), sort_keys=True)}"
        for label, v in deps.values
        if "<closure " in label
    ]


def _canonical_ready(v):
    """A frozen value with the types it carries as their names (``canonical`` takes types too; this keeps
    classes of any kind printable)."""
    if isinstance(v, tuple):
        return tuple(_canonical_ready(x) for x in v)
    if isinstance(v, type):
        return f"{v.__module__}.{v.__qualname__}"
    return v


def _snapshot_refs(refs, *, stable: bool = True) -> dict:
    """``{(name, module name): frozen value}`` of ``refs`` now (:func:`flydsl.compiler.drift.snapshot_refs`).
    Values are frozen by content with their types and never by address, so ``stable`` (FlyDSL's choice between
    a cross-process form and one with object ids) gives the same snapshot either way."""
    return snapshot_refs(refs)


def _keys_in_progress() -> set:
    """This thread's ``id(fn)`` set of dependency walks running now (empty when none is)."""
    return keys_in_progress()
