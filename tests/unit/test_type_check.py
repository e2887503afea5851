"""The type checker (mypy, pinned in the ``test`` extra) passes over the typed core: ir/, passes/, codegen/,
interp/ (configured in pyproject.toml's ``[tool.mypy]``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_mypy_passes_on_the_typed_core(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]' brings it)")
    cache = str(tmp_path / "mypy_cache")
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", os.path.join(ROOT, "pyproject.toml"), "--cache-dir", cache],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success" in r.stdout
