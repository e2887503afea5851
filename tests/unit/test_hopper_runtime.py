"""TMA descriptors on the host: the launcher's host op builds the canonical record (cached per pointer,
extents and strides), the CUDA parameter packer encodes it once per record into the 128-byte by-value
parameter. The driver call itself needs a GPU (tests/gpu); here it is replaced by a recorder."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
import flydsl.runtime.device as device_mod
from flydsl.dialects import arith, gpu
from flydsl.dialects import func as dfunc
from flydsl.dialects import nvvm_sm90 as nv
from flydsl.dialects.nvvm_sm90 import TmaFields, tma_desc_decode, tma_desc_encode
from flydsl.interp import compile_host
from flydsl.ir import InsertionPoint, PointerType, SymbolRef, TmaDescType, new_module
from flydsl.ir import types as T
from flydsl.runtime import tma
from flydsl.runtime._cuda_params import ParamPack


@pytest.fixture
def recorder(monkeypatch):
    calls = []

    def fake(f: TmaFields) -> bytes:
        calls.append(f.key())
        return bytes((len(calls) + i) % 256 for i in range(128))

    monkeypatch.setattr(tma, "encode_fields", fake)
    monkeypatch.setattr(tma, "_CACHE", type(tma._CACHE)())
    return calls


def test_the_parameter_packer_encodes_each_record_once(recorder):
    f = TmaFields(0x7000_0000, 9, (4096, 512), (8192,), (64, 128), swizzle=128)
    pack = ParamPack(["tmap", "i32"])
    assert ctypes.sizeof(pack.slots[0]) == 128
    d = tma_desc_encode(f)
    for _ in range(3):
        pack.set([d, 5], "k")
    assert recorder == [f.key()]
    assert bytes(pack.slots[0]) == bytes((1 + i) % 256 for i in range(128))
    pack.set([tma_desc_encode(TmaFields(0x7000_0100, 9, (4096, 512), (8192,), (64, 128), swizzle=128)), 5], "k")
    assert len(recorder) == 2  # another pointer: another descriptor


def test_a_parameter_that_is_not_a_descriptor_is_refused(recorder):
    with pytest.raises(tma.TmaEncodeError, match="not a descriptor"):
        ParamPack(["tmap"]).set([np.zeros((1, 16), np.int64)], "k")


def test_invalid_fields_are_reported_before_the_driver():
    with pytest.raises(tma.TmaEncodeError, match="strides that are positive multiples of 16"):
        tma.encode_fields(TmaFields(0x1000, 9, (64, 64), (100,), (64, 64)))


def _host_with_desc():
    m = new_module()
    gm = gpu.build_gpu_module()
    m.regions[0].blocks[0].append(gm)
    k = dfunc.build_func(gpu.func, "k", [TmaDescType()], kernel=True)
    gm.regions[0].blocks[0].append(k)
    with InsertionPoint(k.regions[0].blocks[0]):
        gpu.return_()
    h = dfunc.build_func(dfunc.func, "host", [PointerType(T.bf16, "global"), T.i32, T.i32])
    m.regions[0].blocks[0].append(h)
    p, rows, cols = h.regions[0].blocks[0].args
    with InsertionPoint(h.regions[0].blocks[0]):
        d = nv.tma_make_desc(p, cols, rows, arith.extsi(cols, result_types=[T.i64]), box=[64, 128], swizzle=128)
        one = arith.const(1, T.i32)
        gpu.launch_func(one, one, one, one, one, one, arith.const(0, T.i32), arith.const(0, T.i64), d,
                        kernel=SymbolRef("k"))  # fmt: skip
        dfunc.return_()
    return h


def test_the_host_op_builds_the_canonical_record_from_the_tensor():
    h = _host_with_desc()
    got = []
    hf = compile_host(h)
    hf([0x10000, 300, 1024], lambda *a: got.append(a[-1][0]))
    hf([0x10000, 300, 1024], lambda *a: got.append(a[-1][0]))
    f = tma_desc_decode(got[0])
    assert (f.address, f.dims, f.strides, f.box, f.swizzle, f.elem_bytes) == (
        0x10000, (1024, 300), (2048,), (64, 128), 128, 2)  # fmt: skip
    assert got[1] is got[0]  # the same tensor: the cached record


def test_the_host_op_reports_a_misaligned_tensor():
    from flydsl.interp import InterpError

    with pytest.raises(InterpError, match="not 16-byte aligned"):
        compile_host(_host_with_desc())([0x10002, 300, 1024], lambda *a: None)


def test_the_launch_plan_makes_the_same_descriptor_as_the_host_interpreter():
    from flydsl.runtime.launch_plan import launch_plan

    h = _host_with_desc()
    plan = launch_plan(h)
    assert plan is not None and "D" in plan.source
    got = []
    plan([0x10000, 300, 1024], lambda *a: got.append(a[-1][0]))
    plan([0x10000, 300, 1024], lambda *a: got.append(a[-1][0]))
    want = []
    compile_host(h)([0x10000, 300, 1024], lambda *a: want.append(a[-1][0]))
    assert got[0].tobytes() == want[0].tobytes() and got[1] is got[0]


def test_the_launch_path_passes_the_encoded_descriptor_64_byte_aligned(recorder):
    import struct

    from flydsl.runtime._cuda_launch import CONFIG_FORMAT, make_launch

    seen = []
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

    def call(cfg, fn, params, extra):
        pp = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        g = struct.unpack("<" + CONFIG_FORMAT, ctypes.string_at(cfg, struct.calcsize("<" + CONFIG_FORMAT)))
        seen.append((g[:3], ctypes.c_uint64.from_address(pp[0]).value, pp[1], ctypes.string_at(pp[1], 128),
                     ctypes.c_int32.from_address(pp[2]).value))  # fmt: skip
        return 0

    drv = proto(call)
    fn = make_launch("k", 1, ["ptr", "tmap", "i32"], drv, lambda *a: None, [48 * 1024])
    d = tma_desc_encode(TmaFields(0x7000_0000, 9, (4096, 512), (8192,), (64, 128), swizzle=128))
    fn(3, 1, 1, 128, 1, 1, 0, 0, 0x1234, d, 7)
    fn(3, 1, 1, 128, 1, 1, 0, 0, 0x1234, d, 8)
    (grid, p0, addr, tmap, p2), second = seen
    assert grid == (3, 1, 1) and p0 == 0x1234 and p2 == 7 and second[4] == 8
    assert addr % 64 == 0 and tmap == bytes((1 + i) % 256 for i in range(128))
    assert len(recorder) == 1  # encoded once for both launches


def test_a_kernel_that_waits_for_its_grid_dependency_is_launched_with_pdl(monkeypatch):
    """A kernel calling ``griddep_wait()`` is launched with programmatic stream serialization allowed (the
    config's one attribute, id 6 = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, value 1); a kernel
    without it has no attribute. Checked at the driver boundary (a stand-in ``cuLaunchKernelEx``)."""
    import struct

    seen = []
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

    def call(cfg, fn, params, extra):
        grid, attrs, nattrs = struct.unpack_from("<3I", ctypes.string_at(cfg, 56)), *struct.unpack_from(
            "<QI", ctypes.string_at(cfg, 56), 40)  # fmt: skip
        seen.append((grid, nattrs, struct.unpack("<I4xi", ctypes.string_at(attrs, 12)) if nattrs else None))
        return 0

    drv = proto(call)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setattr(device_mod, "_DEVICES", {"cuda": device_mod.StandInCudaDevice(drv)})

    def make(pdl: bool):
        @flyc.kernel
        def k(a: fx.Tensor):
            if fx.const_expr(pdl):
                fx.nvvm.griddep_launch_dependents()
                fx.nvvm.griddep_wait()
            a[fx.thread_idx.x] = a[fx.thread_idx.x] + 1

        @flyc.jit
        def launch(a: fx.Tensor):
            k(a).launch(grid=(3 if pdl else 2, 1, 1), block=(32, 1, 1))

        return launch

    a = np.zeros(32, np.int32)
    make(True)(a)
    make(False)(a)
    assert seen == [((3, 1, 1), 1, (6, 1)), ((2, 1, 1), 0, None)]


@pytest.mark.parametrize("native", [None, False])
def test_both_launch_paths_carry_the_pdl_attribute(native):
    """The native helper (when it builds) and the Python path pack the same config: attrs -> one
    CUlaunchAttribute (id 6, value 1) for a PDL launch, none otherwise."""
    import struct

    from flydsl.runtime._cuda_launch import make_launch

    seen = []
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

    def call(cfg, fn, params, extra):
        raw = ctypes.string_at(cfg, 56)
        attrs, n = struct.unpack_from("<QI", raw, 40)
        val = ctypes.c_int32.from_address(ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))[0]).value
        seen.append((struct.unpack_from("<3I", raw), n, struct.unpack("<I4xi", ctypes.string_at(attrs, 12)) if n else None,
                     val))  # fmt: skip
        return 0

    drv = proto(call)
    for pdl in (True, False):
        fn = make_launch("k", 1, ["i32"], drv, lambda *a: None, [48 * 1024], native=native, pdl=pdl)
        fn(5, 1, 1, 32, 1, 1, 0, 0, 41 + pdl)
    assert seen == [((5, 1, 1), 1, (6, 1), 42), ((5, 1, 1), 0, None, 41)]
