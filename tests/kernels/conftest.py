"""Fixtures shared by the kernel tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def shared_disk_cache(tmp_path_factory):
    """One disk cache for every interpreter test of a worker, as on a GPU run (where the cache is on):
    kernels compiled by one test are served to the next ones, so a cache key that misses a compile-time
    choice (two configurations sharing an entry) serves the wrong kernel and fails a test here too."""
    return tmp_path_factory.mktemp("flydsl-disk-cache")


@pytest.fixture
def interpreter(monkeypatch, tmp_path, shared_disk_cache):
    """Run on the CPU interpreter, with the worker's shared disk cache and dumps (when switched on) under
    ``tmp_path/dump``."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "1")
    monkeypatch.setenv("FLYDSL_RUNTIME_CACHE_DIR", str(shared_disk_cache))
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY"):
        monkeypatch.delenv(v, raising=False)
    return monkeypatch
