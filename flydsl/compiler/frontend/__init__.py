"""The front end: the AST rewrite of control flow (:mod:`.ast_rewrite`), its run-time half
(:mod:`.dispatch`), carried-value trees (:mod:`.carry`) and scope analysis (:mod:`.scope`)."""

from .ast_rewrite import rewrite_function

__all__ = ["rewrite_function"]
