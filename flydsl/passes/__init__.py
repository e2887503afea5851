"""flydsl.passes: named module passes and the pipeline that runs them.

A pass is a function ``fn(module_op) -> None`` that rewrites the IR in place, registered under a
name with :func:`register_pass`. A pipeline is a list of names; ``after_each(name, module)`` is
called after every pass (dumps, verification).
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Op
from . import canonicalize as _canonicalize  # noqa: F401,E402  (registers)
from . import cse as _cse  # noqa: F401,E402
from . import dce as _dce  # noqa: F401,E402
from . import fly_lowering as _fly_lowering  # noqa: F401,E402
from .registry import PASSES, get_pass, register_pass

__all__ = ["PASSES", "register_pass", "get_pass", "run_pipeline", "DEFAULT_PIPELINE"]

DEFAULT_PIPELINE = ["canonicalize", "cse", "dce"]


def run_pipeline(module: Op, names=None, after_each: Callable[[str, Op], None] | None = None) -> Op:
    """Run the named passes on ``module`` in order (default: canonicalize, cse, dce)."""
    for name in DEFAULT_PIPELINE if names is None else names:
        get_pass(name)(module)
        if after_each is not None:
            after_each(name, module)
    return module
