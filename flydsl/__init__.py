"""flydsl: FlyDSL kernels in pure Python (layouts, SSA IR, LLVM NVPTX backend, CPU interpreter)."""

__version__ = "0.1.0"
__all__ = ["__version__"]
