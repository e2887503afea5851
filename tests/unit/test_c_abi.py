"""FlyDSL's C-ABI protocol (``__c_abi_spec__``) and ``CallState`` over flydsl's launcher: a tensor's slots
are the host parameters the launcher really takes (pointer, then the dynamic dims and strides at their
widths), 64-bit dynamic strides (FlyDSL's default) compute right, and a CallState built from the slots
launches exactly what the cached call launches (the CUDA launch path run to the driver's ctypes
boundary, ``StandInCudaDevice``)."""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401
from test_jit_fastpath import Driver

import flydsl.runtime.device as device_mod
from flydsl.compiler.abi import param_types
from flydsl.compiler.call_state import CallState, call_state
from flydsl.compiler.jit_function import CallState as FlyDSLCallState
from flydsl.compiler.protocol import c_abi_spec
from flydsl.compiler.specialize import convert_arg
from flydsl.expr.numeric import BFloat16, Float32, Int32, Int64, Uint8

pytestmark = pytest.mark.usefixtures("cpu_device")


def _host_params(adaptor) -> tuple[list, list]:
    """(host parameter types, ABI values) that the launcher gives ``adaptor`` (the specialization's view)."""
    key, vals = [], []
    convert_arg(adaptor, key, vals)
    return [str(t) for t in param_types(key[0])], vals


@pytest.mark.parametrize("wide", [True, False])
@pytest.mark.parametrize(
    "make",
    [
        lambda a: flyc.from_dlpack(a).mark_layout_dynamic(),
        lambda a: flyc.from_dlpack(a).mark_shape_dynamic(0).mark_stride_dynamic([0, 1]),
        lambda a: flyc.from_dlpack(a).mark_stride_dynamic(1),
        lambda a: flyc.from_dlpack(a),
    ],
)
def test_a_tensors_slots_are_the_host_parameters_the_launcher_takes(make, wide):
    a = np.zeros((4, 6, 8), np.float32).transpose(1, 0, 2)  # strides (8, 48, 1)
    t = make(a)
    t.use_32bit_stride = not wide
    types, vals = _host_params(t)
    slots = t.__c_abi_spec__()
    assert types[0].startswith("!fly.ptr") and slots[0][0] is ctypes.c_void_p
    ptr = slots[0][0]()
    slots[0][1](t, ptr)
    assert ptr.value == a.ctypes.data == vals[0].ptr
    if len(types) == 1:
        assert len(slots) == 1  # a static layout: the pointer only
        return
    fmt = "<" + "".join({"i32": "i", "i64": "q"}[x] for x in types[1:])
    buf_type, fill = slots[1]
    assert ctypes.sizeof(buf_type) == struct.calcsize(fmt)  # same count, order and widths
    buf = buf_type()
    fill(a, buf)  # the raw array of the same layout fills it as the adaptor does
    assert list(struct.unpack(fmt, bytes(buf))) == vals[1:]
    assert ("i64" in types) == (wide and bool(t.stride_dyn_indices))


def test_scalars_slots():
    for cls, ctype, v, want in [
        (Int32, ctypes.c_int32, -7, -7),
        (Int64, ctypes.c_int64, 1 << 40, 1 << 40),
        (Uint8, ctypes.c_uint8, 255, 255),
        (Float32, ctypes.c_float, 1.5, 1.5),
        (BFloat16, ctypes.c_uint16, 1.0, 0x3F80),
    ]:
        ((ct, fill),) = cls(0).__c_abi_spec__()
        s = ct()
        fill(cls(v), s)
        assert ct is ctype and s.value == want
    assert c_abi_spec(3)[0][0] is ctypes.c_int32 and c_abi_spec(1 << 40)[0][0] is ctypes.c_int64
    with pytest.raises(TypeError, match="Cannot derive C-ABI spec"):
        c_abi_spec(object())


