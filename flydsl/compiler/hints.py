"""Compile hints (``jit_fn.compile_hints``, ``flyc.compile[hints](...)``): each one is honoured, or the
compile stops with FLY224 — a hint is never dropped without a word.

=================  ================================================================================
``fastmath``       the ambient fast-math flags of the trace (``"fast"``, ``"contract"``, …)
``fast_fp_math``   ``True``: approximate transcendental math, and ``fast`` flags when ``fastmath`` is absent
``llvm_options``   ``{name: bool | int | str}``: LLVM command-line options for this compilation only
                   (checked against LLVM, applied in a child process: :mod:`flydsl.codegen.llvm_options`)
``maxnreg``        a register cap for every kernel that sets none itself (PTX ``.maxnreg``)
``unsafe_fp_math``, ``waves_per_eu``
                   FlyDSL's AMD back-end settings: accepted (FlyDSL programs set them), and a warning
                   (once per hint) says they change nothing on the NVIDIA targets and the interpreter
=================  ================================================================================

Hints are part of the cache key (``docs/compiler.md``); they are checked at every compile.
"""

from __future__ import annotations

import difflib

from ..codegen import llvm_options
from . import errors as E
from .errors import error
from .frames import warn_at_user

__all__ = ["HINTS", "check_hints", "llvm_options_of"]

HINTS = ("fastmath", "fast_fp_math", "llvm_options", "unsafe_fp_math", "waves_per_eu", "maxnreg")
_AMD_ONLY = ("unsafe_fp_math", "waves_per_eu")
_WARNED: set = set()


def llvm_options_of(hints: dict | None) -> tuple:
    """The normalized ``llvm_options`` of ``hints`` (``()`` when absent)."""
    opts = (hints or {}).get("llvm_options")
    return llvm_options.normalize(opts) if opts else ()


def check_hints(hints: dict | None, arch: str) -> None:
    """Raise FLY224 for an unknown hint or an ``llvm_options`` entry LLVM does not take; warn once for an
    AMD-only hint on a target where it has no effect."""
    if not hints:
        return
    for key in hints:
        if key not in HINTS:
            close = difflib.get_close_matches(str(key).lower(), HINTS, n=1)
            why = "flydsl knows no such hint" + (f" (did you mean '{close[0]}'?)" if close else "")
            raise error(E.COMPILE_HINT, None, hint=key, why=why, known=", ".join(HINTS))
    try:
        why = llvm_options.problems(llvm_options_of(hints))
    except TypeError as e:
        why = str(e)
    if why:
        raise error(E.COMPILE_HINT, None, hint="llvm_options", why=why, known=", ".join(HINTS))
    if not arch.startswith("gfx"):
        for key in _AMD_ONLY:
            if hints.get(key) not in (None, False) and key not in _WARNED:
                _WARNED.add(key)
                warn_at_user(
                    f"flydsl: compile hint '{key}' is an AMD back-end setting; it has no effect on {arch} or the "
                    "CPU interpreter",
                    UserWarning,
                )
