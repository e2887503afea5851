"""Test-suite configuration: tests marked ``gpu`` run only where a CUDA device is present."""

from __future__ import annotations

import functools
import os
import sys
import time

import pytest


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    try:
        from flydsl.runtime import cuda
    except Exception:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none found)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# CUDA errors that poison the process's context: after one, every later GPU call in the process fails too.
_STICKY_CUDA = (
    "illegal instruction",
    "ILLEGAL_INSTRUCTION",
    "illegal memory access",
    "ILLEGAL_ADDRESS",
    "misaligned address",
    "MISALIGNED_ADDRESS",
    "unspecified launch failure",
    "LAUNCH_FAILED",
)


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    """Under xdist, a test that hit a sticky CUDA error ends its worker after its report is sent, so xdist
    starts a fresh one: the failure stays this test's alone instead of cascading into the rest of the worker's
    tests (whose failures would hide which test broke the context)."""
    if not (report.failed and os.environ.get("PYTEST_XDIST_WORKER")):
        return
    text = str(report.longrepr)
    if any(s in text for s in _STICKY_CUDA):
        sys.stderr.write(f"\n[conftest] sticky CUDA error in {report.nodeid}: restarting this worker\n")
        time.sleep(1.0)  # NOTE: let execnet flush the report to the controller first
        os._exit(3)
