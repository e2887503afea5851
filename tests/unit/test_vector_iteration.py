"""Issue #3: iterating a Vector terminates at once (it used to fall into Python's legacy sequence protocol
and emit vector.extract forever), indexing is bounds-checked, and builtins that need a Python truth value
of run-time lanes fail at once with a message naming the Vector method to use."""

import time

import numpy as np
import pytest

import flydsl.expr as fx
from flydsl import ir
from flydsl.expr.typing import T
from flydsl.expr.typing import Vector as Vec
from flydsl.testing import trace_kernel

PTR_F32 = ir.PointerType(ir.f32)


def _seed_load(t):
    """The reported program: a buffer resource over a kernel argument and a 4 x f32 buffer load."""
    arg, idx = t.args
    rsrc = fx.buffer_ops.create_buffer_resource(arg, max_size=True)
    return fx.buffer_ops.buffer_load(rsrc, fx.Int32(idx), vec_width=4, dtype=T.f32)


def _four_float32(vals):
    assert len(vals) == 4
    assert all(type(x) is fx.Float32 and not x.is_static() for x in vals)


def test_seed_list():
    with trace_kernel([PTR_F32, ir.i32]) as t:
        _four_float32(list(Vec(_seed_load(t))))
    assert t.count("vector.extract") == 4


def test_seed_unpacking():
    with trace_kernel([PTR_F32, ir.i32]) as t:
        a, b, c, d = Vec(_seed_load(t))
        _four_float32([a, b, c, d])
    assert t.count("vector.extract") == 4


def test_seed_for_loop():
    with trace_kernel([PTR_F32, ir.i32]) as t:
        seen = []
        for x in Vec(_seed_load(t)):
            seen.append(x)
        _four_float32(seen)
    assert t.count("vector.extract") == 4


def test_seed_bitcast_and_indexing():
    with trace_kernel([PTR_F32, ir.i32]) as t:
        w = Vec(_seed_load(t)).bitcast(fx.Float32)
        assert isinstance(w, fx.Vector) and w.dtype is fx.Float32 and w.numel == 4 and w.shape == (4,)
        _four_float32([w[0], w[1], w[2], w[3]])
    assert t.count("vector.extract") == 4 and t.count("vector.bitcast") == 0


def test_seed_in_an_unrolled_loop_traces_fast():
    m_repeat = 8
    with trace_kernel([PTR_F32, ir.i32]) as t:
        start = time.perf_counter()
        rows = []
        for mi in fx.range_constexpr(m_repeat):
            arg, idx = t.args
            rsrc = fx.buffer_ops.create_buffer_resource(arg, max_size=True)
            v = fx.buffer_ops.buffer_load(rsrc, fx.Int32(idx) + mi * 4, vec_width=4, dtype=T.f32)
            rows.append(list(Vec(v)))
        elapsed = time.perf_counter() - start
    assert elapsed < 10, f"tracing took {elapsed:.3f} s"  # a hang, not a speed check (that is the op count)
    assert [len(r) for r in rows] == [4] * m_repeat
    assert t.count("vector.extract") == 4 * m_repeat
    assert t.count("ptr.buffer_load") == m_repeat


def test_seed_runs_on_the_interpreter():
    from flydsl.testing import launch

    with trace_kernel([PTR_F32, ir.i32, PTR_F32]) as t:
        arg, idx, out = t.args
        rsrc = fx.buffer_ops.create_buffer_resource(arg, max_size=True)
        v = fx.buffer_ops.buffer_load(rsrc, fx.Int32(idx) + fx.thread_idx.x * 4, vec_width=4, dtype=T.f32)
        a, b, c, d = Vec(v)
        w = Vec(v).bitcast(fx.Float32)
        fx.Pointer(out)[fx.thread_idx.x] = a * 1000.0 + b * 100.0 + c * 10.0 + d + w[3] * 0.5
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(4, np.float32)
    launch(t.kernel, 1, 4, x, np.int32(0), y)
    rows = x.reshape(4, 4)
    np.testing.assert_array_equal(y, rows @ np.array([1000, 100, 10, 1], np.float32) + rows[:, 3] * 0.5)


def test_len_iteration_helpers_and_bounds():
    with trace_kernel([ir.VectorType(4, ir.f32)]) as t:
        v = fx.Vector(t.args[0])
        assert len(v) == 4
        assert len([x * 2.0 for x in v]) == 4
        assert [i for i, _ in enumerate(v)] == [0, 1, 2, 3]
        assert len(list(zip(v, v))) == 4
        assert len(tuple(reversed(v))) == 4
        assert type(v[-1]) is fx.Float32
        with pytest.raises(IndexError) as e:
            v[4]
        assert str(e.value) == "vector index 4 out of range for a Vector of 4 elements"
        with pytest.raises(IndexError, match="vector index -5 out of range for a Vector of 4 elements"):
            v[-5]
    assert "position = 3" in t.text


def test_nested_shape_iterates_all_lanes():
    with trace_kernel([ir.VectorType(8, ir.i32)]) as t:
        v = fx.Vector(t.args[0], (2, (2, 2)), fx.Uint32)
        lanes = list(v)
        assert len(lanes) == 8 and all(type(x) is fx.Uint32 for x in lanes)


MISUSE = [
    ("max(v)", TypeError, r'v\.reduce\("max"\)'),
    ("min(v)", TypeError, r'v\.reduce\("min"\)'),
    ("sorted(v)", TypeError, r"sorted\(\)"),
    ("1.0 in v", TypeError, r"\(v == x\)\.reduce\(\"or\"\)"),
    ("bool(v)", TypeError, r"cond\.select\(a, b\)"),
    ("v[0] < v[1] < v[2]", TypeError, "Python bool"),
    ("int(v)", TypeError, "not a Python int"),
    ("range(v)", TypeError, "not a Python integer"),
    ("v.__setitem__(0, 1.0)", TypeError, r"v = v\.insert\(i, x\)"),
]


@pytest.mark.parametrize("expr,exc,msg", MISUSE, ids=[m[0] for m in MISUSE])
def test_builtins_needing_python_truth_fail_at_once(expr, exc, msg):
    with trace_kernel([ir.VectorType(4, ir.f32)]) as t:
        v = fx.Vector(t.args[0])
        start = time.perf_counter()
        with pytest.raises(exc, match=msg):
            eval(expr, {"v": v})
        assert time.perf_counter() - start < 10  # fails at once, not after a hang
    assert t.count("vector.extract") <= 4  # at most one pass over the lanes


def test_if_on_a_vector_fails():
    with trace_kernel([ir.VectorType(4, ir.f32)]) as t:
        v = fx.Vector(t.args[0])
        with pytest.raises(TypeError, match='reduce\\("and"\\)'):
            if v > 0.0:
                pass


def test_no_dsl_value_uses_the_legacy_sequence_protocol():
    from flydsl.expr import numeric

    classes = [fx.Vector, fx.Pointer, fx.Float32x4, type(fx.thread_idx)]
    classes += [getattr(numeric, n) for n in numeric.__all__ if isinstance(getattr(numeric, n), type)]
    for cls in classes:
        if hasattr(cls, "__getitem__"):
            assert "__iter__" in dir(cls), cls
    with trace_kernel([PTR_F32]) as t:
        p = fx.Pointer(t.args[0])
        for seq in (p, fx.Int32(3), fx.Float32(1.0)):
            with pytest.raises(TypeError):
                list(seq)
            with pytest.raises(TypeError):
                iter(seq).__next__()
        with pytest.raises(TypeError, match="not a sequence"):
            _ = 1.0 in p
        assert len(list(fx.block_idx)) == 3
