"""Vector accesses claim only the alignment the specialization proves (FlyDSL's norm kernels on NVIDIA).

FlyDSL's RMSNorm/LayerNorm read rows through 128-bit buffer copies; AMD's buffer instructions accept any
element-aligned address, an NVIDIA vector access faults unless it is aligned to its size. A tensor or
raw pointer with a storage offset of one element (FlyDSL's ``test_*_storage_offset``) used to get a
16-byte vector access at a 2-byte-aligned address: ``CUDA_ERROR_MISALIGNED_ADDRESS`` on the H200, while
the interpreter, which did not check buffer accesses for alignment, passed. Now:

* the interpreter faults on a buffer vector access that is issued without an alignment test (``align``
  covers the vector) at a misaligned address, as the GPU does;
* a pointer keeps its known alignment through ``+ offset`` (what the offset provably is a multiple of) and
  into kernels, so the aligned specialization still claims 16 bytes (one ``ld.global.v4``, no test);
* a misaligned specialization claims what it proves: buffer copies test the address at run time,
  universal copies over global memory are versioned (vector instruction when aligned, narrower otherwise).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.dialects import arith, ptr
from flydsl.expr._sem.multiple import CAP, pow2_multiple
from flydsl.interp import InterpError
from flydsl.ir import PointerType, VectorType, bf16, i32, i64
from flydsl.testing import KernelBuilder, const, launch, trace_kernel

BF16 = ml_dtypes.bfloat16
VEC = 8  # bf16 elements of one 128-bit copy
COLS = 64  # a row: 8 threads of 8 elements


@pytest.fixture
def interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY"):
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


# -- the interpreter's alignment model of buffer accesses ---------------------------------------------------


def _buffer_kernel(align: int, byte_off: int, nbytes: int = 4096, store: bool = False):
    v8 = VectorType(VEC, bf16)
    with KernelBuilder("buf", [PointerType(bf16), PointerType(bf16)]) as kb:
        src, dst = kb.args
        rs, rd = ptr.buffer_rsrc(src, arith.const(nbytes, i64)), ptr.buffer_rsrc(dst, arith.const(nbytes, i64))
        with kb.at(("norm.py", 65, 5)):
            v = ptr.buffer_load(rs, const(0 if store else byte_off), result_types=[v8], align=align)
        with kb.at(("norm.py", 71, 5)):
            ptr.buffer_store(v, rd, const(byte_off if store else 0), align=align)
    return kb.op


def test_a_buffer_vector_access_claimed_aligned_faults_at_a_misaligned_address():
    a, b = np.arange(64).astype(BF16), np.zeros(64, BF16)
    with pytest.raises(InterpError, match=r"at norm\.py:65 \(ptr\.buffer_load\): misaligned vector read: .* align=16"):
        launch(_buffer_kernel(16, 2), 1, 1, a, b)
    with pytest.raises(InterpError, match=r"at norm\.py:71 \(ptr\.buffer_store\): misaligned vector write: .*align=16"):
        launch(_buffer_kernel(16, 2, store=True), 1, 1, a, b)


def test_a_buffer_access_relies_on_its_claimed_alignment_below_the_vector_too():
    """``align = 8`` for a 16-byte vector: the address is tested for 16 bytes, else moved in 8-byte pieces,
    which need the 8 bytes the compiler proved."""
    a, b = np.arange(64).astype(BF16), np.zeros(64, BF16)
    launch(_buffer_kernel(8, 8), 1, 1, a, b)  # 8-byte aligned: the pieces
    np.testing.assert_array_equal(b[:VEC], a[4 : 4 + VEC])
    with pytest.raises(InterpError, match=r"at norm\.py:65 \(ptr\.buffer_load\): misaligned vector read: .* align=8"):
        launch(_buffer_kernel(8, 2), 1, 1, a, b)


def test_a_buffer_access_that_tests_the_address_reads_any_element_aligned_address():
    """``align`` below the vector's size: the generated code tests the address and falls back to element
    accesses, so no address faults; an access straddling ``num_records`` goes element by element too."""
    a, b = np.arange(64).astype(BF16), np.zeros(64, BF16)
    launch(_buffer_kernel(2, 2), 1, 1, a, b)
    np.testing.assert_array_equal(b[:VEC], a[1 : 1 + VEC])
    b[:] = 0
    launch(_buffer_kernel(16, 2, nbytes=8), 1, 1, a, b)  # bytes 2..17 of 8: partly out of range, no vector access
    np.testing.assert_array_equal(b[:VEC].astype(np.float32), [1, 2, 3, 0, 0, 0, 0, 0])


# -- what an offset is a multiple of -------------------------------------------------------------------------


def test_pow2_multiple_reads_the_offset_arithmetic():
    with trace_kernel([i32, i32]) as t:
        bid, n = fx.Int32(t.args[0]), fx.Int32(t.args[1])
        assert pow2_multiple(fx.Int64(bid) * 8192) == 8192
        assert pow2_multiple(fx.Int64(bid) * 8192 + 24) == 8
        assert pow2_multiple((bid << 4) - bid * 64) == 16
        assert pow2_multiple(bid * n) == 1 and pow2_multiple(bid) == 1
        assert pow2_multiple((bid * 6) & -32) == 32 and pow2_multiple((bid * 6) % 4) == 2
        assert pow2_multiple(0) == CAP and pow2_multiple(12) == 4 and pow2_multiple(fx.Int32(40)) == 8


def test_alignment_through_an_offset():
    """(alignment, exact) of base + off elements: exact facts stay exact only where they are."""
    from flydsl.expr._sem.iterators import _align_plus

    assert _align_plus(16, True, 1, 2) == (2, True)  # one bf16 into a 16-byte aligned row: exactly 2
    assert _align_plus(2, True, 1, 2) == (4, False)  # 2 mod 4 plus 2: at least 4
    assert _align_plus(2, True, 8, 2) == (2, True)  # plus 16 bytes: still exactly 2
    assert _align_plus(1024, False, 512, 2) == (1024, False)  # shared bases keep more than 16 bytes
    assert _align_plus(1024, False, 8, 2) == (16, True)
    with trace_kernel([i32]) as t:
        bid = fx.Int32(t.args[0])
        assert _align_plus(16, True, bid * 4096, 2) == (16, True)  # 16 means "a multiple of 16"
        assert _align_plus(16, True, bid * 3, 2) == (2, False)  # a run-time lower bound, not exact


# -- FlyDSL's pattern: a row of a raw pointer through a buffer tensor and 128-bit copies ----------------------


def _double_vectors(atom, xs, ys):
    """Thread t doubles elements [8t, 8t + 8) of row ``xs`` into ``ys``: one 128-bit copy in, one out."""
    xd, yd = fx.logical_divide(xs, fx.make_layout(VEC, 1)), fx.logical_divide(ys, fx.make_layout(VEC, 1))
    r = fx.make_rmem_tensor(VEC, fx.BFloat16)
    fx.copy(atom, fx.slice(xd, (None, fx.thread_idx.x)), r)
    fx.memref_store_vec(fx.memref_load_vec(r) * 2.0, r)
    fx.copy(atom, r, fx.slice(yd, (None, fx.thread_idx.x)))


@flyc.kernel
def _double_rows(X: fx.Pointer, Y: fx.Pointer, buffered: fx.Constexpr[bool]):
    row = fx.make_layout(COLS, 1)
    off = fx.Int64(fx.block_idx.x) * COLS
    xs, ys = (X + off).view(row), (Y + off).view(row)
    if fx.const_expr(buffered):
        xs, ys = fx.rocdl.make_buffer_tensor(xs), fx.rocdl.make_buffer_tensor(ys)
        atom = fx.make_copy_atom(fx.rocdl.BufferCopy128b(), 16)
    else:
        atom = fx.make_copy_atom(fx.UniversalCopy128b(), 16)
    _double_vectors(atom, xs, ys)


@flyc.jit
def double_rows(X: fx.Pointer, Y: fx.Pointer, rows: fx.Int32, buffered: fx.Constexpr[bool]):
    _double_rows(X, Y, buffered).launch(grid=(rows, 1, 1), block=(COLS // VEC, 1, 1))


def _offset_rows(rows: int, shift: int):
    """A (rows, COLS) bf16 array starting ``shift`` elements into its allocation (as torch's ``[1:]``)."""
    base = (np.arange(rows * COLS + shift) % 61).astype(BF16)
    return base, base[shift:].reshape(rows, COLS)


@pytest.mark.parametrize("buffered", [True, False], ids=["buffer", "universal"])
@pytest.mark.parametrize("shift", [0, 1, 4])
def test_rows_at_any_element_offset_are_right_on_the_interpreter(interpreter, shift, buffered):
    xb, x = _offset_rows(3, shift)
    yb, y = _offset_rows(3, shift)
    y[:] = 0
    double_rows(flyc.from_c_void_p(fx.BFloat16, x.ctypes.data), flyc.from_c_void_p(fx.BFloat16, y.ctypes.data), 3,
                buffered)  # fmt: skip
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32) * 2)
    # the same compiled function called with plain addresses (FlyDSL's layernorm does) specializes again
    y[:] = 0
    double_rows(x.ctypes.data, y.ctypes.data, 3, buffered)
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32) * 2)


