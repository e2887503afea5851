"""The CUDA runtime and the NVPTX code generator on a real GPU: hand-built kernels (vector add, warp
shuffle and block reductions, buffer ops, fp8 and math accuracy, atomics, printf, dynamic shared
memory) compared with numpy/torch, and the host launch overhead. Run with ``-s`` to see the measured
numbers (math accuracy table, launch overhead)."""

from __future__ import annotations

import ctypes
import math
import time

import ml_dtypes
import numpy as np
import pytest

from flydsl.codegen import Target, compile_module
from flydsl.dialects import arith, gpu, ptr, scf, vector
from flydsl.dialects import math as fm
from flydsl.ir import InsertionPoint, PointerType, VectorType
from flydsl.ir import types as T
from flydsl.runtime import cuda
from flydsl.testing import build_kernel

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA device")]

F32G = PointerType(T.f32, "global")
I32 = T.i32


def c32(v):
    return arith.const(v, I32)


def gid():
    """Global thread index (i32)."""
    return arith.addi(
        arith.muli(gpu.block_id(dimension="x"), gpu.block_dim(dimension="x")), gpu.thread_id(dimension="x")
    )


def guarded(cond, fn):
    br = scf.build_if(cond, with_else=False)
    with InsertionPoint(br.regions[0].blocks[0]):
        fn()
        scf.yield_()


def kernel(mod, name="k", **target_kw):
    ck = compile_module(mod, Target(**{"arch": cuda.device_arch(), **target_kw}))
    return cuda.CudaKernel.from_compiled(ck, name), ck


def test_device_arch_and_primary_context():
    arch = cuda.device_arch()
    assert arch.startswith("sm_")
    if torch.cuda.get_device_capability() == (9, 0):
        assert arch == "sm_90a"
    print(f"\n[device] {cuda.device_name()} {arch}")


# -- vector add ----------------------------------------------------------------------------------


def vadd_module(vec: int):
    V = VectorType(vec, T.f32) if vec > 1 else T.f32

    def body(a, b, c, n):
        i = arith.muli(gid(), c32(vec))

        def work():
            x = ptr.load(ptr.add(a, i), result_types=[V], align=4 * vec, cache="nc")
            y = ptr.load(ptr.add(b, i), result_types=[V], align=4 * vec)
            ptr.store(arith.addf(x, y), ptr.add(c, i), align=4 * vec)

        guarded(arith.cmpi(i, n, predicate="slt"), work)

    return build_kernel([F32G, F32G, F32G, I32], body, known_block_size=[256, 1, 1])


