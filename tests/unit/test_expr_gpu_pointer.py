"""fx.gpu (indices, shuffles, votes, printf, shared memory) and fx.Pointer (offsets, loads, stores,
atomics): IR text, errors, and results on the interpreter."""

import numpy as np
import pytest

import flydsl.expr as fx
from flydsl import ir
from flydsl.dialects import gpu as ir_gpu
from flydsl.expr import gpu
from flydsl.testing import KernelBuilder, launch, trace_kernel, use_target

PF32, PI32, PU32 = ir.PointerType(ir.f32), ir.PointerType(ir.i32), ir.PointerType(ir.i32)


def test_indices():
    with trace_kernel([]) as t:
        for d3 in (fx.thread_idx, fx.block_idx, fx.block_dim, fx.grid_dim):
            x, y, z = d3
            assert all(type(v) is fx.Int32 and not v.is_static() for v in (x, y, z))
        assert type(fx.thread_id("y")) is fx.Int32 and type(fx.block_id()) is fx.Int32
        assert len(fx.block_idx) == 3 and type(fx.block_idx[2]) is fx.Int32
        with pytest.raises(IndexError, match="3 dimensions"):
            fx.block_idx[3]
        with pytest.raises(ValueError, match="dimension must be"):
            fx.thread_id("w")
        assert type(fx.lane_id()) is fx.Int32
    for op in ("gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim"):
        assert t.count(op) >= 3
    assert 'dimension = "z"' in t.text and t.count("gpu.lane_id") == 1


def test_known_block_size_folds():
    with trace_kernel([]) as t, gpu.known_block_size_scope((128, 1, 1)):
        assert gpu.known_block_size() == (128, 1, 1)
        bx = fx.block_dim.x
        assert bx.is_static() and bx.value == 128
        assert fx.thread_idx.y.is_static() and fx.thread_idx.y.value == 0
        assert not fx.thread_idx.x.is_static()
    with pytest.raises(RuntimeError, match="no compile-time block size .not inside a kernel"):
        gpu.known_block_size()
    assert t.count("gpu.block_dim") == 0 and t.count("gpu.thread_id") == 1
    with pytest.raises(ValueError, match="three positive ints"):
        gpu.set_known_block_size((0, 1, 1))


def test_barrier_fence_votes():
    with trace_kernel([ir.i32]) as t:
        fx.barrier()
        fx.gpu.fence("cta")
        with pytest.raises(ValueError, match="fence scope"):
            fx.gpu.fence("world")
        p = fx.Int32(t.args[0]) > 0
        assert type(fx.vote_any(p)) is fx.Boolean and type(fx.vote_all(p)) is fx.Boolean
        assert type(fx.vote_ballot(p)) is fx.Int32
        assert fx.vote_any(True).value is True and fx.vote_ballot(False).value == 0
    assert t.count("gpu.barrier") == 1 and 'scope = "cta"' in t.text
    for m in ("any", "all", "ballot"):
        assert f'mode = "{m}"' in t.text


def test_shuffle_types_and_widths():
    with trace_kernel([ir.f32, ir.i64, ir.i8, ir.VectorType(2, ir.f16), ir.VectorType(4, ir.f32)]) as t:
        f, w, b = fx.Float32(t.args[0]), fx.Int64(t.args[1]), fx.Uint8(t.args[2])
        h2, f4 = fx.Vector(t.args[3]), fx.Vector(t.args[4])
        assert type(fx.shuffle_xor(f, 1)) is fx.Float32 and type(fx.gpu.shuffle_down(w, 2, 16)) is fx.Int64
        assert type(fx.shuffle_up(b, 1)) is fx.Uint8 and type(fx.shuffle_idx(f > 0.0, 0)) is fx.Boolean
        r = fx.shuffle_xor(h2, 1, 64)
        assert type(r) is fx.Vector and r.dtype is fx.Float16
        assert fx.shuffle(f4, 1, mode="down").shape == (4,)  # 128 bits: lane by lane
        assert fx.shuffle_xor(fx.Float32(2.0), 1).value == 2.0  # uniform compile-time value
        assert type(f.shuffle_xor(2)) is fx.Float32
        with pytest.raises(ValueError, match="invalid shuffle mode 'rotate'"):
            fx.shuffle(f, 1, mode="rotate")
    text = t.text
    assert t.count("gpu.shuffle") == 6 + 4
    assert "arith.constant 32 : i32" in text and "arith.constant 16 : i32" in text and "arith.constant 64" in text
    with use_target("gfx942"), trace_kernel([ir.f32]) as t2:
        fx.shuffle_xor(fx.Float32(t2.args[0]), 1)
        assert fx.gpu.warp_size() == 64 == fx.num_warp_threads()
    assert "arith.constant 64 : i32" in t2.text


