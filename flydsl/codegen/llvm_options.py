"""LLVM command-line options for one compilation: the ``llvm_options`` compile hint, honoured or rejected.

FlyDSL programs tune LLVM's code generator with ``jit_fn.compile_hints["llvm_options"] = {"enable-post-
misched": False, ...}``. LLVM's options (``cl::opt``) are process-wide and llvmlite can neither read nor
restore them, and it drops an unknown option without a word. So:

* :func:`normalize` checks the hint's shape (a dict of option name → bool / int / str) and gives the
  canonical ``(("name", "text"), ...)`` that enters the cache key and :class:`~flydsl.codegen.Target`;
* :func:`check` asks LLVM, in a forked child, whether each option exists and takes its value: an option
  that rejects an impossible value (bool, int, enum options) or demands one (string options) exists;
  one that says nothing does not. Anything wrong raises :class:`CodegenError` naming the option — never
  a silently ignored hint. Results are remembered per process;
* :func:`apply` sets them; :mod:`.compile` calls it only inside the forked child that optimizes and emits
  the module, so the options hold for exactly that compilation and never leak into another kernel's.
"""

from __future__ import annotations

import os
import tempfile

from .errors import CodegenError
from .isolated import run_isolated

__all__ = ["normalize", "check", "problems", "apply"]

_CHECKED: dict[tuple, str] = {}  # options -> "" (fine) or what is wrong with them
_PROBE = "\x01"  # a value no bool, int or enum option accepts


def normalize(options) -> tuple:
    """``(("name", "text"), ...)`` sorted by name, from the hint's dict (``TypeError`` for a bad shape)."""
    if not isinstance(options, dict):
        raise TypeError(f"llvm_options must be a dict of option name -> bool/int/str, got {type(options).__name__}")
    out = []
    for name, value in options.items():
        if not isinstance(name, str) or not name.strip("-"):
            raise TypeError(f"llvm_options: option names are strings such as 'enable-post-misched', got {name!r}")
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, str)):
            text = str(value)
        else:
            raise TypeError(f"llvm_options: '{name}' must be a bool, int or str, got {type(value).__name__}")
        out.append((name.lstrip("-"), text))
    return tuple(sorted(out))


def _said(option: str) -> str:
    """What LLVM writes to stderr when given ``option`` (its errors go straight to file descriptor 2)."""
    import llvmlite.binding as llvm

    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            llvm.set_option("flydsl", option)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode(errors="replace").strip()


def _problems(options: tuple) -> str:
    """(In a child process: probing sets the options.) What is wrong with ``options``, or ``""``."""
    out = []
    for name, text in options:
        tag = f"--{name} option"
        if tag not in _said(f"-{name}={_PROBE}") and tag not in _said(f"-{name}"):
            out.append(f"'{name}' is not an option of this LLVM (llvmlite's)")
            continue
        said = _said(f"-{name}={text}")
        if said:
            out.append(f"'{name}={text}': LLVM says: {said.removeprefix('flydsl: ')}")
    return "\n".join(out)


def problems(options: tuple) -> str:
    """What is wrong with ``options`` (``""``: every option exists and takes its value); asked of LLVM in a
    forked child, once per process per set of options."""
    if not options:
        return ""
    why = _CHECKED.get(options)
    if why is None:
        why = _CHECKED[options] = "; ".join(run_isolated(_problems, options).splitlines())
    return why


def check(options: tuple) -> None:
    """Raise :class:`CodegenError` unless every option exists and accepts its value."""
    why = problems(options)
    if why:
        raise CodegenError(
            "llvm_options: " + why,
            fix="fix or remove the option (names without leading dashes, e.g. {'enable-post-misched': False}); "
            "`llc --help-hidden` lists LLVM's options",
        )


def apply(options: tuple) -> None:
    """Set ``options`` process-wide: only in a child process that compiles one module (see the docstring)."""
    import llvmlite.binding as llvm

    for name, text in options:
        llvm.set_option("flydsl", f"-{name}={text}")
