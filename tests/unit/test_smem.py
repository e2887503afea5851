"""Shared memory: struct/array/align byte layouts (FlyDSL's documented numbers), the SharedAllocator
(static and dynamic, sizes, alignment, capacity errors), Storage peek/poke, and round trips through
shared memory on the interpreter (plain and swizzled)."""

from __future__ import annotations

import numpy as np
import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.smem import DYNAMIC_SMEM_ATTR, SharedMemoryError
from flydsl.expr.struct import _storage_layout, dsl_align_of, dsl_size_of
from flydsl.expr.typing import Constexpr
from flydsl.interp import Memory, run_kernel
from flydsl.ir import PointerType, f32, i32
from flydsl.layout import Swizzle
from flydsl.testing import trace_kernel, use_target


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.delenv("FLYDSL_DUMP_IR", raising=False)


@fx.struct
class Pair:
    left: fx.Int32
    right: fx.Float32


@fx.struct
class Inner:
    x: fx.Int32
    y: fx.Int32


@fx.struct
class Outer:
    head: fx.Int32
    inner: Inner
    tail: fx.Float32


@fx.struct
class Padded:
    head: fx.Int32
    payload: fx.Align[fx.Int32, 16]


@fx.struct
class Shared:
    a: fx.Array[fx.Float32, 128, 16]
    b: fx.Array[fx.Float32, 128, 16]


@fx.struct
class Params:
    tile: Constexpr[int]
    scale: fx.Float32


@fx.union
class Scratch:
    fp16: fx.Array[fx.Float16, 128]
    fp32: fx.Array[fx.Float32, 64]


# ---------------------------------------------------------------------------------------------------
# byte layouts (docs/language/storage_and_allocator.md of FlyDSL)
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "t, size, align, offsets",
    [
        (Pair, 8, 4, {"left": 0, "right": 4}),
        (Padded, 32, 16, {"head": 0, "payload": 16}),
        (Outer, 16, 4, {"head": 0, "inner": 4, "tail": 12}),
        (Shared, 1024, 16, {"a": 0, "b": 512}),
        (Params, 4, 4, {"scale": 0}),
        (Scratch, 256, 4, {"fp16": 0, "fp32": 0}),
        (fx.Struct["x" : fx.Align[fx.Int32, 16], "y" : fx.Int64], 16, 16, {"x": 0, "y": 8}),
        (fx.Union["small" : fx.Array[fx.Uint8, 6], "wide" : fx.Align[fx.Int32, 16]], 16, 16, {"small": 0, "wide": 0}),
        (fx.Struct["head" : fx.Int32, "scratch":Scratch], 260, 4, {"head": 0, "scratch": 4}),
    ],
)
def test_struct_and_union_layouts(t, size, align, offsets):
    assert _storage_layout(t) == (size, align, offsets)
    assert (dsl_size_of(t), dsl_align_of(t)) == (size, align)


def test_arrays_and_aligns():
    assert (dsl_size_of(fx.Array[fx.Float32, 32, 16]), dsl_align_of(fx.Array[fx.Float32, 32, 16])) == (128, 16)
    assert fx.Array[Pair, 3] is fx.Array[Pair, 3, 4] and fx.Array[Pair, 3].dtype is Pair
    for t, size, align in ((Pair, 24, 4), (Outer, 48, 4), (Padded, 96, 16)):
        assert (dsl_size_of(fx.Array[t, 3]), dsl_align_of(fx.Array[t, 3])) == (size, align)
    assert (dsl_size_of(fx.Array[Pair, 3, 32]), dsl_align_of(fx.Array[Pair, 3, 32])) == (24, 32)
    item = fx.Struct["x" : fx.Align[fx.Int32, 16], "y" : fx.Int64]
    outer = fx.Struct["items" : fx.Array[item, 3], "tail" : fx.Align[fx.Int32, 32]]
    assert _storage_layout(outer) == (96, 32, {"items": 0, "tail": 64})
    assert (dsl_size_of(fx.Align[fx.Int32, 16]), dsl_align_of(fx.Align[fx.Int32, 16])) == (4, 16)
    assert (dsl_size_of(fx.Float32x4), dsl_align_of(fx.Float32x4)) == (16, 4)
    with pytest.raises(ValueError, match="multiple of the element alignment 16"):
        fx.Array[Padded, 3, 8]
    with pytest.raises(ValueError, match="power of two"):
        fx.Array[Pair, 3, 12]
    with pytest.raises(ValueError, match="smaller than natural alignment"):
        fx.Align[fx.Int32, 2]
    with pytest.raises(TypeError, match="must be an int"):
        fx.Align[fx.Int32, 1.0]
    for bad in (fx.Boolean, fx.Vector, fx.Tensor):
        with pytest.raises(TypeError, match="not Storable"):
            dsl_size_of(bad)
    with pytest.raises(TypeError, match="field 'value'.*not Storable|not Storable.*field 'value'"):
        fx.Array[fx.Struct["value" : fx.Boolean], 4]


