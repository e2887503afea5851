"""fx.Vector: construction, indexing, conversions, operators, select, reduce, factories, aliases and the
DSL value protocol — IR text, and results on the interpreter."""

import numpy as np
import pytest

import flydsl.expr as fx
from flydsl import ir
from flydsl.expr.typing import Float32x4
from flydsl.testing import evaluate, trace_kernel

V8F32 = ir.VectorType(8, ir.f32)
V8I32 = ir.VectorType(8, ir.i32)
V4F32 = ir.VectorType(4, ir.f32)


def test_construction_and_properties():
    with trace_kernel([V8F32, V8I32]) as t:
        a = fx.Vector(t.args[0], 8, fx.Float32)
        assert (a.shape, a.dtype, a.element_type, a.numel, a.signed) == ((8,), fx.Float32, fx.Float32, 8, False)
        assert fx.Vector(t.args[0], (8,)).shape == (8,)
        assert fx.Vector(t.args[0], (2, (2, 2))).shape == (2, (2, 2))
        assert fx.Vector(t.args[1], 8, fx.Int32).signed is True
        assert fx.Vector(t.args[1], 8, fx.Uint32).signed is False
        assert "Vector" in str(a) and "Float32" in repr(a)
        assert a.ir_value() is t.args[0] and a.type is V8F32 and not a.is_static()
        assert fx.Vector(a) is not a and fx.Vector(a).shape == a.shape
        with pytest.raises(ValueError, match="has 6 elements"):
            fx.Vector(t.args[0], (2, 3))
        with pytest.raises(ValueError, match="does not match the vector element type"):
            fx.Vector(t.args[0], 8, fx.Int32)
        with pytest.raises(TypeError, match="wraps an IR vector value"):
            fx.Vector(fx.Float32(1.0).ir_value())
        with pytest.raises(TypeError, match="positive integer"):
            fx.Vector(t.args[0], (8, 0))
        assert fx.Vector.make_type((2, 4), fx.Float16) is ir.VectorType(8, ir.f16)


def test_slices_runtime_index_and_coordinates():
    with trace_kernel([V8F32, ir.i32]) as t:
        v = fx.Vector(t.args[0])
        s = v[1:5]
        assert isinstance(s, fx.Vector) and s.shape == (4,)
        assert v[::2].numel == 4 and v[::-1].numel == 8 and v[:].numel == 8
        with pytest.raises(IndexError, match="is empty"):
            v[5:2]
        r = v[fx.Int32(t.args[1])]
        assert type(r) is fx.Float32 and not r.is_static()
        assert type(v[fx.Int32(3)]) is fx.Float32  # a compile-time DSL index is a static extract
        m = v.reshape((2, 4))
        assert type(m[1, 2]) is fx.Float32
        row = m[1, None]
        assert row.shape == (4,)
        col = m[None, 3]
        assert col.shape == (2,)
        n = v.reshape((2, (2, 2)))
        assert n[None, (0, None)].shape == (2, (2,))
        assert type(n[1, (1, 0)]) is fx.Float32 and type(n[1, 1, 0]) is fx.Float32  # flat coordinates too
        assert type(m[fx.Int32(t.args[1]), 1]) is fx.Float32  # run-time coordinate: extractelement
        with pytest.raises(IndexError, match="out of range for a Vector of shape"):
            m[2, 0]
        with pytest.raises(TypeError, match="unsupported Vector index type"):
            v["bad"]
        with pytest.raises(TypeError, match="must be an integer"):
            v[fx.Float32(1.0)]
        assert v[None] is v
    text = t.text
    assert "mask = [1, 2, 3, 4]" in text and "mask = [0, 2, 4, 6]" in text and "mask = [7, 6, 5, 4, 3, 2, 1, 0]" in text
    assert "mask = [4, 5, 6, 7]" in text and "mask = [3, 7]" in text and "mask = [0, 1, 4, 5]" in text
    assert t.count("vector.extractelement") == 2
    assert "position = 6" in text  # m[1, 2] = lane 1 * 4 + 2


