"""Copy atoms, tiled copies and fx.copy: thread-value partitions against a brute-force CuTe reference,
the IR an atom emits (one vector access of the atom's width), predicated and buffer-bounded copies on the
interpreter, and the errors for copies an atom cannot do."""

from __future__ import annotations

import re

import numpy as np
import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.copy import CopyError
from flydsl.ir import PointerType, bf16, f32, i32
from flydsl.layout import crd2idx, idx2crd
from flydsl.testing import trace_kernel


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.delenv("FLYDSL_DUMP_IR", raising=False)


ATOM128 = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
ATOM32 = fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32)


def _g(arg, shape, stride, dtype=fx.Float32, alignment=16):
    return fx.Tensor(arg, dtype, fx.make_layout(shape, stride), alignment=alignment)


# ---------------------------------------------------------------------------------------------------
# atoms
# ---------------------------------------------------------------------------------------------------


def test_atoms_move_whole_elements_of_their_width():
    assert ATOM128.num_vals == 4 and ATOM32.num_vals == 1
    assert fx.make_copy_atom(fx.UniversalCopy128b(), fx.BFloat16).num_vals == 8
    assert fx.make_copy_atom(fx.UniversalCopy(64), fx.Float64).num_vals == 1
    assert fx.make_copy_atom(fx.UniversalCopy16b(), 8).num_vals == 2  # a bit width
    assert fx.make_copy_atom(fx.UniversalCopy8b(), fx.T.i8()).num_vals == 1  # an IR type
    assert ATOM128.tv_layout_src == fx.make_layout((1, 4), (0, 1)) and ATOM128.thr_layout == fx.make_layout(1, 0)
    assert ATOM128 == fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32) and hash(ATOM128) == hash(
        fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
    )
    assert repr(fx.UniversalCopy64b()) == "UniversalCopy64b()" and repr(fx.rocdl.BufferCopy32b()) == "BufferCopy32b()"
    with pytest.raises(ValueError, match="cannot move whole 64-bit elements"):
        fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float64)
    with pytest.raises(ValueError, match="at most 128 bits"):
        fx.UniversalCopy(256)
    with pytest.raises(ValueError, match="power of two"):
        fx.UniversalCopy(24)
    with pytest.raises(TypeError, match="copy op"):
        fx.make_copy_atom(128, fx.Float32)


# ---------------------------------------------------------------------------------------------------
# tiled copies: partitions against a brute-force reference
# ---------------------------------------------------------------------------------------------------

TV_CASES = [
    # (thread layout, value layout, tensor shape)
    (fx.make_ordered_layout((8, 16), (1, 0)), fx.make_layout((1, 4)), (16, 128)),
    (fx.make_layout((4, 8)), fx.make_layout((2, 2)), (16, 32)),
    (fx.make_ordered_layout((32, 8), (1, 0)), fx.make_layout((1, 4)), (64, 64)),
    (fx.make_layout((16, 4)), fx.make_layout((4, 2)), (64, 16)),
    (fx.make_layout(32), fx.make_layout(8), (512,)),
]