@pytest.mark.parametrize("vec", [1, 4])
@pytest.mark.parametrize("cubin", [False, True])
def test_vector_add(vec, cubin):
    k, ck = kernel(vadd_module(vec), cubin=cubin)
    print(f"\n[vadd vec={vec}] loaded {'cubin' if ck.cubin else 'PTX'}")
    if vec == 4:
        assert "ld.global.nc.v4" in ck.ptx
    n = 1 << 20
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    k.launch(((n // vec + 255) // 256, 1, 1), (256, 1, 1), 0, torch.cuda.current_stream(), (a, b, c, n))
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)


def test_vector_add_bandwidth_vs_torch():
    k, _ = kernel(vadd_module(4))
    n = 1 << 26
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    grid = (n // 4 + 255) // 256

    def ours():
        k.launch(grid, 256, 0, None, (a, b, c, n))

    def theirs():
        torch.add(a, b, out=c)

    res = {}
    for name, fn in (("flydsl", ours), ("torch", theirs)):
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(20):
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        res[name] = 3 * n * 4 / (np.median(times) * 1e-3) / 1e9
    print(f"\n[vadd 256 MiB/vector] flydsl {res['flydsl']:.0f} GB/s, torch {res['torch']:.0f} GB/s")
    assert torch.equal(c, a + b)
    assert res["flydsl"] > 0.8 * res["torch"]


# -- warp shuffle and block reductions -----------------------------------------------------------


def _butterfly_reference(x: np.ndarray, width: int = 32) -> np.ndarray:
    v = x.reshape(-1, width).astype(np.float32)
    lanes = np.arange(width)
    for off in (16, 8, 4, 2, 1):
        v = (v + v[:, lanes ^ off]).astype(np.float32)
    return v[:, 0]


def test_warp_shuffle_reduction_bit_exact():
    def body(x, out):
        i = gid()
        v = ptr.load(ptr.add(x, i), result_types=[T.f32])
        for off in (16, 8, 4, 2, 1):
            v = arith.addf(v, gpu.shuffle(v, c32(off), c32(32), mode="xor"))
        lane = gpu.lane_id()
        guarded(arith.cmpi(lane, c32(0), predicate="eq"), lambda: ptr.store(v, ptr.add(out, arith.divui(i, c32(32)))))

    k, ck = kernel(build_kernel([F32G, F32G], body, known_block_size=[256, 1, 1]))
    assert ck.ptx.count("shfl.sync.bfly.b32") == 5
    n = 256 * 64
    x = torch.randn(n, device="cuda")
    out = torch.empty(n // 32, device="cuda")
    k.launch(n // 256, 256, 0, None, (x, out))
    torch.cuda.synchronize()
    assert np.array_equal(out.cpu().numpy(), _butterfly_reference(x.cpu().numpy()))


@pytest.mark.parametrize("t,mode", [(T.f64, "down"), (T.i64, "idx"), (T.f16, "up"), (T.bf16, "xor"), (T.i8, "down")])
def test_shuffle_of_other_widths(t, mode):
    P = PointerType(t, "global")

    def body(x, out):
        i = gid()
        v = ptr.load(ptr.add(x, i), result_types=[t])
        ptr.store(gpu.shuffle(v, c32(3), c32(32), mode=mode), ptr.add(out, i))

    k, _ = kernel(build_kernel([P, P], body))
    dt = {T.f64: torch.float64, T.i64: torch.int64, T.f16: torch.float16, T.bf16: torch.bfloat16, T.i8: torch.int8}[t]
    x = (torch.arange(64, device="cuda") * 3 + 1).to(dt)
    out = torch.empty_like(x)
    k.launch(1, 64, 0, None, (x, out))
    torch.cuda.synchronize()
    lane = np.arange(64) % 32
    src = {"down": lane + 3, "up": lane - 3, "idx": np.full(64, 3), "xor": lane ^ 3}[mode]
    src = np.where((src < 0) | (src >= 32), lane, src) + (np.arange(64) // 32) * 32
    assert torch.equal(out.cpu(), x.cpu()[torch.from_numpy(src)])


def test_block_reduction_with_shared_memory_and_barrier():
    def body(x, out):
        i = gid()
        tid = gpu.thread_id(dimension="x")
        smem = ptr.shared_alloc(count=8, result_types=[PointerType(T.f32, "shared")])
        v = ptr.load(ptr.add(x, i), result_types=[T.f32])
        for off in (16, 8, 4, 2, 1):
            v = arith.addf(v, gpu.shuffle(v, c32(off), c32(32), mode="xor"))
        warp = arith.divui(tid, c32(32))
        lane = gpu.lane_id()
        guarded(arith.cmpi(lane, c32(0), predicate="eq"), lambda: ptr.store(v, ptr.add(smem, warp)))
        gpu.barrier()

        def first_warp():
            w = ptr.load(ptr.add(smem, arith.andi(lane, c32(7))), result_types=[T.f32])
            for off in (4, 2, 1):
                w = arith.addf(w, gpu.shuffle(w, c32(off), c32(8), mode="xor"))
            total = w
            guarded(arith.cmpi(lane, c32(0), predicate="eq"),
                    lambda: ptr.store(total, ptr.add(out, gpu.block_id(dimension="x"))))  # fmt: skip

        guarded(arith.cmpi(warp, c32(0), predicate="eq"), first_warp)

    k, ck = kernel(build_kernel([F32G, F32G], body, known_block_size=[256, 1, 1]))
    assert ck.kernels["k"].static_smem == 32
    x = torch.randn(256 * 100, device="cuda")
    out = torch.empty(100, device="cuda")
    k.launch(100, 256, 0, None, (x, out))
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x.view(100, 256).sum(1), rtol=1e-5, atol=1e-4)


def test_control_flow_calls_masks_and_cache_hints():
    """scf.while (Collatz steps), a device function with two results, scalar- and lane-masked
    loads/stores, and cache-hinted (inline PTX) loads and stores, against numpy."""
    from flydsl.dialects import func
    from flydsl.ir import SymbolRef, verify
    from flydsl.testing import kernel_module

    V4 = VectorType(4, T.f32)
    P32 = PointerType(I32, "global")
    mod, k = kernel_module("k", [F32G, F32G, P32, I32])
    gm = mod.regions[0].blocks[0].ops[0]
    dev = func.build_func(gpu.func, "sum_prod", [T.f32, T.f32], [T.f32, T.f32])
    dev.parent = gm.regions[0].blocks[0]
    gm.regions[0].blocks[0].ops.insert(0, dev)
    with InsertionPoint(dev.regions[0].blocks[0]):
        x, y = dev.regions[0].blocks[0].args
        gpu.return_(arith.addf(x, y), arith.mulf(x, y))
    with InsertionPoint(k.regions[0].blocks[0]):
        a, out, steps, n = k.regions[0].blocks[0].args
        i = gid()
        ok = arith.cmpi(i, n, predicate="slt")
        x = ptr.masked_load(ptr.add(a, i), ok, arith.const(-1.0, T.f32))
        lanes = arith.addi(vector.broadcast(arith.muli(i, c32(4)), result_types=[VectorType(4, I32)]),
                           arith.constant(value=np.arange(4, dtype=np.int32), result_types=[VectorType(4, I32)]))  # fmt: skip
        m = arith.cmpi(lanes, vector.broadcast(n, result_types=[VectorType(4, I32)]), predicate="slt")
        v = ptr.masked_load(ptr.add(a, arith.muli(i, c32(4))), m, arith.const(0.5, V4), align=16)
        s, p = func.call(x, vector.reduction(v, kind="add"), callee=SymbolRef("sum_prod"), result_types=[T.f32] * 2)
        hinted = ptr.load(ptr.add(a, arith.muli(i, c32(4))), result_types=[V4], align=16, cache="cg")
        ptr.store(
            arith.addf(hinted, v), ptr.add(out, arith.addi(arith.muli(i, c32(4)), c32(4096))), align=16, cache="cs"
        )
        ptr.masked_store(vector.broadcast(s, result_types=[V4]), ptr.add(out, arith.muli(i, c32(4))), m, align=16)
        ptr.store(p, ptr.add(out, arith.addi(i, c32(8192))), cache="wt")
        w = scf.build_while([arith.addi(arith.remui(i, c32(27)), c32(1)), c32(0)], [I32, I32])
        before, after = w.regions[0].blocks[0], w.regions[1].blocks[0]
        with InsertionPoint(before):
            val, cnt = before.args
            scf.condition(arith.cmpi(val, c32(1), predicate="ne"), val, cnt)
        with InsertionPoint(after):
            val, cnt = after.args
            odd = arith.cmpi(arith.andi(val, c32(1)), c32(1), predicate="eq")
            nxt = arith.select(odd, arith.addi(arith.muli(val, c32(3)), c32(1)), arith.divui(val, c32(2)))
            scf.yield_(nxt, arith.addi(cnt, c32(1)))
        ptr.store(w.results[1], ptr.add(steps, i))
        gpu.return_()
    verify(mod)
    kk, ck = kernel(mod)
    assert "ld.global.cg.v4.b32" in ck.ptx and "st.global.cs.v4.b32" in ck.ptx
    nthreads, n = 256, 1000
    a = torch.randn(4096, device="cuda")
    out = torch.zeros(8192 + 256, device="cuda")
    steps = torch.zeros(256, dtype=torch.int32, device="cuda")
    kk.launch(1, nthreads, 0, None, (a, out, steps, n))
    torch.cuda.synchronize()
    an, o = a.cpu().numpy(), out.cpu().numpy()
    idx = np.arange(nthreads)
    x = np.where(idx < n, an[idx], -1.0).astype(np.float32)
    lane = idx[:, None] * 4 + np.arange(4)
    v = np.where(lane < n, an[np.minimum(lane, 4095)], 0.5).astype(np.float32)
    red = v[:, 0]
    for j in range(1, 4):
        red = (red + v[:, j]).astype(np.float32)
    s = (x + red).astype(np.float32)
    want_mask = np.where(lane < n, s[:, None], 0.0)
    np.testing.assert_array_equal(o[: 4 * nthreads].reshape(-1, 4), want_mask)
    np.testing.assert_array_equal(o[4096 : 4096 + 4 * nthreads].reshape(-1, 4), an[lane] + v)
    np.testing.assert_array_equal(o[8192 : 8192 + nthreads], (x * red).astype(np.float32))

    def collatz(v):
        c = 0
        while v != 1:
            v = 3 * v + 1 if v & 1 else v // 2
            c += 1
        return c

    assert steps.cpu().tolist() == [collatz(t % 27 + 1) for t in range(nthreads)]


# -- buffer ops: AMD bounds semantics ------------------------------------------------------------


def test_buffer_load_store_bounds():
    V = VectorType(4, T.f32)

    def body(src, dst, nsrc, ndst, offs):
        i = gpu.thread_id(dimension="x")
        off = ptr.load(ptr.add(offs, i), result_types=[I32])
        v = ptr.buffer_load(ptr.buffer_rsrc(src, nsrc), off, result_types=[V])
        ptr.buffer_store(v, ptr.buffer_rsrc(dst, ndst), arith.muli(i, c32(16)))

    k, _ = kernel(build_kernel([F32G, F32G, T.i64, T.i64, PointerType(I32, "global")], body))
    src = torch.arange(1, 65, dtype=torch.float32, device="cuda")  # 256 bytes
    offs = torch.tensor([0, 4, 16, 240, 244, 248, 252, 256, 1000, -16, 8, 100], dtype=torch.int32, device="cuda")
    nt = len(offs)
    dst = torch.full((nt * 4,), -7.0, device="cuda")
    nsrc, ndst = 250, 16 * (nt - 2) + 8  # the last two threads' stores are partly/fully dropped
    k.launch(1, nt, 0, None, (src, dst, nsrc, ndst, offs))
    torch.cuda.synchronize()
    s = src.cpu().numpy()
    want = np.full(nt * 4, -7.0, np.float32)
    for t, o in enumerate(offs.cpu().numpy().astype(np.int64) & 0xFFFFFFFF):
        for lane in range(4):
            b = o + 4 * lane
            val = s[b // 4] if b + 4 <= nsrc else 0.0
            if 16 * t + 4 * lane + 4 <= ndst:
                want[4 * t + lane] = val
    assert np.array_equal(dst.cpu().numpy(), want)


# -- fp8 and narrow floats, bit exact vs ml_dtypes (interpreter semantics: satfinite) -------------


@pytest.mark.parametrize("f8,mdt", [(T.f8E4M3FN, ml_dtypes.float8_e4m3fn), (T.f8E5M2, ml_dtypes.float8_e5m2)])
@pytest.mark.parametrize("lanes", [1, 4, 3])
def test_fp8_conversions_bit_exact(f8, mdt, lanes):
    VT = VectorType(lanes, T.f32) if lanes > 1 else T.f32
    V8 = VectorType(lanes, f8) if lanes > 1 else f8
    P8 = PointerType(f8, "global")

    def body(x, q, back, codes, decoded):
        i = arith.muli(gid(), c32(lanes))
        v = ptr.load(ptr.add(x, i), result_types=[VT])
        e = arith.truncf(v, result_types=[V8])
        ptr.store(e, ptr.add(q, i))
        ptr.store(arith.extf(e, result_types=[VT]), ptr.add(back, i))
        c = ptr.load(ptr.add(codes, i), result_types=[V8])
        ptr.store(arith.extf(c, result_types=[VT]), ptr.add(decoded, i))

    k, _ = kernel(build_kernel([F32G, P8, F32G, P8, F32G], body))
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.standard_normal(3000) * 100, rng.standard_normal(2000) * 0.01,
                         [0.0, -0.0, 1e6, -1e6, np.inf, -np.inf, np.nan, 448.0, 464.0, 57344.0, 1e-9]])  # fmt: skip
    n = (len(xs) // (128 * lanes) + 1) * 128 * lanes
    xs = np.resize(xs, n).astype(np.float32)
    codes = np.resize(np.arange(256, dtype=np.uint8), n)
    x = torch.from_numpy(xs).cuda()
    q = torch.empty(n, dtype=torch.uint8, device="cuda")
    back = torch.empty(n, device="cuda")
    cd = torch.from_numpy(codes).cuda()
    dec = torch.empty(n, device="cuda")
    k.launch(n // lanes // 128, 128, 0, None, (x, q, back, cd, dec))
    torch.cuda.synchronize()
    fmax = float(ml_dtypes.finfo(mdt).max)
    ref = np.clip(xs, -fmax, fmax).astype(mdt)
    got = q.cpu().numpy().view(mdt)
    same = (got.view(np.uint8) == ref.view(np.uint8)) | (
        np.isnan(got.astype(np.float32)) & np.isnan(ref.astype(np.float32))
    )
    assert same.all(), f"{(~same).sum()} mismatches, e.g. x={xs[~same][:5]}"
    np.testing.assert_array_equal(back.cpu().numpy(), got.astype(np.float32))
    np.testing.assert_array_equal(dec.cpu().numpy(), codes.view(mdt).astype(np.float32))


def test_bf16_f16_rounding_bit_exact():
    P16 = PointerType(T.bf16, "global")
    PH = PointerType(T.f16, "global")
    P64 = PointerType(T.f64, "global")

    def body(x, d, b, h, b2):
        i = gid()
        v = ptr.load(ptr.add(x, i), result_types=[T.f32])
        ptr.store(arith.truncf(v, result_types=[T.bf16]), ptr.add(b, i))
        ptr.store(arith.truncf(v, result_types=[T.f16]), ptr.add(h, i))
        dv = ptr.load(ptr.add(d, i), result_types=[T.f64])
        ptr.store(arith.truncf(dv, result_types=[T.bf16]), ptr.add(b2, i))

    k, _ = kernel(build_kernel([F32G, P64, P16, PH, P16], body))
    n = 1 << 16
    rng = np.random.default_rng(1)
    d = rng.standard_normal(n) * np.exp(rng.uniform(-20, 20, n))
    x = d.astype(np.float32)
    tx, td = torch.from_numpy(x).cuda(), torch.from_numpy(d).cuda()
    b = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    h = torch.empty(n, dtype=torch.float16, device="cuda")
    b2 = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    k.launch(n // 256, 256, 0, None, (tx, td, b, h, b2))
    torch.cuda.synchronize()
    assert np.array_equal(b.cpu().view(torch.int16).numpy(), x.astype(ml_dtypes.bfloat16).view(np.int16))
    assert np.array_equal(h.cpu().numpy(), x.astype(np.float16))
    from flydsl.dialects.arith import float_round

    want = float_round(d, T.bf16).view(np.int16)
    assert np.array_equal(b2.cpu().view(torch.int16).numpy(), want)


@pytest.mark.parametrize("dst", [T.f16, T.bf16], ids=str)
def test_directed_rounding_bit_exact(dst):
    from flydsl.dialects.arith import ROUNDING_MODES, float_round_directed

    modes = [m for m in ROUNDING_MODES if m != "to_nearest_even"]
    P16 = PointerType(T.i16, "global")

    def body(x, out):
        i = gid()
        v = ptr.load(ptr.add(x, i), result_types=[T.f32])
        for j, m in enumerate(modes):
            r = arith.bitcast(arith.truncf(v, result_types=[dst], rounding=m), result_types=[T.i16])
            ptr.store(r, ptr.add(out, arith.addi(arith.muli(i, c32(len(modes))), c32(j))))

    k, _ = kernel(build_kernel([F32G, P16], body))
    rng = np.random.default_rng(3)
    xs = (rng.standard_normal(1 << 14) * np.exp(rng.uniform(-12, 12, 1 << 14))).astype(np.float32)
    xs[:6] = [1 + 2.0**-11, -(1 + 2.0**-11), 65520.0, 1e6, -0.0, 3e38]
    out = torch.empty(len(xs) * len(modes), dtype=torch.int16, device="cuda")
    k.launch(len(xs) // 256, 256, 0, None, (torch.from_numpy(xs).cuda(), out))
    torch.cuda.synchronize()
    got = out.cpu().numpy().reshape(-1, len(modes))
    for j, m in enumerate(modes):
        with np.errstate(all="ignore"):
            want = np.asarray(float_round_directed(xs, dst, m)).view(np.int16)
        assert np.array_equal(got[:, j], want), (m, xs[got[:, j] != want][:4])


def test_f64_to_fp8_and_ieee_maximum_zeros():
    from flydsl.dialects.arith import float_round

    P8 = PointerType(T.f8E4M3FN, "global")
    P64 = PointerType(T.f64, "global")

    def body(d, q, z):
        i = gid()
        ptr.store(arith.truncf(ptr.load(ptr.add(d, i), result_types=[T.f64]), result_types=[T.f8E4M3FN]), ptr.add(q, i))
        nz = arith.const(-0.0, T.f32)
        x = ptr.load(z, result_types=[T.f32])  # a run-time +0.0 so nothing folds
        ptr.store(arith.maximumf(arith.mulf(x, nz), x), ptr.add(z, c32(1)))
        ptr.store(arith.minimumf(x, arith.mulf(x, nz)), ptr.add(z, c32(2)))

    k, _ = kernel(build_kernel([P64, P8, F32G], body))
    rng = np.random.default_rng(5)
    d = rng.standard_normal(1 << 12) * 10
    d[:3] = [1.0625 + 2.0**-40, 1.0625 - 2.0**-40, 500.0]  # just above / below an e4m3 tie
    q = torch.empty(len(d), dtype=torch.uint8, device="cuda")
    z = torch.zeros(3, device="cuda")
    k.launch(len(d) // 256, 256, 0, None, (torch.from_numpy(d).cuda(), q, z))
    torch.cuda.synchronize()
    want = float_round(d, T.f8E4M3FN).view(np.uint8)
    assert np.array_equal(q.cpu().numpy(), want)
    zz = z.cpu().numpy()
    assert not np.signbit(zz[1]) and np.signbit(zz[2])  # maximum(-0, +0) = +0, minimum(+0, -0) = -0


# -- parity: GPU results bit for bit against the ops' own `evaluate` semantics (the interpreter's) --

_NP_OF = {T.i1: np.bool_, T.i8: np.int8, T.i16: np.int16, T.i32: np.int32, T.i64: np.int64, T.f16: np.float16,
          T.bf16: ml_dtypes.bfloat16, T.f32: np.float32, T.f64: np.float64}  # fmt: skip
_N = 4096


def _values(t, rng):
    dt = np.dtype(_NP_OF[t])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, _N, dtype=np.int64, endpoint=True)
        v[:8] = [0, 1, -1, info.min, info.max, 2, -2, 1 << (info.bits - 2)]
        v[8:512] = rng.integers(-300, 300, 504)
        return v.astype(dt)
    x = rng.standard_normal(_N) * np.exp(rng.uniform(-10, 10, _N))
    x[:12] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.5, -2.5, 1e30, 3.0]
    x[12:512] = np.round(x[12:512])  # integers and halves exercise rounding and comparisons
    with np.errstate(over="ignore"):
        return x.astype(dt)


def _as_bits(a):
    """The bits of an array as signed integers (bool as uint8)."""
    a = np.asarray(a)
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    return a.view(f"i{a.dtype.itemsize}")


def _parity(in_types, build, arch=None, shapes=None, prepare=None):
    """Run ``build(*inputs) -> results`` (each an op applied to the loaded inputs) on the GPU and on
    the ops' ``evaluate``; assert bit equality (any NaN equals any NaN). ``prepare(arrays)`` may
    adjust the random inputs first."""
    rng = np.random.default_rng(11)
    shapes = shapes or [None] * len(in_types)
    arrays = []
    for t, sh in zip(in_types, shapes):
        a = _values(t, rng) if sh is None else np.stack([_values(t, rng) for _ in range(sh)], axis=1)
        arrays.append(a)
    if prepare is not None:
        arrays = prepare(arrays)
    ops = []

    def body(*args):
        ins, outs = args[: len(in_types)], args[len(in_types) :]
        i = gid()
        vals = []
        for p, t, sh in zip(ins, in_types, shapes):
            vt = VectorType(sh, t) if sh else t
            vals.append(ptr.load(ptr.add(p, arith.muli(i, c32(sh or 1))), result_types=[vt]))
        for r, o in zip(build(*vals), outs):
            ops.append((r.owner, [vals.index(x) for x in r.owner.operands]))
            ptr.store(r, ptr.add(o, i))

    # the result types decide the kernel's signature: build the ops once in a scratch block first
    from flydsl.ir import new_module

    with InsertionPoint(new_module().regions[0].blocks[0]):
        dummy = [
            arith.constant(value=0, result_types=[VectorType(sh, t) if sh else t]) for t, sh in zip(in_types, shapes)
        ]
        out_types = [r.type for r in build(*dummy)]
    out_ptrs = [PointerType(t.element_type, "global") for t in out_types]
    in_ptrs = [PointerType(t, "global") for t in in_types]
    k, _ = kernel(build_kernel(in_ptrs + out_ptrs, body), **({"arch": arch} if arch else {}))
    dev_in = [torch.from_numpy(np.ascontiguousarray(_as_bits(a))).cuda() for a in arrays]
    host_out = [np.zeros((_N,) + ((t.numel,) if t.is_vector else ()), _NP_OF[t.element_type]) for t in out_types]
    dev_out = [torch.from_numpy(_as_bits(h).copy()).cuda() for h in host_out]
    k.launch(_N // 128, 128, 0, None, (*dev_in, *dev_out))
    torch.cuda.synchronize()
    bad = []
    for (op, idx), dv, h in zip(ops, dev_out, host_out):
        with np.errstate(all="ignore"):
            want = np.asarray(op.defn.evaluate(op, *[arrays[j] for j in idx])).astype(h.dtype).reshape(h.shape)
        got = dv.cpu().numpy().view(h.dtype) if h.dtype != np.bool_ else dv.cpu().numpy() != 0
        same = _as_bits(got) == _as_bits(want)
        if h.dtype.kind == "f" or h.dtype == ml_dtypes.bfloat16:
            same |= np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
        if not same.all():
            j = np.argwhere(~same.reshape(_N, -1).all(axis=1))[0, 0]
            bad.append(f"{op.defn.name} {op.attrs}: {(~same).sum()} lanes differ, e.g. in={[a[j] for a in arrays]} "
                       f"gpu={got.reshape(_N, -1)[j]} want={want.reshape(_N, -1)[j]}")  # fmt: skip
    assert not bad, "\n".join(bad)


_INT_BIN = [
    arith.addi, arith.subi, arith.muli, arith.andi, arith.ori, arith.xori, arith.maxsi, arith.minsi, arith.maxui,
    arith.minui, arith.mulhisi, arith.mulhiui, arith.divsi, arith.divui, arith.remsi, arith.remui, arith.floordivsi,
    arith.ceildivsi, arith.ceildivui,
]  # fmt: skip


@pytest.mark.parametrize("t", [T.i8, T.i16, T.i32, T.i64], ids=str)
def test_parity_integer_ops(t):
    w = t.bitwidth

    def prepare(arrays):
        a, b, s, d = arrays
        s = (np.abs(s.astype(np.int64)) % (2 * w)).astype(s.dtype)  # shift amounts 0 .. 2w-1
        d = np.where((d == 0) | (d == -1), 7, d).astype(d.dtype)  # x/0 and MIN/-1 are undefined on GPUs
        return [a, b, s, d]

    def build(a, b, s, d):
        res = [op(a, b) for op in _INT_BIN[:12]]
        res += [op(a, d) for op in _INT_BIN[12:]]
        res += [op(a, s) for op in (arith.shli, arith.shrui, arith.shrsi)]
        res += [arith.cmpi(a, b, predicate=p) for p in arith.CMPI_PREDICATES]
        res += [fm.absi(a), fm.ctpop(a), fm.ctlz(a), fm.cttz(a)]
        return res

    _parity([t, t, t, t], build, prepare=prepare)


@pytest.mark.parametrize("t", [T.f16, T.bf16, T.f32, T.f64], ids=str)
def test_parity_float_ops(t):
    def build(a, b):
        res = [op(a, b) for op in (arith.addf, arith.subf, arith.mulf, arith.divf, arith.remf, arith.maximumf,
                                   arith.minimumf, arith.maxnumf, arith.minnumf, fm.copysign)]  # fmt: skip
        res += [arith.negf(a), fm.absf(a), fm.floor(a), fm.ceil(a), fm.trunc(a), fm.round(a), fm.roundeven(a)]
        res += [fm.sqrt(a)]
        res += [arith.cmpf(a, b, predicate=p) for p in arith.CMPF_PREDICATES]
        res += [fm.isnan(a), fm.isinf(a), fm.isfinite(a)]
        return res

    _parity([t, t], build)


_CASTS = [
    (T.f32, [(arith.fptosi, T.i8), (arith.fptosi, T.i32), (arith.fptosi, T.i64), (arith.fptoui, T.i8),
             (arith.fptoui, T.i32), (arith.truncf, T.f16), (arith.truncf, T.bf16), (arith.extf, T.f64),
             (arith.bitcast, T.i32)]),
    (T.f64, [(arith.truncf, T.f32), (arith.truncf, T.bf16), (arith.truncf, T.f16), (arith.fptosi, T.i64),
             (arith.fptoui, T.i16)]),
    (T.i32, [(arith.sitofp, T.f32), (arith.sitofp, T.f16), (arith.sitofp, T.bf16), (arith.sitofp, T.f64),
             (arith.uitofp, T.f32), (arith.uitofp, T.bf16), (arith.trunci, T.i8), (arith.extsi, T.i64),
             (arith.extui, T.i64)]),
    (T.i64, [(arith.sitofp, T.f32), (arith.sitofp, T.bf16), (arith.sitofp, T.f64), (arith.uitofp, T.f32),
             (arith.uitofp, T.bf16), (arith.uitofp, T.f64)]),
    (T.f16, [(arith.extf, T.f32), (arith.fptosi, T.i16), (arith.truncf, T.bf16)]),
    (T.bf16, [(arith.extf, T.f32), (arith.extf, T.f64), (arith.fptoui, T.i8), (arith.truncf, T.f16)]),
]  # fmt: skip


@pytest.mark.parametrize("arch", ["native", "sm_80"])
@pytest.mark.parametrize("src,casts", _CASTS, ids=[str(c[0]) for c in _CASTS])
def test_parity_casts(src, casts, arch):
    _parity([src], lambda a: [op(a, result_types=[dst]) for op, dst in casts], arch=None if arch == "native" else arch)


@pytest.mark.parametrize("t", [T.f32, T.f16, T.bf16], ids=str)
def test_parity_ordered_reductions(t):
    kinds = ["add", "mul", "maxnumf", "minnumf", "maximumf", "minimumf"]
    _parity([t], lambda v: [vector.reduction(v, kind=k) for k in kinds], shapes=[8])


# -- math accuracy (measured; documented in docs/codegen.md) -------------------------------------

_DOMAINS = {
    "exp": (-80, 80), "exp2": (-120, 120), "expm1": (-5, 5), "log": (1e-30, 1e30), "log2": (1e-30, 1e30),
    "log10": (1e-30, 1e30), "log1p": (-0.9, 100), "sqrt": (0, 1e30), "rsqrt": (1e-30, 1e30),
    "cbrt": (-1e6, 1e6), "sin": (-100, 100), "cos": (-100, 100), "tan": (-1.5, 1.5), "asin": (-1, 1),
    "acos": (-1, 1), "atan": (-1e4, 1e4), "sinh": (-10, 10), "cosh": (-10, 10), "tanh": (-10, 10),
    "asinh": (-1e4, 1e4), "acosh": (1, 1e4), "atanh": (-0.99, 0.99), "erf": (-5, 5), "erfc": (-3, 9),
}  # fmt: skip
_NP = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "erf": np.vectorize(math.erf), "erfc": np.vectorize(math.erfc),
}  # fmt: skip
# bounds of the approximation path on the error relative to max(|ref|, 1) (documented in docs/codegen.md)
_BOUNDS = {
    "exp": 1e-5, "exp2": 1e-6, "expm1": 1e-6, "log": 2e-5, "log2": 2e-5, "log10": 2e-5, "log1p": 1e-6,
    "sqrt": 1e-7, "rsqrt": 5e-7, "cbrt": 5e-7, "sin": 3e-5, "cos": 3e-5, "tan": 1e-4, "asin": 1e-6,
    "acos": 1e-6, "atan": 5e-7, "sinh": 2e-6, "cosh": 2e-6, "tanh": 3e-5, "asinh": 1e-6, "acosh": 2e-6,
    "atanh": 1e-5, "erf": 1e-6, "erfc": 3e-5,
}  # fmt: skip
_LIBDEVICE_ULP = 4.5


def _samples(lo, hi, n=1 << 16):
    if lo > 0 and hi / lo > 1e3:
        return np.exp(np.linspace(np.log(lo), np.log(hi), n)).astype(np.float32)
    return np.linspace(lo, hi, n).astype(np.float32)


def _measure(fn, mode):
    def body(x, out):
        i = gid()
        v = ptr.load(ptr.add(x, i), result_types=[T.f32])
        ptr.store(getattr(fm, fn)(v), ptr.add(out, i))

    k, _ = kernel(build_kernel([F32G, F32G], body), math=mode)
    xs = _samples(*_DOMAINS[fn])
    x = torch.from_numpy(xs).cuda()
    out = torch.empty_like(x)
    k.launch(len(xs) // 256, 256, 0, None, (x, out))
    torch.cuda.synchronize()
    got = out.cpu().numpy().astype(np.float64)
    ref = _NP[fn](xs.astype(np.float64))
    ok = np.isfinite(ref) & (np.abs(ref) < 3e38)
    ulp = np.abs(got - ref)[ok] / np.spacing(np.abs(ref[ok]).astype(np.float32)).astype(np.float64)
    rel = np.abs(got - ref)[ok] / np.maximum(np.abs(ref[ok]), 1e-30)
    mixed = np.abs(got - ref)[ok] / np.maximum(np.abs(ref[ok]), 1.0)
    return float(ulp.max()), float(rel.max()), float(mixed.max())


def test_math_accuracy_table():
    from flydsl.codegen import find_libdevice

    modes = ["approx"] + (["libdevice"] if find_libdevice() else [])
    rows, failures = [], []
    for fn in _DOMAINS:
        row = [fn]
        for mode in modes:
            ulp, rel, mixed = _measure(fn, mode)
            row += [ulp, rel, mixed]
            if mode == "libdevice" and ulp > _LIBDEVICE_ULP:
                failures.append(f"{fn} libdevice {ulp:.1f} ulp")
            if mode == "approx" and mixed > _BOUNDS[fn]:
                failures.append(f"{fn} approx error {mixed:.2e} > {_BOUNDS[fn]:.1e}")
        rows.append(row)
    print("\n[math f32 accuracy vs float64] fn | approx: ulp rel mixed | libdevice: ulp rel mixed")
    for r in rows:
        print(
            f"  {r[0]:6s} | "
            + " | ".join(f"{r[1 + 3 * j]:9.1f} {r[2 + 3 * j]:8.1e} {r[3 + 3 * j]:8.1e}" for j in range(len(modes)))
        )
    assert not failures, failures


# -- atomics, printf, dynamic shared memory -------------------------------------------------------


def test_atomics_on_the_gpu():
    P32 = PointerType(I32, "global")

    def body(fx, ix):
        i = gid()
        v = arith.sitofp(i, result_types=[T.f32])
        ptr.atomic_rmw(fx, v, kind="max")
        ptr.atomic_rmw(ptr.add(fx, c32(1)), arith.const(1.0, T.f32), kind="add")
        ptr.atomic_rmw(ix, c32(1), kind="add")
        ptr.atomic_rmw(ptr.add(ix, c32(1)), i, kind="max", scope="sys")
        ptr.atomic_cas(ptr.add(ix, c32(2)), c32(0), arith.addi(i, c32(1)))

    k, _ = kernel(build_kernel([F32G, P32], body))
    fx = torch.tensor([-1.0, 0.0], device="cuda")
    ix = torch.zeros(3, dtype=torch.int32, device="cuda")
    k.launch(64, 256, 0, None, (fx, ix))
    torch.cuda.synchronize()
    n = 64 * 256
    assert fx.tolist() == [n - 1.0, float(n)]
    assert ix[:2].tolist() == [n, n - 1] and 1 <= ix[2].item() <= n


def test_printf(capfd):
    def body(x):
        t = gpu.thread_id(dimension="x")
        v = ptr.load(ptr.add(x, t), result_types=[T.f32])
        gpu.printf(t, v, arith.extsi(t, result_types=[T.i64]), format="tid={} v={:.2f} big={} 100%")

    k, _ = kernel(build_kernel([F32G], body))
    x = torch.tensor([1.5, -2.25], device="cuda")
    k.launch(1, 2, 0, None, (x,))
    torch.cuda.synchronize()
    ctypes.CDLL(None).fflush(None)  # the driver writes device printf output through C stdio
    out = capfd.readouterr().out
    assert "tid=0 v=1.50 big=0 100%" in out and "tid=1 v=-2.25 big=1 100%" in out


def test_dynamic_shared_memory_above_48k():
    nwords = 96 * 1024 // 4

    def body(x, out):
        t = gpu.thread_id(dimension="x")
        smem = ptr.cast(ptr.dynamic_shared(), result_types=[PointerType(T.f32, "shared")])
        loop = scf.build_for(t, c32(nwords), c32(256))
        with InsertionPoint(loop.regions[0].blocks[0]):
            j = loop.regions[0].blocks[0].args[0]
            ptr.store(ptr.load(ptr.add(x, j), result_types=[T.f32]), ptr.add(smem, j))
            scf.yield_()
        gpu.barrier()
        r = ptr.load(ptr.add(smem, arith.subi(c32(nwords - 1), t)), result_types=[T.f32])
        ptr.store(r, ptr.add(out, t))

    k, ck = kernel(build_kernel([F32G, F32G], body))
    assert ck.kernels["k"].uses_dynamic_smem
    x = torch.randn(nwords, device="cuda")
    out = torch.empty(256, device="cuda")
    k.launch(1, 256, nwords * 4, None, (x, out))
    torch.cuda.synchronize()
    assert torch.equal(out, x.flip(0)[:256])


def test_driver_errors_name_the_kernel():
    k, _ = kernel(vadd_module(1))
    with pytest.raises(cuda.CudaError, match="kernel k") as ei:
        k.launch(1, 4096, 0, None, (0, 0, 0, 0))  # too many threads per block
    assert "CUDA_ERROR" in str(ei.value)
    with pytest.raises(TypeError, match="kernel k takes 4 arguments"):
        k.launch(1, 1, 0, None, (0,))


def test_launch_overhead():
    def body(x):
        ptr.store(arith.const(1.0, T.f32), x)

    k, _ = kernel(build_kernel([F32G, F32G, F32G, I32], lambda a, b, c, n: body(a)))
    a = torch.empty(4, device="cuda")
    stream = torch.cuda.current_stream()
    args = (a, a, a, 4)
    for _ in range(100):
        k.launch(1, 32, 0, stream, args)
    torch.cuda.synchronize()
    n = 5000
    t0 = time.perf_counter()
    for _ in range(n):
        k.launch(1, 32, 0, stream, args)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    ours = (t1 - t0) / n * 1e6
    t0 = time.perf_counter()
    for _ in range(n):
        a.add_(1.0)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    theirs = (t1 - t0) / n * 1e6
    t0 = time.perf_counter()
    for _ in range(n):
        k.params.set(args, "k")
    pack = (time.perf_counter() - t0) / n * 1e6
    print(
        f"\n[launch overhead] flydsl {ours:.1f} us/launch (argument packing {pack:.1f} us), torch add_ {theirs:.1f} us"
    )
    assert ours < 20