def test_insert_with_element():
    with trace_kernel([V4F32, ir.i32]) as t:
        v = fx.Vector(t.args[0])
        w = v.insert(1, 2.5)
        assert w.shape == (4,) and w.dtype is fx.Float32 and w is not v
        v.with_element(-1, fx.Int32(3))
        v.insert(fx.Int32(t.args[1]), 1.0)
        with pytest.raises(IndexError, match="vector index 4 out of range"):
            v.insert(4, 1.0)
    assert t.count("vector.insert") == 2 and t.count("vector.insertelement") == 1
    assert "position = 3" in t.text and "arith.constant 3.0 : f32" in t.text


def test_bitcast_to_reshape_broadcast_shuffle():
    with trace_kernel([V8F32, ir.VectorType(8, ir.f16)]) as t:
        v, h = fx.Vector(t.args[0]), fx.Vector(t.args[1])
        assert v.bitcast(fx.Uint32).shape == (8,) and v.bitcast(fx.Uint32).dtype is fx.Uint32
        assert v.bitcast(fx.Float16).shape == (16,)
        assert h.bitcast(fx.Float32).shape == (4,)
        assert v.bitcast(fx.Int8).numel == 32
        with pytest.raises(ValueError, match="cannot bitcast"):
            v[0:3].bitcast(fx.Float64)
        b = v.to(fx.BFloat16)
        assert b.shape == (8,) and b.dtype is fx.BFloat16 and v.to(fx.Float32) is v
        assert v.reshape((2, 4)).to(fx.Int32).shape == (2, 4)
        h.to(fx.BFloat16)  # f16 -> f32 -> bf16
        v.to(fx.Float16, rounding_mode=fx.RoundingMode.to_nearest_away)
        with pytest.raises(TypeError, match="float-to-float"):
            v.to(fx.Int32, rounding_mode="upward")
        with pytest.raises(ValueError, match="element counts differ"):
            v.reshape(3)
        one = v[0:1]
        assert one.broadcast_to((2, 4)).shape == (2, 4)
        row = v[0:4]
        assert row.broadcast_to((2, 4)).shape == (2, 4)
        with pytest.raises(ValueError, match="cannot broadcast"):
            v.broadcast_to((8, 3))
        s = v.shuffle(v, [0, 2, 4, 6])
        assert s.shape == (4,) and s.dtype is fx.Float32
        with pytest.raises(IndexError, match="mask entries"):
            v.shuffle(None, [16])
        with pytest.raises(TypeError, match="shuffle needs a second Vector of Float32"):
            v.shuffle(h, [0])
    assert t.count("vector.bitcast") == 5
    assert "to_nearest_away : vector<8xf32> to vector<8xf16>" not in t.text  # our attribute syntax:
    assert '{rounding = "to_nearest_away"} : vector<8xf32> to vector<8xf16>' in t.text
    assert "vector<8xf16> to vector<8xf32>" in t.text and "vector<8xf32> to vector<8xbf16>" in t.text
    assert "mask = [0, 0, 0, 0, 0, 0, 0, 0]" in t.text and "mask = [0, 1, 2, 3, 0, 1, 2, 3]" in t.text


