"""``flydsl._mlir.dialects``: the bindings' dialect modules (``arith``, ``scf``, ``vector``, ``gpu``,
``func``, ``builtin``, ``llvm``, ``rocdl``, ``fly``, ``math``) as builders of our IR ops."""
