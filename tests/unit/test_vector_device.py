"""The issue #3 program and the Vector/buffer/numerics surface end to end through ``@flyc.jit``: one body,
run on the CPU interpreter (CI) and on the GPU (marker ``gpu``), compared with numpy and with each other
bit for bit. Only exact arithmetic: integer ops, IEEE add/mul, conversions, directed rounding."""

import numpy as np
import pytest
from _arrays import to_device, to_numpy

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import T
from flydsl.expr.typing import Vector as Vec

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
M_REPEAT = 8


@pytest.fixture
def device(request, monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", request.param)
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    return request.param


@flyc.kernel
def seed_kernel(scale: fx.Tensor, out: fx.Tensor, bits: fx.Tensor):
    tid = fx.thread_idx.x
    rsrc = fx.buffer_ops.create_buffer_resource(scale, max_size=True)
    acc = fx.Float32(0.0)
    for mi in fx.range_constexpr(M_REPEAT):
        v = fx.buffer_ops.buffer_load(rsrc, fx.Int32(mi * 4), vec_width=4, dtype=T.f32)
        s0, s1, s2, s3 = Vec(v)  # unpacking
        w = Vec(v).bitcast(fx.Float32)
        for x in Vec(v):  # a for loop
            acc = acc + x
        vals = list(Vec(v))
        acc = acc + (vals[3] - w[3]) + (s0 + s1 + s2 + s3) * fx.Float32(tid)
    orsc = fx.buffer_ops.create_buffer_resource(out, max_size=True)
    fx.buffer_ops.buffer_store(acc, orsc, tid)
    # vector ops, integer semantics and conversions, lane-wise
    iv = fx.buffer_ops.buffer_load(rsrc, fx.Int32(0), vec_width=4, dtype=fx.Int32)
    r = (iv >> 3) ^ (iv * 7) + iv % 5
    h = Vec(v).to(fx.Float16, rounding_mode=fx.RoundingMode.upward).bitcast(fx.Int16).to(fx.Int32)
    mx = fx.max(vals[0], vals[1]).to(fx.Int32)
    q = fx.Vector.from_elements([mx, fx.ceildiv(fx.Int32(tid) - 5, 2), r[1], h[2]])
    fx.buffer_ops.buffer_store(q, fx.buffer_ops.create_buffer_resource(bits, max_size=True), tid * 4)


@flyc.jit
def seed(scale: fx.Tensor, out: fx.Tensor, bits: fx.Tensor):
    seed_kernel(scale, out, bits).launch(grid=(1, 1, 1), block=(32, 1, 1))


def _reference(scale):
    rows = scale.reshape(M_REPEAT, 4)
    out = np.zeros(32, np.float32)
    for tid in range(32):
        acc = np.float32(0)
        for r in rows:
            for x in r:
                acc = np.float32(acc + x)
            s = np.float32(np.float32(np.float32(r[0] + r[1]) + r[2]) + r[3])
            acc = np.float32(np.float32(acc + np.float32(0)) + np.float32(s * np.float32(tid)))
        out[tid] = acc
    return out


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_seed_program_end_to_end(device):
    scale = (np.arange(32, dtype=np.float32) * 0.25 - 3.0).astype(np.float32)
    out = to_device(np.zeros(32, np.float32), device)
    bits = to_device(np.zeros(128, np.int32), device)
    seed(to_device(scale, device), out, bits)
    got = to_numpy(out)
    np.testing.assert_array_equal(got, _reference(scale))
    b = to_numpy(bits).reshape(32, 4)
    i1 = int(scale[:4].view(np.int32)[1])
    wrap = lambda v: (v + 2**31) % 2**32 - 2**31  # noqa: E731
    r1 = (i1 >> 3) ^ wrap(i1 * 7 + int(np.fmod(i1, 5)))
    x = np.float32(scale[30])
    up = np.float16(x)
    if np.float32(up) < x:
        up = np.nextafter(up, np.float16(np.inf))
    assert (b[:, 0] == int(max(scale[28], scale[29]))).all()
    np.testing.assert_array_equal(b[:, 1], [-((5 - t) // 2) for t in range(32)])
    assert (b[:, 2] == r1).all()
    assert (b[:, 3] == int(np.array([up]).view(np.int16)[0])).all()


def test_seed_program_compile_only_dump_returns_at_once(monkeypatch, tmp_path):
    """Issue #3: FLYDSL_RUNTIME_ENABLE_CACHE=0 COMPILE_ONLY=1 FLYDSL_DUMP_IR=1 writes 00_origin.mlir and returns."""
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("COMPILE_ONLY", "1")
    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    scale = np.zeros(32, np.float32)
    assert seed(scale, np.zeros(32, np.float32), np.zeros(128, np.int32)) is None
    origin = tmp_path / "seed_kernel_0" / "00_origin.mlir"
    text = origin.read_text()
    assert text.count("vector.extract") >= 4 * M_REPEAT and "ptr.buffer_load" in text
    assert sorted(p.name for p in origin.parent.iterdir())[-1].endswith("final_isa.ptx")
