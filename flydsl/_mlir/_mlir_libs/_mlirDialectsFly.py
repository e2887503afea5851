"""``flydsl._mlir._mlir_libs._mlirDialectsFly``: FlyDSL's native ``fly`` extension, the parts FlyDSL code
calls directly — ``set_llvm_option_bool/int/str(name, value) -> old``.

Each sets an LLVM command-line option for the jit compilations that follow (in an ``llvm_options``
block: for the rest of the block) and returns the option's previous value, as FlyDSL's do; see
:func:`flydsl.compiler.llvm_options.set_llvm_option` for what "previous" is when LLVM cannot be asked.
An unknown option raises ``RuntimeError("Unknown LLVM option: ...")``, an option of another type or a
value LLVM rejects a ``RuntimeError`` saying so. The option reaches LLVM in the child process that
compiles each module (docs/compiler.md, ``llvm_options``), so it changes the code of later compilations
and of nothing already compiled (it is part of their cache key).
"""

from __future__ import annotations

__all__ = ["set_llvm_option_bool", "set_llvm_option_int", "set_llvm_option_str"]


def set_llvm_option_bool(name: str, value: bool) -> bool | None:
    """Set the bool LLVM option ``name``; returns its previous value."""
    from ...compiler.llvm_options import set_llvm_option

    return set_llvm_option(name, value, "bool")


def set_llvm_option_int(name: str, value: int) -> int | None:
    """Set the integer LLVM option ``name``; returns its previous value."""
    from ...compiler.llvm_options import set_llvm_option

    return set_llvm_option(name, value, "int")


def set_llvm_option_str(name: str, value: str) -> str | None:
    """Set the string (or named-value) LLVM option ``name``; returns its previous value."""
    from ...compiler.llvm_options import set_llvm_option

    return set_llvm_option(name, value, "str")
