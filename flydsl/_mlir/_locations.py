"""FlyDSL's ``FallbackLocations``: with ``FLYDSL_DEBUG_ENABLE_DEBUG_INFO=1``, ``ASTRewriter.transform(fn)``
enters ``_flydsl_loc(file, line, col)`` around each top-level statement of ``fn``, so raw MLIR ops built
there without a location of their own carry their statement's line instead of an enclosing ``with
Location(...)`` (a kernel's ``def`` line). Ops built through ``fx`` get their own line anyway (the
tracer reads it from the calling frame); an explicit ``loc=`` always wins."""

from __future__ import annotations

from .ir import Location

__all__ = ["FallbackLocations", "fallback_location"]


def fallback_location(file: str, line: int, col: int) -> Location:
    """``with fallback_location(file, line, col):`` — the location of the ops built inside that have none."""
    return Location.file(file, line, col)


class FallbackLocations:
    """The statement-location rewrite of :class:`~flydsl.compiler.ast_rewriter.ASTRewriter`."""

    LOC_HELPER = "_flydsl_loc"

    @staticmethod
    def rewrite_globals() -> dict:
        """The names the rewritten code uses: ``{"_flydsl_loc": fallback_location}``."""
        return {FallbackLocations.LOC_HELPER: fallback_location}