def test_plain_addresses_get_their_own_alignment_after_a_misaligned_first_pointer(interpreter):
    """FlyDSL's compiled functions take plain addresses: each gets its own alignment (capped by an
    ``assumed_align`` of the first pointer), not the first pointer's."""

    @flyc.jit
    def rows2(X: fx.Pointer, Y: fx.Pointer, rows: fx.Int32):
        _double_rows(X, Y, True).launch(grid=(rows, 1, 1), block=(COLS // VEC, 1, 1))

    (_, x1), (_, y1) = _offset_rows(2, 1), _offset_rows(2, 1)
    rows2(flyc.from_c_void_p(fx.BFloat16, x1.ctypes.data), flyc.from_c_void_p(fx.BFloat16, y1.ctypes.data), 2)
    assert "align = 2" in rows2._last[1].artifact.ir_text()
    (_, x0), (_, y0) = _offset_rows(2, 0), _offset_rows(2, 0)
    rows2(x0.ctypes.data, y0.ctypes.data, 2)
    assert rows2._last[1].artifact.ir_text().count("align = 16") == 2
    np.testing.assert_array_equal(y0.astype(np.float32), x0.astype(np.float32) * 2)

    @flyc.jit
    def rows4(X: fx.Pointer, Y: fx.Pointer, rows: fx.Int32):
        _double_rows(X, Y, True).launch(grid=(rows, 1, 1), block=(COLS // VEC, 1, 1))

    p4 = [flyc.from_c_void_p(fx.BFloat16, a.ctypes.data, assumed_align=4) for a in (x0, y0)]
    rows4(*p4, 2)
    rows4(x0.ctypes.data, y0.ctypes.data, 2)  # 16-byte aligned, but the first pointer assumed only 4
    assert rows4._last[1].artifact.ir_text().count("align = 4") == 2 and len(rows4._mem_cache) == 1


def _compiled(interpreter, shift: int, buffered: bool):
    interpreter.setenv("COMPILE_ONLY", "1")
    double_rows.clear_cache()
    xb, x = _offset_rows(2, shift)
    double_rows(flyc.from_c_void_p(fx.BFloat16, x.ctypes.data), flyc.from_c_void_p(fx.BFloat16, x.ctypes.data), 2,
                buffered)  # fmt: skip
    art = double_rows._last[1].artifact
    return art.ir_text(), art.ptx


def test_the_aligned_specialization_keeps_one_unchecked_16_byte_access(interpreter):
    ir, ptx = _compiled(interpreter, 0, True)
    assert ir.count("align = 16") == 2 and "fast_align" not in ir  # proven through X + bid * 64 and the kernel call
    assert ptx.count("ld.global.v4.b32") == 1 and ptx.count("st.global.v4.b32") == 1, ptx
    ir, ptx = _compiled(interpreter, 0, False)
    assert ir.count("align = 16") == 2 and "fast_align" not in ir
    assert ptx.count("ld.global.v4.b32") == 1 and ptx.count("st.global.v4.b32") == 1, ptx
    assert "ld.global.b16" not in ptx and "ld.global.u16" not in ptx, ptx  # no split version


def test_a_misaligned_specialization_claims_two_bytes_and_tests_the_address(interpreter):
    ir, ptx = _compiled(interpreter, 1, True)
    assert "ptr.buffer_load" in ir and ir.count("align = 2") == 2 and "align = 16" not in ir
    assert ptx.count("ld.global.v4.b32") == 1, ptx  # the vector path, taken when the address is aligned
    ir, ptx = _compiled(interpreter, 1, False)
    assert ir.count("align = 2, fast_align = 16") == 2, ir  # versioned: vector when aligned, else split
    assert ptx.count("ld.global.v4.b32") == 1 and ptx.count("st.global.v4.b32") == 1, ptx
    assert ptx.count("ld.global.b16") + ptx.count("ld.global.u16") == VEC, ptx
    ir, _ = _compiled(interpreter, 4, False)  # 8 bytes in: the split version moves 8-byte pieces
    assert ir.count("align = 8, fast_align = 16") == 2, ir


# -- tensor arguments: the rows' stride is part of the specialization ----------------------------------------


@flyc.kernel
def _double_tensor_rows(X: fx.Tensor, Y: fx.Tensor):
    """FlyDSL's RMSNorm pattern: row ``bid`` of a tensor whose row stride is a run-time value."""
    xr = fx.slice(fx.rocdl.make_buffer_tensor(X), (fx.block_idx.x, None))
    yr = fx.slice(fx.rocdl.make_buffer_tensor(Y), (fx.block_idx.x, None))
    _double_vectors(fx.make_copy_atom(fx.rocdl.BufferCopy128b(), 16), xr, yr)


@flyc.jit
def double_tensor_rows(X: fx.Tensor, Y: fx.Tensor, rows: fx.Int32):
    _double_tensor_rows(X, Y).launch(grid=(rows, 1, 1), block=(COLS // VEC, 1, 1))


@pytest.mark.parametrize("array", ["numpy", "torch"])
def test_a_row_stride_off_the_16_byte_grid_gets_its_own_specialization(interpreter, array):
    """Rows of 64 bf16 (128 bytes) prove every row 16-byte aligned: unchecked 16-byte accesses. A window of
    rows 65 elements apart (odd rows 2 bytes off) is another specialization (the strides' divisibility is in
    the key, and in the fast path's key for torch tensors), whose accesses test the address; alternating
    the two reuses each one and stays right (a reused 16-byte claim would fault on the interpreter)."""
    if array == "torch":
        torch = pytest.importorskip("torch")
    rows = 5
    double_tensor_rows.clear_cache()
    for k, width in enumerate((COLS, COLS + 1, COLS, COLS + 1)):
        big = (np.arange(rows * width) % 61).astype(BF16).reshape(rows, width)
        out = np.zeros((rows, width), BF16)
        x, y = big[:, :COLS], out[:, :COLS]
        if array == "torch":
            tx, ty = torch.from_numpy(big.view(np.int16)).view(torch.bfloat16), torch.from_numpy(out.view(np.int16))
            double_tensor_rows(tx[:, :COLS], ty.view(torch.bfloat16)[:, :COLS], rows)
        else:
            double_tensor_rows(x, y, rows)
        np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32) * 2, err_msg=f"width {width}")
        if k < 2:  # the two compiles (the later calls hit the cache)
            ir = double_tensor_rows._last[1].artifact.ir_text()
            assert ir.count("align = 16" if width == COLS else "align = 2") == 2, ir
    assert len(double_tensor_rows._mem_cache) == 2


# -- the GPU ------------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("buffered", [True, False], ids=["buffer", "universal"])
def test_a_buffer_copy_from_a_tensor_with_a_storage_offset_is_right_on_the_gpu(monkeypatch, buffered):
    """FlyDSL's ``test_layernorm_pointer_storage_offset``/``test_rmsnorm_vec8_contiguous_storage_offset`` in
    small: rows one bf16 element into their allocation, read and written with 128-bit copies."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    rows = 257
    for shift in (0, 1, 2, 4, 8):
        x = (torch.arange(rows * COLS + shift, device="cuda") % 61).to(torch.bfloat16)[shift:].view(rows, COLS)
        y = torch.zeros(rows * COLS + shift, device="cuda", dtype=torch.bfloat16)[shift:].view(rows, COLS)
        assert x.storage_offset() == shift
        double_rows(flyc.from_c_void_p(fx.BFloat16, x.data_ptr()), flyc.from_c_void_p(fx.BFloat16, y.data_ptr()),
                    rows, buffered)  # fmt: skip
        torch.cuda.synchronize()
        assert torch.equal(y, x * 2), f"shift {shift}"