def test_operators_ops_and_promotion():
    with trace_kernel([V8F32, V8F32, V8I32, ir.f32]) as t:
        a, b = fx.Vector(t.args[0]), fx.Vector(t.args[1])
        i, u = fx.Vector(t.args[2]), fx.Vector(t.args[2], 8, fx.Uint32)
        s = fx.Float32(t.args[3])
        assert (a + b).dtype is fx.Float32 and (a * 2.0).shape == (8,) and (1.0 - a).dtype is fx.Float32
        assert (a / b).dtype is fx.Float32 and (a**b).dtype is fx.Float32 and (-a).dtype is fx.Float32
        assert (i + a).dtype is fx.Float32 and (i + s).dtype is fx.Float32 and (i / i).dtype is fx.Float32
        assert (i // i).dtype is fx.Int32 and (i % 3).dtype is fx.Int32 and (u >> 16).dtype is fx.Uint32
        assert (i >> 1).dtype is fx.Int32 and (u << 8).dtype is fx.Uint32 and (3 & u).dtype is fx.Uint32
        assert (-u).dtype is fx.Uint32 and (~u).dtype is fx.Uint32 and abs(u).dtype is fx.Uint32
        assert abs(i).dtype is fx.Int32 and abs(a).dtype is fx.Float32 and (+a) is a
        assert (i**3).dtype is fx.Int32 and (i + 1).dtype is fx.Int32
        q, r = divmod(i, i)
        assert q.dtype is r.dtype is fx.Int32
        c = a < b
        assert isinstance(c, fx.Vector) and c.dtype is fx.Boolean and c.shape == (8,)
        assert (a == s).dtype is fx.Boolean and isinstance(hash(a), int)
        m = a.reshape((2, 4)) + a[0:4]  # (2, 4) with (4,) broadcasts row-wise
        assert m.shape == (2, 4)
        with pytest.raises(TypeError, match="needs integers"):
            _ = a & b
        with pytest.raises(TypeError, match="operator ~ needs integers"):
            _ = ~a
        with pytest.raises(TypeError, match="compile-time scalar exponent"):
            _ = i**i
        with pytest.raises(ValueError, match="cannot broadcast"):
            _ = a.reshape((2, 4)) + a[0:3]
        with pytest.raises(TypeError, match=r"abs\(\) of a Boolean vector"):
            abs(c)
    text = t.text
    for op in ("addf", "mulf", "subf", "divf", "negf", "addi", "floordivsi", "remsi", "shrui", "shrsi", "shli"):
        assert f"arith.{op}" in text, op
    for op in ("math.powf", "math.absi", "math.absf", "arith.sitofp", "arith.cmpf olt", "arith.xori"):
        assert op in text, op
    assert "arith.constant dense<2.0> : vector<8xf32>" in text
    assert "vector.broadcast %arg3 : f32 to vector<8xf32>" in text


def test_select_lane_wise_and_whole():
    with trace_kernel([V4F32, ir.VectorType(4, ir.i32), ir.i1]) as t:
        a, i = fx.Vector(t.args[0]), fx.Vector(t.args[1])
        cond = i < i
        r = cond.select(a, i)
        assert r.dtype is fx.Float32 and r.shape == (4,)
        assert cond.select(1.0, i).dtype is fx.Float32
        assert i.select(a, a).dtype is fx.Float32  # non-Boolean lanes test != 0
        with pytest.raises(ValueError, match="condition has 4 lanes but a choice has 3"):
            cond.select(a[0:3], a[0:3])
        c = fx.Boolean(t.args[2])
        x = Float32x4(1.0)
        y = x + 1.0
        assert type(c.select(x, y)) is Float32x4 and type(c.select(y, x)) is fx.Vector
        assert fx.Boolean(True).select(x, y) is x
        assert (fx.Int32(1) < fx.Int32(2)).select(a, a) is a
    assert t.count("arith.select") == 5
    assert t.text.count("arith.cmpi slt") == 1 and t.text.count("arith.cmpi ne") == 1


def test_reduce_kinds():
    with trace_kernel([V8F32, V8I32]) as t:
        f, i, u = fx.Vector(t.args[0]), fx.Vector(t.args[1]), fx.Vector(t.args[1], 8, fx.Uint32)
        assert type(f.reduce("add")) is fx.Float32 and type(i.reduce(fx.ReductionOp.ADD)) is fx.Int32
        f.reduce("max"), f.reduce("min"), f.reduce("MUL"), f.reduce("maximumf")
        i.reduce("max"), i.reduce("min"), u.reduce("max"), u.reduce("min"), i.reduce("xor")
        assert type((i > 0).reduce("or")) is fx.Boolean
        f.reduce("add", init_val=fx.Float32(1.0))
        f.reduce("add", fastmath=fx.FastMathFlags.fast)
        with pytest.raises(ValueError, match="unknown reduction kind 'foobar'"):
            f.reduce("foobar")
        with pytest.raises(TypeError, match="must be a string or fx.ReductionOp"):
            f.reduce(42)
        with pytest.raises(TypeError, match=r'reduce\("and"\) is not defined for Float32'):
            f.reduce("and")
        with pytest.raises(TypeError, match='use "and"/"or"/"xor"'):
            (i > 0).reduce("add")
    text = t.text
    for k in ("add", "maxnumf", "minimumf", "mul", "maximumf", "maxsi", "minsi", "maxui", "minui", "xor", "or"):
        assert f"vector.reduction <{k}>, " in text, k  # MLIR's spelling (FlyDSL's tests read it)
    assert "vector.reduction <add>, %arg0 fastmath<fast> : vector<8xf32> into f32" in text
    assert "vector.reduction <add>, %arg0, %" in text  # the init value is the accumulator operand
    again = ir.print_op(ir.parse_module(text))
    assert again == text  # the spelling parses back


def test_factories_and_constructors():
    with trace_kernel([V4F32, ir.f32]) as t:
        a = fx.Vector(t.args[0])
        f = fx.full(8, 1.0, fx.Float32)
        assert f.shape == (8,) and f.dtype is fx.Float32
        vals = f.__extract_to_ir_values__()  # FlyDSL's protocol names
        assert vals == [f.ir_value()] and fx.Vector.__construct_from_ir_values__(vals).shape == (8,)
        assert fx.full((2, 2), fx.Float32(2.5), fx.Float16).dtype is fx.Float16
        assert fx.full_like(a, 0.0).shape == a.shape and fx.zeros_like(a, fx.Int32).dtype is fx.Int32
        assert fx.ones_like(a).dtype is fx.Float32 and fx.empty_like(a).shape == (4,)
        assert fx.Vector.filled_like(a, 2.0).dtype is fx.Float32 and fx.Vector.zeros_like(a).numel == 4
        fx.Vector.filled(4, fx.Float32(t.args[1]), fx.Float32)  # a run-time fill broadcasts
        assert fx.Vector.from_elements([1, 2, 3]).dtype is fx.Int32
        e = fx.Vector.from_elements([fx.Float32(t.args[1]), 2.0, 3])
        assert e.dtype is fx.Float32 and e.shape == (3,)
        assert fx.Vector([1.0, 2.0]).numel == 2
        with pytest.raises(ValueError, match="at least one element"):
            fx.Vector.from_elements([])
    text = t.text
    assert "arith.constant 1.0 : f32" in text  # a constant fill broadcasts, as FlyDSL traces it ...
    assert "vector.broadcast %" in text and ": f32 to vector<8xf32>" in text
    assert "arith.constant dense<[1, 2, 3]> : vector<3xi32>" in text
    from flydsl import passes

    folded = ir.print_op(passes.run_pipeline(ir.parse_module(text), ["canonicalize"]))
    assert "arith.constant dense<1.0> : vector<8xf32>" in folded  # ... and canonicalization folds it
    assert "vector.broadcast %arg1 : f32 to vector<4xf32>" in text
    assert "vector.from_elements %arg1, " in text


def test_aliases():
    assert fx.Vector[fx.Float32, 4] is fx.VectorAlias(fx.Float32, 4) is Float32x4 is fx.Float32x4
    assert fx.Vector[fx.Float32, (2, 2)].__name__ == "Vector[Float32, (2, 2)]"
    assert fx.Vector[fx.Float32, [2, [1, 2]]] is fx.Vector[fx.Float32, (2, (1, 2))]
    assert fx.Float32x7 is fx.Vector[fx.Float32, 7] and issubclass(fx.BFloat16x8, fx.Vector)
    assert fx.Int8x16.ir_type is ir.VectorType(16, ir.i8)
    with pytest.raises(TypeError, match=r"Vector\[dtype, lanes\]"):
        fx.Vector[fx.Float32]
    with pytest.raises(TypeError, match="concrete Numeric"):
        fx.Vector[fx.Numeric, 4]
    with pytest.raises(TypeError, match="positive integer"):
        fx.VectorAlias(fx.Float32, 0)
    with pytest.raises(TypeError, match="already specialized"):
        Float32x4[fx.Int32, 8]
    with trace_kernel([V4F32]) as t:
        x = Float32x4(1.0)
        assert type(x) is Float32x4 and x.shape == (4,) and x.dtype is fx.Float32
        assert type(fx.Int8x16(7)) is fx.Int8x16
        assert type(fx.Int32x4([i for i in range(4)])) is fx.Int32x4
        assert fx.Float32x4([0, 1, 2, 3]).dtype is fx.Float32
        assert type(Float32x4(t.args[0])) is Float32x4
        nested = fx.Vector[fx.Float32, (2, (1, 2))]([1.0, 2.0, 3.0, 4.0])
        assert type(nested[1, (0, 1)]) is fx.Float32
        with pytest.raises(ValueError, match="takes 4 elements"):
            Float32x4([1.0, 2.0])
        with pytest.raises(ValueError, match="expects shape"):
            fx.Float32x2(t.args[0])
        with pytest.raises(ValueError, match="expects dtype"):
            Float32x4(t.args[0], dtype=fx.Float16)
        # operations give plain Vectors; identity operations and the alias's own constructors keep the alias
        for r in (x + 1.0, -x, abs(x), x.reshape(4), x.bitcast(fx.Float32), x.shuffle(x, [0, 1, 2, 3])):
            assert type(r) is fx.Vector
        for r in (+x, x.to(fx.Float32), x.broadcast_to((4,)), x[None], fx.max(x)):
            assert r is x
        assert type(Float32x4.filled_like(x, 0.0)) is Float32x4
        assert type(Float32x4.from_elements([1.0] * 4, fx.Float32)) is Float32x4
        assert type(x.to(fx.Float16)) is fx.Vector and type(x[0]) is fx.Float32


def test_value_protocol_keeps_class_shape_dtype():
    with trace_kernel([ir.VectorType(4, ir.i32)]) as t:
        v = fx.Vector[fx.Uint32, (2, 2)](t.args[0])
        vals = v.__fly_values__()
        assert vals == [t.args[0]]
        w = v.__fly_rebuild__(vals)
        assert type(w) is type(v) and w.shape == (2, 2) and w.dtype is fx.Uint32
        assert fx.as_dsl_value(t.args[0]).dtype is fx.Int32
        assert fx.as_dsl_value(t.args[0], v).dtype is fx.Uint32


def test_elementwise_semantics_on_numpy():
    with trace_kernel([V4F32, V4F32, ir.VectorType(4, ir.i32)]) as t:
        a, b, i = (fx.Vector(x) for x in t.args)
        outs = [
            a + b * 2.0,
            (a < b).select(a, b),
            a.reduce("max"),
            a.reduce("min"),
            i.reduce("add"),
            (i >> 1) + (i % 3),
            a.shuffle(b, [7, 0, 5, 2]),
            a.bitcast(fx.Int32),
            fx.max(a, b),
            i.to(fx.Float32) / 2,
        ]
    x = np.array([[1.0, -2.0, np.nan, 4.0]], np.float32)
    y = np.array([[0.5, 3.0, 1.0, -0.0]], np.float32)
    n = np.array([[-7, 8, 5, -1]], np.int32)
    r = evaluate(t, [x, y, n], outs)
    np.testing.assert_array_equal(r[0], x + y * 2)
    np.testing.assert_array_equal(r[1], np.where(x < y, x, y))
    assert r[2][0] == 4.0  # maxnumf ignores the NaN
    assert np.isnan(r[3][0])  # minimumf propagates it
    assert r[4][0] == 5
    np.testing.assert_array_equal(r[5], (n >> 1) + np.fmod(n, 3))
    np.testing.assert_array_equal(r[6], np.concatenate([x, y], axis=1)[:, [7, 0, 5, 2]])
    np.testing.assert_array_equal(r[7], x.view(np.int32))
    np.testing.assert_array_equal(r[8], np.maximum(x, y))
    np.testing.assert_array_equal(r[9], n / np.float32(2))
