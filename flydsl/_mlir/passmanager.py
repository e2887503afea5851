"""``flydsl._mlir.passmanager``: ``PassManager.parse("builtin.module(canonicalize,cse)").run(op)`` over
our registered passes (:mod:`flydsl.passes`). Nesting (``gpu.module(...)``) is flattened: our passes
walk the whole module. A pass we do not have (FlyDSL's ``fly-*`` layout lowerings, ROCDL conversions)
is FLY502: lowering to LLVM is codegen's job. FlyDSL's names for the layout passes run ours
(:data:`FLYDSL_PASSES`)."""

from __future__ import annotations

import re

from .. import passes as _passes
from .ir import Module, OpView, _op_of

__all__ = ["PassManager", "FLYDSL_PASSES"]

#: FlyDSL's pass names -> ours: ``fly-layout-lowering`` folds every ``fly`` op (flydsl/passes/fly_lowering.py),
#: so FlyDSL's conversion of what is left to ROCDL has nothing left to do here (codegen lowers the rest)
FLYDSL_PASSES = {"fly-canonicalize": "canonicalize", "convert-fly-to-rocdl": "fly-layout-lowering"}


def _names(pipeline: str) -> list[str]:
    """The pass names of a textual pipeline, options (``{...}``) and nesting stripped."""
    text = re.sub(r"\{[^}]*\}", "", pipeline)
    out = []
    for tok in re.split(r"[(),]", text):
        tok = tok.strip()
        if tok and tok not in ("builtin.module", "gpu.module", "func.func", "any"):
            out.append(tok)
    return out


class PassManager:
    """A list of pass names run in order over a module."""

    def __init__(self, anchor: str = "builtin.module", context=None):
        self.names: list[str] = []
        self.enable_ir_printing_flag = False

    @staticmethod
    def parse(pipeline: str, context=None) -> PassManager:
        pm = PassManager()
        for n in _names(pipeline):
            pm.add(n)
        return pm

    def add(self, name: str) -> None:
        name = FLYDSL_PASSES.get(name, name)
        if name not in _passes.PASSES:
            from ..compiler.errors import MLIR_UNSUPPORTED, error
            from ..compiler.frames import current_location

            raise error(
                MLIR_UNSUPPORTED,
                current_location(),
                op=f"pass '{name}'",
                why=f"flydsl's passes are {', '.join(sorted(_passes.PASSES))}; layouts fold at trace time "
                "and codegen lowers to LLVM",
            )
        self.names.append(name)

    def enable_ir_printing(self, *args, **kwargs) -> None:
        self.enable_ir_printing_flag = True

    def enable_verifier(self, enable: bool = True) -> None:
        """Our pipeline always verifies between passes."""

    def run(self, op) -> None:
        target = op._op if isinstance(op, (Module, OpView)) else _op_of(op)
        after = None
        if self.enable_ir_printing_flag:
            from ..ir import print_op

            def after(name, m):
                print(f"// -----// IR Dump After {name} //----- //\n{print_op(m)}")

        _passes.run_pipeline(target, self.names, after)
