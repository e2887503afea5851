"""``flydsl.compiler.llvm_options``: FlyDSL's LLVM command-line options, scoped or process-wide.

``with llvm_options({"enable-post-misched": False}):`` sets LLVM options for the jit compilations made in
the block: they become the ``llvm_options`` compile hint of those calls (merged over the function's own
hint, through ``CompilationContext.compile_hints``), which code generation honours or rejects
(docs/compiler.md, ``llvm_options``: an unknown option or a bad value is FLY224, never ignored). Values
must be bool, int or str (anything else is a ``TypeError``, as in FlyDSL). Nested blocks merge; leaving
a block restores the outer options.

:func:`set_llvm_option` is FlyDSL's ``set_llvm_option_{bool,int,str}(name, value) -> old`` (its native
bindings, ``flydsl._mlir._mlir_libs._mlirDialectsFly``): inside an ``llvm_options`` block it sets the
option for the rest of the block; outside, for every later jit compilation of the process (the
process-wide hint layer, :func:`~flydsl.compiler.kernel_function.set_process_hints`, so it enters the
cache key too). LLVM is told in the child process that compiles each module, so an option never
leaks into LLVM state that outlives one compilation, and a fatal LLVM error there is a Python error.
"""

from __future__ import annotations

import contextlib
import threading

from ..codegen import llvm_options as _llvm
from .kernel_function import CompilationContext, ambient_hints, scoped_hints, set_process_hints

__all__ = ["llvm_options", "current_options", "set_option", "set_llvm_option", "process_options"]

_PROCESS: dict = {}  # the process-wide options (name -> bool / int / str)
_LOCK = threading.Lock()
_PY_TYPE = {"bool": bool, "int": int, "str": str}
_TAKES = {"bool": ("bool",), "int": ("int",), "str": ("str", "enum")}  # a setter -> the option kinds it sets


def current_options() -> dict:
    """The LLVM options in force here: the innermost :func:`llvm_options` block's (which start from the
    process-wide ones), else the process-wide ones (empty when none is set)."""
    return dict((ambient_hints() or {}).get("llvm_options") or {})


def process_options() -> dict:
    """The process-wide LLVM options (:func:`set_llvm_option` outside any block)."""
    return dict(_PROCESS)


def _check(name: str, value) -> None:
    if not isinstance(value, (bool, int, str)):
        raise TypeError(f"Unsupported type {type(value).__name__} for LLVM option '{name}'; use bool, int, or str")


def set_option(name: str, value):
    """Set one option in the innermost :func:`llvm_options` scope; returns its previous value (None if unset).

    Raises:
        RuntimeError: outside an ``llvm_options`` block (:func:`set_llvm_option` sets it process-wide).
    """
    _check(name, value)
    hints = scoped_hints()
    if hints is None or "llvm_options" not in hints:
        raise RuntimeError(
            f"set_llvm_option('{name}') outside a `with llvm_options({{...}})` block: LLVM options apply to the "
            "compilations of a scope here; set_llvm_option_bool/int/str set them process-wide"
        )
    opts = hints["llvm_options"]
    old = opts.get(name)
    opts[name] = value
    return old


def set_llvm_option(name: str, value, kind: str):
    """FlyDSL's ``set_llvm_option_<kind>(name, value)``: set LLVM option ``name`` (``kind`` is ``"bool"``,
        ``"int"`` or ``"str"``, the type the caller means) and return its previous value — the value set
        before in this block or process, else LLVM's declared initial value where flydsl knows it
        (:data:`flydsl.codegen.llvm_options.DECLARED`), else None (LLVM's own default: llvmlite cannot read
        an option). ``value`` None, or the declared initial value itself, gives the option back to LLVM's
    default (so a restore leaves nothing set; an option LLVM consults only when it is given — as
    ``enable-post-misched`` is — cannot be forced to its initial value here: ``compile_hints["llvm_options"]``
    passes it explicitly).

        Raises:
            RuntimeError: "Unknown LLVM option" (this LLVM has no such option), an option of another type, an
                option flydsl refuses, or a value LLVM does not take — never an option silently ignored.
            TypeError: ``value`` is not of ``kind``'s Python type (bool, int, str).
    """
    name = str(name).lstrip("-")
    if value is not None and ((type(value) is bool) != (kind == "bool") or not isinstance(value, _PY_TYPE[kind])):
        raise TypeError(f"set_llvm_option_{kind}('{name}', ...) takes a {kind}, got {type(value).__name__}")
    why = _llvm.refused(name)
    if why:
        raise RuntimeError(f"LLVM option '{name}' is refused by flydsl: {why}")
    has = _llvm.option_kind(name)
    if has is None:
        raise RuntimeError(f"Unknown LLVM option: {name} (llvmlite's LLVM has no option of that name)")
    if value is not None and has not in _TAKES[kind]:
        raise RuntimeError(f"LLVM option '{name}' is not a {kind} option (it takes a {has} value)")
    if value is not None:
        problem = _llvm.problems(_llvm.normalize({name: value}))
        if problem:
            raise RuntimeError(f"LLVM option {problem}")
        declared = _llvm.DECLARED.get(name)
        if type(value) is type(declared) and value == declared:  # a restore: LLVM's default, not an override
            value = None
    scope = scoped_hints()
    if scope is not None and "llvm_options" in scope:  # the innermost llvm_options block
        opts = scope["llvm_options"]
        old = opts.get(name, _PROCESS.get(name, _llvm.DECLARED.get(name)))
        if value is None:
            opts.pop(name, None)
        else:
            opts[name] = value
        return old
    with _LOCK:
        old = _PROCESS.get(name, _llvm.DECLARED.get(name))
        if value is None:
            _PROCESS.pop(name, None)
        else:
            _PROCESS[name] = value
        set_process_hints({"llvm_options": dict(_PROCESS)} if _PROCESS else None)
    return old


@contextlib.contextmanager
def llvm_options(opts: dict):
    """Set LLVM options for the jit compilations in the ``with`` block (see the module docstring)."""
    for name, value in opts.items():
        _check(name, value)
    with CompilationContext.compile_hints({"llvm_options": {**current_options(), **opts}}):
        yield
