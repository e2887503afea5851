"""``flydsl._mlir``: an import-compatible facade of the MLIR Python bindings that FlyDSL code uses
(``from flydsl._mlir import ir``; ``from flydsl._mlir.dialects import arith, func, scf, ...``), built on
this package's own IR — no native MLIR. See :mod:`flydsl._mlir.ir` and docs/compatibility.md."""

from . import ir

__all__ = ["ir"]
