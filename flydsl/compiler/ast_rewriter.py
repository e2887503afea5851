"""``flydsl.compiler.ast_rewriter``: FlyDSL's name for the control-flow rewrite.

``ASTRewriter.transform(fn)`` returns ``fn`` with its ``if``/``for``/``while``/``and``/``or``/``not``
rewritten into trace-time dispatch (our :func:`~flydsl.compiler.frontend.rewrite_function`): called
while a kernel is traced, run-time conditions become ``scf`` ops; called as plain Python, static
conditions behave as Python. FlyDSL kernel helpers apply it to functions they call from kernels.
FlyDSL's individual transformer classes and their dispatch functions are internals of its rewrite (ours
is one pass with another calling convention) and are not provided.
"""

from __future__ import annotations

from .frontend import rewrite_function

__all__ = ["ASTRewriter"]


class ASTRewriter:
    """``ASTRewriter.transform(fn)``: the control-flow rewrite of one function."""

    @classmethod
    def transform(cls, f):
        """``f`` with its control flow rewritten (``f`` itself when its source cannot be read)."""
        return rewrite_function(f)