def test_call_state_fills_in_place_per_thread():
    assert FlyDSLCallState is CallState
    seen = []

    def func_exe(packed):
        seen.append((ctypes.c_int32.from_address(packed[0]).value, ctypes.c_void_p.from_address(packed[1]).value))

    cs = CallState([(0, *Int32(0).__c_abi_spec__()[0]), (-1, ctypes.c_void_p, None)], func_exe)
    for k in range(3):
        cs((k,))
    assert seen == [(0, None), (1, None), (2, None)]
    import threading

    th = threading.Thread(target=cs, args=((9,),))
    th.start()
    th.join()
    assert seen[-1] == (9, None) and len(cs.slot_specs) == 2


@flyc.kernel
def scale_rows(a: Tensor, b: Tensor, k: fx.Int32):
    i, j = fx.block_idx.x, fx.thread_idx.x
    b[i, j] = a[i, j] * k


@flyc.jit
def launch_scale(a, b, k: fx.Int32, m: fx.Constexpr[int], n: fx.Constexpr[int]):
    scale_rows(a, b, k).launch(grid=m, block=n)


def test_64_bit_strides_compute_right_on_the_interpreter():
    launch_scale.clear_cache()
    a = np.arange(48, dtype=np.float32).reshape(6, 8)
    for use32 in (True, False):
        b = np.zeros((8, 6), np.float32).T  # strides (1, 6): the leading dim is 0
        ta = flyc.from_dlpack(a, use_32bit_stride=use32).mark_layout_dynamic()
        tb = flyc.from_dlpack(b, use_32bit_stride=use32).mark_layout_dynamic()
        launch_scale(ta, tb, 3, 6, 8)
        assert np.array_equal(b, a * 3)
    assert launch_scale.cache_info().currsize == 2  # the stride width is part of the key


def test_a_call_state_launches_what_the_cached_call_launches(monkeypatch):
    d = Driver(["ptr", "i32", "i32", "i64", "ptr", "i32", "i32", "i32", "i32"])
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    monkeypatch.setattr(device_mod, "_DEVICES", {"cuda": device_mod.StandInCudaDevice(d.call)})
    launch_scale.clear_cache()
    a = np.arange(48, dtype=np.float32).reshape(6, 8)
    b = np.zeros((6, 8), np.float32)
    ta = flyc.from_dlpack(a).mark_layout_dynamic()  # 64-bit strides: i32 dims, one i64 stride
    launch_scale(ta, b, 5, 6, 8)
    cached = d.decoded()
    cs = call_state(launch_scale, ta, b, 5, 6, 8)
    cs((ta, b, 5, 6, 8))
    assert d.decoded() == cached
    a2, b2 = np.ones((6, 16), np.float32)[:, :8], np.zeros((6, 8), np.float32)  # other pointers and strides
    t2 = flyc.from_dlpack(a2).mark_layout_dynamic()
    cs((t2, b2, 7, 6, 8))
    via_cs = d.decoded()
    launch_scale(t2, b2, 7, 6, 8)
    assert d.decoded() == via_cs and via_cs[4][0] == a2.ctypes.data and via_cs[4][3] == 16


def test_a_call_state_needs_the_cuda_device():
    with pytest.raises(RuntimeError, match="needs the CUDA device"):
        call_state(launch_scale, np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32), 1, 2, 2)


def test_a_raw_tensor_with_a_stride_past_32_bits_gets_64_bit_strides():
    try:
        big = np.zeros((3, (1 << 31) + 64), np.int8)  # 6 GiB of address space; only the touched pages are used
    except MemoryError:
        pytest.skip("cannot reserve 6 GiB of address space here")
    big[:, :64] = np.arange(64, dtype=np.int8)
    big[2, :64] += 2
    view = big[:, :64]  # strides (2^31 + 64, 1): row 2 starts past 2^32 bytes
    out = np.zeros((3, 64), np.int8)
    launch_scale.clear_cache()
    misses = launch_scale.cache_info().misses
    launch_scale(view, out, 3, 3, 64)
    assert np.array_equal(out, view * 3)
    (key,) = launch_scale._mem
    assert key[0] == ("a", key[0][1]) and key[0][1][-1] == 64  # ("a", key part): its 64-bit form
    small = np.zeros((3, 64), np.int8)
    launch_scale(small, out, 3, 3, 64)  # fits 32 bits: the usual specialization
    assert launch_scale.cache_info().misses == misses + 2
