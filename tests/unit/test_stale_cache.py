"""Never stale: every piece of mutable state a kernel reads is in the cache key, by value, in memory and on
disk; cached IR carries the locations of the current source (docs/reliability.md, "never stale")."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import textwrap
import types
from typing import NamedTuple

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401

from flydsl.compiler import FlyDSLError, GlobalChangedError
from flydsl.compiler.deps import TRACKED_MAX

pytestmark = pytest.mark.usefixtures("cpu_device")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TABLE = np.array([1, 2, 3, 4], np.int32)
LONG = list(range(100))  # longer than the 64 items that used to be the limit of in-place tracking
CFG = types.SimpleNamespace(add=5, unread=[0] * (2 * TRACKED_MAX))  # attributes the kernel never reads: ignored
NESTED = {"inner": types.SimpleNamespace(scale=[2])}


class Knobs:
    add = 7


@flyc.kernel
def reads_state(out: Tensor):
    tid = fx.thread_idx.x
    out[tid] = tid + TABLE[0] + LONG[99] + CFG.add + Knobs.add + NESTED["inner"].scale[0]


@flyc.jit
def launch_state(out):
    reads_state(out).launch(grid=1, block=4)


def _run():
    out = np.zeros(4, np.int32)
    launch_state(out)
    return out.tolist()


EDITS = pytest.mark.parametrize(
    "edit, undo, delta, name",
    [
        (lambda: TABLE.__setitem__(0, 101), lambda: TABLE.__setitem__(0, 1), 100, "TABLE"),
        (lambda: LONG.__setitem__(99, 1099), lambda: LONG.__setitem__(99, 99), 1000, "LONG"),
        (lambda: setattr(CFG, "add", 10005), lambda: setattr(CFG, "add", 5), 10000, "CFG"),
        (lambda: setattr(Knobs, "add", 100007), lambda: setattr(Knobs, "add", 7), 100000, "Knobs"),
        (lambda: NESTED["inner"].scale.__setitem__(0, 3), lambda: NESTED["inner"].scale.__setitem__(0, 2), 1, "NESTED"),
    ],
    ids=["numpy-array", "long-list", "namespace-attr", "class-attr", "nested"],
)  # fmt: skip


@EDITS
def test_editing_state_in_place_is_fly229_by_default(edit, undo, delta, name):
    """FlyDSL's rule: a compile-time value changed since the kernel was compiled with it is an error naming it
    (at the line that reads it) — the old kernel never runs with the new value; changed back, it runs."""
    base = [1 + 99 + 5 + 7 + 2 + t for t in range(4)]
    assert _run() == base
    edit()
    try:
        with pytest.raises(GlobalChangedError) as ei:
            _run()
        e = ei.value
        assert e.diag_id == "FLY229" and isinstance(e, RuntimeError)
        assert f"global '{name}' of module '{__name__}'" in e.message and "launch_state" in e.message
        assert e.loc[0] == __file__ and "out[tid] = tid + TABLE[0]" in str(e)  # the line that reads it
        assert "argument" in e.fix and "clear_cache()" in e.fix and "FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE" in e.fix
        with pytest.raises(GlobalChangedError):  # and the disk key is not computed from it either
            launch_state.cache_key(np.zeros(4, np.int32))
    finally:
        undo()
    assert _run() == base


@EDITS
def test_editing_state_in_place_recompiles(edit, undo, delta, name, monkeypatch):
    """With FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE=1 the edit recompiles with the new value, in memory and on disk."""
    monkeypatch.setenv("FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE", "1")
    base = [1 + 99 + 5 + 7 + 2 + t for t in range(4)]
    assert _run() == base
    key = launch_state.cache_key(np.zeros(4, np.int32))
    edit()
    try:
        assert _run() == [b + delta for b in base]  # not the kernel compiled with the old value
        assert launch_state.cache_key(np.zeros(4, np.int32)) != key  # and not the disk entry either
    finally:
        undo()
    assert _run() == base and launch_state.cache_key(np.zeros(4, np.int32)) == key


def test_unchanged_state_keeps_the_cache():
    _run()
    misses = launch_state.cache_info().misses
    for _ in range(3):
        _run()
    assert launch_state.cache_info().misses == misses


def test_int_float_bool_edits_are_distinguished(monkeypatch):
    vals = [1]

    @flyc.kernel
    def k(out: Tensor):
        out[0] = fx.Float32(vals[0]) if isinstance(vals[0], float) else fx.Float32(2.0)

    @flyc.jit
    def launch(out):
        k(out).launch(grid=1, block=1)

    out = np.zeros(1, np.float32)
    launch(out)
    assert out[0] == 2.0
    vals[0] = 1.0  # equal to 1 in Python, but a different program
    with pytest.raises(GlobalChangedError, match=r"closure variable 'vals' .*: \[1\] -> \[1\.0\]"):
        launch(out)
    monkeypatch.setenv("FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE", "1")
    launch(out)
    assert out[0] == 1.0


BIG = list(range(TRACKED_MAX + 1))


@flyc.kernel
def reads_big(out: Tensor):
    out[0] = BIG[0]


@flyc.jit
def launch_big(out):
    reads_big(out).launch(grid=1, block=1)


def test_too_large_mutable_state_is_a_clear_error():
    with pytest.raises(FlyDSLError) as ei:
        launch_big(np.zeros(1, np.int32))
    e = ei.value
    assert e.diag_id == "FLY219" and isinstance(e, ValueError)
    assert e.loc[0] == __file__ and "out[0] = BIG[0]" in str(e)  # the line that reads it
    assert "'BIG' is read by 'reads_big'" in e.message and f"more than {TRACKED_MAX}" in e.message
    assert "tuple" in e.fix and "argument" in e.fix


BIG_TUPLE = tuple(range(TRACKED_MAX + 1))  # immutable: hashed once, any size


def test_large_immutable_state_is_fine():
    @flyc.kernel
    def k(out: Tensor):
        out[0] = BIG_TUPLE[-1]

    @flyc.jit
    def launch(out):
        k(out).launch(grid=1, block=1)

    out = np.zeros(1, np.int32)
    launch(out)
    assert out[0] == TRACKED_MAX


class Op:
    scale = 1

    def __init__(self):
        self.offsets = [10, 20]  # a list attribute: used to make the key unhashable

    @flyc.jit
    def __call__(self, out):
        add_kernel(out, self.offsets[0] + self.scale).launch(grid=1, block=4)


@flyc.kernel
def add_kernel(out: Tensor, add: fx.Constexpr[int]):
    out[fx.thread_idx.x] = fx.thread_idx.x + add


def test_method_launcher_self_by_value():
    op, out = Op(), np.zeros(4, np.int32)
    op(out)
    assert out.tolist() == [11, 12, 13, 14]
    op.offsets[0] = 100
    op(out)
    assert out.tolist() == [101, 102, 103, 104]
    Op.scale = 1000
    try:
        op(out)
        assert out.tolist() == [1100, 1101, 1102, 1103]
    finally:
        Op.scale = 1


# -- across processes: the disk cache -------------------------------------------------------------

PROGRAM = """
{pad}import json, sys, types
import numpy as np
import flydsl.compiler as flyc
import flydsl.expr as fx

