"""fx.buffer_ops: resource creation (num_records precedence), element offsets scaled to bytes, masks, and
AMD's bounds semantics on the interpreter (loads past num_records read 0, stores past it are dropped)."""

import numpy as np
import pytest

import flydsl.expr as fx
from flydsl import ir
from flydsl.expr.typing import T
from flydsl.testing import launch, trace_kernel

PF32 = ir.PointerType(ir.f32)


class FakeTensor:
    """What buffer_ops asks of a tensor: a global pointer and, optionally, a static size."""

    def __init__(self, ptr, shape, dtype):
        self.ptr, self.shape, self.dtype = ptr, shape, dtype


def _num_records(text):
    line = next(ln for ln in text.splitlines() if "ptr.buffer_rsrc" in ln)
    operand = line.split("(")[1].split(")")[0].split(", ")[1]
    defn = next((ln for ln in text.splitlines() if ln.strip().startswith(f"{operand} = ")), "")
    return defn.strip()


def test_public_locations():
    import kernels.common.buffer_ops as kb
    from flydsl.expr import buffer_ops

    assert fx.buffer_ops is buffer_ops
    assert kb.create_buffer_resource is buffer_ops.create_buffer_resource
    assert kb.buffer_load is buffer_ops.buffer_load and kb.buffer_store is buffer_ops.buffer_store


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        ({}, "arith.constant 4294967295 : i64"),
        ({"max_size": True}, "arith.constant 4294967295 : i64"),
        ({"num_records_bytes": 100}, "arith.constant 100 : i64"),
        ({"num_records_bytes": 1 << 40}, "arith.constant 4294967295 : i64"),
        ({"num_records_bytes": -5}, "arith.constant 0 : i64"),
        ({"num_records_bytes": 100, "max_size": True}, "arith.constant 100 : i64"),
        ({"max_size": False}, "arith.constant 64 : i64"),
    ],
)
def test_num_records_precedence(kwargs, expected):
    with trace_kernel([PF32]) as t:
        fx.buffer_ops.create_buffer_resource(FakeTensor(fx.Pointer(t.args[0]), (4, 4), fx.Float32), **kwargs)
    assert _num_records(t.text).endswith(expected)


def test_num_records_run_time_and_fallbacks():
    with trace_kernel([PF32, ir.i32, ir.index]) as t:
        p = fx.Pointer(t.args[0])
        fx.buffer_ops.create_buffer_resource(p, num_records_bytes=fx.Int32(t.args[1]))
        fx.buffer_ops.create_buffer_resource(t.args[0], num_records_bytes=t.args[2])
        fx.buffer_ops.create_buffer_resource(p, max_size=False)  # a bare pointer has no size: unbounded
        fx.buffer_ops.create_buffer_resource(FakeTensor(p, (fx.Int32(t.args[1]), 4), fx.Float32), max_size=False)
        r = fx.buffer_ops.create_buffer_resource(p, base_byte_offset=16)
        assert r.base.dtype is fx.Float32 and r.__fly_rebuild__(r.__fly_values__()).ir_value() is r.ir_value()
        with pytest.raises(ValueError, match="stride=0"):
            fx.buffer_ops.create_buffer_resource(p, stride=4)
        with pytest.raises(TypeError, match="global pointer"):
            fx.buffer_ops.create_buffer_resource(fx.gpu.alloc_shared(fx.Float32, 4))
        with pytest.raises(TypeError, match="expected a pointer"):
            fx.buffer_ops.create_buffer_resource(3)
    text = t.text
    assert "arith.extui %arg1 : i32 to i64" in text and "arith.index_cast %arg2 : index to i64" in text
    assert text.count("arith.constant 4294967295 : i64") == 3
    assert "ptr.cast" in text and "arith.constant 16 : i32" in text


