"""FLY229 on the CUDA fast path: a compile-time global changed after the fast path registered its entry is
an error before anything launches (FlyDSL's rule), and with FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE=1 the GPU
computes with the new value; a method launcher's kernel method runs with ``self`` bound."""

from __future__ import annotations

import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.compiler import GlobalChangedError

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

GAIN = 2.0


@pytest.fixture(autouse=True)
def on_cuda(monkeypatch):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH", "FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE"):
        monkeypatch.delenv(v, raising=False)


@flyc.kernel
def scale(x: fx.Tensor, y: fx.Tensor):
    i = fx.thread_idx.x
    y[i] = x[i] * GAIN


@flyc.jit
def launch(x, y):
    scale(x, y).launch(grid=1, block=64)


@pytest.mark.parametrize("retrace", [False, True], ids=["default-raises", "opt-in-retrace"])
def test_changed_global_on_the_cuda_fast_path(monkeypatch, retrace):
    global GAIN
    launch.clear_cache()
    x, y = torch.ones(64, device="cuda"), torch.zeros(64, device="cuda")
    for _ in range(3):  # the third call takes the fast path
        launch(x, y)
    torch.cuda.synchronize()
    assert torch.all(y == 2.0) and launch.hits >= 1
    if retrace:
        monkeypatch.setenv("FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE", "1")
    GAIN = 3.0
    try:
        y.zero_()
        if retrace:
            launch(x, y)
            torch.cuda.synchronize()
            assert torch.all(y == 3.0)
        else:
            with pytest.raises(GlobalChangedError, match="global 'GAIN'"):
                launch(x, y)
            torch.cuda.synchronize()
            assert torch.all(y == 0.0)  # nothing ran
    finally:
        GAIN = 2.0
    launch.clear_cache()


class Program:
    @flyc.kernel
    def kernel(self, y: fx.Tensor, v: fx.Int32):
        y[fx.thread_idx.x] = fx.Float32(v)

    @flyc.jit
    def run(self, y: fx.Tensor, v: fx.Int32):
        self.kernel(y, v).launch(grid=1, block=32)


def test_method_launcher_runs_its_kernel_method_on_the_gpu():
    y = torch.zeros(32, device="cuda")
    p = Program()
    for v in (7, 8):
        p.run(y, v)
        torch.cuda.synchronize()
        assert torch.all(y == float(v))
    key, _ = Program.run._last_compiled
    assert key[0] == ("_self_type_", Program)
