"""flydsl.dialects: every op of the IR, declared as data (one module per dialect).

Importing this package registers all ops, which the printer/parser/verifier look up by name.
"""

# nvvm_sm90: Hopper mbarriers, TMA and wgmma (docs/hopper.md)
from . import arith, func, gpu, math, nvvm, nvvm_sm90, ptr, scf, vector

__all__ = ["arith", "func", "gpu", "math", "nvvm", "nvvm_sm90", "ptr", "scf", "vector"]