def test_struct_values():
    p = Pair(1, 2.5)
    assert type(p.left) is fx.Int32 and p.right.value == 2.5
    q = p.replace(left=7)
    assert q.left.value == 7 and p.left.value == 1
    assert Params(tile=32, scale=1.0).tile == 32
    with pytest.raises(TypeError, match="missing field"):
        Pair(1)
    with pytest.raises(TypeError, match="immutable"):
        p.left = 3
    with pytest.raises(TypeError, match="union"):
        Scratch()
    with pytest.raises(TypeError, match="reserved"):
        fx.Struct["peek" : fx.Int32]


# ---------------------------------------------------------------------------------------------------
# the allocator
# ---------------------------------------------------------------------------------------------------


def test_allocated_bytes_follow_the_logical_layout():
    with trace_kernel([]) as t:
        alloc = fx.SharedAllocator()
        s = alloc.allocate(Shared)
        assert alloc.allocated_bytes == 1024 and type(s) is fx.Storage[Shared]
        alloc.allocate(Scratch)
        assert alloc.allocated_bytes == 1280
        alloc.allocate(fx.Int32)
        alloc.allocate(Padded)  # aligned to 16: 1296..1327
        assert alloc.allocated_bytes == 1328
        alloc.allocate(fx.Int32, alignment=32)
        alloc.allocate(fx.Int32)
        assert alloc.allocated_bytes == 1352
        raw = alloc.allocate(256)
        assert type(raw)._target_type is fx.Array[fx.Uint8, 256]
        assert type(s.b)._target_type is fx.Array[fx.Float32, 128, 16]
        with pytest.raises(AttributeError, match="compile-time only"):
            _ = alloc.allocate(Params).tile
        with pytest.raises(AttributeError, match="has no field"):
            _ = s.missing
        with pytest.raises(ValueError, match="must be > 0"):
            alloc.allocate(0)
        with pytest.raises(TypeError, match="Storable"):
            alloc.allocate(fx.Struct["t" : fx.Tensor])
        with pytest.raises(RuntimeError, match="Only one SharedAllocator"):
            fx.SharedAllocator()
        with pytest.raises(RuntimeError, match="no base pointer"):
            _ = alloc.base_ptr
    assert t.count("ptr.shared_alloc") == 8


def test_allocator_needs_a_kernel():
    with pytest.raises(RuntimeError, match="@flyc.kernel"):
        fx.SharedAllocator()
    assert fx.Arena().allocated_bytes == 0
    with pytest.raises(NotImplementedError):
        _ = fx.Arena().base_ptr


def test_dynamic_allocator_records_its_size_on_the_kernel():
    with trace_kernel([]) as t:
        alloc = fx.SharedAllocator(static=False)
        alloc.allocate(fx.Int32)
        alloc.allocate(fx.Array[fx.Float32, 100, 16])
        assert alloc.allocated_bytes == 416
    assert t.kernel.attrs[DYNAMIC_SMEM_ATTR] == 416
    assert t.count("ptr.dynamic_shared") == 1 and t.count("ptr.shared_alloc") == 0


def test_capacity_errors_name_sizes_limit_and_fix():
    with use_target("sm_90a"), trace_kernel([]):
        alloc = fx.SharedAllocator()
        alloc.allocate(fx.Array[fx.Float32, 8192])  # 32 KB: fine
        with pytest.raises(SharedMemoryError) as e:
            alloc.allocate(fx.Array[fx.Float32, 8192, 16])
    msg = str(e.value)
    assert "65536 bytes" in msg and "49152-byte static limit of sm_90a" in msg and "static=False" in msg
    with use_target("sm_90a"), trace_kernel([]):
        dyn = fx.SharedAllocator(static=False)
        dyn.allocate(fx.Array[fx.Float32, 50000])  # 200 KB: fine dynamically
        with pytest.raises(SharedMemoryError, match="232448-byte limit of sm_90a"):
            dyn.allocate(fx.Array[fx.Float32, 8192])


# ---------------------------------------------------------------------------------------------------
# round trips through shared memory
# ---------------------------------------------------------------------------------------------------


@flyc.kernel
def struct_kernel(out: fx.Tensor, keys: fx.Tensor, static: Constexpr[bool]):
    tid = fx.thread_idx.x
    alloc = fx.SharedAllocator(static=static)
    alloc.allocate(3)
    pair = alloc.allocate(Pair)
    items = alloc.allocate(fx.Array[Outer, 32]).peek()
    if tid == 0:
        pair.poke(Pair(41, 0.5))
    items[tid] = Outer(tid, Inner(tid * 2, tid * 3), tid.to(fx.Float32) + 0.25)
    fx.barrier()
    peer = items[31 - tid]
    p = pair.peek()
    out[tid] = peer.tail + p.right
    keys[tid] = peer.inner.y + p.left + pair.left.peek()


@flyc.jit
def struct_roundtrip(out: fx.Tensor, keys: fx.Tensor, static: Constexpr[bool]):
    struct_kernel(out, keys, static).launch(grid=(1, 1, 1), block=(32, 1, 1), smem=0 if static else 1024)


