"""``flydsl._mlir._mlir_libs``: where FlyDSL's native extension modules live. Here they are Python
modules over flydsl's own compiler: :mod:`._mlirDialectsFly` (the ``fly`` dialect's functions that
FlyDSL code calls on the extension directly: the LLVM option setters)."""

from . import _mlirDialectsFly

__all__ = ["_mlirDialectsFly"]
