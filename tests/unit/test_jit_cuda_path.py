"""The CUDA launch path without a GPU: a stand-in for flydsl.runtime.cuda records what the launcher asks
the driver to do (module image, entry names, parameter kinds, grid, block, stream, packed arguments)."""

from __future__ import annotations

import functools
import sys
import types

import numpy as np
import pytest
from compiler_util import Stream, Tensor, cpu_device, flyc, fx  # noqa: F401

import flydsl.runtime
import flydsl.runtime.device as device_mod
from flydsl.compiler import DSLValueError
from flydsl.compiler.specialize import CONVERTERS, _dynamic_tensor
from flydsl.runtime.args import TensorRef

pytestmark = pytest.mark.usefixtures("cpu_device")


class FakeCudaTensor:
    """A 1-D float32 'device' array at a fixed address."""

    def __init__(self, ptr: int, n: int):
        self.ptr, self.n = ptr, n


def _fake_tensor(x, key, vals):
    _dynamic_tensor(TensorRef(x, np.dtype(np.float32), x.ptr, (x.n,), (1,), True), key, vals)


@pytest.fixture
def fake_cuda(monkeypatch):
    log = {"modules": [], "kernels": [], "launches": []}

    class CudaModule:
        def __init__(self, image, device=0):
            log["modules"].append(image)

    class CudaKernel:
        def __init__(self, module, name, param_types, device=0):
            log["kernels"].append((name, list(param_types)))
            self.name = name

        def launch(self, grid, block, smem=0, stream=None, args=()):
            log["launches"].append((self.name, tuple(grid), tuple(block), smem, stream, list(args)))

    fake = types.ModuleType("flydsl.runtime.cuda")
    fake.CudaModule, fake.CudaKernel = CudaModule, CudaKernel
    fake.is_available = lambda: True
    fake.device_arch = lambda ordinal=0: "sm_90"
    monkeypatch.setitem(sys.modules, "flydsl.runtime.cuda", fake)
    monkeypatch.setattr(flydsl.runtime, "cuda", fake, raising=False)
    monkeypatch.setattr(device_mod, "cuda", fake)
    monkeypatch.setattr(device_mod, "_DEVICES", {})
    monkeypatch.setitem(CONVERTERS, FakeCudaTensor, _fake_tensor)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    return log


