"""LayerNorm (``kernels/norm/layernorm_kernel.py``) against a float64 reference.

On the CPU interpreter (CI): tiny and odd N, N not a multiple of the vector width, rows that share a
block, a row count that does not fill the last block, rows longer than the register path (two passes),
rows with a large mean (no cancellation in the variance), and the PTX's 128-bit accesses. Marked
``gpu``: the same bodies on the GPU over a spread of shapes, against the reference and against the
interpreter. Outputs are poisoned with NaN first. Data are numpy arrays (torch CUDA tensors on the GPU),
so the CPU cases need no torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from _arrays import full, rand, randn, sync, to_device, to_numpy
from norm_cases import (
    ATOL,
    CPU_CASES,
    CPU_IDS,
    GPU_CASES,
    GPU_IDS,
    PARITY_CASES,
    PARITY_IDS,
    SMALL_CHUNKS,
    check_close,
    check_parity,
)

from kernels.norm.layernorm_kernel import build_layernorm_module

EPS = 1e-5


def reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    x, w, b = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w + b


def make_inputs(M, N, dtype, seed=0, offset=0.0):
    x = randn((M, N), dtype, seed, offset=offset)
    # |y| stays below 8, where half a bf16 ulp (the output's rounding) is still under the 2e-2 tolerance
    return x, rand(N, dtype, seed + 1), randn(N, dtype, seed + 2, scale=0.1)


def run(device, x, w, b, dtype, **plan) -> np.ndarray:
    M, N = x.shape
    X, W, B = (to_device(t, device) for t in (x, w, b))
    Y = full((M, N), float("nan"), x.dtype, device)
    build_layernorm_module(N, dtype, **plan)(X, W, B, Y, M)
    sync(device)
    return to_numpy(Y)


def check(x, w, b, dtype, y, atol=None):
    check_close(y, reference(x, w, b), atol or ATOL[dtype])


@pytest.mark.parametrize("M,N,dtype,plan", CPU_CASES, ids=CPU_IDS)
def test_layernorm_interpreter(M, N, dtype, plan, interpreter):
    x, w, b = make_inputs(M, N, dtype, seed=M * N)
    check(x, w, b, dtype, run("cpu", x, w, b, dtype, **plan))


@pytest.mark.parametrize(
    "N,plan", [(1000, {}), (1003, {}), (20001, {}), (3000, {"register_limit": 0, "chunk_threads": 32})]
)
def test_layernorm_large_mean_keeps_precision(N, plan, interpreter):
    """x = 1000 + N(0, 1) in f32: E[x^2] - E[x]^2 would lose about 1e-1 of the unit variance to rounding;
    the merged (mean, M2) statistics lose only the f32 rounding of the mean itself (~3e-5 of 1000)."""
    x, w, b = make_inputs(3, N, "f32", seed=N, offset=1000.0)
    check(x, w, b, "f32", run("cpu", x, w, b, "f32", **plan), atol=1e-4)


# paired rows (``pair_rows``: two rows per block, each thread the same columns of both, W and B read once for the
# two), with ``sms`` below the row count (as many rows as SMs or fewer: one row per block, twice): odd row counts
# leave the last block's second row past the end; ragged last chunks; persistent grids of fewer blocks than pairs
# (each block loops, the next pair's staged chunks read during this pair's output)
PAIR = {"register_limit": 0, "onchip_threads": 128, "pair_rows": True}  # 1024 bf16 / 512 f32 columns per chunk
RR = {"pair_rows": "reread", "cache_hint": "cs"}
PAIR_CASES = [
    (5, 2500, "f32", {**SMALL_CHUNKS, "pair_rows": True, "sms": 2}),  # 2 kept + 8 staged per row, the last ragged
    (3, 4096, "bf16", {**PAIR, "sms": 1}),  # 2 kept + 2 staged per row; the second block holds one row
    (4, 4096, "f32", {**PAIR, "kept_values": 16, "sms": 1}),  # 1 kept + 7 staged per row
    (5, 2500, "f32", {**SMALL_CHUNKS, "pair_rows": True}),  # 5 rows for 132 SMs: one row per block (twice)
    (3, 3000, "f32", {**PAIR, "persist": 1, "cache_hint": "cs"}),  # the same, persistent
    (5, 2500, "f32", {**SMALL_CHUNKS, "pair_rows": True, "persist": 1, "sms": 1}),  # one block, three pairs
    (7, 4096, "bf16", {**PAIR, "persist": 1, "sms": 2}),  # two blocks, four pairs, the last one single
    (6, 3000, "f32", {**PAIR, "persist": 2, "sms": 1, "cache_hint": "cs"}),  # ragged, streaming hints
    # the next pair's staged chunks also reduced during this pair's output, one or two chunks behind their copies
    (5, 2500, "f32", {**SMALL_CHUNKS, "pair_rows": True, "persist": 1, "sms": 1, "pair_lag": 1}),
    (7, 4096, "bf16", {**PAIR, "persist": 1, "sms": 2, "pair_lag": 2}),
    # streaming plans read the next pair's staged chunks through registers (ld.global.cs, then st.shared)
    (7, 4096, "bf16", {**PAIR, "persist": 1, "sms": 2, "cache_hint": "cs", "pair_lag": 1}),
    (5, 2500, "f32", {**SMALL_CHUNKS, "pair_rows": True, "persist": 1, "sms": 1, "cache_hint": "cs", "pair_lag": 2}),
    # rows longer than a pair's chip (64K f32): each row's last chunks read again for the output, first
    (3, 65536, "f32", {**RR, "onchip_threads": 512, "kept_values": 64, "sms": 1}),  # 8 kept, 14 staged, 10 re-read
    (5, 49160, "f32", {**RR, "sms": 2}),  # 1024 threads: 4 kept, 7 staged, 2 re-read, the last chunk ragged
    # 512 threads, 80 values kept: 10 kept, 14 staged, 8 re-read; W and B two chunks ahead; the re-read ones first
    (3, 65528, "f32", {**RR, "onchip_threads": 512, "kept_values": 80, "sms": 1, "pair_wb_ahead": 2}),
    (3, 61440, "f32", {**RR, "onchip_threads": 512, "kept_values": 96, "sms": 1, "reread_first": True}),
    # the staged chunks copied to their slots by cp.async (no registers in flight): re-read pairs, pairs that fit
    (3, 65528, "f32", {**RR, "onchip_threads": 512, "kept_values": 80, "sms": 1, "pair_async": True}),
    (3, 4096, "bf16", {**PAIR, "sms": 1, "pair_async": True}),
    (5, 2500, "f32", {**SMALL_CHUNKS, "pair_rows": True, "sms": 2, "pair_async": True}),
    (2, 65528, "f32", RR),  # fewer rows than SMs: each block one row, twice
    # two pair-blocks per SM (half the shared memory each): 1 kept, 7 staged, 8 re-read of 16 chunks per row
    (5, 65536, "bf16", {**RR, "pair_rows": "reread2", "onchip_threads": 512, "kept_values": 16, "sms": 2}),
]
PAIR_IDS = [
    f"{m}x{n}-{d}" + "-".join(f"-{k}={v}" for k, v in p.items() if k != "register_limit") for m, n, d, p in PAIR_CASES
]


@pytest.mark.parametrize("M,N,dtype,plan", PAIR_CASES, ids=PAIR_IDS)
def test_layernorm_pair_rows_interpreter(M, N, dtype, plan, interpreter):
    from kernels.norm.norm_common import plan_rows, vector_width
    from kernels.norm.pair_rows import pair_count

    eb = 4 if dtype == "f32" else 2
    kernel_only = ("max_registers", "pair_wb_ahead", "reread_first", "pair_async")  # (the kernel's, not the plan's)
    p = plan_rows(N, eb, vector_width(N, eb), **{k: v for k, v in plan.items() if k not in kernel_only})
    assert p.paired and p.staged > 0 and bool(p.persist) == ("persist" in plan)  # the plan these cases test
    assert (p.reread > 0) == str(plan.get("pair_rows")).startswith("reread")
    assert pair_count(p, M) == (M if M <= p.sms else (M + 1) // 2)
    x, w, b = make_inputs(M, N, dtype, seed=M * N + 1)
    check(x, w, b, dtype, run("cpu", x, w, b, dtype, **plan))


def test_layernorm_pair_rows_ptx_reads_weights_once_per_pair(interpreter, tmp_path):
    """64K bf16 paired (1024 threads, 8 chunks of 8 values per thread and row, 2 kept): X's 2 kept chunks per row
    loaded (the first pair's before the loop, the next pair's at the end of each iteration), its 6 staged ones per
    row copied by cp.async (the first pair's before the loop, the next pair's during the output), W and B read
    once per chunk for both rows; one barrier (both rows' statistics reduced together)."""
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    x = full((64, 65536), 0, "bf16", "cpu")
    build_layernorm_module(
        65536, "bf16", pair_rows=True, onchip_threads=1024, max_registers=0, persist=1, cache_hint="", tail_cols=0
    )(x, x[0], x[1], x, 64)
    (ptx,) = [p.read_text() for p in (tmp_path / "dump").glob("*/*.ptx")]
    assert ptx.count("ld.global.v4.b32") == 2 * (2 * 2) + 2 * 8 and ptx.count("st.global.v4.b32") == 2 * 8, ptx
    assert ptx.count("cp.async.cg.shared.global") == 2 * 2 * 6 and ptx.count("bar.sync") == 1
    assert ".reqntid 1024, 1, 1" in ptx and ".local" not in ptx


def test_layernorm_constant_row_is_bias(interpreter):
    x, w, b = make_inputs(2, 512, "f32", seed=5)
    x[0] = 3.25
    y = run("cpu", x, w, b, "f32")
    np.testing.assert_array_equal(y[0], b)  # zero variance: (x - mean) = 0 exactly, eps keeps rsqrt finite


def test_layernorm_ptx_uses_128bit_accesses(interpreter, tmp_path):
    interpreter.setenv("FLYDSL_DUMP_IR", "1")
    interpreter.setenv("COMPILE_ONLY", "1")
    x = full((64, 8192), 0, "bf16", "cpu")
    build_layernorm_module(8192, "bf16")(x, x[0], x[1], x, 64)
    (ptx,) = [p.read_text() for p in (tmp_path / "dump").glob("*/*.ptx")]
    # 32 values per thread: four 16-byte loads each of X, W and B, four 16-byte stores
    assert ptx.count("ld.global.v4.b32") == 12 and ptx.count("st.global.v4.b32") == 4, ptx
    assert "rsqrt.approx" in ptx and "bar.sync" in ptx and "shfl.sync.bfly" in ptx
    assert not any(op in ptx for op in ("div.s32", "div.u32", "rem.s32", "rem.u32", ".local")), ptx


@pytest.mark.parametrize("M,N,plan", [(3, 32768, {}), (2, 65536, {}), (3, 65536, {"sms": 1}), (3, 100000, {})])
def test_layernorm_long_f32_rows_default_plans(M, N, plan, interpreter):
    """The f32 long-row defaults (LONG_ROWS): 32K rows in pairs (512 threads, 128 registers), 48K-64K too, each row's
    chunks beyond the pair's registers and shared memory read twice (with as many rows as SMs or fewer each block one
    row, twice; over one SM two pairs, the second one row), longer rows one per block in chunks of 8 values."""
    x, w, b = make_inputs(M, N, "f32", seed=N)
    check(x, w, b, "f32", run("cpu", x, w, b, "f32", **plan))


@pytest.mark.parametrize("M,N,dtype", [(3, 30000, "bf16"), (2, 49160, "bf16"), (3, 65528, "f32"), (2, 20000, "f32")])
def test_layernorm_ragged_long_rows_default_plans(M, N, dtype, interpreter):
    """Rows of 16K-64K other than 32768 / 65536 (LONG_ROWS): one row per block of 512 threads, 16 values per thread
    and chunk, the last chunk ragged; the powers of two keep their pair plans."""
    from kernels.norm.layernorm_kernel import O512_E16, plan_defaults
    from kernels.norm.norm_common import WIDE_ONLY

    plan = {k: v for k, v in plan_defaults(N, dtype).items() if not k.startswith(("tail_", "few_"))}  # (row_tail.py's)
    assert plan == {k: v for k, v in O512_E16.items() if k != WIDE_ONLY}
    assert plan_defaults(32768, dtype)["pair_rows"] is True and "pair_rows" not in plan_defaults(65536, "bf16")
    x, w, b = make_inputs(M, N, dtype, seed=N)
    check(x, w, b, dtype, run("cpu", x, w, b, dtype))


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_layernorm_odd_long_rows_default_plans(dtype, interpreter):
    """An odd row (a predicate per value) of 32767: the plan before the 512-thread 64-register rules (which spilled
    there), one row per block of 512 threads with 128 registers."""
    x, w, b = make_inputs(2, 32767, dtype, seed=5)
    check(x, w, b, dtype, run("cpu", x, w, b, dtype))


def test_layernorm_reread_pairs_of_a_row_held_in_registers(interpreter):
    """Re-read pairs with async copies (``pair_rows="reread"``, ``pair_async``) on a row that fits in registers: the
    plain plan (it indexed past the row's chunks: "tensor index 10 is out of range for a mode of size 10")."""
    from kernels.norm.layernorm_kernel import PAIR_512

    x, w, b = make_inputs(3, 20000, "f32", seed=9)
    plan = {**PAIR_512, "pair_rows": "reread", "max_registers": 128, "kept_values": 96, "pair_async": True}
    check(x, w, b, "f32", run("cpu", x, w, b, "f32", **plan))


@pytest.mark.parametrize("M,N", [(3, 30000), (2, 65528)])
def test_layernorm_pairs_at_ragged_lengths(M, N, interpreter):
    """Paired rows (512 threads, 128 registers: the session-19 plan of these lengths) with a ragged last chunk and an
    odd row count (the last pair one row twice)."""
    from kernels.norm.layernorm_kernel import PAIR_512

    x, w, b = make_inputs(M, N, "bf16", seed=N)
    check(x, w, b, "bf16", run("cpu", x, w, b, "bf16", **PAIR_512, max_registers=128, kept_values=64))


# -- GPU ----------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype", GPU_CASES, ids=GPU_IDS)
def test_layernorm_gpu(M, N, dtype, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    x, w, b = make_inputs(M, N, dtype, seed=M + N)
    check(x, w, b, dtype, run("cuda", x, w, b, dtype))


@pytest.mark.gpu
def test_layernorm_gpu_large_mean(monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    for N in (1003, 8192, 40000):
        x, w, b = make_inputs(64, N, "f32", seed=N, offset=1000.0)
        check(x, w, b, "f32", run("cuda", x, w, b, "f32"), atol=1e-4)


LONG_PAIRS = [  # one-shot (1024, 512 and 256 threads), persistent by cp.async and through registers
    {"cache_hint": "cs"},
    {"onchip_threads": 512, "max_registers": 128, "kept_values": 64, "cache_hint": "cs"},
    {"onchip_threads": 256, "max_registers": 255, "kept_values": 128, "cache_hint": "cs"},
    {"persist": 1, "pair_lag": 2},
    {"persist": 1, "pair_lag": 2, "cache_hint": "cs"},
]


@pytest.mark.gpu
@pytest.mark.parametrize("options", LONG_PAIRS, ids=["-".join(f"{k}={v}" for k, v in o.items()) for o in LONG_PAIRS])
@pytest.mark.parametrize(
    "M,N,dtype", [(531, 65536, "bf16"), (529, 32768, "f32"), (601, 32768, "bf16"), (97, 65536, "bf16")]
)
def test_layernorm_pair_rows_gpu_long_rows(M, N, dtype, options, monkeypatch):
    """The paired plans at the long-row lengths they are for (128 KB rows), odd row counts; the persistent grid's
    blocks loop over two or more pairs each; 97 rows (fewer than SMs): one row per block."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    x, w, b = make_inputs(M, N, dtype, seed=M)
    plan = {"pair_rows": True, "onchip_threads": 1024, "max_registers": 0, **options}
    check(x, w, b, dtype, run("cuda", x, w, b, dtype, **plan))


RR_512 = {**RR, "onchip_threads": 512, "max_registers": 128, "kept_values": 64}
RR_GPU = [  # pairs of rows longer than a pair's chip: 64K f32 and ragged lengths, odd row counts, fewer rows than SMs
    (256, 65536, RR_512),
    (257, 65536, {**RR, "onchip_threads": 1024, "max_registers": 0}),
    (97, 65536, RR_512),
    (301, 61440, {**RR, "onchip_threads": 256, "max_registers": 255, "kept_values": 128}),
    (255, 49160, {**RR_512, "kept_values": 96}),
    (129, 65528, {**RR_512, "kept_values": 80, "pair_wb_ahead": 2}),
    (133, 50000, {**RR_512, "kept_values": 96, "reread_first": True}),
    (256, 65536, {**RR_512, "kept_values": 80, "pair_async": True}),
    (511, 65536, {**RR, "pair_rows": "reread2", "onchip_threads": 512, "max_registers": 64, "kept_values": 16}),
]


@pytest.mark.gpu
@pytest.mark.parametrize(
    "M,N,plan", RR_GPU, ids=[f"{m}x{n}-{p['onchip_threads']}-{p['pair_rows']}" for m, n, p in RR_GPU]
)
def test_layernorm_pair_reread_gpu(M, N, plan, monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    dtype = "bf16" if plan["pair_rows"] == "reread2" else "f32"
    x, w, b = make_inputs(M, N, dtype, seed=M)
    check(x, w, b, dtype, run("cuda", x, w, b, dtype, **plan))


@pytest.mark.gpu
@pytest.mark.parametrize("M,N", [(1023, 30000), (257, 40000), (131, 49160), (300, 57000), (256, 65528)])
def test_layernorm_gpu_long_bf16_ragged_defaults(M, N, monkeypatch):
    """The bf16 default at lengths where the 32K / 64K plans spill: pairs of 512 threads with 128 registers."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    x, w, b = make_inputs(M, N, "bf16", seed=N)
    check(x, w, b, "bf16", run("cuda", x, w, b, "bf16"))


@pytest.mark.gpu
@pytest.mark.parametrize("M,N", [(257, 49160), (131, 61440), (300, 65528), (256, 65536), (133, 50001)])
def test_layernorm_gpu_48k_64k_f32_defaults(M, N, monkeypatch):
    """The re-read pairs of the 48K-64K f32 default at ragged lengths, odd row counts (the last pair one row twice),
    fewer rows than SMs (each block one row, twice), just more (pairs) and odd rows (scalar accesses: not paired)."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    x, w, b = make_inputs(M, N, "f32", seed=N)
    check(x, w, b, "f32", run("cuda", x, w, b, "f32"))


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,dtype,plan", PARITY_CASES + PAIR_CASES, ids=PARITY_IDS + PAIR_IDS)
def test_layernorm_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    check_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch)


def check_gpu_matches_interpreter(M, N, dtype, plan, monkeypatch):
    """The plan's output on the GPU against the interpreter's (the same IR, executed twice)."""
    x, w, b = make_inputs(M, N, dtype, seed=7)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    gpu = run("cuda", x, w, b, dtype, **plan)
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    cpu = run("cpu", x, w, b, dtype, **plan)
    check_parity(gpu, cpu, dtype)
