"""Parity: the same IR kernels on the interpreter and on the GPU (marker ``gpu``; skipped without CUDA).

Each case builds a kernel with the IR builders, runs it on the interpreter (numpy arrays) and through
the LLVM/PTX back end on the CUDA device (the same bytes in device memory), and compares the results
bit for bit — except transcendental functions, whose fast GPU paths differ by a few ulps (the bound
asserted here is the one docs/interpreter.md states).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from flydsl.dialects import arith, gpu, math, ptr, scf
from flydsl.ir import InsertionPoint, PointerType, bf16, f8E4M3FN, f8E5M2, f16, f32, i8, i16, i32, i64
from flydsl.testing import KernelBuilder, const, launch

pytestmark = pytest.mark.gpu


def _cuda():
    if not os.path.exists("/dev/nvidiactl"):  # NOTE: checked first, importing torch costs seconds
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


torch = _cuda()
if torch is None:
    pytest.skip("no CUDA device", allow_module_level=True)


def on_gpu(kernel, grid, block, *args, smem=0):
    """Run ``kernel`` on the GPU; numpy array arguments are copied in and the results returned."""
    from flydsl.codegen import compile_module
    from flydsl.runtime.cuda import CudaKernel

    gm = gpu.build_gpu_module("parity")
    gm.regions[0].block.append(kernel)
    compiled = compile_module(gm)
    k = CudaKernel.from_compiled(compiled, kernel.attrs["sym_name"])
    dev, vals = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            t = torch.from_numpy(np.ascontiguousarray(a).reshape(-1).view(np.uint8).copy()).cuda()
            dev.append((t, a))
            vals.append(t.data_ptr())
        else:
            vals.append(a)
    k.launch(grid, block, smem, None, vals)
    torch.cuda.synchronize()
    return [t.cpu().numpy().view(a.dtype).reshape(a.shape) for t, a in dev]


def both(kernel, grid, block, *args, smem=0):
    """(interpreter results, GPU results) of the numpy array arguments."""
    cpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    launch(kernel, grid, block, *cpu, smem_bytes=smem, check=True)
    ref = [a for a in cpu if isinstance(a, np.ndarray)]
    return ref, on_gpu(kernel, grid, block, *args, smem=smem)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


INT_OPS = [
    "addi", "subi", "muli", "divsi", "remsi", "divui", "remui", "floordivsi", "ceildivsi", "ceildivui",
    "shli", "shrui", "shrsi", "maxui", "minui", "maxsi", "mulhisi", "mulhiui",
]  # fmt: skip


@pytest.mark.parametrize("t,dt", [(i8, np.int8), (i16, np.int16), (i32, np.int32), (i64, np.int64)])
def test_integer_edge_cases(t, dt):
    info = np.iinfo(dt)
    w = info.bits
    edge = [0, 1, -1, 2, -2, 7, info.min, info.max, info.min + 1, w - 1, w, w + 1, 3, -3]
    a = np.array([x for x in edge for _ in edge], dt)
    b = np.array([y for _ in edge for y in edge], dt)
    out = np.zeros((a.shape[0], len(INT_OPS)), dt)
    p = PointerType(t)
    with KernelBuilder(f"ints{w}", [p, p, p]) as kb:
        x_, y_, o = kb.args
        i = kb.global_id()
        x = ptr.load(ptr.add(x_, i), result_types=[t])
        y = ptr.load(ptr.add(y_, i), result_types=[t])
        for j, name in enumerate(INT_OPS):
            ptr.store(getattr(arith, name)(x, y), ptr.add(o, arith.addi(arith.muli(i, const(len(INT_OPS))), const(j))))
    ref, got = (r[2] for r in both(kb.op, 1, a.shape[0], a, b, out))
    # division by zero is undefined in LLVM; only the hardware div/rem instructions have a fixed result
    # (64-bit: NVIDIA's software division returns 0xFFFFFFFF; shifts use the low 32 bits of the amount)
    expanded = np.array([n in ("floordivsi", "ceildivsi", "ceildivui") for n in INT_OPS])
    div = np.array([n in ("divsi", "divui") for n in INT_OPS])
    shift = np.array([n.startswith("sh") for n in INT_OPS])
    undefined = (b == 0)[:, None] & expanded[None, :]
    if w == 64:
        undefined |= ((b == 0)[:, None] & div[None, :]) | ((b.view(np.uint64) >= 2**32)[:, None] & shift[None, :])
    bad = np.argwhere((ref != got) & ~undefined)
    assert bad.size == 0, [(INT_OPS[c], int(a[r]), int(b[r]), int(ref[r, c]), int(got[r, c])) for r, c in bad[:10]]


SPECIAL_F32 = np.array(
    [0.0, -0.0, 1.5, -1.5, 2.5, 127.9, 128.0, 255.9, 256.0, -129.0, 3e9, -3e9, 1e19, 2e19, -1e19, np.inf, -np.inf,
     np.nan, 448.0, 449.0, 464.0, 465.0, 480.0, 500.0, -1e6, 57344.0, 61439.0, 61440.0, 1e-3, 2.0**-10, 2.0**-9 * 1.5,
     65504.0, 65520.0, 3.3e38, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-9, 1e-40],
    np.float32,
)  # fmt: skip


def test_conversions_saturate_like_the_gpu():
    x = SPECIAL_F32
    outs = [np.zeros(x.shape, d) for d in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64)]
    import ml_dtypes

    narrow = [
        np.zeros(x.shape, d) for d in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.bfloat16, np.float16)
    ]
    ints = [
        (i8, "fptosi"),
        (i16, "fptosi"),
        (i32, "fptosi"),
        (i64, "fptosi"),
        (i8, "fptoui"),
        (i32, "fptoui"),
        (i64, "fptoui"),
    ]
    floats = [f8E4M3FN, f8E5M2, bf16, f16]
    with KernelBuilder(
        "conv", [PointerType(f32)] + [PointerType(t) for t, _ in ints] + [PointerType(t) for t in floats]
    ) as kb:
        i = kb.global_id()
        v = ptr.load(ptr.add(kb.args[0], i), result_types=[f32])
        for (t, name), o in zip(ints, kb.args[1:8]):
            ptr.store(getattr(arith, name)(v, result_types=[t]), ptr.add(o, i))
        for t, o in zip(floats, kb.args[8:]):
            ptr.store(arith.truncf(v, result_types=[t]), ptr.add(o, i))
    ref, got = both(kb.op, 1, x.shape[0], x, *outs, *narrow)
    for name, r, g in zip([f"{n}->{t}" for t, n in ints] + [str(t) for t in floats], ref[1:], got[1:]):
        bad = np.flatnonzero(_bits(r).reshape(x.shape[0], -1).any(1) != _bits(g).reshape(x.shape[0], -1).any(1))
        diff = (_bits(r) != _bits(g)).reshape(x.shape[0], -1).any(1)
        if r.dtype.kind not in "iu":  # NaN payloads differ (the GPU's conversions give a canonical NaN)
            diff &= ~(np.isnan(r.astype(np.float32)) & np.isnan(g.astype(np.float32)))
        diff = np.flatnonzero(diff)
        assert diff.size == 0, (name, [(float(x[k]), r[k], g[k]) for k in diff[:8]], bad)


def test_int64_to_float_rounds_once():
    v = np.array([2**60 + 2**36 + 1, -(2**60 + 2**36 + 1), 2**53 + 1, 2**63 - 1, -(2**63), 12345, 2**24 + 1], np.int64)
    o32, o16 = np.zeros(v.shape, np.float32), np.zeros(v.shape, np.float16)
    with KernelBuilder("i2f", [PointerType(i64), PointerType(f32), PointerType(f16)]) as kb:
        i = kb.global_id()
        x = ptr.load(ptr.add(kb.args[0], i), result_types=[i64])
        ptr.store(arith.sitofp(x, result_types=[f32]), ptr.add(kb.args[1], i))
        ptr.store(arith.uitofp(x, result_types=[f16]), ptr.add(kb.args[2], i))
    ref, got = both(kb.op, 1, v.shape[0], v, o32, o16)
    assert np.array_equal(_bits(ref[1]), _bits(got[1])) and np.array_equal(_bits(ref[2]), _bits(got[2]))


@pytest.mark.parametrize("t,dt", [(f32, np.float32), (bf16, "bfloat16"), (f16, np.float16)])
def test_ieee_arithmetic_is_bit_exact(t, dt):
    import ml_dtypes

    dt = ml_dtypes.bfloat16 if dt == "bfloat16" else dt
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(512) * 10.0 ** rng.integers(-3, 4, 512)).astype(dt)
    b = (rng.standard_normal(512) * 10.0 ** rng.integers(-3, 4, 512)).astype(dt)
    a[:4] = np.array([np.nan, 0.0, -0.0, np.inf]).astype(dt)
    names = ["addf", "subf", "mulf", "divf", "maxnumf", "minnumf", "maximumf", "minimumf"]
    outs = [np.zeros(512, dt) for _ in range(len(names) + 1)]
    p = PointerType(t)
    with KernelBuilder("ieee", [p] * (2 + len(outs))) as kb:
        i = kb.global_id()
        x = ptr.load(ptr.add(kb.args[0], i), result_types=[t])
        y = ptr.load(ptr.add(kb.args[1], i), result_types=[t])
        for n, o in zip(names, kb.args[2:]):
            ptr.store(getattr(arith, n)(x, y), ptr.add(o, i))
        ptr.store(math.sqrt(math.absf(x)), ptr.add(kb.args[-1], i))
    ref, got = both(kb.op, 4, 128, a, b, *outs)
    for n, r, g in zip(names + ["sqrt"], ref[2:], got[2:]):
        nan = np.isnan(r.astype(np.float32)) & np.isnan(g.astype(np.float32))
        diff = np.flatnonzero((r.view(f"u{r.itemsize}") != g.view(f"u{g.itemsize}")) & ~nan)
        assert diff.size == 0, (n, [(a[k], b[k], r[k], g[k]) for k in diff[:6]])


def test_transcendentals_within_documented_ulps():
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.uniform(-10, 10, 1024), rng.uniform(0.01, 100, 1024)]).astype(np.float32)
    names = ["exp", "log", "sin", "cos", "tanh", "exp2", "log2", "rsqrt", "erf"]
    outs = [np.zeros(x.shape, np.float32) for _ in names]
    with KernelBuilder("trans", [PointerType(f32)] * (1 + len(names))) as kb:
        i = kb.global_id()
        v = ptr.load(ptr.add(kb.args[0], i), result_types=[f32])
        for n, o in zip(names, kb.args[1:]):
            arg = math.absf(v) if n in ("log", "log2", "rsqrt") else v
            ptr.store(getattr(math, n)(arg), ptr.add(o, i))
    ref, got = both(kb.op, 16, 128, x, *outs)
    report = {}
    for n, r, g in zip(names, ref[1:], got[1:]):
        ok = np.isfinite(r) & np.isfinite(g)
        ulp = np.abs(r[ok].view(np.int32).astype(np.int64) - g[ok].view(np.int32).astype(np.int64))
        tiny = np.abs(r[ok]) < 1e-6  # absolute error near zero (sin/cos/tanh of multiples of pi)
        report[n] = int(ulp[~tiny].max(initial=0))
        assert np.array_equal(np.isnan(r), np.isnan(g)), n
    assert max(report.values()) <= 4, report


@pytest.mark.parametrize("mode", ["xor", "up", "down", "idx"])
def test_shuffles_and_votes(mode):
    tpb = 48
    x = np.arange(2 * tpb, dtype=np.int32) * 7 + 1
    out = np.zeros((6, 2 * tpb), np.int32)
    with KernelBuilder("shv", [PointerType(i32), PointerType(i32)]) as kb:
        xp, o = kb.args
        i = kb.global_id()
        n = const(2 * tpb)
        v = ptr.load(ptr.add(xp, i), result_types=[i32])
        for r, (off, w) in enumerate([(1, 32), (3, 16), (5, 8), (2, 4)]):
            ptr.store(
                gpu.shuffle(v, const(off), const(w), mode=mode), ptr.add(o, arith.addi(i, arith.muli(n, const(r))))
            )
        tid = gpu.thread_id(dimension="x")
        with kb.if_(arith.cmpi(arith.remui(tid, const(5)), const(0), predicate="ne")):
            bal = gpu.vote(arith.cmpi(arith.remui(tid, const(3)), const(0), predicate="eq"), mode="ballot")
            ptr.store(bal, ptr.add(o, arith.addi(i, arith.muli(n, const(4)))))
            anyv = gpu.vote(arith.cmpi(tid, const(40), predicate="eq"), mode="any")
            ptr.store(arith.extui(anyv, result_types=[i32]), ptr.add(o, arith.addi(i, arith.muli(n, const(5)))))
    ref, got = (r[1] for r in both(kb.op, 2, tpb, x, out))
    # a source thread past the end of the block (partial last warp) is undefined on the GPU
    lane = np.arange(2 * tpb) % tpb % 32
    for r, (off, w) in enumerate([(1, 32), (3, 16), (5, 8), (2, 4)]):
        seg = lane // w * w
        src = {"xor": lane ^ off, "up": lane - off, "down": lane + off, "idx": seg + off % w}[mode]
        in_seg = (src >= seg) & (src < seg + w) if mode != "xor" else src < seg + w
        past = in_seg & (np.arange(2 * tpb) % tpb - lane + src >= tpb)
        got[r, past] = ref[r, past]
    # lanes past the end of the block: the GPU's value is undefined; the interpreter returns the own value
    assert np.array_equal(ref, got), np.argwhere(ref != got)[:10]


def test_atomics_final_state_and_counter_values():
    n = 1024
    vals = np.random.default_rng(9).integers(-(2**31), 2**31, n).astype(np.int32)
    kinds = ["add", "max", "min", "umax", "umin", "and", "or", "xor"]
    mem = np.zeros((len(kinds), 7), np.int32)
    counter = np.zeros(1, np.int32)
    olds = np.zeros(n, np.int32)
    with KernelBuilder("atom", [PointerType(i32)] * 4) as kb:
        m, v_, o, cnt = kb.args
        i = kb.global_id()
        v = ptr.load(ptr.add(v_, i), result_types=[i32])
        bin_ = arith.remui(i, const(7))
        for k, kind in enumerate(kinds):
            ptr.atomic_rmw(ptr.add(m, arith.addi(bin_, const(7 * k))), v, kind=kind)
        ptr.store(ptr.atomic_rmw(cnt, const(1), kind="add"), ptr.add(o, i))
    ref, got = both(kb.op, 8, 128, mem, vals, olds, counter)
    assert np.array_equal(ref[0], got[0])  # the final state of every kind is order-independent
    # counter: each lane saw a distinct old value; the set of old values is order-independent
    assert np.array_equal(np.sort(ref[2]), np.sort(got[2]))


def test_buffer_ops_and_divergent_loops():
    src = np.arange(1, 257, dtype=np.int32)
    dst = np.full(260, -7, np.int32)
    steps = np.zeros(256, np.int32)
    with KernelBuilder("bufloop", [PointerType(i32), PointerType(i32), PointerType(i32), i64, i64]) as kb:
        s, d, st, ns, nd = kb.args
        i = kb.global_id()
        off = arith.muli(i, const(4))
        on = arith.cmpi(arith.remui(i, const(9)), const(4), predicate="ne")
        v = ptr.buffer_load(ptr.buffer_rsrc(s, ns), off, on, result_types=[i32])
        ptr.buffer_store(v, ptr.buffer_rsrc(d, nd), off, on)
        w = scf.build_while([arith.addi(i, const(1)), const(0)], [i32, i32])
        before, after = w.regions[0].blocks[0], w.regions[1].blocks[0]
        with InsertionPoint(before):
            x, c = before.args
            scf.condition(arith.cmpi(x, const(1), predicate="ne"), x, c)
        with InsertionPoint(after):
            x, c = after.args
            odd = arith.cmpi(arith.andi(x, const(1)), const(1), predicate="eq")
            nx = arith.select(odd, arith.addi(arith.muli(x, const(3)), const(1)), arith.shrui(x, const(1)))
            scf.yield_(nx, arith.addi(c, const(1)))
        ptr.store(w.results[1], ptr.add(st, i))
    ref, got = both(kb.op, 2, 128, src, dst, steps, 4 * 100 + 2, 4 * 200)
    assert np.array_equal(ref[1], got[1]) and np.array_equal(ref[2], got[2])


def test_printf_output_matches(capfd):
    lines = []
    with KernelBuilder("pf", [i64]) as kb:
        tid = gpu.thread_id(dimension="x")
        with kb.if_(arith.cmpi(tid, const(3), predicate="slt")):
            f = arith.sitofp(tid, result_types=[f32])
            gpu.printf(tid, f, kb.args[0], arith.trunci(tid, result_types=[i8]), format="t={} f={:.2f} big={} b={:x}\n")
    launch(kb.op, 1, 32, -5, printer=lines.append)
    capfd.readouterr()
    on_gpu(kb.op, 1, 32, -5)
    out = capfd.readouterr().out
    assert sorted(out.splitlines(keepends=True)) == sorted(lines)