@flyc.kernel
def vadd(a: Tensor, b: Tensor, c: Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        c[i] = a[i] + b[i]


@flyc.jit
def launch(a, b, c, n: fx.Int32):
    vadd(a, b, c, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def test_launch_reaches_the_driver_with_packed_arguments(fake_cuda):
    a, b, c = FakeCudaTensor(0x10000, 1000), FakeCudaTensor(0x20000, 1000), FakeCudaTensor(0x30040, 1000)
    launch(a, b, c, 1000)
    launch(a, b, c, 300)
    (image,) = fake_cuda["modules"]
    assert ".entry vadd_0" in image and ".target sm_90a" in image
    assert fake_cuda["kernels"] == [("vadd_0", ["ptr", "i32", "ptr", "i32", "ptr", "i32", "i32"])]
    assert fake_cuda["launches"] == [
        ("vadd_0", (8, 1, 1), (128, 1, 1), 0, 0, [0x10000, 1000, 0x20000, 1000, 0x30040, 1000, 1000]),
        ("vadd_0", (3, 1, 1), (128, 1, 1), 0, 0, [0x10000, 1000, 0x20000, 1000, 0x30040, 1000, 300]),
    ]
    assert launch.cache_info().misses == 1


def test_explicit_stream_is_passed_through(fake_cuda):
    @flyc.jit
    def on_stream(a, b, c, n: fx.Int32, stream: Stream = None):
        vadd(a, b, c, n).launch(grid=1, block=128, stream=stream)

    t = FakeCudaTensor(0x40000, 8)
    on_stream(t, t, t, 8, 0x7777)
    assert fake_cuda["launches"][-1][4] == 0x7777


def test_host_memory_on_the_gpu_is_an_error(fake_cuda):
    t = FakeCudaTensor(0x40000, 8)
    with pytest.raises(DSLValueError) as ei:
        launch(t, np.zeros(8, np.float32), t, 8)
    assert (
        "error[FLY401]: argument 'b': a tensor in host (CPU) memory cannot be used by a kernel running on the "
        "cuda device" in str(ei.value)
    )


class FakeTorchCudaTensor(FakeCudaTensor):
    """Looks like a torch tensor to the launcher (the default stream then follows torch's current one)."""


FakeTorchCudaTensor.__module__ = "torch.fake"


def test_default_stream_follows_torchs_current_stream(fake_cuda, monkeypatch):
    monkeypatch.setitem(CONVERTERS, FakeTorchCudaTensor, _fake_tensor)
    current = [0x5151]  # torch's current stream (the real getter is torch's C function bound to the device)
    monkeypatch.setattr(device_mod, "_torch_stream_getter", lambda device: functools.partial(_current, current, device))

    @flyc.jit
    def with_default(a, b, c, n: fx.Int32, stream: fx.Stream = fx.Stream(None)):
        vadd(a, b, c, n).launch(grid=1, block=128, stream=stream)

    @flyc.jit
    def implicit(a, b, c, n: fx.Int32):
        vadd(a, b, c, n).launch(grid=1, block=128)

    t, u = FakeTorchCudaTensor(0x40000, 8), FakeCudaTensor(0x50000, 8)
    with_default(t, t, t, 8)  # FlyDSL's `stream: fx.Stream = fx.Stream(None)`
    implicit(t, t, t, 8)  # no stream parameter: the implicit one
    with_default(u, u, u, 8)  # no torch tensor: stream 0
    with_default(t, t, t, 8, stream=fx.Stream(0x99))  # an explicit stream wins
    current[0] = 0x6161  # another current stream: cached calls (the inlined entry) follow it
    with_default(t, t, t, 8)
    implicit(t, t, t, 8)
    assert with_default._dispatch.inlined and "_f_IDF(" in implicit._dispatch.source  # the getter unwrapped
    assert [entry[4] for entry in fake_cuda["launches"]] == [0x5151, 0x5151, 0, 0x99, 0x6161, 0x6161]


def _current(current: list, device: int) -> int:
    return current[0] + device


def test_every_default_stream_argument_is_resolved(fake_cuda, monkeypatch):
    """A launcher with two stream parameters both left to the default (FlyDSL's multi-stream test): each
    becomes the default stream's handle (only the last one was, and the other reached the driver as an
    object)."""
    monkeypatch.setitem(CONVERTERS, FakeTorchCudaTensor, _fake_tensor)
    monkeypatch.setattr(device_mod, "_torch_stream_getter", lambda device: lambda: 0x5151 + device)

    @flyc.jit
    def two(a, b, c, n: fx.Int32, s1: fx.Stream = fx.Stream(None), s2: fx.Stream = fx.Stream(None)):
        vadd(a, b, c, n).launch(grid=1, block=128, stream=s1)
        vadd(a, b, c, n).launch(grid=1, block=128, stream=s2)

    t = FakeTorchCudaTensor(0x40000, 8)
    two(t, t, t, 8)  # a miss: the launcher's own path
    two(t, t, t, 8)  # the cached call's generated path
    two(t, t, t, 8, s2=fx.Stream(0x99))
    assert [entry[4] for entry in fake_cuda["launches"]] == [0x5151, 0x5151, 0x5151, 0x5151, 0x5151, 0x99]


def test_a_launch_out_of_registers_says_why_and_what_to_do():
    """CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES from a block whose threads times the kernel's registers pass an SM's 65536
    (a 1024-thread kernel compiled under ``.maxnreg 255`` took 72): the error does the arithmetic and names the fix;
    other failures keep the launch's shape only."""
    from flydsl.runtime.cuda import CudaError, launch_detail

    detail = launch_detail(701, (140, 1, 1), (1024, 1, 1), 0, regs=72)
    assert detail.startswith("grid=(140, 1, 1) block=(1024, 1, 1) smem=0\n")
    assert "72 registers per thread: a block of 1024 threads does not fit an SM's 65536" in detail
    assert "cap its registers at 64" in detail and "max_registers" in detail and "fewer threads per block" in detail
    # per warp in units of 256, over four sub-partitions: 768 threads at 85 registers (88 a thread) do not fit
    # although 85 x 768 < 65536; 80 do
    assert "cap its registers at 80" in launch_detail(701, (1, 1, 1), (768, 1, 1), 0, regs=85)
    assert launch_detail(701, (1, 1, 1), (256, 1, 1), 0, regs=72) == "grid=(1, 1, 1) block=(256, 1, 1) smem=0"
    assert "registers" not in launch_detail(1, (1, 1, 1), (1024, 1, 1), 0, regs=72)  # another error
    assert "registers" not in launch_detail(701, (1, 1, 1), (1024, 1, 1), 0, regs=None)  # the driver could not say
    err = CudaError("cuLaunchKernel", 701, "layernorm_kernel_0", detail)
    assert "(kernel layernorm_kernel_0)" in str(err) and "cap its registers at 64" in str(err)


def test_the_registers_a_block_may_take():
    """CUDA's occupancy rule for registers on sm_80 / sm_90, which a kernel library's caps and the error above use."""
    from flydsl.dialects.capabilities import max_registers, registers_fit

    assert [max_registers(t) for t in (32, 256, 512, 768, 1000, 1024)] == [255, 255, 128, 80, 64, 64]
    assert registers_fit(64, 1024) and not registers_fit(65, 1024) and registers_fit(80, 768)
    assert not registers_fit(85, 768) and not registers_fit(65, 1000)  # (85 x 768 and 65 x 1000 are under 65536)
    assert all(registers_fit(max_registers(t), t) and not registers_fit(max_registers(t) + 8, t)
               for t in range(32, 1025, 32) if max_registers(t) < 255)  # fmt: skip
    assert fx.nvvm.max_registers(512) == 128


def test_the_blocks_an_sm_holds():
    """How many blocks of a size one SM holds by registers, threads and blocks (the norm tails' limit uses it)."""
    from flydsl.dialects.capabilities import blocks_per_sm, max_registers, registers_fit

    assert [blocks_per_sm(r, 512) for r in (64, 72, 128, 129)] == [2, 1, 1, 0]
    # (threads: 2048 per SM; blocks: 32)
    assert [blocks_per_sm(r, t) for r, t in ((94, 256), (40, 512), (32, 1024), (16, 32))] == [2, 3, 2, 32]
    assert blocks_per_sm(255, 64) == 2 and blocks_per_sm(24, 128) == 16  # (registers; 2048 threads)
    assert all(
        (blocks_per_sm(r, t) >= 1) == registers_fit(r, t) for t in range(32, 1025, 32) for r in range(16, 256, 8)
    )
    # (blocks of a multiple of 128 threads: a warp per sub-partition's share; the norm tails' blocks are such)
    assert all(blocks_per_sm(max_registers(2 * t), t) >= 2 for t in range(128, 1025, 128))
    assert fx.nvvm.blocks_per_sm(64, 512) == 2
    assert [blocks_per_sm(64, 0), blocks_per_sm(0, 512), blocks_per_sm(256, 32), blocks_per_sm(32, 2048)] == [0] * 4
