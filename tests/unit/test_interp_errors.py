"""Run-time faults: every message names the kernel, the user's line, the buffer/argument, the index
and bound, and the first faulting thread."""

from __future__ import annotations

import re

import numpy as np
import pytest

from flydsl import ir
from flydsl.dialects import arith, gpu, ptr, scf, vector
from flydsl.interp import InterpError, Memory, run_kernel
from flydsl.ir import PointerType, VectorType, f32, i8, i32
from flydsl.testing import KernelBuilder, const, launch

F32P = PointerType(f32)
LOC = ("kern.py", 42, 7)


def test_out_of_bounds_read_names_buffer_argument_index_and_thread():
    with KernelBuilder("copy", [F32P, F32P]) as kb:
        src, dst = kb.args
        i = kb.global_id()
        with kb.at(LOC):
            v = ptr.load(ptr.add(src, i), result_types=[f32])
        ptr.store(v, ptr.add(dst, i))
    a = np.zeros(100, np.float32)
    b = np.zeros(128, np.float32)
    with pytest.raises(InterpError) as ei:
        launch(kb.op, 2, 64, a, b, names=["src", "dst"])
    e = ei.value
    msg = str(e)
    assert msg.startswith("kernel 'copy' at kern.py:42 (ptr.load): out-of-bounds read of f32")
    assert "element 100 of buffer 'src' (kernel argument 'src'), which has 100 elements of f32" in msg
    assert msg.endswith("[first faulting lane: block (1, 0, 0) thread (36, 0, 0)]")
    assert e.block == (1, 0, 0) and e.thread == (36, 0, 0) and e.loc == LOC
    assert (b == 0).all()  # the faulting op stopped the kernel before any store


def test_out_of_bounds_write_and_negative_index():
    with KernelBuilder("wr", [F32P]) as kb:
        ptr.store(arith.const(1.0, f32), ptr.add(kb.args[0], arith.subi(gpu.thread_id(dimension="x"), const(3))))
    with pytest.raises(InterpError, match=r"out-of-bounds write of f32 .*element -3 of buffer 'out'"):
        launch(kb.op, 1, 8, np.zeros(8, np.float32), names=["out"])


def test_masked_off_lanes_do_not_fault():
    with KernelBuilder("guarded", [F32P, i32]) as kb:
        x, n = kb.args
        i = kb.global_id()
        with kb.if_(arith.cmpi(i, n, predicate="slt")):
            ptr.store(arith.const(2.0, f32), ptr.add(x, i))
        ok = arith.cmpi(i, n, predicate="slt")
        ptr.masked_store(arith.const(3.0, f32), ptr.add(x, i), ok)
    x = np.zeros(10, np.float32)
    launch(kb.op, 1, 32, x, 10)
    assert (x == 3.0).all()


def test_misaligned_vector_access():
    v4 = VectorType(4, f32)
    with KernelBuilder("vec", [F32P]) as kb:
        with kb.at(("vec.py", 3, 1)):
            v = ptr.load(ptr.add(kb.args[0], const(1)), result_types=[v4], align=16)
        ptr.store(v, kb.args[0], align=16)
    with pytest.raises(InterpError, match=r"at vec\.py:3 \(ptr\.load\): misaligned vector read: .* align=16"):
        launch(kb.op, 1, 1, np.zeros(16, np.float32))


def test_misaligned_scalar_access_through_a_cast_pointer():
    with KernelBuilder("mis", [PointerType(i8)]) as kb:
        p = ptr.cast(ptr.add(kb.args[0], const(2)), result_types=[PointerType(i32)])
        ptr.store(const(1), p)
    msg = r"misaligned write of i32 at global address 0x[0-9a-f]+, byte 2 of buffer 'arg0' .*not a multiple of 4 bytes"
    with pytest.raises(InterpError, match=msg):
        launch(kb.op, 1, 1, np.zeros(16, np.int8))


def test_barrier_in_divergent_code():
    with KernelBuilder("bar", []) as kb:
        with kb.if_(arith.cmpi(gpu.thread_id(dimension="x"), const(16), predicate="slt")):
            with kb.at(("bar.py", 9, 5)):
                gpu.barrier()
    with pytest.raises(InterpError) as ei:
        launch(kb.op, 2, 64)
    msg = str(ei.value)
    assert "at bar.py:9 (gpu.barrier): barrier reached by only some threads of block (0, 0, 0)" in msg
    assert "16 of 64 threads arrived (thread (0, 0, 0) did, thread (16, 0, 0) did not)" in msg


def test_barrier_in_loop_with_per_lane_trip_count():
    with KernelBuilder("barloop", []) as kb:
        loop = scf.build_for(const(0), arith.remui(gpu.thread_id(dimension="x"), const(3)), const(1), [])
        with ir.InsertionPoint(loop.regions[0].blocks[0]):
            gpu.barrier()
            scf.yield_()
    with pytest.raises(InterpError, match="barrier reached by only some threads"):
        launch(kb.op, 1, 32)


