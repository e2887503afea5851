"""Copy kernels end to end on the CPU interpreter, against numpy:

* the issue's "done" program — FlyDSL's target-neutral 2-D vector add (``make_tiled_copy_tv``,
  ``flat_divide``, identity-layout predicates, ``make_fragment_like``, ``UniversalCopy128b``) over an
  M x N that is not a multiple of the tile;
* the tiled transpose through swizzled shared memory (``examples/03_transpose.py``);
* FlyDSL's ``examples/01-vectorAdd.py`` kernel (rocdl buffer tensor, BufferCopy32b, UniversalCopy32b,
  ``memref_alloca``/``copy_atom_call``) and ``examples/02-tiledCopy.py`` kernel (buffer tensors,
  ``zipped_divide`` + ``slice``, ``make_tiled_copy`` of a raked product), bodies unmodified;
* the predicated tiled copy of ``examples/02_tiled_copy.py``.

Each case is ``case(device) -> (got, want)``; ``tests/gpu/test_copy_gpu.py`` runs the same bodies on the GPU
and compares them with the interpreter. The generated PTX is checked here too (codegen needs no GPU).
"""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from _arrays import to_device, to_numpy

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Constexpr, Stream

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_example(name: str):
    """An example script as a module (its ``main`` is not run)."""
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"flydsl_example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- FlyDSL's target-neutral 2-D vector add (the "done" program) --------------------------------


@flyc.kernel
def vector_add_kernel(
    A: fx.Tensor,
    B: fx.Tensor,
    C: fx.Tensor,
    tiled_copy: fx.TiledCopy,
):
    tid = fx.thread_idx.x
    bid_x, bid_y = fx.block_idx.x, fx.block_idx.y

    # Identity (coordinate) tensor: value == logical coord (m, n).
    M, N = A.shape.unpack()
    idC = fx.make_view((0, 0), fx.make_identity_layout((M, N)))

    TileMN = tiled_copy.tile_mn

    gA = fx.flat_divide(A, TileMN)[None, None, bid_x, bid_y]
    gB = fx.flat_divide(B, TileMN)[None, None, bid_x, bid_y]
    gC = fx.flat_divide(C, TileMN)[None, None, bid_x, bid_y]
    cC = fx.flat_divide(idC, TileMN)[None, None, bid_x, bid_y]

    thr_copy = tiled_copy.get_slice(tid)

    thr_gA = thr_copy.partition_S(gA)
    thr_gB = thr_copy.partition_S(gB)
    thr_gC = thr_copy.partition_D(gC)
    thr_cC = thr_copy.partition_S(cC)[(0, None), None, None]

    thr_rA = fx.make_fragment_like(thr_gA)
    thr_rB = fx.make_fragment_like(thr_gB)
    thr_rC = fx.make_fragment_like(thr_gC)
    thr_pC = fx.make_fragment_like(thr_cC, dtype=fx.Boolean)

    for a in fx.range_constexpr(fx.size(thr_pC.shape).unpack()):
        thr_pC[a] = fx.elem_less(thr_cC[a], (M, N))

    copy_atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)

    fx.copy(copy_atom, thr_gA, thr_rA, pred=thr_pC)
    fx.copy(copy_atom, thr_gB, thr_rB, pred=thr_pC)

    thr_rC.store(thr_rA.load() + thr_rB.load())

    fx.copy(copy_atom, thr_rC, thr_gC, pred=thr_pC)


@flyc.jit
def vector_add(
    A: fx.Tensor,
    B: fx.Tensor,
    C: fx.Tensor,
    stream: Stream = Stream(None),
):
    copy_atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
    tiled_copy = fx.make_tiled_copy_tv(
        copy_atom,
        fx.make_ordered_layout((8, 16), order=(1, 0)),
        fx.make_ordered_layout((1, 4), order=(0, 1)),
    )
    tile_m, tile_n = tiled_copy.tile_mn.unpack()

    M, N = A.shape.unpack()
    grid_m = (M + tile_m - 1) // tile_m
    grid_n = (N + tile_n - 1) // tile_n
    vector_add_kernel(A, B, C, tiled_copy).launch(grid=(grid_m, grid_n, 1), block=(8 * 16, 1, 1), stream=stream)


def case_vector_add_2d(device, M=100, N=1000):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    c = to_device(np.zeros((M, N), np.float32), device)
    vector_add(to_device(a, device), to_device(b, device), c)
    return {"C": to_numpy(c)}, {"C": a + b}


# -- FlyDSL's examples/01-vectorAdd.py kernel (AMD-style buffer tensor, unmodified body) ----------------


