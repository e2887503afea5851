"""Regression tests of the behaviour bugs found running ROCm FlyDSL's own programs (issue 13): dicts carried
through run-time control flow are matched by key; a rebound loop variable keeps its last value; an
undefined value reaching an fx op raises its FLY error; coordinate tensors load; flyc.compile runs once;
fx.gather/scatter."""

# ruff: noqa: B007  (loop variables used after their loops are what these tests check)

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401

from flydsl.compiler import DSLNameError
from flydsl.expr import buffer_ops

pytestmark = pytest.mark.usefixtures("cpu_device")


@flyc.kernel
def dict_keys(out: Tensor, n: fx.Int32):
    d = {"a": fx.Int32(1), "b": fx.Int32(2)}
    if n > 0:
        d = {"b": fx.Int32(20), "a": fx.Int32(10)}  # same keys, other order
    else:
        d = {"a": fx.Int32(5), "b": fx.Int32(6)}
    out[0] = d["a"]
    out[1] = d["b"]
    e = {"x": fx.Int32(0), "y": fx.Int32(1)}
    for i in range(n):
        e = {"y": e["y"] + 1, "x": e["x"] + i}
    out[2] = e["x"]
    out[3] = e["y"]


@flyc.jit
def launch_dict_keys(out, n: fx.Int32):
    dict_keys(out, n).launch(grid=1, block=1)


@pytest.mark.parametrize("n, want", [(3, [10, 20, 3, 4]), (0, [5, 6, 0, 1])])
def test_dict_carried_through_if_and_for_matches_by_key(n, want):
    out = np.zeros(4, np.int32)
    launch_dict_keys(out, n)
    assert out.tolist() == want


@flyc.kernel
def loop_var(out: Tensor, n: fx.Int32):
    i = fx.Int32(999)
    acc = fx.Int32(0)
    for i in range(n):
        acc = acc + 1
    out[0] = i
    out[1] = acc
    j = 7
    for j in range(2, n, 3):
        acc = acc + 1
    out[2] = j
    k = 100
    for k in range(n, 0, -2):  # a negative static step
        acc = acc + 1
    out[3] = k


@flyc.jit
def launch_loop_var(out, n: fx.Int32):
    loop_var(out, n).launch(grid=1, block=1)


@pytest.mark.parametrize("n, want", [(5, [4, 5, 2, 1]), (1, [0, 1, 7, 1]), (0, [999, 0, 7, 100])])
def test_rebound_loop_variable_keeps_last_iteration_value(n, want):
    out = np.zeros(4, np.int32)
    launch_loop_var(out, n)
    assert out.tolist() == want


@flyc.kernel
def undefined_to_buffer(out: Tensor, n: fx.Int32):
    for i in range(n):
        pass
    rsrc = buffer_ops.create_buffer_resource(out)
    buffer_ops.buffer_store(i, rsrc, 0)


@flyc.jit
def launch_undefined_to_buffer(out, n: fx.Int32):
    undefined_to_buffer(out, n).launch(grid=1, block=1)


def test_undefined_loop_variable_reaching_buffer_store_is_a_fly_error():
    with pytest.raises(DSLNameError) as ei:
        launch_undefined_to_buffer(np.zeros(2, np.int32), 3)
    text = str(ei.value)
    assert "error[FLY118]: the induction variable 'i' of the kernel loop" in text
    assert "buffer_ops.buffer_store(i, rsrc, 0)" in text  # at the user's line


@flyc.kernel
def coord_load(out: Tensor):
    col = fx.make_view(fx.make_int_tuple(3), fx.make_layout((2, 4), (0, 1)))
    v = col.load()
    for k in fx.range_constexpr(8):
        out[k] = v[k]


@flyc.jit
def launch_coord_load(out):
    coord_load(out).launch(grid=1, block=1)


def test_coordinate_tensor_loads_its_coordinates():
    out = np.zeros(8, np.int32)
    launch_coord_load(out)
    assert out.tolist() == [3, 3, 4, 4, 5, 5, 6, 6]  # colexicographic: (m, n) -> 3 + n


@flyc.kernel
def tuple_coord_load(out: Tensor):
    idc = fx.make_identity_tensor((2, 2))
    out[0] = idc.load()[0]


@flyc.jit
def launch_tuple_coord_load(out):
    tuple_coord_load(out).launch(grid=1, block=1)


def test_tuple_coordinate_tensor_load_is_a_clear_error():
    with pytest.raises(TypeError, match="elements are tuples cannot be loaded as a Vector"):
        launch_tuple_coord_load(np.zeros(1, np.int32))


@flyc.kernel
def fill_once(out: Tensor, value: fx.Int32):
    out[fx.thread_idx.x] = value


@flyc.jit
def launch_fill(out, value: fx.Int32):  # its own jit function: other tests count test_jit_api's calls
    fill_once(out, value).launch(grid=1, block=4)


def test_compile_runs_the_function_once_like_flydsl(monkeypatch):
    out = np.zeros(4, np.int32)
    compiled = flyc.compile(launch_fill, out, 9)
    assert out.tolist() == [9] * 4
    compiled(out, 2)
    assert out.tolist() == [2] * 4
    monkeypatch.setenv("COMPILE_ONLY", "1")
    out[:] = 0
    assert flyc.compile(launch_fill, out, 5) is None
    assert out.tolist() == [0] * 4  # nothing runs under COMPILE_ONLY


TILE_M, TILE_N = 4, 8