@pytest.mark.parametrize("static", [True, False])
def test_struct_storage_round_trip(static):
    out = np.zeros(32, np.float32)
    keys = np.zeros(32, np.int32)
    struct_roundtrip(out, keys, static)
    peer = np.arange(31, -1, -1)
    np.testing.assert_array_equal(out, peer + 0.25 + 0.5)
    np.testing.assert_array_equal(keys, peer * 3 + 41 + 41)


def _transpose_through_smem(sw):
    """A 32 x 32 tile: each thread writes a row of A into shared memory viewed (m, n), then reads a row of
    the (n, m) view — through the swizzle ``sw`` (or none)."""
    with trace_kernel([PointerType(f32), PointerType(f32)]) as t:
        tid = fx.thread_idx.x
        a = fx.Tensor(t.args[0], fx.Float32, fx.make_layout((32, 32), (32, 1)), alignment=16)
        b = fx.Tensor(t.args[1], fx.Float32, fx.make_layout((32, 32), (32, 1)), alignment=16)
        smem = fx.SharedAllocator().allocate(fx.Array[fx.Float32, 1024, 16]).peek()
        row, col = fx.make_layout((32, 32), (32, 1)), fx.make_layout((32, 32), (1, 32))
        if sw is not None:
            row, col = fx.make_composed_layout(sw, 0, row), fx.make_composed_layout(sw, 0, col)
        s_mn, s_nm = smem.view(row), smem.view(col)
        atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
        src = fx.logical_divide(a[tid, None], fx.make_layout(4, 1))
        frag = fx.make_fragment_like(src)
        fx.copy(atom, src, frag)
        fx.copy(atom, frag, fx.logical_divide(s_mn[tid, None], fx.make_layout(4, 1)))
        fx.barrier()
        b[tid, None].store(s_nm[tid, None].load())
    return t


@pytest.mark.parametrize("sw", [None, Swizzle(3, 2, 3)], ids=["plain", "swizzled"])
def test_transpose_through_shared_memory(sw):
    t = _transpose_through_smem(sw)
    assert t.count("ptr.shared_alloc") == 1
    a = np.random.default_rng(4).standard_normal((32, 32)).astype(np.float32)
    b = np.zeros_like(a)
    mem = Memory()
    run_kernel(t.kernel, grid=1, block=32, args=[mem.register(a, "a"), mem.register(b, "b")], memory=mem)
    np.testing.assert_array_equal(b, a.T)


@flyc.kernel
def dyn_view_kernel(A: fx.Tensor, B: fx.Tensor):
    tid = fx.thread_idx.x
    alloc = fx.SharedAllocator(static=False)
    alloc.allocate(fx.Int32)
    tile = alloc.allocate(fx.Array[fx.Float32, 256, 16]).peek()
    s = tile.view(fx.make_composed_layout(fx.Swizzle(2, 2, 4), 0, fx.make_layout((16, 16), (16, 1))))
    s[tid, None].store(A[tid, None].load())
    fx.barrier()
    B[tid, None].store(s[15 - tid, None].load())


@flyc.jit
def dyn_view(A: fx.Tensor, B: fx.Tensor):
    dyn_view_kernel(A, B).launch(grid=(1, 1, 1), block=(16, 1, 1), smem=1040)


@flyc.jit
def dyn_view_auto(A: fx.Tensor, B: fx.Tensor):
    dyn_view_kernel(A, B).launch(grid=(1, 1, 1), block=(16, 1, 1))  # smem from the allocator


@flyc.jit
def dyn_view_short(A: fx.Tensor, B: fx.Tensor):
    dyn_view_kernel(A, B).launch(grid=(1, 1, 1), block=(16, 1, 1), smem=512)


@pytest.mark.parametrize("launcher", [dyn_view, dyn_view_auto])
def test_dynamic_shared_memory_view(launcher):
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    b = np.zeros_like(a)
    launcher(flyc.from_dlpack(a), flyc.from_dlpack(b))
    np.testing.assert_array_equal(b, a[::-1])


def test_launch_smem_smaller_than_the_allocator_is_an_error():
    a = np.zeros((16, 16), np.float32)
    with pytest.raises(flyc.FlyDSLError) as e:
        dyn_view_short(flyc.from_dlpack(a), flyc.from_dlpack(a.copy()))
    msg = str(e.value)
    assert "allocates 1040 bytes of dynamic shared memory, but the launch gives only smem=512" in msg
    assert "test_smem.py" in msg and "pass smem=1040 or more" in msg


def test_pointer_and_alignment_of_a_storage():
    with trace_kernel([i32]) as t:
        alloc = fx.SharedAllocator()
        alloc.allocate(fx.Int8)
        s = alloc.allocate(fx.Array[fx.Float32, 64, 16])
        arr = s.peek()
        assert arr.ptr.memspace == "shared" and arr.ptr.dtype is fx.Float32 and arr.size == 64
        assert arr.view(fx.make_layout(64, 1)).alignment == 16
        arr[fx.Int32(t.args[0])] = 1.0
        assert arr[3].dtype is fx.Float32
        with pytest.raises(TypeError, match="element by element"):
            s.poke(arr)
    assert t.count("ptr.shared_alloc") == 2
