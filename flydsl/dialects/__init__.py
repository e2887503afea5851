"""flydsl.dialects: every op of the IR, declared as data (one module per dialect).

Importing this package registers all ops, which the printer/parser/verifier look up by name.
:func:`scalar_source` / :func:`int_source` give an op's scalar semantics as Python source, for generated
code (the launch plans) to paste in.
"""

# nvvm_sm90: Hopper mbarriers, TMA and wgmma (docs/hopper.md)
from . import arith, fly, func, gpu, math, nvvm, nvvm_sm90, printf_c, ptr, scf, vector
from ._base import ScalarSource, int_source, scalar_source

__all__ = [
    "arith", "fly", "func", "gpu", "math", "nvvm", "nvvm_sm90", "printf_c", "ptr", "scf", "vector", "ScalarSource",
    "int_source", "scalar_source",
]  # fmt: skip
