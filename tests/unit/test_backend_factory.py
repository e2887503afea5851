"""FlyDSL's compile-backend factory (``flydsl.compiler.backends._make_backend``), the target a jit function
resolves with its signature, ``flyc.compile[hints]``'s hints, and weak references to compiled artifacts
(FlyDSL's names and uses)."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc  # noqa: F401

from flydsl.compiler.backends import BaseBackend, _make_backend, get_backend, register_backend

pytestmark = pytest.mark.usefixtures("cpu_device")


@flyc.kernel
def fill1(out: Tensor):
    out[0] = 1.0


@flyc.jit
def launch_fill1(out):
    fill1(out).launch(grid=1, block=1)


def test_backends_are_made_once_per_arch_and_follow_ARCH(monkeypatch):
    assert get_backend(arch="sm_90a") is get_backend(arch="sm_90a")  # made once
    assert get_backend(arch="gfx950").target.warp_size == 64
    monkeypatch.setenv("ARCH", "sm_80")
    assert get_backend().target.arch == "sm_80"
    jf = launch_fill1
    jf._backend_target = None
    jf._ensure_sig()
    assert jf._backend_target == get_backend().target
    args = {"out": np.zeros(1, np.float32)}
    k80 = dict(jf._resolve_and_make_cache_key(args))["_target_"]
    monkeypatch.setenv("ARCH", "sm_90a")
    _make_backend.cache_clear()
    assert dict(jf._resolve_and_make_cache_key(args))["_target_"] != k80  # each call's target


def test_registering_a_backend_replaces_the_made_ones():
    class Mine(BaseBackend):
        @property
        def target(self):
            return get_backend("nvptx", arch=self.arch).target

    register_backend("mine-test", Mine)
    assert isinstance(get_backend("mine-test", arch="sm_90a"), Mine)
    with pytest.raises(ValueError, match="already registered"):
        register_backend("mine-test", Mine)
    register_backend("mine-test", BaseBackend, force=True)
    assert type(get_backend("mine-test", arch="sm_90a")) is BaseBackend  # not the one made before


def test_compile_subscript_keeps_its_hints():
    c = flyc.compile[{"fast_fp_math": True}][{"maxnreg": 64}]
    assert c._compile_hints == {"fast_fp_math": True, "maxnreg": 64}
    assert flyc.compile[{"fastmath": "fast"}](launch_fill1).compile_hints == {"fastmath": "fast"}


def test_compiled_artifacts_can_be_weakly_referenced():
    """FlyDSL code (its cache-disabled regression test) holds a weak reference to the in-process artifact
    to see that the jit function keeps it alive."""
    import gc
    import weakref

    launch_fill1(np.zeros(1, np.float32))
    art = launch_fill1._last_compiled[1]
    ref = weakref.ref(art)
    del art
    gc.collect()
    assert ref() is launch_fill1._last_compiled[1]  # the jit function's cache keeps it
