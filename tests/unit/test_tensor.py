"""fx.Tensor: views over global memory, registers and coordinates — indexing, slicing, divides, vector
loads/stores, the value protocol, and the IR a static layout leaves behind (no index arithmetic).

Kernels run on the CPU interpreter through ``@flyc.jit`` and are compared with numpy; IR checks trace
with ``flydsl.testing.trace_kernel``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Constexpr
from flydsl.ir import PointerType, f32, i32
from flydsl.layout import Swizzle
from flydsl.testing import trace_kernel


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    monkeypatch.delenv("FLYDSL_DUMP_IR", raising=False)


def _gtensor(arg, shape, stride, dtype=fx.Float32, alignment=16):
    return fx.Tensor(arg, dtype, fx.make_layout(shape, stride), alignment=alignment)


def _arith_ops(text: str) -> list[str]:
    """Index arithmetic left in the IR: every arith op except constants."""
    return [m for m in re.findall(r"\barith\.(\w+)", text) if m != "constant"]


# ---------------------------------------------------------------------------------------------------
# queries
# ---------------------------------------------------------------------------------------------------


def test_shape_stride_size_and_unpack():
    with trace_kernel([PointerType(f32), i32]) as t:
        n = fx.Int32(t.args[1])
        a = _gtensor(t.args[0], (8, n), (n, 1))
        m, nn = a.shape.unpack()
        assert m == 8 and nn is n
        assert a.stride.unpack()[1] == 1 and a.leading_dim == 1
        assert fx.size(a.layout[0]) == 8 and fx.size(a.layout[0]).unpack() == 8
        assert a.rank == 2 and a.dtype is fx.Float32 and a.memspace == "global"
        assert not a.shape.is_static
        assert repr(a) == "Tensor<Float32, (8,?):(?,1), global>"
        assert isinstance(a.iterator, fx.Pointer) and a.alignment == 16
        with pytest.raises(TypeError, match="not iterable"):
            iter(a)
        with pytest.raises(TypeError, match="len"):
            len(a)
        with pytest.raises(TypeError, match="truth value"):
            bool(a)


# ---------------------------------------------------------------------------------------------------
# indexing, slicing and divides against numpy
# ---------------------------------------------------------------------------------------------------


@flyc.kernel
def gather_kernel(A: fx.Tensor, B: fx.Tensor, coords: Constexpr[tuple]):
    for k in fx.range_constexpr(len(coords)):
        B[k] = A[coords[k]]


@flyc.jit
def gather(A: fx.Tensor, B: fx.Tensor, coords: Constexpr[tuple]):
    gather_kernel(A, B, coords).launch(grid=(1, 1, 1), block=(1, 1, 1))


@pytest.mark.parametrize("order", ["C", "F"])
def test_indexing_matches_numpy(order):
    a = np.asarray(np.arange(6 * 10, dtype=np.float32).reshape(6, 10), order=order)
    coords = ((0, 0), (5, 9), (2, 7), (3, 1))
    out = np.zeros(len(coords) + 1, np.float32)
    gather(a, out, coords)
    np.testing.assert_array_equal(out[: len(coords)], [a[c] for c in coords])
    # an integer into a rank-2 tensor is the colexicographic (column-major) index, as in CuTe
    out2 = np.zeros(2, np.float32)
    gather(a, out2, (7, 13))
    np.testing.assert_array_equal(out2, [a[7 % 6, 7 // 6], a[13 % 6, 13 // 6]])


@flyc.kernel
def tile_kernel(A: fx.Tensor, B: fx.Tensor, how: Constexpr[str]):
    bx, by = fx.block_idx.x, fx.block_idx.y
    tid = fx.thread_idx.x
    if fx.const_expr(how == "flat"):
        tA = fx.flat_divide(A, (4, 8))[None, None, bx, by]
        tB = fx.flat_divide(B, (4, 8))[None, None, bx, by]
    elif fx.const_expr(how == "zipped"):
        tA = fx.slice(fx.zipped_divide(A, (4, 8)), ((None, None), (bx, by)))
        tB = fx.zipped_divide(B, (4, 8))[(None, None), (bx, by)]
    elif fx.const_expr(how == "tiled"):
        tA = fx.tiled_divide(A, (4, 8))[(None, None), bx, by]
        tB = fx.tiled_divide(B, (4, 8))[(None, None), bx, by]
    else:
        tA = fx.logical_divide(A, (4, 8))[(None, bx), (None, by)]
        tB = fx.logical_divide(B, (4, 8))[(None, bx), (None, by)]
    r = tid % 4  # thread tid doubles row tid of the tile
    row, dst = tA[r, None], tB[r, None]
    for j in fx.range_constexpr(8):
        dst[j] = row[j] * 2.0


@flyc.jit
def tiles(A: fx.Tensor, B: fx.Tensor, how: Constexpr[str]):
    M, N = A.shape.unpack()
    tile_kernel(A, B, how).launch(grid=(M // 4, N // 8, 1), block=(4, 1, 1))


@pytest.mark.parametrize("how", ["flat", "zipped", "tiled", "logical"])
def test_divides_on_tensors_select_the_block_tile(how):
    a = np.random.default_rng(1).standard_normal((12, 24)).astype(np.float32)
    b = np.zeros_like(a)
    tiles(a, b, how)
    np.testing.assert_array_equal(b, 2 * a)


def test_divide_views_keep_the_data_and_divide_the_layout():
    with trace_kernel([PointerType(f32)]) as t:
        a = _gtensor(t.args[0], (12, 24), (24, 1))
        for fn in (fx.logical_divide, fx.zipped_divide, fx.tiled_divide, fx.flat_divide):
            v = fn(a, (4, 8))
            assert v.layout == fn(a.layout, (4, 8)) and v.iterator.ir_value() is t.args[0]
        assert fx.composition(a, fx.make_layout(4, 1)).layout == fx.make_layout(4, 24)  # down a column
        assert fx.coalesce(fx.make_view(a, fx.make_layout((4, 6), (1, 4)))).layout == fx.make_layout(24, 1)
        assert fx.select(a, [1, 0]).layout == fx.make_layout((24, 12), (1, 24))
        assert fx.group(fx.flat_divide(a, (4, 8)), 2, 4).layout.shape == (4, 8, (3, 3))
        assert fx.get(a, 1).layout == fx.make_layout(24, 1)
        # a slice keeping one mode is that mode (FlyDSL), so the tile divides by a 2-mode tiler
        blk = fx.slice(fx.zipped_divide(a, (4, 8)), (None, 5))
        assert blk.layout == fx.make_layout((4, 8), (24, 1)) and fx.rank(blk) == 2
        assert fx.slice(fx.zipped_divide(a.layout, (4, 8)), (None, 5)) == blk.layout
        assert a[1, None].layout == fx.make_layout(24, 1)


@flyc.kernel
def column_kernel(A: fx.Tensor, B: fx.Tensor):
    j = fx.thread_idx.x
    col = fx.slice(A, (None, j))  # FlyDSL's (src, coord) order
    out = B[j, None]  # CuTe's t[j, None]
    for i in fx.range_constexpr(6):
        out[i] = col[i]


@flyc.jit
def columns(A: fx.Tensor, B: fx.Tensor):
    column_kernel(A, B).launch(grid=(1, 1, 1), block=(A.shape[1], 1, 1))


def test_slicing_with_none_views_a_column():
    a = np.random.default_rng(2).standard_normal((6, 5)).astype(np.float32)
    b = np.zeros((5, 6), np.float32)
    columns(a, b)
    np.testing.assert_array_equal(b, a.T)


# ---------------------------------------------------------------------------------------------------
# load / store / fill: vector accesses for contiguous runs
# ---------------------------------------------------------------------------------------------------


def test_load_of_a_contiguous_row_is_one_aligned_vector_access():
    with trace_kernel([PointerType(f32), PointerType(f32)]) as t:
        a = _gtensor(t.args[0], (8, 16), (16, 1))
        b = _gtensor(t.args[1], (8, 16), (16, 1))
        tid = fx.thread_idx.x
        v = a[tid, None].load()
        assert isinstance(v, fx.Vector) and v.numel == 16
        b[tid, None].store(v + 1.0)
    assert t.count("ptr.load") == 1 and t.count("ptr.store") == 1
    assert re.search(r'"ptr.load"\(%\d+\) \{align = 16\} : .* -> \(vector<16xf32>\)', t.text)


def test_load_of_a_strided_column_is_element_loads():
    with trace_kernel([PointerType(f32)]) as t:
        a = _gtensor(t.args[0], (4, 16), (16, 1))
        v = a[None, fx.thread_idx.x].load()
        assert v.numel == 4
    assert t.count("ptr.load") == 4 and t.count("vector.from_elements") == 1


def test_load_runs_follow_the_coalesced_layout():
    with trace_kernel([PointerType(f32)]) as t:
        a = _gtensor(t.args[0], (16, 16), (16, 1))
        # two runs of 4 contiguous elements: one vector<4> each, joined by one shuffle
        v = fx.make_view(a, fx.make_layout((4, 2), (1, 32))).load()
        assert v.numel == 8
    assert t.count("ptr.load") == 2 and t.count("vector.shuffle") == 1


def test_alignment_is_tracked_through_slices():
    with trace_kernel([PointerType(f32), i32]) as t:
        n = fx.Int32(t.args[1])
        a = _gtensor(t.args[0], (8, 64), (64, 1))
        assert a[1, None].alignment == 16  # row offset 64 elements
        assert a[None, 1].alignment == 4  # one element in
        assert a[None, 2].alignment == 8
        assert fx.flat_divide(a, (8, 8))[None, None, 0, n].alignment == 16  # n * 8 elements
        d = _gtensor(t.args[0], (8, n), (n, 1))
        assert d[1, None].alignment == 4  # a run-time stride: nothing known beyond the element


@flyc.kernel
def fill_kernel(A: fx.Tensor, x: fx.Float32):
    A[fx.thread_idx.x, None].fill(x)
    A[fx.thread_idx.x, 0] = x + 1.0


@flyc.jit
def fill(A: fx.Tensor, x: fx.Float32):
    fill_kernel(A, x).launch(grid=(1, 1, 1), block=(A.shape[0], 1, 1))


def test_fill_and_element_store():
    a = np.zeros((3, 8), np.float32)
    fill(flyc.from_dlpack(a), 2.5)  # a static layout: rows of 8
    want = np.full((3, 8), 2.5, np.float32)
    want[:, 0] = 3.5
    np.testing.assert_array_equal(a, want)


# ---------------------------------------------------------------------------------------------------
# static layouts leave no index arithmetic
# ---------------------------------------------------------------------------------------------------


def test_static_layouts_fold_at_trace_time():
    with trace_kernel([PointerType(f32), PointerType(f32)]) as t:
        a = _gtensor(t.args[0], (16, 32), (32, 1))
        b = _gtensor(t.args[1], (16, 32), (32, 1))
        tile = fx.flat_divide(a, (4, 8))[None, None, 2, 3]
        out = fx.zipped_divide(b, (4, 8))[(None, None), (2, 3)]
        frag = fx.make_fragment_like(tile)
        frag.store(tile.load())
        out.store(frag.load())
        b[15, 31] = a[0, 1] + a[3]
    assert _arith_ops(t.text) == ["addf"], t.text
    assert t.count("ptr.load") == 6 and t.count("ptr.store") == 5


@flyc.kernel
def static_copy_kernel(A: fx.Tensor, B: fx.Tensor):
    gA = fx.flat_divide(A, (8, 8))[None, None, 1, 0]
    gB = fx.flat_divide(B, (8, 8))[None, None, 0, 1]
    r = fx.make_fragment_like(gA)
    atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
    fx.copy(atom, fx.tiled_divide(gA, (1, 4)), fx.tiled_divide(r, (1, 4)))
    fx.copy(atom, fx.tiled_divide(r, (1, 4)), fx.tiled_divide(gB, (1, 4)))


@flyc.jit
def static_copy(A: fx.Tensor, B: fx.Tensor):
    static_copy_kernel(A, B).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_origin_ir_of_static_tensors_has_no_index_arithmetic(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    a = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    b = np.zeros_like(a)
    static_copy(flyc.from_dlpack(a), flyc.from_dlpack(b))
    np.testing.assert_array_equal(b[0:8, 8:16], a[8:16, 0:8])
    origin = (tmp_path / "dump" / "static_copy_kernel_0" / "00_origin.mlir").read_text()
    kernel = origin[origin.index("gpu.func") :]
    assert _arith_ops(kernel) == [], kernel
    assert kernel.count('"ptr.load"') == 16 and kernel.count('"ptr.store"') == 16
    assert kernel.count("vector<4xf32>") >= 32


# ---------------------------------------------------------------------------------------------------
# register tensors
# ---------------------------------------------------------------------------------------------------


def test_register_tensor_layout_values_and_errors():
    with trace_kernel([PointerType(f32)]) as t:
        r = fx.make_rmem_tensor((2, 3), fx.Float32)
        assert r.layout == fx.make_layout((2, 3), (1, 2)) and r.memspace == "register"
        assert fx.make_rmem_tensor(fx.make_layout(4, 2), fx.Int32).layout == fx.make_layout(4, 2)
        r.fill(1.0)
        r[1, 2] = 5.0
        v = r.load()
        assert v.numel == 6
        assert r[1, 2].is_static() and r[1, 2].value == 5.0  # registers hold values: no IR for constants
        with pytest.raises(TypeError, match="compile-time coordinates only"):
            _ = r[fx.thread_idx.x, 0]
        with pytest.raises(IndexError, match="out of range"):
            _ = r[2, 0]
        with pytest.raises(TypeError, match="compile-time layout"):
            fx.make_rmem_tensor((fx.thread_idx.x, 2), fx.Float32)
        with pytest.raises(TypeError, match="Numeric class"):
            fx.make_rmem_tensor(4, float)
    assert t.count("ptr.load") == 0 and t.count("ptr.store") == 0


def test_fragment_like_keeps_the_shape_and_the_first_mode_order():
    lay = fx.make_layout(((4, 2), 3, 2), ((1, 64), 1000, 8))
    with trace_kernel([PointerType(f32)]) as t:
        g = fx.Tensor(t.args[0], fx.Float32, lay)
        f = fx.make_fragment_like(g)
        assert f.layout == fx.make_layout(((4, 2), 3, 2), ((1, 4), 8, 24)) and f.dtype is fx.Float32
        rowmajor = fx.make_fragment_like(fx.make_view(g, fx.make_layout((2, 4), (4, 1))), fx.Int8)
        assert rowmajor.layout == fx.make_layout((2, 4), (1, 2)) and rowmajor.dtype is fx.Int8
        assert fx.make_fragment_like(fx.make_layout(8, 4), fx.Float16).layout == fx.make_layout(8, 1)
        c = fx.make_fragment_like(fx.make_identity_tensor((4, 3)), fx.Boolean)
        assert c.layout == fx.make_layout((4, 3)) and c.dtype is fx.Boolean


@flyc.kernel
def accumulate_kernel(A: fx.Tensor, B: fx.Tensor, K: fx.Int32):
    acc = fx.make_rmem_tensor(4, fx.Float32)
    acc.fill(0.0)
    for k in range(K):  # a run-time loop carries the registers
        acc.store(acc.load() + A[k, None].load())
    B.store(acc.load())


@flyc.jit
def accumulate(A: fx.Tensor, B: fx.Tensor, K: fx.Int32):
    accumulate_kernel(A, B, K).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_registers_are_carried_through_a_runtime_loop():
    a = np.random.default_rng(3).standard_normal((7, 4)).astype(np.float32)
    b = np.zeros(4, np.float32)
    accumulate(flyc.from_dlpack(a), flyc.from_dlpack(b), 7)
    np.testing.assert_allclose(b, a.sum(0), rtol=1e-6)


@flyc.kernel
def rebind_kernel(A: fx.Tensor, B: fx.Tensor, K: fx.Int32):
    acc = fx.make_rmem_tensor(4, fx.Float32)
    acc.fill(0.0)
    for k in range(K):  # rebinding makes the loop carry the registers
        acc = fx.Tensor(acc)
        acc.store(acc.load() + A[k, None].load())
    if K > 3:  # each branch writes its own copy
        acc = fx.Tensor(acc)
        acc[0] = -1.0
    B.store(acc.load())


@flyc.jit
def rebind(A: fx.Tensor, B: fx.Tensor, K: fx.Int32):
    rebind_kernel(A, B, K).launch(grid=(1, 1, 1), block=(1, 1, 1))


@pytest.mark.parametrize("K", [3, 7])
def test_rebound_registers_are_carried_through_loops_and_branches(K):
    a = np.random.default_rng(3).standard_normal((7, 4)).astype(np.float32)
    b = np.zeros(4, np.float32)
    rebind(flyc.from_dlpack(a), flyc.from_dlpack(b), K)
    want = a[:K].sum(0)
    if K > 3:
        want[0] = -1.0
    np.testing.assert_allclose(b, want, rtol=1e-6)


@flyc.kernel
def uncarried_kernel(A: fx.Tensor, n: fx.Int32):
    r = fx.make_rmem_tensor(1, fx.Float32)
    if n > 0:
        fx.copy(fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32), fx.make_view(A, fx.make_layout(1, 1)), r)
    A[0] = r[0]


@flyc.jit
def uncarried(A: fx.Tensor, n: fx.Int32):
    uncarried_kernel(A, n).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_registers_written_in_a_runtime_branch_that_does_not_carry_them_is_an_error():
    with pytest.raises(Exception, match="does not carry") as e:
        uncarried(np.zeros(1, np.float32), 1)
    assert "test_tensor.py" in str(e.value)  # at the user's line


# ---------------------------------------------------------------------------------------------------
# coordinate tensors
# ---------------------------------------------------------------------------------------------------


def test_identity_tensor_elements_are_coordinates():
    with trace_kernel([i32]) as t:
        c = fx.make_identity_tensor((4, 6))
        assert c[1, 5] == (1, 5) and c[9] == (1, 2) and c.memspace == "coord"
        same = fx.make_view((0, 0), fx.make_identity_layout((4, 6)))
        assert same[3, 2] == (3, 2)
        blk = fx.flat_divide(c, (2, 3))[None, None, 1, 1]
        assert [blk[i, j] for i in range(2) for j in range(3)] == [(2 + i, 3 + j) for i in range(2) for j in range(3)]
        counting = fx.make_view(10, fx.make_layout((2, 3), (1, 0)))
        assert counting[1, 2] == 11
        n = fx.Int32(t.args[0])
        dyn = fx.flat_divide(fx.make_identity_tensor((n, 8)), (4, 4))[None, None, n, 1]
        crd = dyn[1, 2]
        assert crd[1] == 6 and not isinstance(crd[0], int)
        pred = fx.elem_less(crd, (n, 8))
        assert isinstance(pred, fx.Boolean) and not pred.is_static()
        assert fx.elem_less((1, 2), (2, 3)).value is True and fx.elem_less((1, 3), (2, 3)).value is False
        with pytest.raises(TypeError, match="elements are tuples cannot be loaded as a Vector"):
            c.load()  # integer coordinate tensors load (test_compat_behaviour.py); tuple ones do not
        with pytest.raises(TypeError, match="no data"):
            c[0, 0] = 1


# ---------------------------------------------------------------------------------------------------
# swizzled layouts
# ---------------------------------------------------------------------------------------------------


def test_swizzled_tensor_applies_the_swizzle_to_the_offset():
    sw = Swizzle(3, 2, 3)
    lay = fx.make_composed_layout(sw, 0, fx.make_layout((8, 32), (32, 1)))
    with trace_kernel([PointerType(f32)]) as t:
        s = fx.Tensor(t.args[0], fx.Float32, lay)
        assert s.layout is lay and s.leading_dim is None
        sub = s[3, None]  # the row offset folds into the composed layout: the pointer stays at the base
        assert sub.iterator.ir_value() is t.args[0] and sub.layout.offset == 96
        for j in (0, 5, 31):
            assert fx.crd2idx(j, sub.layout) == sw.apply(96 + j)


@flyc.kernel
def swizzle_kernel(A: fx.Tensor, B: fx.Tensor, S: fx.Tensor):
    tid = fx.thread_idx.x
    sw = fx.make_composed_layout(fx.Swizzle(3, 2, 3), 0, fx.make_layout((8, 32), (32, 1)))
    s = fx.make_view(S, sw)
    s[tid, None].store(A[tid, None].load())
    B[tid, None].store(s[tid, None].load())


@flyc.jit
def swizzle_roundtrip(A: fx.Tensor, B: fx.Tensor, S: fx.Tensor):
    swizzle_kernel(A, B, S).launch(grid=(1, 1, 1), block=(8, 1, 1))


def test_swizzled_round_trip_and_physical_placement():
    a = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    b = np.zeros_like(a)
    s = np.zeros(8 * 32, np.float32)
    swizzle_roundtrip(flyc.from_dlpack(a), flyc.from_dlpack(b), s)
    np.testing.assert_array_equal(b, a)
    sw = Swizzle(3, 2, 3)
    np.testing.assert_array_equal(s[[sw.apply(i) for i in range(256)]], a.reshape(-1))


# ---------------------------------------------------------------------------------------------------
# FlyDSL's memref spelling and errors
# ---------------------------------------------------------------------------------------------------


def test_memref_api():
    with trace_kernel([PointerType(f32)]) as t:
        ty = fx.MemRefType.get(fx.T.f32(), fx.LayoutType.get(4, 1), fx.AddressSpace.Register)
        r = fx.memref_alloca(ty, fx.make_layout(4, 1))
        fx.memref_store_vec(fx.Vector.filled((4,), 2.0, fx.Float32), r)
        fx.memref_store(3.0, r, 1)
        assert fx.memref_load(r, 1).value == 3.0
        v = fx.memref_load_vec(r)
        g = fx.Tensor(fx.make_view(fx.get_iter(_gtensor(t.args[0], 4, 1)), fx.make_layout(4, 1)))
        g.store(v)
        p = fx.add_offset(g, 2)
        assert isinstance(p, fx.Pointer) and fx.recast_iter(fx.Int32, p).dtype is fx.Int32
        assert fx.add_offset((1, 2), (3, 4)) == (4, 6)
        assert fx.make_fragment_layout_like(fx.make_layout((4, 2), (2, 1))) == fx.make_layout((4, 2), (1, 4))
        with pytest.raises(ValueError, match="Register"):
            fx.memref_alloca(fx.MemRefType.get(fx.Float32, fx.make_layout(4, 1), fx.AddressSpace.Shared))
    assert t.count("ptr.store") == 1 and t.count("ptr.cast") == 1


def test_errors_name_the_problem():
    with trace_kernel([PointerType(f32), i32]) as t:
        a = _gtensor(t.args[0], (4, 8), (8, 1))
        with pytest.raises(IndexError, match="index 4 is out of range for a mode of size 4"):
            _ = a[4, 0]
        with pytest.raises(IndexError, match="rank 2 .* indexed with 3 coordinates"):
            _ = a[0, 0, 0]
        with pytest.raises(TypeError, match="not an integer"):
            _ = a[0.5, 1]
        d = _gtensor(t.args[0], (fx.Int32(t.args[1]), 8), (8, 1))
        with pytest.raises(TypeError, match="compile-time size"):
            d.load()
        with pytest.raises(ValueError, match="4 lanes into a tensor of 8"):
            a[0, None].store(fx.Vector.filled((4,), 1.0, fx.Float32))
        with pytest.raises(TypeError, match="make_view needs a pointer"):
            fx.make_view("x", fx.make_layout(4))
        with pytest.raises(TypeError, match="is not an integer"):
            fx.size(object())
        with pytest.raises(TypeError, match="needs a layout or a tensor"):
            fx.cosize((4, 8))
