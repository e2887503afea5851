"""docs/reliability.md on the GPU: the checks that guard a CUDA launch (view extents, run-time grids,
scalar ranges) and the ``llvm_options`` hint applied to real PTX that the driver loads and runs."""

from __future__ import annotations

import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.compiler import FlyDSLError

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def on_cuda(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH"):
        monkeypatch.delenv(v, raising=False)


@flyc.kernel
def axpy(x: fx.Tensor, y: fx.Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        y[i] = 2.0 * x[i] + y[i]


@flyc.jit
def launch(x, y, n: fx.Int32):
    axpy(x, y, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def test_cuda_view_past_its_storage_is_refused_before_launch():
    base = torch.arange(1024, dtype=torch.float32, device="cuda")
    y = torch.zeros(256, device="cuda")
    launch(base.as_strided((256,), (1,), 768), y, 256)  # inside: runs
    torch.cuda.synchronize()
    assert torch.equal(y, 2 * torch.arange(768, 1024, dtype=torch.float32, device="cuda"))
    v = base.as_strided((256,), (1,), 0)
    base.untyped_storage().resize_(512)  # the view now reaches past the storage
    with pytest.raises(FlyDSLError) as ei:
        launch(v, y, 256)
    assert ei.value.diag_id == "FLY223"


def test_cuda_empty_grid_and_inexact_scalar_are_errors():
    x, y = torch.ones(16, device="cuda"), torch.zeros(16, device="cuda")
    with pytest.raises(FlyDSLError) as ei:
        launch(x, y, 0)  # (0 + 127) // 128 = 0 blocks
    assert ei.value.diag_id == "FLY222" and ".launch(grid=" in str(ei.value)
    with pytest.raises(FlyDSLError) as ei:
        launch(x, y, 2**32 + 16)
    assert ei.value.diag_id == "FLY221"


def test_llvm_options_hint_compiles_and_runs_on_the_gpu():
    @flyc.jit
    def hinted(x, y, n: fx.Int32):
        axpy(x, y, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))

    hinted.compile_hints["llvm_options"] = {"enable-post-misched": False, "lsr-drop-solution": True}
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, device="cuda")
    hinted(x, y, 1000)
    torch.cuda.synchronize()
    assert torch.equal(y, 2 * x + 1)
