"""The pass registry: name -> function(module_op)."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Op

__all__ = ["PASSES", "register_pass", "get_pass"]

PASSES: dict[str, Callable[[Op], None]] = {}


def register_pass(name: str):
    """Decorator: register ``fn(module_op)`` as the pass ``name``."""

    def deco(fn):
        if name in PASSES:
            raise ValueError(f"pass {name!r} registered twice")
        PASSES[name] = fn
        fn.pass_name = name
        return fn

    return deco


def get_pass(name: str) -> Callable[[Op], None]:
    try:
        return PASSES[name]
    except KeyError:
        raise KeyError(f"unknown pass {name!r}; registered: {', '.join(sorted(PASSES))}") from None