@flyc.kernel
def vectorAddKernel(
    A: fx.Tensor,
    B: fx.Tensor,
    C: fx.Tensor,
    block_dim: Constexpr[int],
):
    bid = fx.block_idx.x
    tid = fx.thread_idx.x
    fx.printf("[kernel] bid={}, tid={}", bid, tid)

    A = fx.rocdl.make_buffer_tensor(A)

    tA = fx.logical_divide(A, fx.make_layout(block_dim, 1))
    tB = fx.logical_divide(B, fx.make_layout(block_dim, 1))
    tC = fx.logical_divide(C, fx.make_layout(block_dim, 1))

    tA = fx.slice(tA, (None, bid))
    tB = fx.slice(tB, (None, bid))
    tC = fx.slice(tC, (None, bid))
    tA = fx.logical_divide(tA, fx.make_layout(1, 1))
    tB = fx.logical_divide(tB, fx.make_layout(1, 1))
    tC = fx.logical_divide(tC, fx.make_layout(1, 1))

    RABMemRefTy = fx.MemRefType.get(fx.T.f32(), fx.LayoutType.get(1, 1), fx.AddressSpace.Register)

    copyAtom = fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32)
    copyAtomBuffer = fx.make_copy_atom(fx.rocdl.BufferCopy32b(), fx.Float32)

    rA = fx.memref_alloca(RABMemRefTy, fx.make_layout(1, 1))
    rB = fx.memref_alloca(RABMemRefTy, fx.make_layout(1, 1))
    rC = fx.memref_alloca(RABMemRefTy, fx.make_layout(1, 1))

    fx.copy_atom_call(copyAtomBuffer, fx.slice(tA, (None, tid)), rA)
    fx.copy_atom_call(copyAtom, fx.slice(tB, (None, tid)), rB)

    vC = fx.arith.addf(fx.memref_load_vec(rA), fx.memref_load_vec(rB))
    fx.memref_store_vec(vC, rC)

    fx.copy_atom_call(copyAtom, rC, fx.slice(tC, (None, tid)))


@flyc.jit
def vectorAdd(
    A: fx.Tensor,
    B: fx.Tensor,
    C,  # omitted for auto induction
    n: fx.Int32,  # dynamic int32
    const_n: Constexpr[int],  # static int32, it has an effect on function cache-key
    stream: Stream = Stream(None),
):
    block_dim = 64
    grid_x = (n + block_dim - 1) // block_dim
    # NOTE: FlyDSL's launcher also prints from the host (fx.printf here); host-side printf is not
    # supported by the host interpreter yet, so this launcher line is left out (the kernel is verbatim).

    vectorAddKernel(A, B, C, block_dim).launch(grid=(grid_x, 1, 1), block=[block_dim, 1, 1], stream=stream)


def case_vector_add_rocdl(device, n=128):
    A = to_device(np.random.default_rng(1).integers(0, 10, n).astype(np.float32), device)
    B = to_device(np.random.default_rng(2).integers(0, 10, n).astype(np.float32), device)
    C = to_device(np.zeros(n, np.float32), device)
    tA = flyc.from_dlpack(A).mark_layout_dynamic(leading_dim=0, divisibility=4)
    vectorAdd(tA, B, C, n, n + 1)
    return {"C": to_numpy(C)}, {"C": to_numpy(A) + to_numpy(B)}


# -- FlyDSL's examples/02-tiledCopy.py (buffer tensors, zipped_divide + slice, make_tiled_copy) ----------


@flyc.kernel
def copy_kernel(
    A: fx.Tensor,
    B: fx.Tensor,
):
    tid = fx.thread_idx.x
    bid = fx.block_idx.x

    block_m = 8
    block_n = 24
    tile = fx.make_tile([fx.make_layout(block_m, 1), fx.make_layout(block_n, 1)])

    A = fx.rocdl.make_buffer_tensor(A)
    B = fx.rocdl.make_buffer_tensor(B)

    bA = fx.zipped_divide(A, tile)
    bB = fx.zipped_divide(B, tile)
    bA = fx.slice(bA, (None, bid))
    bB = fx.slice(bB, (None, bid))

    thr_layout = fx.make_layout((4, 1), (1, 1))
    val_layout = fx.make_layout((1, 8), (1, 1))
    copy_atom = fx.make_copy_atom(fx.rocdl.BufferCopy128b(), fx.Float32)
    layout_thr_val = fx.raked_product(thr_layout, val_layout)

    tile_mn = fx.make_tile(4, 8)

    tiled_copy = fx.make_tiled_copy(copy_atom, layout_thr_val, tile_mn)
    thr_copy = tiled_copy.get_slice(tid)

    partition_src = thr_copy.partition_S(bA)
    partition_dst = thr_copy.partition_D(bB)

    frag = fx.make_fragment_like(partition_src)

    fx.copy(copy_atom, partition_src, frag)
    fx.copy(copy_atom, frag, partition_dst)


@flyc.jit
def tiledCopy(
    A: fx.Tensor,
    B: fx.Tensor,
    stream: Stream = Stream(None),
):
    copy_kernel(A, B).launch(grid=(15, 1, 1), block=(4, 1, 1), stream=stream)