def test_load_offsets_dtypes_masks():
    with trace_kernel([PF32, ir.i32, ir.index]) as t:
        rsrc = fx.buffer_ops.create_buffer_resource(t.args[0])
        i = fx.Int32(t.args[1])
        s = fx.buffer_ops.buffer_load(rsrc, i, vec_width=1, dtype=T.f32)
        assert type(s) is fx.Float32
        v = fx.buffer_ops.buffer_load(rsrc, i)  # default: 4 x f32
        assert isinstance(v, fx.Vector) and v.shape == (4,) and v.dtype is fx.Float32
        h = fx.buffer_ops.buffer_load(rsrc, 3, vec_width=8, dtype=fx.Float16)
        assert h.dtype is fx.Float16 and h.numel == 8
        fx.buffer_ops.buffer_load(rsrc, t.args[2], vec_width=2, dtype=fx.Int32, mask=i < 10, soffset_bytes=64)
        fx.buffer_ops.buffer_load(rsrc, i, vec_width=1, cache_modifier=3, mask=True)
        assert fx.buffer_ops.buffer_load(rsrc, 0, vec_width=4, is_scalar=True).dtype is fx.Int32
        with pytest.raises(TypeError, match="must be an integer"):
            fx.buffer_ops.buffer_load(rsrc, 1.5)
        with pytest.raises(TypeError, match="expected a buffer resource"):
            fx.buffer_ops.buffer_load(t.args[0], 0)
    text = t.text
    assert "arith.constant 6 : i32" in text  # element 3 of f16 = byte 6, folded
    assert "arith.index_cast %arg2 : index to i32" in text and "arith.constant 64 : i32" in text
    assert t.count("ptr.buffer_load") == 6 and "cache_modifier = 3" in text
    masked = [ln for ln in text.splitlines() if "ptr.buffer_load" in ln and ", i1)" in ln]
    assert len(masked) == 1  # a compile-time true mask adds no operand


def test_store_forms():
    with trace_kernel([PF32, ir.i32, ir.VectorType(4, ir.f16)]) as t:
        rsrc = fx.buffer_ops.create_buffer_resource(t.args[0])
        i = fx.Int32(t.args[1])
        fx.buffer_ops.buffer_store(fx.Vector(t.args[2]), rsrc, i)  # f16: offset * 2
        fx.buffer_ops.buffer_store(fx.Float32(1.0), rsrc, i, mask=i > 0)
        fx.buffer_ops.buffer_store(2.0, rsrc, 12, offset_is_bytes=True, soffset_bytes=fx.Int32(4))
    text = t.text
    assert t.count("ptr.buffer_store") == 3
    assert "arith.constant 2 : i32" in text
    assert "arith.constant 16 : i32" in text  # 12 bytes + soffset 4, folded


def test_bounds_semantics_on_the_interpreter():
    with trace_kernel([PF32, PF32, PF32, ir.i32]) as t:
        src, dst, dst2, n = t.args
        tid = fx.thread_idx.x
        rin = fx.buffer_ops.create_buffer_resource(src, num_records_bytes=fx.Int32(n) * 4)
        rout = fx.buffer_ops.create_buffer_resource(dst, num_records_bytes=fx.Int32(n) * 4)
        v = fx.buffer_ops.buffer_load(rin, tid * 4, vec_width=4, dtype=T.f32)
        fx.buffer_ops.buffer_store(v + 1.0, rout, tid * 4)
        odd = fx.buffer_ops.buffer_load(rin, tid * 4 + 1, vec_width=1, mask=tid % 2 == 0)
        fx.buffer_ops.buffer_store(odd, fx.buffer_ops.create_buffer_resource(dst2, max_size=True), tid)
    x = np.arange(1, 17, dtype=np.float32)
    y = np.full(16, -8192.0, np.float32)
    z = np.full(4, -8192.0, np.float32)
    launch(t.kernel, 1, 4, x, y, z, np.int32(14))
    expect = np.full(16, -8192.0, np.float32)
    expect[:14] = x[:14] + 1.0  # elements 14 and 15 lie past num_records: loads read 0, stores are dropped
    np.testing.assert_array_equal(y, expect)
    np.testing.assert_array_equal(z, [x[1], 0.0, x[9], 0.0])  # masked-off loads read 0