def test_warp_reduction_runs_on_the_interpreter():
    with trace_kernel([PF32]) as t:
        x = fx.thread_idx.x.to(fx.Float32)
        for off in fx.range_constexpr(5):
            x = x + fx.shuffle_xor(x, 16 >> off)
        fx.Pointer(t.args[0])[fx.thread_idx.x] = x
    out = np.zeros(32, np.float32)
    launch(t.kernel, 1, 32, out)
    np.testing.assert_array_equal(out, np.full(32, sum(range(32)), np.float32))


def test_printf():
    with trace_kernel([ir.i32, ir.VectorType(2, ir.f32)]) as t:
        i = fx.Int32(t.args[0])
        fx.printf("i={} n={:>4} s={} v={:.2f} {{x}}", i, 3, "a{b}", fx.Vector(t.args[1]))
        with pytest.raises(ValueError, match="2 placeholders but 1 arguments"):
            fx.printf("{} {}", i)
        with pytest.raises(ValueError, match="placeholders"):
            fx.printf("{0}", i)
    # traced as FlyDSL's fly.print; the kernel prints one line per call with gpu.printf
    assert '"fly.print"(%arg0, %0, %arg1) {format = "i={} n={:>4} s=a{{b}} v={:.2f} {{x}}"}' in t.text
    kernel = ir.print_op(t.module)
    assert 'format = "i={} n={:>4} s=a{{b}} v={:.2f} {{x}}\\n"' in kernel
    assert t.count("gpu.printf") == 1 and '"gpu.printf"(%arg0, %0, %arg1)' in kernel


def test_printf_runs_on_the_interpreter():
    with trace_kernel([]) as t:
        fx.printf("t{}: {} {:.1f} [{}]\n", fx.thread_idx.x, fx.Int32(7), 2.5, "ok")
    lines = []
    launch(t.kernel, 1, 2, printer=lines.append)
    assert "".join(lines) == "t0: 7 2.5 [ok]\nt1: 7 2.5 [ok]\n"


def test_shared_memory_capacity():
    with trace_kernel([]) as t:
        a = fx.gpu.alloc_shared(fx.Float32, 1024)
        assert isinstance(a, fx.Pointer) and a.memspace == "shared" and a.dtype is fx.Float32
        fx.alloc_shared(fx.Int8, 3, align=1)
        fx.alloc_shared(fx.Float16, 8)  # 4096 + 3 -> aligned to 4112, + 16
        assert fx.gpu.shared_usage() == 4128
        with pytest.raises(fx.gpu.SharedMemoryError) as e:
            fx.gpu.alloc_shared(fx.Float32, 11264)
        assert str(e.value) == (
            "static shared memory: alloc_shared(Float32, 11264) needs 45056 bytes (align 16); with the 4128 bytes "
            "this kernel already allocated that makes 49184 bytes, over the 49152-byte static limit of sm_90a. "
            "Allocate less, or use fx.get_dyn_shared() with a dynamic shared-memory size at launch (up to 232448 "
            "bytes)"
        )
        d = fx.get_dyn_shared(fx.Float32)
        assert d.memspace == "shared" and d.dtype is fx.Float32 and fx.get_dyn_shared().dtype is fx.Int8
        with pytest.raises(ValueError, match="positive element count"):
            fx.alloc_shared(fx.Float32, 0)
    assert t.count("ptr.shared_alloc") == 3 and "count = 1024, align = 16" in t.text
    assert t.count("ptr.dynamic_shared") == 2
    fx.gpu.reset_shared_usage()
    assert fx.gpu.shared_usage() == 0


def test_shared_memory_reverse_runs_on_the_interpreter():
    with trace_kernel([PI32]) as t:
        s = fx.gpu.alloc_shared(fx.Int32, 64)
        tid = fx.thread_idx.x
        s[tid] = tid * 10
        fx.barrier()
        fx.Pointer(t.args[0])[tid] = s[63 - tid]
    out = np.zeros(64, np.int32)
    launch(t.kernel, 1, 64, out)
    np.testing.assert_array_equal(out, np.arange(63, -1, -1) * 10)