@pytest.mark.parametrize("thr, val, shape", TV_CASES)
def test_partition_matches_the_thread_value_reference(thr, val, shape):
    tiled = fx.make_tiled_copy_tv(ATOM128, thr, val)
    tile, tv = fx.make_layout_tv(thr, val)
    assert tiled.tile_mn == tile and tiled.layout_tv == tv and tiled.num_threads == fx.size(thr)
    tile = tuple(tile)
    rest = tuple(s // t for s, t in zip(shape, tile))
    ident = fx.make_identity_tensor(shape)
    nthr, nval = fx.size(thr), fx.size(val)
    for t in range(nthr):
        part = tiled.get_slice(t).partition_S(ident)  # static thread: everything folds to Python ints
        assert fx.size(part.layout[0]) == nval and fx.size(part) == nval * int(np.prod(rest))
        for v in range(nval):
            within = idx2crd(crd2idx((t, v), tv), tile)  # the tile coordinate of (thread, value)
            within = within if isinstance(within, tuple) else (within,)
            for r in range(int(np.prod(rest))):
                rc = idx2crd(r, rest)
                rc = rc if isinstance(rc, tuple) else (rc,)
                want = tuple(ri * ti + wi for ri, ti, wi in zip(rc, tile, within))
                got = part[(v,) + rc]
                assert (got if isinstance(got, tuple) else (got,)) == want, (t, v, rc)


def test_tiled_copy_is_static_and_hashable_and_checks_its_values():
    a = fx.make_tiled_copy_tv(ATOM128, fx.make_layout(4), fx.make_layout(4))
    b = fx.make_tiled_copy(ATOM128, a.layout_tv, fx.make_tile(fx.make_layout(16, 1)))
    assert a == b and hash(a) == hash(b) and a.tile_mn.unpack() == (16,)
    with pytest.raises(ValueError, match="multiple of 4"):
        fx.make_tiled_copy_tv(ATOM128, fx.make_layout(4), fx.make_layout(2))
    with pytest.raises(ValueError, match="static"):
        fx.make_layout_tv(fx.make_layout(4), "x")


def test_retile_splits_the_values_into_atom_calls():
    with trace_kernel([PointerType(f32)]):
        tiled = fx.make_tiled_copy_tv(ATOM128, fx.make_layout(32), fx.make_layout(8))
        frag = fx.make_rmem_tensor((8, 2), fx.Float32)
        r = tiled.get_slice(0).retile(frag)
        assert r.layout == fx.make_layout(((4, 2), 2), ((1, 4), 8))
        with pytest.raises(CopyError, match="6 values, which do not group into calls of 4"):
            tiled.get_slice(0).retile(fx.make_rmem_tensor(6, fx.Float32))


# ---------------------------------------------------------------------------------------------------
# the IR of a copy
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, dtype, ptr_t, vec",
    [
        (fx.UniversalCopy128b(), fx.Float32, f32, "vector<4xf32>) {align = 16}"),
        (fx.UniversalCopy64b(), fx.Float32, f32, "vector<2xf32>) {align = 8}"),
        (fx.UniversalCopy128b(), fx.BFloat16, bf16, "vector<8xbf16>) {align = 16}"),
    ],
)
def test_an_atom_call_is_one_vector_access_of_its_width(op, dtype, ptr_t, vec):
    atom = fx.make_copy_atom(op, dtype)
    with trace_kernel([PointerType(ptr_t), PointerType(ptr_t)]) as t:
        tiled = fx.make_tiled_copy_tv(
            atom, fx.make_ordered_layout((4, 8), (1, 0)), fx.make_layout((1, 2 * atom.num_vals))
        )
        m, n = fx.size(tiled.tile_mn[0]), fx.size(tiled.tile_mn[1])
        a = _g(t.args[0], (m, n), (n, 1), dtype)
        b = _g(t.args[1], (m, n), (n, 1), dtype)
        thr = tiled.get_slice(fx.thread_idx.x)
        src, dst = thr.partition_S(a), thr.partition_D(b)
        frag = fx.make_fragment_like(src)
        fx.copy(atom, src, frag)
        frag.store(frag.load() * 2)
        fx.copy(tiled, frag, dst)  # a tiled copy works in place of its atom
    loads = re.findall(r'"ptr.load"\(%\d+\) \{align = \d+\} : \(!fly.ptr<\w+, global>\) -> \((.*)', t.text)
    assert len(loads) == 2 and all(x.startswith(vec.split(")")[0]) for x in loads), t.text
    assert t.count("ptr.store") == 2 and t.count("vector.extract") == 0
    assert f"{{align = {vec.split('align = ')[1][:-1]}}}" in t.text


def test_a_32bit_atom_on_a_strided_column_is_element_accesses():
    with trace_kernel([PointerType(f32)]) as t:
        a = _g(t.args[0], (4, 64), (64, 1))
        col = a[None, fx.thread_idx.x]
        frag = fx.make_fragment_like(col)
        fx.copy(ATOM32, col, frag)
        fx.copy(ATOM32, frag, a[None, 0])
    assert t.count("ptr.load") == 4 and t.count("ptr.store") == 4
    assert "vector<" not in t.text


def test_predicates_become_masked_accesses_and_static_false_skips_the_call():
    with trace_kernel([PointerType(f32), i32]) as t:
        n = fx.Int32(t.args[1])
        a = _g(t.args[0], (4, 2), (1, 4))  # two calls of 4 contiguous values
        frag = fx.make_fragment_like(a)
        pred = fx.make_rmem_tensor(2, fx.Boolean)
        pred[0] = fx.thread_idx.x < n
        pred[1] = False
        fx.copy(ATOM128, a, frag, pred=pred)
        fx.copy(ATOM128, frag, a, pred=fx.thread_idx.x < n)
    assert t.count("ptr.masked_load") == 1 and t.count("ptr.masked_store") == 2
    assert t.count("ptr.load") == 0 and t.count("ptr.store") == 0


