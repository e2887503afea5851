"""Golden IR text: each tests/lit/mlir/*.mlir file is run as its ``// RUN:`` line says (``flydsl-opt %s
[options] | filecheck %s``: ``python -m flydsl.opt`` in-process) and its output checked against the
file's ``// CHECK`` lines (:mod:`filecheck`, this folder's small FileCheck). Every registered pass has at
least one file."""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import shlex

import pytest
from filecheck import CheckError, check

from flydsl import opt
from flydsl.passes import PASSES

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = sorted(glob.glob(os.path.join(HERE, "mlir", "*.mlir")))
_RUN = re.compile(r"//\s*RUN:\s*flydsl-opt\s+(.*?)\s*\|\s*filecheck\s+%s\s*$", re.M)


def _run_args(path: str) -> list[str]:
    m = _RUN.search(open(path).read())
    assert m, f"{path}: no '// RUN: flydsl-opt %s ... | filecheck %s' line"
    return [path if a == "%s" else a for a in shlex.split(m.group(1))]


def _opt(args: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = opt.main(args)
    assert rc == 0, err.getvalue()
    return out.getvalue()


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.basename(p))
def test_golden_mlir(path):
    check(_opt(_run_args(path)), open(path).read(), name=os.path.relpath(path, HERE))


def test_every_pass_has_a_golden_file():
    named = set()
    for path in FILES:
        args = _run_args(path)
        for i, a in enumerate(args):
            if a == "--pass":
                named.update(args[i + 1].split(","))
    assert set(PASSES) <= named, f"passes without a tests/lit/mlir file: {sorted(set(PASSES) - named)}"


# -- the checker checks -----------------------------------------------------------------------------------


def test_filecheck_reports_what_fails():
    out = "a = 1\nb = 2\nc = 3\n"
    check(out, "// CHECK: a = [[X:[0-9]]]\n// CHECK-NEXT: b = {{[0-9]}}\n// CHECK-NOT: a =\n// CHECK: c")
    with pytest.raises(CheckError, match="CHECK-NEXT: 'c' not found"):
        check(out, "// CHECK: a\n// CHECK-NEXT: c")
    with pytest.raises(CheckError, match="CHECK-NOT: 'b' occurs on line 2"):
        check(out, "// CHECK: a\n// CHECK-NOT: b\n// CHECK: c")
    with pytest.raises(CheckError, match="not found"):
        check(out, "// CHECK: a = [[X:[0-9]]]\n// CHECK: c = [[X]]")
    check(out, "// CHECK: b = [[Y:[0-9]]]\n// CHECK-SAME: {{$}}\n// CHECK-NEXT: c   =  3")


def test_opt_reports_errors():
    bad = os.path.join(HERE, "mlir", "roundtrip.mlir")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert opt.main([bad, "--pass", "nosuchpass"]) == 1
    assert "unknown pass 'nosuchpass'" in err.getvalue()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert opt.main(["--list-passes"]) == 0