TABLE = np.array([{value}, 0], np.int32)
CFG = types.SimpleNamespace(add={value})

@flyc.kernel
def k(out: fx.Tensor):
    tid = fx.thread_idx.x
    out[tid] = tid + TABLE[0] + CFG.add
    out[tid + 100] = 0  # an out-of-bounds store: the interpreter reports this line

@flyc.jit
def launch(out):
    k(out).launch(grid=1, block=4)

try:
    launch(np.zeros(4, np.int32))
except Exception as e:
    print(json.dumps({{"where": str(e).split(": error", 1)[0], "compiles": launch.compiles}}))
"""


@pytest.fixture
def write_and_run(tmp_path):
    cache = tmp_path / "disk"

    def run(name: str, value: int, pad: int = 0) -> dict:
        path = tmp_path / name
        path.write_text(textwrap.dedent(PROGRAM).format(pad="\n" * pad, value=value))
        e = {k: v for k, v in os.environ.items() if not k.startswith("FLYDSL_") and k not in ("COMPILE_ONLY", "ARCH")}
        e.update(FLYDSL_RUNTIME_KIND="cpu", FLYDSL_RUNTIME_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
        p = subprocess.run([sys.executable, str(path)], env=e, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])

    return run


def test_disk_cache_follows_values_and_locations(write_and_run, tmp_path):
    first = write_and_run("prog.py", 1)
    assert first["compiles"] == 1 and first["where"] == f"{tmp_path}/prog.py:14:5"
    assert write_and_run("prog.py", 1)["compiles"] == 0  # the same program: served from disk
    assert write_and_run("prog.py", 2)["compiles"] == 1  # a global array/namespace edited in the file
    moved = write_and_run("prog.py", 2, pad=3)  # lines inserted above the kernel
    assert moved["compiles"] == 1 and moved["where"] == f"{tmp_path}/prog.py:17:5"
    copied = write_and_run("moved.py", 2, pad=3)  # the same file under another name
    assert copied["compiles"] == 1 and copied["where"] == f"{tmp_path}/moved.py:17:5"


def test_extra_source_dirs_content_enters_the_disk_key(tmp_path, monkeypatch):
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "tables.py").write_text("SCALE = 1\n")
    monkeypatch.setenv("FLYDSL_EXTRA_SOURCE_DIRS", str(extra))
    out = np.zeros(4, np.int32)
    k1 = launch_state.cache_key(out)
    (extra / "tables.py").write_text("SCALE = 2\n")  # same variable value: only the file changed
    assert launch_state.cache_key(out) != k1


# -- configurations held in NamedTuples, __slots__ objects, helpers reached through methods ----------------
# (the preshuffle GEMM built one launcher per GemmConfig NamedTuple: the config froze to nothing, so two
# epilogues of one shape shared a disk entry and the second was served the first's kernel)


class NtCfg(NamedTuple):
    add: int
    mode: str = "plus"


LibCfg = collections.namedtuple("LibCfg", "add", module="collections")  # a library's class, not the user's


class SlotCfg:
    __slots__ = ("add",)

    def __init__(self, add):
        self.add = add


HELPER_ADD = 3


def helper_add(v):
    return v + HELPER_ADD


class Epi:
    """A user class whose method calls a module helper that reads a global: only the method reaches it."""

    def finish(self, v):
        return helper_add(v)


def _build(cfg):
    @flyc.kernel
    def k(out: Tensor):
        tid = fx.thread_idx.x
        v = tid + cfg.add
        if getattr(cfg, "mode", "plus") == "minus":
            v = tid - cfg.add
        out[tid] = Epi().finish(v)

    @flyc.jit
    def launch(out):
        k(out).launch(grid=1, block=4)

    return launch


@pytest.mark.parametrize(
    "make, a, b",
    [(NtCfg, (1,), (2,)), (NtCfg, (1,), (1, "minus")), (LibCfg, (1,), (2,)), (SlotCfg, (1,), (2,))],
    ids=["namedtuple-int", "namedtuple-str", "library-namedtuple", "slots"],
)
def test_config_objects_enter_the_disk_key(make, a, b, monkeypatch):
    out = np.zeros(4, np.int32)
    a, a_again, b = make(*a), make(*a), make(*b)
    assert _build(a).cache_key(out) == _build(a_again).cache_key(out)  # by content, not identity
    assert _build(a).cache_key(out) != _build(b).cache_key(out)
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "1")  # one disk cache: each build gets its own kernel
    for cfg in (a, b):
        _build(cfg)(out)
        sign = -1 if getattr(cfg, "mode", "plus") == "minus" else 1
        assert out.tolist() == [t + sign * cfg.add + HELPER_ADD for t in range(4)]


def test_helpers_reached_through_methods_enter_the_key(monkeypatch):
    global HELPER_ADD
    monkeypatch.setenv("FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE", "1")
    out = np.zeros(4, np.int32)
    launch = _build(NtCfg(1))
    key = launch.cache_key(out)
    HELPER_ADD = 30
    try:
        assert launch.cache_key(out) != key
        launch(out)
        assert out.tolist() == [t + 1 + 30 for t in range(4)]
    finally:
        HELPER_ADD = 3
    assert launch.cache_key(out) == key


class Offset:
    """A configuration object whose methods read its attributes (``self.add``): the code names only the method."""

    def __init__(self, add):
        self.add = add

    def value(self, v):
        return v + self.add


def _build_with(obj):
    @flyc.kernel
    def k(out: Tensor):
        tid = fx.thread_idx.x
        out[tid] = obj.value(tid)

    @flyc.jit
    def launch(out):
        k(out).launch(grid=1, block=4)

    return launch


def test_attributes_read_by_an_instances_methods_enter_the_key(monkeypatch):
    """An instance in a closure: its class's methods are walked as a class named in the code is, so what they read
    through ``self`` enters the key (it did not: a builder's object holding a launch option served another
    option's cached launcher from the disk)."""
    out = np.zeros(4, np.int32)
    assert _build_with(Offset(1)).cache_key(out) == _build_with(Offset(1)).cache_key(out)
    assert _build_with(Offset(1)).cache_key(out) != _build_with(Offset(2)).cache_key(out)
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "1")  # one disk cache: each build gets its own kernel
    for add in (1, 2):
        _build_with(Offset(add))(out)
        assert out.tolist() == [t + add for t in range(4)]


