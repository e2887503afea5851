"""Fixtures shared by the kernel tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def interpreter(monkeypatch, tmp_path):
    """Run on the CPU interpreter, with no disk cache and dumps (when switched on) under ``tmp_path/dump``."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY"):
        monkeypatch.delenv(v, raising=False)
    return monkeypatch