def test_a_cache_hint_marks_the_unpredicated_global_accesses_only():
    atom = fx.make_copy_atom(fx.UniversalCopy(128, cache="cs"), fx.Float32)
    assert atom.op != fx.UniversalCopy128b() and atom.op == fx.UniversalCopy(128, cache="cs")
    with trace_kernel([PointerType(f32), i32]) as t:
        n = fx.Int32(t.args[1])
        a = _g(t.args[0], (4, 2), (1, 4))
        frag = fx.make_fragment_like(a)
        fx.copy(atom, a, frag)  # ld.global.cs
        fx.copy(atom, frag, a)  # st.global.cs
        fx.copy(atom, frag, a, pred=fx.thread_idx.x < n)  # predicated: a plain masked store
        smem = fx.make_view(fx.alloc_shared(fx.Float32, 8), fx.make_layout((4, 2), (1, 4)))
        fx.copy(atom, frag, smem)  # shared memory: no hint
    assert t.text.count('cache = "cs"') == 4 and t.count("ptr.masked_store") == 2, t.text
    with pytest.raises(ValueError, match="'cs' \\(streaming\\) or 'cg'"):
        fx.UniversalCopy(128, cache="lu")


# ---------------------------------------------------------------------------------------------------
# running copies: ragged predicates, buffer bounds
# ---------------------------------------------------------------------------------------------------


@flyc.kernel
def ragged_kernel(A: fx.Tensor, B: fx.Tensor, tiled: fx.TiledCopy):
    M, N = A.shape.unpack()
    bx, by, tid = fx.block_idx.x, fx.block_idx.y, fx.thread_idx.x
    tile = tiled.tile_mn
    thr = tiled.get_slice(tid)
    gA = thr.partition_S(fx.flat_divide(A, tile)[None, None, bx, by])
    gB = thr.partition_D(fx.flat_divide(B, tile)[None, None, bx, by])
    cA = thr.partition_S(fx.flat_divide(fx.make_identity_tensor((M, N)), tile)[None, None, bx, by])
    pred = fx.make_fragment_like(cA[(0, None), None, None], fx.Boolean)
    for i in fx.range_constexpr(fx.size(pred)):
        pred[i] = fx.elem_less(cA[(0, None), None, None][i], (M, N))
    frag = fx.make_fragment_like(gA)
    frag.fill(-1.0)
    fx.copy(fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32), gA, frag, pred=pred)
    fx.copy(tiled, frag, gB, pred=pred)


