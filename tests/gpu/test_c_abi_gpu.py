"""64-bit dynamic strides (FlyDSL's default for adapted tensors) on the GPU with a stride past 2^31 elements,
and a CallState (FlyDSL's C-ABI dispatch) launching a specialization on the GPU."""

from __future__ import annotations

import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.compiler import FlyDSLError
from flydsl.compiler.call_state import call_state
from flydsl.expr.typing import Tensor

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.delenv("FLYDSL_RUNTIME_KIND", raising=False)


@flyc.kernel
def add_rows(a: Tensor, out: Tensor, k: fx.Int32):
    i, j = fx.block_idx.x, fx.thread_idx.x
    out[i, j] = a[i, j] + k


@flyc.jit
def launch_add(a, out, k: fx.Int32, m: fx.Constexpr[int], n: fx.Constexpr[int]):
    add_rows(a, out, k).launch(grid=m, block=n)


def test_a_row_stride_past_2_31_elements():
    big = torch.zeros((3, (1 << 31) + 64), dtype=torch.int8, device="cuda")  # 6 GiB
    big[:, :64] = torch.arange(64, dtype=torch.int8, device="cuda")
    big[1, :64] += 1
    big[2, :64] += 2
    view = big[:, :64]  # strides (2^31 + 64, 1)
    out = torch.zeros((3, 64), dtype=torch.int8, device="cuda")
    launch_add(flyc.from_torch_tensor(view).mark_layout_dynamic(), out, 5, 3, 64)
    torch.cuda.synchronize()
    assert torch.equal(out, view + 5)  # row 2 starts 2^32 + 128 bytes in: 64-bit offsets
    with pytest.raises(FlyDSLError, match="FLY"):  # 32-bit strides cannot hold it: an error, not a wrap
        launch_add(flyc.from_torch_tensor(view, use_32bit_stride=True).mark_layout_dynamic(), out, 5, 3, 64)
    del big


def test_a_call_state_launches_on_the_gpu():
    a = torch.arange(6 * 32, dtype=torch.float32, device="cuda").reshape(6, 32)
    out = torch.zeros_like(a)
    ta = flyc.from_torch_tensor(a).mark_layout_dynamic()
    cs = call_state(launch_add, ta, out, 2, 6, 32)
    cs((ta, out, 2, 6, 32))
    torch.cuda.synchronize()
    assert torch.equal(out, a + 2)
    a2 = torch.ones((6, 64), dtype=torch.float32, device="cuda")[:, :32]  # another pointer and row stride
    out2 = torch.zeros((6, 32), dtype=torch.float32, device="cuda")
    cs((flyc.from_torch_tensor(a2).mark_layout_dynamic(), out2, 4, 6, 32))
    torch.cuda.synchronize()
    assert torch.equal(out2, a2 + 4)


def test_a_raw_tensor_with_a_row_stride_past_2_31_elements():
    big = torch.zeros((3, (1 << 31) + 64), dtype=torch.int8, device="cuda")
    big[:, :64] = torch.arange(64, dtype=torch.int8, device="cuda")
    big[2, :64] += 2
    view = big[:, :64]
    out = torch.zeros((3, 64), dtype=torch.int8, device="cuda")
    launch_add(view, out, 5, 3, 64)  # a raw tensor: the 64-bit specialization (not FLY206)
    torch.cuda.synchronize()
    assert torch.equal(out, view + 5)
    del big
