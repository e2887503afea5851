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
  the module, so the options hold for exactly that compilation and never leak into another kernel's;
* :func:`option_kind` says what an option takes (``"bool"``, ``"int"``, ``"float"``, ``"str"``, ``"enum"``,
  or None: no such option), asked of LLVM in a child once per option. FlyDSL's process-wide setters
  (``flydsl._mlir._mlir_libs._mlirDialectsFly.set_llvm_option_*``) check an option's type with it.

Options that change what flydsl's code assumes or stop LLVM's pipeline part-way (:data:`REFUSED`) are
refused up front with the reason (llvmlite's LLVM has no ``-mcpu``/``-mattr``: the target and PTX version
stay flydsl's, checked against each instruction, backend.md §1a). Whatever else LLVM does with an option
happens in the child, where even a fatal error is a :class:`CodegenError` with LLVM's message, never
the end of the Python process.
"""

from __future__ import annotations

import os
import tempfile

from .errors import CodegenError
from .isolated import run_isolated

__all__ = ["normalize", "check", "problems", "apply", "option_kind", "refused", "REFUSED", "DECLARED"]

_CHECKED: dict[tuple, str] = {}  # options -> "" (fine) or what is wrong with them
_KINDS: dict[str, str | None] = {}  # option name -> what it takes (option_kind)
_PROBE = "\x01"  # a value no bool, int or enum option accepts

#: option (or prefix ending in "-") -> why flydsl refuses it, whatever its value
REFUSED = {
    "nvptx-short-ptr": "it changes the pointer width of shared and local memory that flydsl's code assumes",
    "start-before": "it stops LLVM's code generator part-way: no PTX would come out",
    "start-after": "it stops LLVM's code generator part-way: no PTX would come out",
    "stop-before": "it stops LLVM's code generator part-way: no PTX would come out",
    "stop-after": "it stops LLVM's code generator part-way: no PTX would come out",
    "view-": "it opens a graph viewer and waits for it",
}

#: LLVM 22's declared initial value (``cl::init``) of the options FlyDSL's programs and tests set — what
#: FlyDSL's setters report as an untouched option's old value. llvmlite cannot read an option, so for
#: any other option the old value of an untouched one is None ("LLVM's own default").
DECLARED = {
    "enable-post-misched": True,  # lib/CodeGen/MachineScheduler.cpp
    "lsr-drop-solution": False,  # lib/Transforms/Scalar/LoopStrengthReduce.cpp
    "disable-machine-sink": False,  # lib/CodeGen/TargetPassConfig.cpp
    "opt-bisect-limit": 2**31 - 1,  # lib/IR/OptBisect.cpp (OptBisect::Disabled)
    "module-summary-dot-file": "",  # lib/Analysis/ModuleSummaryAnalysis.cpp
}


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


def refused(name: str) -> str:
    """Why flydsl refuses option ``name`` whatever its value (``""``: it does not)."""
    for key, why in REFUSED.items():
        if name == key or (key.endswith("-") and name.startswith(key)):
            return why
    return ""


def _problems(options: tuple) -> str:
    """(In a child process: probing sets the options.) What is wrong with ``options``, or ``""``."""
    out = []
    for name, text in options:
        why = refused(name)
        if why:
            out.append(f"'{name}' is refused: {why}")
            continue
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


def _kind(name: str) -> str:
    """(In a child process.) What option ``name`` takes, from what LLVM says to an impossible value."""
    said = _said(f"-{name}={_PROBE}")
    if f"--{name} option" not in said:
        if f"--{name} option" in _said(f"-{name}"):  # it demands a value and took the impossible one
            return "str"
        return ""
    for words, kind in (("boolean argument", "bool"), ("floating point argument", "float"),
                        ("Cannot find option named", "enum"), ("argument!", "int")):  # fmt: skip
        if words in said:  # LLVM: "... value invalid for integer/uint/ulong/long argument!"
            return kind
    return "str"


def option_kind(name: str) -> str | None:
    """What LLVM option ``name`` takes: ``"bool"``, ``"int"``, ``"float"``, ``"str"`` (a string or a
    list of strings), ``"enum"`` (one of its named values), or None when this LLVM has no such option;
    asked of LLVM in a forked child, once per process per option."""
    if name not in _KINDS:
        _KINDS[name] = run_isolated(_kind, name) or None
    return _KINDS[name]


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