@flyc.jit
def ragged_copy(A: fx.Tensor, B: fx.Tensor):
    tiled = fx.make_tiled_copy_tv(
        fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32),
        fx.make_ordered_layout((4, 8), (1, 0)),
        fx.make_layout((2, 8), (8, 1)),
    )
    tm, tn = tiled.tile_mn.unpack()
    M, N = A.shape.unpack()
    ragged_kernel(A, B, tiled).launch(grid=((M + tm - 1) // tm, (N + tn - 1) // tn, 1), block=(32, 1, 1))


def test_predicated_tiled_copy_on_a_ragged_shape_leaves_the_guard_untouched():
    M, N, pad = 13, 44, 20  # tiles of 8 x 64: neither extent is a multiple
    a = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    guard = np.full((M + 3, N + pad), 7.0, np.float32)
    b = guard[:M, :N]  # row stride N + pad: elements past N (and rows past M) are the guard
    ragged_copy(a, b)
    np.testing.assert_array_equal(guard[:M, :N], a)
    assert (guard[:M, N:] == 7.0).all() and (guard[M:] == 7.0).all()


@flyc.kernel
def buffer_kernel(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, n: fx.Int32):
    tid = fx.thread_idx.x
    bA = fx.rocdl.make_buffer_tensor(A, max_size=False)  # bound: A's own extent
    bB = fx.rocdl.make_buffer_tensor(B, num_records_bytes=n * 4)
    atom = fx.make_copy_atom(fx.rocdl.BufferCopy128b(), fx.Float32)
    tA = fx.logical_divide(fx.make_view(bA, fx.make_layout(128, 1)), fx.make_layout(4, 1))
    tB = fx.logical_divide(fx.make_view(bB, fx.make_layout(128, 1)), fx.make_layout(4, 1))
    r = fx.make_rmem_tensor(4, fx.Float32)
    fx.copy(atom, tA[None, tid], r)
    fx.copy(atom, r, tB[None, tid])
    fx.copy(fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32), r, fx.logical_divide(C, 4)[None, tid])


@flyc.jit
def buffer_copy(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, n: fx.Int32):
    buffer_kernel(A, B, C, n).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_buffer_tensors_read_zeros_and_drop_writes_past_their_bound():
    store = np.full(200, 5.0, np.float32)
    a = store[:100]
    a[:] = np.arange(100, dtype=np.float32)
    b = np.full(128, -3.0, np.float32)
    c = np.zeros(128, np.float32)
    buffer_copy(a, b, c, 100)
    np.testing.assert_array_equal(c[:100], a)
    assert (c[100:] == 0).all()  # read past A's 100 elements: zeros, not the 5.0 after it
    np.testing.assert_array_equal(b[:100], a)
    assert (b[100:] == -3.0).all()  # written past num_records: dropped
    assert (store[100:] == 5.0).all()


# ---------------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------------


def test_copy_errors_say_what_the_atom_needs():
    with trace_kernel([PointerType(f32), i32]) as t:
        a = _g(t.args[0], (8, 64), (64, 1))
        r4, r8 = fx.make_rmem_tensor(4, fx.Float32), fx.make_rmem_tensor(8, fx.Float32)
        with pytest.raises(CopyError, match="moves 4 contiguous elements per call, but the source's values"):
            fx.copy(ATOM128, fx.make_view(a, fx.make_layout(4, 64)), r4)
        with pytest.raises(CopyError, match="call 1 starts the source at element offset 5, not a multiple of 4"):
            fx.copy(ATOM128, fx.make_view(a, fx.make_layout((4, 2), (1, 5))), r8)
        with pytest.raises(CopyError, match="only 4-byte aligned"):
            fx.copy(ATOM128, fx.make_view(fx.slice(a, (None, 1)), fx.make_layout(4, 1)), r4)
        with pytest.raises(CopyError, match="holds 6"):
            fx.copy(ATOM128, fx.make_view(a, fx.make_layout(6, 1)), fx.make_rmem_tensor(6, fx.Float32))
        with pytest.raises(CopyError, match="makes 2 calls .* makes 1"):
            fx.copy(ATOM128, fx.make_view(a, fx.make_layout(8, 1)), r4)
        with pytest.raises(CopyError, match="3 elements, but the copy makes 2 atom calls"):
            fx.copy(ATOM128, fx.make_view(a, fx.make_layout(8, 1)), r8, pred=fx.make_rmem_tensor(3, fx.Boolean))
        with pytest.raises(TypeError, match="does not convert: Float32 -> Int32"):
            fx.copy(ATOM128, fx.make_view(a, fx.make_layout(4, 1)), fx.make_rmem_tensor(4, fx.Int32))
        with pytest.raises(CopyError, match="tensors hold Float16"):
            fx.copy(ATOM128, fx.make_rmem_tensor(8, fx.Float16), fx.make_rmem_tensor(8, fx.Float16))
        with pytest.raises(CopyError, match="buffer tensor"):
            fx.copy(fx.make_copy_atom(fx.rocdl.BufferCopy128b(), fx.Float32), fx.make_view(a, fx.make_layout(4, 1)), r4)
        i32_atom = fx.make_copy_atom(fx.UniversalCopy32b(), fx.Int32)
        with pytest.raises(TypeError, match="into a coordinate tensor"):
            fx.copy(i32_atom, fx.make_rmem_tensor(1, fx.Int32), fx.make_identity_tensor(1))
        with pytest.raises(TypeError, match="must be a tensor"):
            fx.copy(ATOM128, 1.0, r4)
        with pytest.raises(CopyError, match="copy_atom_call: .* holds 8"):
            fx.copy_atom_call(ATOM128, fx.make_view(a, fx.make_layout(8, 1)), r8)
        sw = fx.make_composed_layout(fx.Swizzle(3, 1, 3), 0, fx.make_layout(64, 1))
        with pytest.raises(CopyError, match="keeps 2 elements contiguous"):
            fx.copy(ATOM128, fx.make_view(a, sw), fx.make_rmem_tensor(64, fx.Float32))
