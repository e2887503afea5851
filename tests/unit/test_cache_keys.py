"""The disk-cache key is complete (source of the kernel and its helpers, closure and global values,
specialization, target, codegen environment) and only that (an unrelated variable changes nothing)."""

from __future__ import annotations

import importlib
import linecache
import sys
import textwrap

import numpy as np
import pytest
from compiler_util import Constexpr, Tensor, cpu_device, flyc, fx  # noqa: F401

from flydsl.compiler.cache import canonical, compiler_hash, digest

pytestmark = pytest.mark.usefixtures("cpu_device")

MODULE = """
import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Tensor

BLOCK = 4

def helper(x):
    return x {op} 1

@flyc.kernel
def kern(out: Tensor):
    out[fx.thread_idx.x] = helper(fx.thread_idx.x)

@flyc.jit
def launch(out):
    kern(out).launch(grid=1, block=BLOCK)
"""


def load(tmp_path, name: str, op: str):
    """Write the module with ``helper`` using ``op`` and import it fresh."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(MODULE.format(op=op)))
    sys.modules.pop(name, None)
    linecache.checkcache(str(path))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def test_editing_a_helper_changes_the_key(tmp_path):
    out = np.zeros(4, np.int32)
    m1 = load(tmp_path, "cachemod_a", "+")
    k1 = m1.launch.cache_key(out)
    m2 = load(tmp_path, "cachemod_a", "+")  # the same source again: the same key
    assert m2.launch.cache_key(out) == k1
    m3 = load(tmp_path, "cachemod_a", "*")
    assert m3.launch.cache_key(out) != k1
    m3.launch(out)
    assert out.tolist() == [0, 1, 2, 3]


def test_global_constant_is_in_the_key_and_rebinding_recompiles(tmp_path, monkeypatch):
    monkeypatch.setenv("FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE", "1")  # (default: FLY229, test_stale_cache)
    m = load(tmp_path, "cachemod_b", "+")
    out = np.zeros(4, np.int32)
    k1 = m.launch.cache_key(out)
    m.launch(out)
    assert out.tolist() == [1, 2, 3, 4]
    m.BLOCK = 2
    assert m.launch.cache_key(out) != k1
    out[:] = 0
    m.launch(out)  # not the stale 4-thread kernel
    assert out.tolist() == [1, 2, 0, 0]
    assert m.launch.cache_info().misses == 2


def build(scale):
    @flyc.kernel
    def k(out: Tensor):
        out[0] = scale

    @flyc.jit
    def launch(out):
        k(out).launch(grid=1, block=1)

    return launch


def test_closure_values_are_in_the_key():
    out = np.zeros(1, np.int32)
    assert build(3).cache_key(out) == build(3).cache_key(out)
    assert build(3).cache_key(out) != build(5).cache_key(out)
    build(5)(out)
    assert out[0] == 5


def test_environment_codegen_variables_only(monkeypatch):
    launch = build(1)
    out = np.zeros(1, np.int32)
    base = launch.cache_key(out)
    monkeypatch.setenv("SOME_UNRELATED_VARIABLE", "1")
    monkeypatch.setenv("FLYDSL_DEBUG_LOG_LEVEL", "DEBUG")
    assert launch.cache_key(out) == base
    monkeypatch.setenv("FLYDSL_COMPILE_OPT_LEVEL", "3")
    opt3 = launch.cache_key(out)
    assert opt3 != base
    monkeypatch.setenv("ARCH", "sm_80")
    assert launch.cache_key(out) not in (base, opt3)


def test_specialization_parts_change_the_key():
    launch = build(1)
    a32, a16 = np.zeros(4, np.int32), np.zeros(4, np.int16)
    keys = {
        launch.cache_key(a32),
        launch.cache_key(a16),  # dtype
        launch.cache_key(np.zeros((2, 2), np.int32)),  # rank
        launch.cache_key(a32[1:]),  # alignment
        launch.cache_key(flyc.from_dlpack(a32)),  # static layout
        launch.cache_key(flyc.from_dlpack(np.zeros(8, np.int32))),  # another static shape
    }
    assert len(keys) == 6
    assert launch.cache_key(np.zeros(100, np.int32)) == launch.cache_key(a32)  # dynamic shapes share code


def test_canonical_form_is_process_independent():
    assert canonical((1, 1.5, True, "s", None, fx.Int32)) == [
        "seq",
        [
            ["int", "1"],
            ["float", "0x1.8000000000000p+0"],
            ["bool", True],
            "s",
            None,
            ["type", "flydsl.expr.numeric.Int32"],
        ],
    ]
    assert digest((1, True)) != digest((True, 1)) and digest(1) != digest(True)
    with pytest.raises(TypeError, match="no canonical form for object"):
        canonical(object())
    assert len(compiler_hash()) == 64 and compiler_hash() == compiler_hash()


CONFIG = {"scale": 2, "offsets": [1, 2]}


@flyc.kernel
def configured(out: Tensor):
    out[0] = CONFIG["scale"] * 10 + CONFIG["offsets"][-1]


@flyc.jit
def launch_configured(out):
    configured(out).launch(grid=1, block=1)


def test_editing_a_global_container_in_place_recompiles(monkeypatch):
    monkeypatch.setenv("FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE", "1")
    out = np.zeros(1, np.int32)
    launch_configured(out)
    assert out[0] == 22
    k = launch_configured.cache_key(out)
    CONFIG["offsets"].append(7)
    try:
        launch_configured(out)
        assert out[0] == 27 and launch_configured.cache_key(out) != k
    finally:
        CONFIG["offsets"].pop()


def test_the_fast_source_and_global_scans_match_inspect_and_dis():
    """deps' own readers (a cached start hashes a dozen functions: issue 11's < 100 ms) give what
    ``inspect.getsource`` (less trailing comments) and ``dis`` give, over the compiler and the GEMM kernels."""
    import dis
    import inspect
    import linecache
    import types

    from flydsl.compiler import code_source, deps
    from kernels.gemm import gemm_mma_sync, gemm_stream, gemm_wgmma

    funcs = [v for m in (deps, code_source, gemm_mma_sync, gemm_stream, gemm_wgmma) for v in vars(m).values()
             if isinstance(v, types.FunctionType) and v.__module__ == m.__name__]  # fmt: skip
    assert len(funcs) > 20
    for f in funcs:
        assert code_source._code_lines(f.__code__).rstrip() == inspect.getsource(f).rstrip(), f.__qualname__
        for c in code_source._codes(f.__code__):
            ref = list(dict.fromkeys(i.argval for i in dis.get_instructions(c) if i.opname in deps._LOADS))
            assert code_source._global_loads(c) == ref, c.co_name
    from flydsl.expr import irtypes, pointer
    from kernels.gemm import epilogue, gemm_config, streamk

    classes = [gemm_config.GemmConfig, epilogue.Epilogue, streamk.StreamK, deps._Walker, irtypes.Types,
               pointer.Pointer]  # fmt: skip
    for cls in classes:  # a NamedTuple, plain classes, properties attached after the class statement
        path, first, last = code_source._class_span(cls)
        text = "".join(linecache.getlines(path)[first - 1 : last])
        try:
            src, line = inspect.getsourcelines(cls)
        except OSError:  # a class inspect cannot find (a re-exported alias): ours still names its lines
            assert text.lstrip().startswith(("class ", "@")), cls
            continue
        assert (first, text.rstrip()) == (line, "".join(src).rstrip()), cls
