"""FlyDSL's jit internals that its tests and tools read: ``source_ir`` (the IR as traced) and the cache-key
methods (``_ensure_sig``, ``_resolve_and_make_cache_key``, ``_build_full_cache_key``)."""

from __future__ import annotations

import numpy as np
import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.compiler.artifact import Artifact
from flydsl.compiler.backends import GPUTarget, get_backend
from flydsl.compiler.kernel_function import CompilationContext


@flyc.kernel
def dead_math_kernel(out: fx.Tensor):
    x = fx.Float32(fx.thread_idx.x)
    _ = x * x + x  # unused: the passes drop it, the traced IR keeps it
    out[fx.thread_idx.x] = x


@flyc.jit
def launch_dead_math(out):
    dead_math_kernel(out).launch(grid=1, block=4)


def test_source_ir_is_the_traced_module_before_the_passes():
    out = np.zeros(4, np.float32)
    launch_dead_math(out)
    art = next(iter(launch_dead_math._mem_cache.values()))
    assert "arith.mulf" in art.source_ir and "arith.addf" in art.source_ir
    assert "arith.mulf" not in art.ir  # the compiled module: dead code removed
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert Artifact.from_body(art.to_body()).source_ir == art.source_ir  # kept in the disk cache too


@flyc.jit
def keyed(n: fx.Int32, c: fx.Constexpr[int], a: fx.Tensor, stream: fx.Stream = fx.Stream(None)):
    pass


def _key(jf, *args, full=False):
    jf._ensure_sig()
    bound = jf._sig.bind(*args)
    bound.apply_defaults()
    return (jf._build_full_cache_key if full else jf._resolve_and_make_cache_key)(bound.arguments)


def test_cache_key_pairs_follow_what_selects_code(monkeypatch):
    a = np.zeros(8, np.float32)
    k = _key(keyed, 1, 4, a)
    names = [n for n, _ in k]
    assert names == ["n", "c", "a", "stream", "_env_", "_hints_", "_target_"]
    assert ("n", (fx.Int32,)) in k and ("stream", (fx.Stream,)) in k
    assert _key(keyed, 2, 4, a, 0) == k  # run-time values and the stream's form do not select code
    assert _key(keyed, 1, 5, a) != k  # a Constexpr does
    assert _key(keyed, 1, 4, np.zeros(8, np.float16)) != k  # so does a tensor's dtype
    target = dict(k)["_target_"]
    assert isinstance(target, GPUTarget) and target == get_backend().target
    with CompilationContext.compile_hints({"fast_fp_math": True}):
        assert _key(keyed, 1, 4, a) != k  # hints enter the key
    monkeypatch.setenv("FLYDSL_COMPILE_OPT_LEVEL", "0")
    assert _key(keyed, 1, 4, a) != k  # so does the code-affecting environment
    full = _key(keyed, 1, 4, a, full=True)
    assert full[:-1] == _key(keyed, 1, 4, a) and full[-1] == ("_deps_", keyed.deps_hex())


@flyc.kernel
def add_one_kernel(x: fx.Tensor):
    x[fx.thread_idx.x] = x[fx.thread_idx.x] + 1.0


@flyc.jit
def add_one(x):
    add_one_kernel(x).launch(grid=1, block=x.shape[0])


def test_cpu_graph_records_launches_and_replays_them(monkeypatch):
    from flydsl.runtime import CpuGraph

    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    x = np.zeros(4, np.float32)
    add_one(x)  # compiled and run outside the capture
    g = CpuGraph()
    with g.capture():
        add_one(x)
        add_one(x)
    assert x.tolist() == [1.0] * 4 and len(g) == 2  # recorded, not run (as a CUDA graph capture)
    g.replay()
    assert x.tolist() == [3.0] * 4
    x[:] = 10.0  # replay reads the memory as it is then
    g.replay()
    assert x.tolist() == [12.0] * 4
    with g.capture(), pytest.raises(RuntimeError, match="already capturing"):
        with CpuGraph().capture():
            pass
    g.reset()
    g.replay()
    assert x.tolist() == [12.0] * 4