def test_dynamic_vector_index_out_of_range_only_on_active_lanes():
    out = np.zeros(8, np.int32)
    with KernelBuilder("dyn", [PointerType(i32)]) as kb:
        tid = gpu.thread_id(dimension="x")
        v = vector.from_elements(const(10), const(11), const(12), const(13))
        with kb.if_(arith.cmpi(tid, const(4), predicate="slt")):  # lanes 4..7 would index out of range
            ptr.store(vector.extractelement(v, tid), ptr.add(kb.args[0], tid))
    launch(kb.op, 1, 8, out, check=True)
    assert out.tolist() == [10, 11, 12, 13, 0, 0, 0, 0]
    with KernelBuilder("dyn2", [PointerType(i32)]) as kb2:
        tid = gpu.thread_id(dimension="x")
        v = vector.from_elements(const(10), const(11), const(12), const(13))
        with kb2.at(("dyn.py", 5, 1)):
            x = vector.extractelement(v, tid)
        ptr.store(x, ptr.add(kb2.args[0], tid))
    with pytest.raises(
        InterpError, match=r"at dyn\.py:5 .*vector index 4 out of range for a vector of 4 lanes.*thread \(4, 0, 0\)"
    ):
        launch(kb2.op, 1, 8, out)


def test_shared_memory_out_of_bounds_names_the_allocation():
    sp = PointerType(f32, "shared")
    with KernelBuilder("smem", []) as kb:
        with kb.at(("smem.py", 2, 1)):
            s = ptr.shared_alloc(result_types=[sp], count=32)
        ptr.store(arith.const(0.0, f32), ptr.add(s, gpu.thread_id(dimension="x")))
    with pytest.raises(InterpError) as ei:
        launch(kb.op, 1, 40)
    msg = str(ei.value)
    assert "out-of-bounds write of f32 in shared memory at byte offset 128" in msg
    assert "element 32 of shared allocation #0 (32 elements of f32, allocated at smem.py:2)" in msg
    assert "the block's shared memory is 128 bytes" in msg and "thread (32, 0, 0)" in msg


def test_null_and_unregistered_pointers():
    with KernelBuilder("null", [F32P]) as kb:
        ptr.store(arith.const(0.0, f32), kb.args[0])
    mem = Memory()
    with pytest.raises(InterpError, match=r"address 0x0 \(null pointer\)"):
        run_kernel(kb.op, grid=1, block=1, args=[0], memory=mem)
    x = np.zeros(4, np.float32)
    base = mem.register(x, "x")
    mem.unregister(x)
    with pytest.raises(InterpError, match="out-of-bounds write"):
        run_kernel(kb.op, grid=1, block=1, args=[base], memory=mem)


def test_launch_configuration_errors():
    with KernelBuilder("kbs", [i32], known_block_size=[64, 1, 1]) as kb:
        pass
    with pytest.raises(
        InterpError,
        match=re.escape("launched with block (32, 1, 1), but the kernel was compiled for known_block_size (64, 1, 1)"),
    ):
        launch(kb.op, 1, 32, 0)
    launch(kb.op, 1, 64, 0)
    with pytest.raises(InterpError, match="takes 1 arguments, got 2"):
        launch(kb.op, 1, 64, 0, 1)
    with pytest.raises(InterpError, match="kernel 'kbs': argument 0 'arg0' of type i32: cannot use 1.5: a float"):
        launch(kb.op, 1, 64, 1.5)


def test_unsupported_op_is_named():
    fake = ir.OpDef("test_interp.fake_op", operands=0, results=0)
    try:
        with KernelBuilder("fake", []) as kb:
            ir.create(fake, [], [])
        with pytest.raises(InterpError, match=r"op test_interp\.fake_op is not supported by the interpreter"):
            launch(kb.op, 1, 1)
    finally:
        del ir.OPS["test_interp.fake_op"]


def test_vector_access_straddling_the_buffer_end():
    v4 = VectorType(4, f32)
    with KernelBuilder("straddle", [F32P]) as kb:
        ptr.load(ptr.add(kb.args[0], arith.muli(gpu.thread_id(dimension="x"), const(4))), result_types=[v4])
    with pytest.raises(
        InterpError, match=r"elements 8\.\.11 of buffer 'x' \(kernel argument 'x'\), which has 10 elements"
    ):
        launch(kb.op, 1, 4, np.zeros(10, np.float32), names=["x"])


def test_write_to_read_only_buffer():
    with KernelBuilder("ro", [F32P]) as kb:
        ptr.store(arith.const(1.0, f32), ptr.add(kb.args[0], gpu.thread_id(dimension="x")))
    x = np.zeros(4, np.float32)
    x.flags.writeable = False
    with pytest.raises(InterpError, match="write of f32 to read-only buffer 'x'"):
        launch(kb.op, 1, 4, x, names=["x"])


def test_launch_limits_match_the_gpu():
    with KernelBuilder("lim", []) as kb:
        pass
    with pytest.raises(InterpError, match=r"block \(2048, 1, 1\) has 2048 threads; at most 1024 per block"):
        launch(kb.op, 1, 2048)
    with pytest.raises(InterpError, match=r"grid \(1, 70000, 1\) exceeds the limit"):
        launch(kb.op, (1, 70000), 32)