class OffsetWithTable(Offset):
    """The same, also holding an array larger than the tracked limit that only a host-side method reads."""

    def __init__(self, add):
        super().__init__(add)
        self.table = np.zeros(TRACKED_MAX + 1, np.float32)

    def host_total(self):
        return float(self.table.sum())


def test_a_large_attribute_only_a_method_names_is_left_out():
    """Walking an instance's methods must not turn an attribute the trace never reads into a FLY219 (too large to
    track): attributes only the methods name are left out when too large; the ones they read stay in the key."""
    out = np.zeros(4, np.int32)
    _build_with(OffsetWithTable(3))(out)
    assert out.tolist() == [t + 3 for t in range(4)]
    assert _build_with(OffsetWithTable(3)).cache_key(out) != _build_with(OffsetWithTable(4)).cache_key(out)


_MEMO: dict = {}
_BIG_TABLE = np.zeros(TRACKED_MAX + 1, np.float32)


class OffsetWithHelpers(Offset):
    """The same, with host-side methods that fill a module-level memo and read a large module-level table."""

    def describe(self, key):
        _MEMO[key] = f"{self.add}-{key}"
        return _MEMO[key]

    def host_total(self):
        return float(_BIG_TABLE.sum())


def test_globals_only_an_instances_methods_read_are_not_watched():
    """Walking an instance's methods must not turn what only its host-side methods read into an error: a module
    memo filled between calls is not a FLY229, a large module table not a FLY219 (both ran before the methods were
    walked); they enter the key where they can be frozen."""
    out = np.zeros(4, np.int32)
    cfg = OffsetWithHelpers(2)
    launch = _build_with(cfg)
    launch(out)
    cfg.describe("a")
    launch(out)
    assert out.tolist() == [t + 2 for t in range(4)]
    assert _build_with(OffsetWithHelpers(2)).cache_key(out) != _build_with(OffsetWithHelpers(5)).cache_key(out)
