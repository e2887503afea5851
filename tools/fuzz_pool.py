"""What the GPU fuzz tools (``tools.norm_plan_fuzz``, ``tools.gemm_config_fuzz``) share: their worker processes, and
how an error is named so that only the kernel library's own refusals count as refusals."""

from __future__ import annotations

import json
import os
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def raised_in(e: BaseException) -> str:
    """The repository path of the file that raised ``e`` (of the original error where the trace re-raised it at the
    user's line). A refusal is raised by the kernel library (``kernels/``); the DSL's own errors (``flydsl/``: a
    2-byte ``cp.async``, an index past a tensor's mode) reach the caller as ValueErrors too, named ``ValueError``."""
    tb = getattr(e, "original", e).__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return os.path.relpath(tb.tb_frame.f_code.co_filename, REPO)


def error_text(e: BaseException, limit: int) -> str:
    """``"Type: first line"`` of ``e``; ``"DSL Type (file): ..."`` where the kernel library did not raise it (a defect
    even where it is a ValueError: the tools count only messages that start with ``ValueError`` as refusals)."""
    first = str(e).splitlines()[0] if str(e) else ""
    where = raised_in(e)
    kind = type(e).__name__ if where.startswith("kernels") else f"DSL {type(e).__name__} ({where})"
    return f"{kind}: {first}"[:limit]


def run_workers(cmds: list[list[str]], outs: list[str], limit: float) -> tuple[list, int]:
    """Run one process per command (each writes its results, a JSON list, to its ``outs`` file), stopping those
    still running ``limit`` seconds from now: ``(every result written, how many were stopped)``."""
    deadline, stopped = time.time() + limit, 0
    procs = [subprocess.Popen(cmd) for cmd in cmds]
    for p in procs:
        try:
            p.wait(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            stopped += 1
    return [r for o in outs if os.path.exists(o) for r in json.load(open(o))], stopped
