"""The disk cache across processes: a second process launches from the stored entry without tracing;
corrupt, truncated or foreign entries are detected, deleted and rebuilt; COMPILE_ONLY fills the cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401

from flydsl.compiler.cache import _checksum

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = """
import json, sys
import numpy as np
import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Tensor

@flyc.kernel
def vadd(a: Tensor, b: Tensor, c: Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        c[i] = a[i] + b[i]

@flyc.jit
def launch(a, b, c, n: fx.Int32):
    vadd(a, b, c, n).launch(grid=((n + 63) // 64, 1, 1), block=(64, 1, 1))

n = 300
a = np.arange(n, dtype=np.float32)
b = np.full(n, 0.5, np.float32)
c = np.zeros(n, np.float32)
r = launch(a, b, c, n)
info = launch.cache_info()
print(json.dumps({"ok": bool(np.array_equal(c, a + b)), "none": r is None, "compiles": launch.compiles,
                  "misses": info.misses, "disk": info.disk_size}))
"""


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(PROGRAM))
    cache = tmp_path / "cache"

    def run(**env):
        e = {k: v for k, v in os.environ.items() if not k.startswith("FLYDSL_") and k not in ("COMPILE_ONLY", "ARCH")}
        e.update(FLYDSL_RUNTIME_KIND="cpu", FLYDSL_RUNTIME_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
        e.update(env)
        p = subprocess.run([sys.executable, str(path)], env=e, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])

    run.cache = cache
    return run


def entries(cache) -> list:
    return sorted(p for p in cache.rglob("*.json") if not p.name.startswith("."))


def test_second_process_launches_from_disk(program):
    first = program()
    assert first == {"ok": True, "none": True, "compiles": 1, "misses": 1, "disk": 1}
    second = program()
    assert second == {"ok": True, "none": True, "compiles": 0, "misses": 1, "disk": 1}
    (entry,) = entries(program.cache)
    body = json.loads(entry.read_text())["body"]
    assert body["host"] == "launch" and list(body["kernels"]) == ["vadd_0"]
    assert '"gpu.launch_func"' in body["ir"] and 'loc("' in body["ir"]


# -- in-process: a fresh jit function object has an empty in-memory cache, like a new process -------------


def make_launch():
    @flyc.kernel
    def scale(a: Tensor, c: Tensor):
        i = fx.thread_idx.x
        c[i] = a[i] * 2

    @flyc.jit
    def launch(a, c):
        scale(a, c).launch(grid=1, block=8)

    return launch


@pytest.fixture
def disk(request, tmp_path, monkeypatch):
    request.getfixturevalue("cpu_device")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "1")
    cache = tmp_path / "cache"

    def run():
        a, c = np.arange(8, dtype=np.int32), np.zeros(8, np.int32)
        launch = make_launch()
        launch(a, c)
        assert c.tolist() == (a * 2).tolist()
        return launch

    run.cache = cache
    return run


@pytest.mark.parametrize("damage", ["truncate", "checksum", "garbage", "bad_ir", "empty"])
def test_damaged_entries_are_rebuilt(disk, damage):
    assert disk().compiles == 1
    assert disk().compiles == 0
    (entry,) = entries(disk.cache)
    text = entry.read_text()
    if damage == "truncate":
        entry.write_text(text[: len(text) // 2])
    elif damage == "checksum":
        d = json.loads(text)
        d["body"]["host"] = "something_else"
        entry.write_text(json.dumps(d))
    elif damage == "garbage":
        entry.write_bytes(b"\x00\xff not json")
    elif damage == "empty":
        entry.write_text("")
    else:  # a valid checksum over IR that does not parse: still never loaded
        d = json.loads(text)
        d["body"]["ir"] = "module { this is not IR }"
        d["checksum"] = _checksum(d["body"])
        entry.write_text(json.dumps(d))
    assert disk().compiles == 1
    (entry,) = entries(disk.cache)
    assert json.loads(entry.read_text())["body"]["host"] == "launch"
    assert disk().compiles == 0


def test_compile_only_fills_the_cache_without_running(disk, monkeypatch):
    monkeypatch.setenv("COMPILE_ONLY", "1")
    launch = make_launch()
    c = np.zeros(8, np.int32)
    assert launch(np.ones(8, np.int32), c) is None and c.tolist() == [0] * 8
    (entry,) = entries(disk.cache)
    assert ".entry scale_0" in json.loads(entry.read_text())["body"]["ptx"]
    monkeypatch.delenv("COMPILE_ONLY")
    assert disk().compiles == 0


def test_cache_off_and_dump_bypass(disk, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    assert disk().cache_info().disk_size is None and not disk.cache.exists()
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "1")
    assert disk().compiles == 1
    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    assert disk().compiles == 1  # dumps always compile (and rewrite the entry)
    monkeypatch.delenv("FLYDSL_DUMP_IR")
    assert disk().compiles == 0


def test_a_lazy_artifact_parses_the_host_function_alone(disk, monkeypatch):
    """What a GPU process loads from disk: the host function (a few ops) at once, the kernels' IR only when
    something asks for it — and then the same module as an eager load (a cached start, issue 11)."""
    from flydsl.compiler.artifact import Artifact
    from flydsl.ir import print_op

    monkeypatch.setenv("COMPILE_ONLY", "1")  # device code (PTX) in the entry, as on a GPU host
    make_launch()(np.ones(8, np.int32), np.zeros(8, np.int32))
    (entry,) = entries(disk.cache)
    body = json.loads(entry.read_text())["body"]
    assert body["ptx"] and '"func.func"' in body["host_ir"] and '"gpu.func"' not in body["host_ir"]
    lazy, eager = Artifact.from_body(body, lazy=True), Artifact.from_body(body)
    assert lazy._module is None  # nothing but the host function parsed yet
    # the generic form: every operand, attribute and type (the custom form of gpu.launch_func names the kernel's
    # gpu.module, which only the eager load's host function has around it)
    assert print_op(lazy.host_op(), generic=True) == print_op(eager.host_op(), generic=True)
    assert lazy._module is None
    assert print_op(lazy.kernel_op("scale_0")) == print_op(eager.kernel_op("scale_0"))  # parsed on demand
    assert lazy.to_body() == eager.to_body()
    assert Artifact.from_body(body, lazy=True).to_body()["ir"] == body["ir"]  # stored again as it was read
    body["ir"] = "module { this is not IR }"  # a lazy load never reads it until asked; an eager one refuses it
    Artifact.from_body(body, lazy=True).host_op()
    with pytest.raises(Exception):
        Artifact.from_body(body)
