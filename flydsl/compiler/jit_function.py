"""``flydsl.compiler.jit_function``: FlyDSL's module of the ``@flyc.jit`` machinery, over ours.

``JitFunction``/``jit``/``compile``/``CompiledFunction`` are :mod:`flydsl.compiler.jit`'s.
``CallState`` is :mod:`flydsl.compiler.call_state`'s.
``MlirCompiler.compile(module, *, arch, func_name)`` runs our pipeline (verify, passes, device code) on a
traced module; ``_flydsl_key()`` is the compiler's identity in cache keys (version + source hash).
"""

from __future__ import annotations

from .. import __version__
from .cache import compiler_hash
from .call_state import CallState
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