@flyc.kernel
def gather_rows(src: Tensor, dst: Tensor, idx: Tensor):
    tid = fx.thread_idx.x
    atom = fx.make_copy_atom(fx.UniversalCopy64b(), fx.Float32)
    thr = fx.make_tiled_copy_tv(
        atom, fx.make_layout((TILE_M, TILE_N // 2), (TILE_N // 2, 1)), fx.make_layout((1, 2), (1, 1))
    ).get_slice(tid)
    R, N = dst.shape.unpack()
    rows = fx.make_view(fx.get_iter(idx), fx.make_layout((R, N), (1, 0)))
    cols = fx.make_view(fx.make_int_tuple(0), fx.make_layout((R, N), (0, 1)))
    tile = (TILE_M, TILE_N)
    t_rows = thr.partition_S(fx.flat_divide(rows, tile)[None, None, 0, 0])[(0, None), None, None]
    t_cols = thr.partition_S(fx.flat_divide(cols, tile)[None, None, 0, 0])[(0, None), None, None]
    t_dst = thr.partition_D(fx.flat_divide(dst, tile)[None, None, 0, 0])
    r_off = fx.make_fragment_like(t_rows)
    r_dst = fx.make_fragment_like(t_dst)
    fx.copy(fx.make_copy_atom(fx.UniversalCopy32b(), fx.Int32), t_rows, r_off)
    r_off.store(r_off.load() * N + t_cols.load())
    fx.gather(atom, fx.get_iter(src), r_off, r_dst)
    fx.copy(atom, r_dst, t_dst)


@flyc.jit
def launch_gather(src, dst, idx):
    gather_rows(src, dst, idx).launch(grid=1, block=TILE_M * TILE_N // 2)


def test_gather_rows_by_index():
    rng = np.random.default_rng(0)
    src = rng.standard_normal((10, TILE_N)).astype(np.float32)
    idx = np.array([7, 0, 3, 3], np.int32)
    dst = np.full((TILE_M, TILE_N), np.nan, np.float32)
    launch_gather(src, dst, idx)
    np.testing.assert_array_equal(dst, src[idx])


# -- fx.UniversalAtomic: an atomic copy atom ------------------------------------------------------------


@flyc.kernel
def atomic_reduce(a: Tensor, out: Tensor, scope: fx.Constexpr[str], kind: fx.Constexpr[str]):
    t = fx.slice(fx.logical_divide(a, fx.make_layout(1, 1)), (None, fx.block_idx.x * 32 + fx.thread_idx.x))
    r = fx.make_rmem_tensor(1, fx.Float32)
    fx.copy_atom_call(fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32), t, r)
    atom = fx.make_copy_atom(fx.UniversalAtomic(fx.AtomicOp(kind), fx.Float32, syncscope=scope), fx.Float32)
    dst = fx.slice(fx.logical_divide(out, fx.make_layout(1, 1)), (None, 0))
    fx.copy_atom_call(atom, r, dst, pred=fx.thread_idx.x < 16)


@flyc.jit
def launch_atomic_reduce(a, out, scope: fx.Constexpr[str], kind: fx.Constexpr[str]):
    atomic_reduce(a, out, scope, kind).launch(grid=2, block=32)


@pytest.mark.parametrize("scope", ["", "agent", "workgroup", "wavefront", "singlethread"])
def test_universal_atomic_combines_registers_into_memory(scope, monkeypatch):
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(1, np.float32)
    launch_atomic_reduce(a, out, scope, "add")
    lanes = [b * 32 + t for b in range(2) for t in range(16)]  # the predicate keeps threads 0..15 of each block
    assert out[0] == a[lanes].sum()
    out[:] = -1.0
    launch_atomic_reduce(a, out, scope, "max")
    assert out[0] == 47.0
    monkeypatch.setenv("COMPILE_ONLY", "1")
    launch_atomic_reduce.clear_cache()
    launch_atomic_reduce(a, out, scope, "add")
    art = launch_atomic_reduce._last[1].artifact
    want = {"": "sys", "agent": "gpu"}.get(scope, "cta")  # the narrowest PTX scope containing LLVM's
    assert f'kind = "add", scope = "{want}"' in art.source_ir
    assert "atom.global.add.f32" in art.ptx


def test_universal_atomic_rejects_what_it_cannot_do():
    with pytest.raises(ValueError, match="wrapping increment"):
        fx.UniversalAtomic(fx.AtomicOp.Inc, fx.Int32)
    with pytest.raises(ValueError, match="unknown syncscope 'cluster'"):
        fx.UniversalAtomic(fx.AtomicOp.Add, fx.Float32, syncscope="cluster")
    assert fx.rocdl.SyncScope.Agent == fx.SyncScope.Agent == "agent"
    assert fx.UniversalAtomicMax(fx.Int32) == fx.UniversalAtomic(fx.AtomicOp.Max, fx.Int32)


def test_compile_time_fx_integers_are_static_layout_leaves():
    """A compile-time ``fx.Int32`` in a layout or a basis coefficient is its value (FlyDSL folds it): a basis
    scaled by one is a plain scaled basis, a layout built from them is static."""
    assert fx.Basis(2, [0, 1]) * fx.Int32(5) == fx.Basis(10, [0, 1])
    assert repr(fx.Basis(fx.Int32(3), [1])) == "3E1"
    lay = fx.make_layout((fx.Int32(4), 8), (1, fx.Int32(4)))
    assert lay.is_static and lay.shape == (4, 8) and lay.stride == (1, 4)


def test_int_tuple_to_py_value_keeps_basis_leaves():
    stride = fx.make_stride(fx.E(0), fx.make_stride(fx.E(1), fx.E(2)))
    assert stride.to_py_value() == (fx.Basis(1, [0]), (fx.Basis(1, [1]), fx.Basis(1, [2])))
    assert fx.make_stride(4, fx.make_stride(2, 1)).to_py_value() == (4, (2, 1))