def case_flydsl_tiled_copy(device):
    M, N = 8 * 3, 24 * 5
    A = to_device(np.arange(M * N, dtype=np.float32).reshape(M, N), device)
    B = to_device(np.zeros((M, N), np.float32), device)
    tiledCopy(A, B)
    return {"B": to_numpy(B)}, {"B": to_numpy(A)}


# -- the examples --------------------------------------------------------------------------------------


def case_transpose(device, M=256, N=192):
    ex = load_example("03_transpose")
    a = np.random.default_rng(3).standard_normal((M, N)).astype(np.float32)
    b = to_device(np.zeros((N, M), np.float32), device)
    ex.transpose(to_device(a, device), b)
    return {"B": to_numpy(b)}, {"B": a.T.copy()}


def case_transpose_ragged(device):
    return case_transpose(device, M=100, N=132)


def case_tiled_copy(device, M=37, N=204):
    ex = load_example("02_tiled_copy")
    a = np.random.default_rng(4).standard_normal((M, N)).astype(np.float32)
    b = to_device(np.zeros((M, N), np.float32), device)
    ex.tiled_copy(to_device(a, device), b)
    return {"B": to_numpy(b)}, {"B": a}


CASES = {
    "vector_add_2d": case_vector_add_2d,
    "vector_add_rocdl": case_vector_add_rocdl,
    "transpose": case_transpose,
    "transpose_ragged": case_transpose_ragged,
    "tiled_copy": case_tiled_copy,
    "flydsl_tiled_copy": case_flydsl_tiled_copy,
}


# ---------------------------------------------------------------------------------------------------
# on the interpreter
# ---------------------------------------------------------------------------------------------------


@pytest.fixture
def interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    monkeypatch.delenv("FLYDSL_DUMP_IR", raising=False)
    return monkeypatch


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_matches_numpy(name, interpreter):
    got, want = CASES[name]("cpu")
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"{name}: {k}")


def test_vector_add_on_shapes_that_are_not_multiples_of_the_tile(interpreter):
    for M, N in ((1, 4), (9, 68), (37, 204)):  # tile 8 x 64; rows of 128-bit multiples
        got, want = case_vector_add_2d("cpu", M, N)
        np.testing.assert_array_equal(got["C"], want["C"], err_msg=f"{M}x{N}")


def test_rocdl_vector_add_prints_from_every_thread(interpreter, capfd):
    got, want = case_vector_add_rocdl("cpu", n=192)  # FlyDSL's kernel has no bounds check: n % 64 == 0
    np.testing.assert_array_equal(got["C"], want["C"])
    out = capfd.readouterr().out
    assert out.count("[kernel] bid=") == 192 and "[kernel] bid=2, tid=63" in out


def _ptx(tmp_path, kernel: str) -> str:
    files = sorted((tmp_path / "dump").glob(f"{kernel}*/*.ptx"))
    assert files, f"no PTX dumped for {kernel}"
    return files[-1].read_text()


def test_128bit_atoms_are_vector_instructions_in_the_ptx(interpreter, tmp_path):
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    vector_add.clear_cache()  # compile again, with the dumps
    case_vector_add_2d("cpu", 16, 128)
    ptx = _ptx(tmp_path, "vector_add_kernel")
    assert ptx.count("ld.global.v4") == 2 and ptx.count("st.global.v4") == 1, ptx
    case_transpose("cpu")
    ptx = _ptx(tmp_path, "transpose_kernel")
    assert ptx.count("ld.global.v4") == 4 and ptx.count("st.global.v4") == 4
    assert ptx.count("st.shared.v4") == 4 and ptx.count("bar.sync") == 1


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_case_compiles_to_ptx(name, interpreter, tmp_path):
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    for fn in (vector_add, vectorAdd, tiledCopy):
        fn.clear_cache()
    CASES[name]("cpu")
    ptx = list((tmp_path / "dump").glob("*/*.ptx"))
    assert ptx and all(".entry" in p.read_text() for p in ptx)


# -- examples/04_buffer_copy.py: buffer_load/buffer_store with bounds ------------------------------------


@pytest.mark.parametrize("n", [4096, 10_001, 3])
def test_buffer_copy_example_keeps_guard_memory(n):
    ex = load_example("04_buffer_copy")
    src = np.arange(n + 8, dtype=np.float32)
    dst = np.full(n + 8, -8192.0, np.float32)
    ex.buffer_copy(src, dst, n)
    np.testing.assert_array_equal(dst[:n], src[:n])
    assert np.all(dst[n:] == -8192.0)


def test_buffer_copy_ptx_is_one_16_byte_access_in_bounds(tmp_path, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    ex = load_example("04_buffer_copy")
    src = np.zeros(64, np.float32)
    monkeypatch.setenv("COMPILE_ONLY", "1")
    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    ex.buffer_copy(src, src.copy(), 64)
    (ptx_file,) = tmp_path.glob("*/*final_isa.ptx")
    text = ptx_file.read_text()
    assert "ld.global.v4.b32" in text and "st.global.v4.b32" in text
