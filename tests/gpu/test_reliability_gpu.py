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


def test_a_launch_out_of_registers_explains_itself_on_the_gpu():
    """A 1024-thread kernel compiled under ``.maxnreg 255`` (LayerNorm f32 65536's one-row plan: ptxas gives it 128
    registers) cannot launch — CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES — and the error says why and which cap fits
    (flydsl/runtime/cuda.launch_detail; session 22's few-rows kernels failed so before the cap rule)."""
    from benchmarks.cases.norm_sweep import KERNELS

    build, args, _ = KERNELS["layernorm"]
    f = build(65536, "f32", {"shape_defaults": False, "cache_hint": "cs", "max_registers": 255, "tail_cols": 0})
    x, w = torch.randn(3, 65536, device="cuda"), torch.rand(65536, device="cuda")
    with pytest.raises(Exception) as e:
        f(*args(x, w), 3)
        torch.cuda.synchronize()
    text = str(e.value)
    assert "LAUNCH_OUT_OF_RESOURCES" in text or "out of resources" in text.lower(), text
    assert "registers per thread: a block of 1024 threads does not fit" in text and "cap its registers at 64" in text
    y = torch.zeros(16, device="cuda")
    launch(torch.ones(16, device="cuda"), y, 16)  # the context is still good
    torch.cuda.synchronize()
    assert torch.equal(y, torch.full((16,), 2.0, device="cuda"))
