"""Golden text: the IR after every compile stage of tests/lit/cases/ir_stages.py and every user-facing
error of tests/lit/cases/errors.py. Only file paths are normalized (to the case file's base name).

Regenerate after an intended change with ``FLYDSL_UPDATE_GOLDEN=1 pytest tests/lit`` and review the diff.
"""

from __future__ import annotations

import importlib.util
import os
import re

import pytest

from flydsl.compiler.errors import CATALOGUE

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
UPDATE = os.environ.get("FLYDSL_UPDATE_GOLDEN") == "1"


def load(name: str):
    path = os.path.join(HERE, "cases", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"lit_case_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


def check(text: str, golden_path: str) -> None:
    if UPDATE:
        os.makedirs(os.path.dirname(golden_path), exist_ok=True)
        with open(golden_path, "w") as f:
            f.write(text)
        return
    with open(golden_path) as f:
        want = f.read()
    assert text == want, f"{golden_path} differs (FLYDSL_UPDATE_GOLDEN=1 regenerates it)"


@pytest.fixture
def lit_env(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH", "FLYDSL_TRACE_MAX_OPS"):
        monkeypatch.delenv(v, raising=False)
    return tmp_path


IR_PROGRAMS = {"vadd": "vadd_0", "control": "control_0"}


@pytest.mark.parametrize("program", sorted(IR_PROGRAMS))
def test_ir_after_each_stage(program, lit_env, monkeypatch, capsys):
    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    mod, path = load("ir_stages")
    getattr(mod, f"program_{program}")()
    folder = lit_env / IR_PROGRAMS[program]
    files = sorted(os.listdir(folder))
    assert [f.split("_", 1)[1] for f in files] == [
        "origin.mlir", "canonicalize.mlir", "cse.mlir", "dce.mlir", "llvm_ir.ll", "final_isa.ptx",
    ]  # fmt: skip
    for name in files:
        if name.endswith(".mlir"):
            text = (folder / name).read_text().replace(path, "ir_stages.py")
            check(text, os.path.join(GOLDEN, program, name))


def _error_cases():
    mod, path = load("errors")
    return [(n, getattr(mod, n)) for n in vars(mod) if n.startswith("case_")], path


def test_every_error_message(lit_env):
    cases, path = _error_cases()
    chunks = []
    for name, fn in cases:
        try:
            fn()
        except Exception as e:
            text = str(e).replace(path, "errors.py")
            chunks.append(f"== {name[5:]}: {type(e).__name__}\n{text}\n")
        else:
            raise AssertionError(f"{name} did not raise")
    text = "\n".join(chunks)
    check(text, os.path.join(GOLDEN, "errors.txt"))
    seen = set(re.findall(r"error\[(FLY\d+)\]", text))
    assert seen == set(CATALOGUE), f"catalogue entries without a golden message: {sorted(set(CATALOGUE) - seen)}"
