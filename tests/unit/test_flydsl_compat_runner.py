"""The compatibility runner (tools/flydsl_compat): AMD-only single tests are deselected by node ids relative
to pytest's rootdir, a test file without tests that is a script runs as one, and every NOT_PORTABLE(_TESTS)
entry says why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools.flydsl_compat import programs  # noqa: E402


def _checkout(tmp_path: Path) -> Path:
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "tests" / "unit" / "test_bench.py").write_text(
        'import sys\n\ndef main():\n    print("ok")\n\nif __name__ == "__main__":\n    main()\n'
    )
    (tmp_path / "tests" / "unit" / "test_one.py").write_text(
        "def test_a():\n    pass\n\ndef test_amd():\n    assert 0\n"
    )
    return tmp_path


def test_rootdir_and_script_detection(tmp_path):
    src = _checkout(tmp_path)
    assert programs._pytest_rootdir(src, "tests/unit/test_one.py") == src / "tests"
    assert programs._is_script(src / "tests/unit/test_bench.py")
    assert not programs._is_script(src / "tests/unit/test_one.py")


def test_single_amd_only_tests_are_deselected_and_scripts_run(tmp_path, monkeypatch):
    src = _checkout(tmp_path)
    monkeypatch.setitem(programs.NOT_PORTABLE_TESTS, "tests/unit/test_one.py::test_amd", "reads an AMD-only thing")
    assert programs.deselected_tests("tests/unit/test_one.py") == ["tests/unit/test_one.py::test_amd"]
    r = programs.run_program(
        "tests/unit/test_one.py", src=src, repo=ROOT, device="gpu", timeout=120, python=sys.executable
    )
    assert (r.status, r.passed, r.failed, r.deselected) == ("PASS", 1, 0, 1)
    r = programs.run_program(
        "tests/unit/test_bench.py", src=src, repo=ROOT, device="gpu", timeout=120, python=sys.executable
    )
    assert (r.status, r.passed) == ("PASS", 1)


@pytest.mark.parametrize("table", ["NOT_PORTABLE", "NOT_PORTABLE_TESTS"])
def test_every_exclusion_has_a_reason(table):
    for name, why in getattr(programs, table).items():
        assert why and len(why) > 15, name
