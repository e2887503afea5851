"""Helpers shared by the compiler's tests (frontend, jit, cache, errors): run on the CPU interpreter with
the disk cache off unless a test asks otherwise, and look at traced IR."""

from __future__ import annotations

import re

import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr import typing as fxt
from flydsl.ir import print_op

# the names of fx that these tests use from flydsl.expr.typing (re-exported by fx)
Tensor = getattr(fx, "Tensor", fxt.Tensor)
Constexpr = getattr(fx, "Constexpr", fxt.Constexpr)
Stream = getattr(fx, "Stream", fxt.Stream)

__all__ = ["Tensor", "Constexpr", "Stream", "cpu_device", "traced", "count_ops", "flyc", "fx"]


@pytest.fixture
def cpu_device(monkeypatch, tmp_path):
    """The CPU interpreter, no disk cache, no dumps; cache dir and dump dir inside the test's tmp dir."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_RUNTIME_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH", "FLYDSL_TRACE_MAX_OPS"):
        monkeypatch.delenv(v, raising=False)
    return tmp_path


def traced(jit_fn, *args, **kwargs) -> str:
    """The MLIR text (no locations) of the module ``jit_fn`` traces for these arguments, before passes."""
    return print_op(jit_fn.trace(*args, **kwargs))


def count_ops(text: str, name: str) -> int:
    """Occurrences of op ``name`` in printed IR (pretty or generic form)."""
    return len(re.findall(rf'(?<![\w.]){re.escape(name)}(?![\w.])|"{re.escape(name)}"', text))