def test_pointer_api():
    with trace_kernel([PF32, ir.i32, ir.i64]) as t:
        p = fx.Pointer(t.args[0])
        i = fx.Int32(t.args[1])
        assert (p + 0) is p and isinstance(p + 3, fx.Pointer) and isinstance(2 + p, fx.Pointer)
        assert (
            isinstance(p + i, fx.Pointer) and isinstance(p - i, fx.Pointer) and isinstance(p + fx.Uint32(i), fx.Pointer)
        )
        assert type((p + 4) - p) is fx.Int64
        assert type(p[2]) is fx.Float32
        p[i] = 1  # stored as Float32
        v = p.load(vec_width=4, align=16)
        assert isinstance(v, fx.Vector) and v.shape == (4,)
        (p + 4).store(v * 2.0, cache="cs")
        m = p.load(vec_width=4, mask=v > 0.0, other=-1.0)
        p.store(m, mask=v > 0.0)
        p.load(mask=i > 0)
        assert p.recast(fx.Int32).dtype is fx.Int32 and type(p.to_int()) is fx.Int64
        assert p.load(dtype=fx.Uint32).dtype is fx.Uint32
        q = fx.inttoptr(fx.Int64(t.args[2]), fx.Float16)
        assert q.dtype is fx.Float16 and q.memspace == "global" and type(fx.ptrtoint(q)) is fx.Int64
        assert fx.Pointer(t.args[0], fx.Float32).__fly_rebuild__(p.__fly_values__()).dtype is fx.Float32
        view = p.view(fx.make_layout((4, 4), (4, 1)))  # FlyDSL's ptr.view(layout): a tensor over the memory
        assert view.dtype is fx.Float32 and view.memspace == "global" and fx.size(view.layout) == 16
        with pytest.raises(ValueError, match="unknown cache modifier 'xx'"):
            p.load(cache="xx")
        with pytest.raises(TypeError, match="pointer slices"):
            p[0:4]
        with pytest.raises(TypeError, match="has no length"):
            len(p)
        with pytest.raises(TypeError, match="offset must be an integer"):
            p + 1.5
        with pytest.raises(ValueError, match="does not match the pointee"):
            fx.Pointer(t.args[0], fx.Int32)
    text = t.text
    assert t.count("ptr.add") >= 6 and "{align = 16}" in text and '{cache = "cs"}' in text
    assert t.count("ptr.masked_load") == 2 and t.count("ptr.masked_store") == 1
    assert "arith.constant dense<-1.0> : vector<4xf32>" in text and "ptr.cast" in text and "ptr.from_int" in text
    assert "arith.extui" in text  # an unsigned 32-bit offset is zero-extended


def test_atomics():
    with trace_kernel([PI32, PF32]) as t:
        pi, pf = fx.Pointer(t.args[0]), fx.Pointer(t.args[1])
        pu = fx.Pointer(t.args[0], fx.Uint32)
        assert type(fx.atomic_add(pi, 1)) is fx.Int32 and type(fx.atomic_add(pf, 1.0)) is fx.Float32
        fx.atomic_max(pi, 3)
        fx.atomic_max(pu, 3)
        fx.atomic_min(pu, 3, scope="cta")
        fx.atomic_and(pi, 1), fx.atomic_or(pi, 1), fx.atomic_xor(pi, 1), fx.atomic_exchange(pf, 2.0)
        assert type(fx.atomic_cas(pi, 0, 1)) is fx.Int32
        with pytest.raises(TypeError, match="needs an integer pointer"):
            fx.atomic_or(pf, 1.0)
        with pytest.raises(ValueError, match="atomic scope"):
            fx.atomic_add(pi, 1, scope="warp")
    for k in ("add", "max", "umax", "umin", "and", "or", "xor", "xchg"):
        assert f'kind = "{k}"' in t.text, k
    assert 'scope = "cta"' in t.text and t.count("ptr.atomic_cas") == 1


def test_atomic_counter_runs_on_the_interpreter():
    with trace_kernel([PI32, PI32]) as t:
        old = fx.atomic_add(fx.Pointer(t.args[0]), 1)
        fx.Pointer(t.args[1])[fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x] = old
    counter, olds = np.zeros(1, np.int32), np.zeros(256, np.int32)
    launch(t.kernel, 2, 128, counter, olds)
    assert counter[0] == 256 and sorted(olds.tolist()) == list(range(256))


def test_masked_vector_loads_run_on_the_interpreter():
    with trace_kernel([PF32, PF32, ir.i32]) as t:
        src, dst, n = fx.Pointer(t.args[0]), fx.Pointer(t.args[1]), fx.Int32(t.args[2])
        base = fx.thread_idx.x * 4
        lanes = fx.Vector.from_elements([base + k for k in range(4)])
        v = (src + base).load(vec_width=4, mask=lanes < n, other=-1.0)
        (dst + base).store(v + 0.5)
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    launch(t.kernel, 1, 4, x, y, np.int32(10))
    expect = np.where(np.arange(16) < 10, x, -1.0) + 0.5
    np.testing.assert_array_equal(y, expect)


def test_printf_format_is_checked_once_by_the_op():
    """fx.printf, the verifier, the interpreter and the LLVM back end read the format with gpu.printf's own
    grammar (flydsl.dialects.gpu): a bad spec is a trace-time error at the user's line."""
    with trace_kernel([ir.i32]) as t:
        with pytest.raises(ValueError, match=r"\{:s\} has no C printf equivalent"):
            fx.printf("{:s}", fx.Int32(t.args[0]))
        with pytest.raises(ValueError, match="a single '}'"):
            fx.printf("x} {}", fx.Int32(t.args[0]))
    m = ir.new_module()
    k = KernelBuilder("bad", [ir.i32])
    m.regions[0].block.append(k.op)
    with k:
        ir_gpu.printf(k.args[0], format="{} {}")
    with pytest.raises(ir.VerifyError, match="2 placeholders but 1 operands"):
        ir.verify(m)
