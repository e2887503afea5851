#!/usr/bin/env python3
"""The preshuffle GEMM (``kernels/gemm/preshuffle_gemm.py``): tests and FlyDSL's command line.

As pytest: the preshuffled layout against its layout-algebra expression; every in_dtype at M = 1, 16, 33
(not a tile multiple) and K loops of 1 to 5 iterations on the CPU interpreter, against FlyDSL's reference
``(a·sa) @ (b·sb)ᵀ`` (per-token quantized inputs, float32) with FlyDSL's tolerance rule, rows past M pre-filled
with a sentinel and checked untouched; each fused epilogue; invalid configurations rejected; the command
line's compile-only dumps. Marked ``gpu``: the same checks on the H200 at FlyDSL's shapes, eager and
CUDA-graph.

As a script, FlyDSL's command line works as written, e.g. ::

    python tests/kernels/test_preshuffle_gemm.py --in_dtype fp8 -M 2048 -N 4096 -K 512 \\
        --tile_m 128 --tile_n 128 --tile_k 256 --use_async_copy --num_iters 2 --num_warmup 0 --no_aiter_bench

It prints the check result, FlyDSL's ``[flyc] Throughput: …`` line and cuBLAS's on the same problem (the
``--run_aiter_bench`` baseline; aiter is AMD's). Without a GPU it runs on the CPU interpreter (use small
shapes, e.g. ``-M 33 -N 256 -K 256``); ``COMPILE_ONLY=1`` only compiles (``FLYDSL_DUMP_IR=1`` writes
``$FLYDSL_DUMP_DIR/kernel_gemm_0/00_origin.mlir`` … the final PTX) and exits 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if _ROOT not in sys.path:  # run as a script
    sys.path.insert(0, _ROOT)

from kernels.gemm.harness import cuda_device, run_gemm, throughput_line  # noqa: E402
from kernels.gemm.preshuffle_gemm import (  # noqa: E402
    compile_preshuffle_gemm,
    preshuffle_layout,
    shuffle_weight,
    unshuffle_weight,
)
from kernels.gemm.reference import make_inputs, numpy_dtype, pertoken_quant, reference_gemm, verify_output  # noqa: E402

IN_DTYPES = ["fp8", "int8", "bf16", "fp16"]

# ---------------------------------------------------------------------------------------------------------
# the preshuffled layout
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["fp8", "int8", "bf16", "fp16"])
@pytest.mark.parametrize("N,K", [(64, 256), (192, 384)])
def test_shuffle_weight_is_the_layout(dtype, N, K):
    """Element (n, k) of B sits at ``preshuffle_layout(N, K, e)((n, k))`` of the shuffled array, the map is
    a bijection, and unshuffle inverts it."""
    K = K if dtype in ("fp8", "int8") else K // 2
    b = make_inputs(1, N, K, dtype, seed=N + K)[1]
    s = shuffle_weight(b)
    assert s.shape == b.shape and s.dtype == b.dtype
    lay = preshuffle_layout(N, K, b.dtype.itemsize)
    off = lay((np.arange(N)[:, None], np.arange(K)[None, :]))
    assert np.array_equal(np.sort(off.ravel()), np.arange(N * K))
    raw = np.uint8 if b.dtype.itemsize == 1 else np.uint16
    assert np.array_equal(s.reshape(-1).view(raw)[off], b.view(raw))
    assert np.array_equal(unshuffle_weight(s).view(raw), b.view(raw))


def test_shuffle_weight_atoms_are_swizzled_smem_images():
    """Row r of an atom holds its 16-byte chunk c at chunk c ^ r; a 64-row panel's first K atom column is 8 KB
    of contiguous atoms (one bulk copy)."""
    N, K = 128, 256
    b = (np.arange(N * K) % 251).astype(np.uint8).reshape(N, K).view(np.int8)
    s = shuffle_weight(b).view(np.uint8).reshape(-1)
    for n, k in [(0, 0), (3, 16), (9, 40), (70, 200)]:
        atom = (n // 64) * 64 * K + (k // 128) * 8192 + ((n % 64) // 8) * 1024
        pos = atom + (n % 8) * 128 + (((k % 128) // 16) ^ (n % 8)) * 16 + k % 16
        assert s[pos] == b.view(np.uint8)[n, k]


def test_shuffle_weight_torch_matches_numpy():
    torch = pytest.importorskip("torch")
    b = make_inputs(1, 128, 128, "bf16", seed=3)[1]
    tb = torch.from_numpy(b.view(np.int16).copy()).view(torch.bfloat16)
    ts = shuffle_weight(tb)
    assert ts.dtype == torch.bfloat16 and tuple(ts.shape) == (128, 128)
    assert np.array_equal(ts.view(torch.int16).numpy(), shuffle_weight(b).view(np.int16))


@pytest.mark.parametrize("shape,match", [((100, 128), "multiple of 64"), ((64, 100), "multiple of 128")])
def test_shuffle_weight_rejects_shapes_it_cannot_hold(shape, match):
    with pytest.raises(ValueError, match=match):
        shuffle_weight(np.zeros(shape, np.int8))


def test_pertoken_quant_matches_flydsl_rule():
    x = np.array([[0.0, 0.0], [1.0, -3.0], [0.5, 100.0]], np.float32)
    q, s = pertoken_quant(x, "int8")
    assert s.ravel().tolist() == [1.0, np.float32(3.0) / np.float32(127.0), np.float32(100.0) / np.float32(127.0)]
    assert q.dtype == np.int8 and q[1].tolist() == [42, -127]  # 1 / (3/127) = 42.33 truncates to 42
    q8, s8 = pertoken_quant(x, "fp8")
    assert float(q8[2, 1].astype(np.float32)) == 448.0


# ---------------------------------------------------------------------------------------------------------
# the kernel on the CPU interpreter
# ---------------------------------------------------------------------------------------------------------

# (M, N, K as 8-bit elements, tiles (m, n, k) in 8-bit elements, warps): M = 1, 16, 33; K loops of 1..5
# iterations (the loop is unrolled by two); one or several warps splitting K; several n and m tiles
CPU_CASES = [
    (1, 64, 256, (16, 32, 256), None),
    (16, 128, 512, (16, 64, 128), None),
    (33, 128, 384, (32, 32, 128), (2, 1, 1)),
    (33, 64, 640, (16, 64, 128), (1, 2, 1)),
    (2, 64, 512, (16, 16, 512), (1, 1, 4)),
    (40, 192, 256, (48, 64, 256), (1, 2, 2)),
    (9, 320, 256, (16, 40, 128), None),  # 40-column tiles straddle the 64-row panels of B
]
CPU_IDS = [f"M{m}-N{n}-K{k}-t{'x'.join(map(str, t))}" for m, n, k, t, _ in CPU_CASES]


def _run_cpu(in_dtype, M, N, K, tiles, warps=None, **kw):
    e = 1 if in_dtype in ("fp8", "int8") else 2
    tm, tn, tk = tiles
    return run_gemm(in_dtype, M, N, K // e, tm, tn, tk // e, cuda=False, warps=warps, **kw)


@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize("M,N,K,tiles,warps", CPU_CASES, ids=CPU_IDS)
def test_gemm_interpreter(in_dtype, M, N, K, tiles, warps, interpreter):
    res = _run_cpu(in_dtype, M, N, K, tiles, warps, seed=M + N + K)
    assert res.guard_ok, "rows past M were written"
    assert res.ok
    # tighter than FlyDSL's rule: f32 accumulation, one rounding to bf16 (2^-8 relative)
    assert res.rel_err < 2**-7, res.rel_err


# the wgmma path (tile_m 64 or 128): M below one tile, M past a tile, one and two 128-byte K atoms per stage,
# N tiles of 64 to 256, the persistent grid walking several tiles per block (tiles > 132 is not reachable
# on the interpreter cheaply; several tiles per block are: M=257 with tile_n=64 gives 9 x 2 tiles)
WG_CASES = [
    (1, 64, 512, (64, 64, 256)),
    (130, 256, 256, (128, 256, 128)),
    (33, 192, 384, (64, 192, 128)),
    (257, 128, 512, (128, 64, 256)),
]


@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize(
    "M,N,K,tiles", WG_CASES, ids=[f"M{m}-N{n}-K{k}-t{'x'.join(map(str, t))}" for m, n, k, t in WG_CASES]
)
def test_gemm_wgmma_interpreter(in_dtype, M, N, K, tiles, interpreter):
    res = _run_cpu(in_dtype, M, N, K, tiles, seed=M + N)
    assert res.config.startswith("wgmma")
    assert res.guard_ok and res.ok and res.rel_err < 2**-7, res


# several tiles per block through a small grid bound (max_blocks): the cooperative schedule walking tiles, and
# the ping-pong schedule (two consumer warpgroups on alternate tiles, handing the tensor cores over by named
# barriers; an odd tile count leaves the second warpgroup one tile short)
PP_CASES = [
    (130, 256, 512, (64, 64, 128), "pingpong", 2),  # 12 tiles over 2 blocks: 3 per warpgroup
    (257, 192, 256, (128, 64, 128), "pingpong", 3),  # 9 tiles over 3 blocks: 2 + 1; two m64 halves a tile
    (257, 128, 512, (128, 64, 256), "cooperative", 2),  # 6 tiles over 2 blocks
]


@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize(
    "M,N,K,tiles,schedule,blocks", PP_CASES, ids=[f"M{c[0]}-t{'x'.join(map(str, c[3]))}-{c[4]}" for c in PP_CASES]
)
def test_gemm_wgmma_schedules_interpreter(in_dtype, M, N, K, tiles, schedule, blocks, interpreter):
    res = _run_cpu(in_dtype, M, N, K, tiles, seed=M + K, schedule=schedule, max_blocks=blocks)
    assert res.config.startswith("wgmma") and ("ping-pong" in res.config) == (schedule == "pingpong")
    assert res.guard_ok and res.ok and res.rel_err < 2**-7, res


def test_wgmma_pingpong_epilogue_direct_interpreter(interpreter):
    res = _run_cpu("int8", 200, 128, 256, (64, 128, 128), epilogue="bias_silu", seed=5, schedule="pingpong",
                   c_store="direct", max_blocks=2)  # fmt: skip
    assert res.ok and res.guard_ok and res.rel_err < 2**-7, res


@pytest.mark.parametrize("c_store", ["tma", "direct"])
@pytest.mark.parametrize("epilogue", ["bias_relu", "bias_gelu"])
def test_wgmma_epilogue_interpreter(epilogue, c_store, interpreter):
    res = _run_cpu("int8", 70, 128, 256, (64, 128, 128), epilogue=epilogue, seed=3, c_store=c_store)
    assert res.config.startswith("wgmma") and f"C by {c_store}" in res.config
    assert res.ok and res.guard_ok and res.rel_err < 2**-7


@pytest.mark.parametrize("epilogue", ["bias", "bias_relu", "bias_silu", "bias_gelu"])
@pytest.mark.parametrize("in_dtype", ["bf16", "fp8"])
def test_fused_epilogues_interpreter(epilogue, in_dtype, interpreter):
    res = _run_cpu(in_dtype, 17, 64, 256, (16, 32, 128), epilogue=epilogue, seed=7)
    assert res.ok and res.guard_ok and res.rel_err < 2**-7


def test_fp16_output_and_fp8_passed_as_fp8(interpreter):
    res = _run_cpu("fp8", 5, 64, 128, (16, 64, 128), out_dtype="fp16", int8_view=False)
    assert res.ok and res.guard_ok and res.rel_err < 2**-9


@pytest.mark.parametrize("in_dtype", ["fp8", "bf16"])
def test_torch_cpu_tensors_on_the_interpreter(in_dtype, interpreter):
    """FlyDSL's calling convention with torch tensors (fp8 as an int8 view, flat views, empty scales for
    bf16): inputs drawn, quantized and checked by the torch branches of kernels.gemm.reference."""
    torch = pytest.importorskip("torch")
    M, N, K = 19, 64, 256
    a, b, sa, sb, bias = make_inputs(M, N, K, in_dtype, seed=5, bias_dtype="bf16", device="cpu")
    fn = compile_preshuffle_gemm(N=N, K=K, tile_m=16, tile_n=32, tile_k=128, in_dtype=in_dtype, epilogue="bias_silu")
    c = torch.full((M + 16, N), -8192.0, dtype=torch.bfloat16)
    empty = torch.empty((0,), dtype=torch.float32)
    bs = shuffle_weight(b)
    if in_dtype == "fp8":
        a, bs = a.view(torch.int8), bs.view(torch.int8)
    fn(c[:M].view(-1), a.view(-1), bs.view(-1), sa if sa is not None else empty, sb if sb is not None else empty,
       bias, M, N)  # fmt: skip
    ref = reference_gemm(make_inputs(M, N, K, in_dtype, seed=5, device="cpu")[0], b, sa, sb, bias=bias,
                         epilogue="bias_silu")  # fmt: skip
    assert isinstance(ref, torch.Tensor)
    assert verify_output(c[:M].float(), ref)
    assert (c[:M].float() - ref).abs().max().item() <= 2**-7 * ref.abs().max().item()
    assert (c[M:] == -8192.0).all()


def test_one_kernel_serves_every_m(interpreter):
    """M is a run-time argument: the same launcher runs M = 1, 16 and 33 (one compiled kernel)."""
    fn = compile_preshuffle_gemm(N=64, K=128, tile_m=16, tile_n=32, tile_k=128, in_dtype="int8")
    for M in (1, 16, 33):
        res = run_gemm("int8", M, 64, 128, launch_fn=fn, cuda=False)
        assert res.ok and res.guard_ok
    assert fn.cache_info().currsize == 1


def test_every_configuration_has_its_own_cache_entry(interpreter):
    """Every field of the GemmConfig (the epilogue, the schedule, the C store, the stream grid, ...) enters the
    disk-cache key: launchers of one shape that differ in one choice never share a compiled kernel (the H200
    served ``bias``'s kernel to ``bias_relu`` when the NamedTuple config froze to nothing)."""
    c = np.zeros((64, 256), numpy_dtype("bf16"))
    args = (c, np.zeros((64, 256), np.int8), np.zeros((256, 256), np.int8), np.zeros(64, np.float32),
            np.zeros(256, np.float32), c[0], 64, 256)  # fmt: skip
    variants = [
        {"tile_m": 16, "tile_n": 32, "tile_k": 256, "epilogue": e}
        for e in ("none", "bias", "bias_relu", "bias_silu", "bias_gelu")
    ] + [
        {"tile_m": 128, "tile_n": 128, "tile_k": 128, "epilogue": "bias_relu", "schedule": "cooperative"},
        {"tile_m": 128, "tile_n": 128, "tile_k": 128, "epilogue": "bias_relu"},  # ping-pong
        {"tile_m": 128, "tile_n": 128, "tile_k": 128, "epilogue": "bias_relu", "c_store": "direct"},
        {"tile_m": 16, "tile_n": 64, "tile_k": 128, "path": "stream", "epilogue": "bias"},
        {"tile_m": 16, "tile_n": 64, "tile_k": 128, "path": "stream", "epilogue": "bias_silu"},
        {"tile_m": 16, "tile_n": 64, "tile_k": 128, "path": "stream", "max_blocks": 3},
    ]
    keys = {}
    for kw in variants:
        fn = compile_preshuffle_gemm(N=256, K=256, in_dtype="fp8", **kw)
        keys.setdefault(fn.cache_key(*args), []).append(fn.gemm_config)
    assert all(len(cfgs) == 1 for cfgs in keys.values()), [cfgs for cfgs in keys.values() if len(cfgs) > 1]
    again = compile_preshuffle_gemm(N=256, K=256, in_dtype="fp8", **variants[2])
    assert again.cache_key(*args) in keys  # an equal configuration is served from the disk


def test_launchers_are_straight_line_launch_plans():
    """Every path's host function compiles to a launch plan (no interpreter on the cached-call path): no
    pointer casts, only integer arithmetic, TMA descriptors and the launch."""
    from flydsl.passes import DEFAULT_PIPELINE, run_pipeline
    from flydsl.runtime.launch_plan import launch_plan

    c = np.zeros((64, 256), numpy_dtype("bf16"))
    args = (c, np.zeros((64, 256), np.int8), np.zeros((256, 256), np.int8), np.zeros(64, np.float32),
            np.zeros(256, np.float32), c[0, :0], 64, 256)  # fmt: skip
    for tiles, path in (((16, 32, 256), None), ((128, 128, 128), None), ((16, 64, 128), "stream")):
        fn = compile_preshuffle_gemm(N=256, K=256, tile_m=tiles[0], tile_n=tiles[1], tile_k=tiles[2], in_dtype="fp8",
                                     path=path)  # fmt: skip
        mod = fn.trace(*args)
        run_pipeline(mod, DEFAULT_PIPELINE)
        host = [op for op in mod.regions[0].blocks[0].ops if op.name == "func.func"]
        assert host and all(launch_plan(op) is not None for op in host), fn.gemm_config.describe()


def test_maxnreg_hint_caps_the_kernel_registers(tmp_path, monkeypatch):
    """FlyDSL's ``maxnreg`` compile hint (here a keyword of compile_preshuffle_gemm) becomes PTX ``.maxnreg``."""
    for k, v in {"COMPILE_ONLY": "1", "FLYDSL_DUMP_IR": "1", "FLYDSL_DUMP_DIR": str(tmp_path),
                 "FLYDSL_RUNTIME_ENABLE_CACHE": "0"}.items():  # fmt: skip
        monkeypatch.setenv(k, v)
    fn = compile_preshuffle_gemm(N=256, K=256, tile_m=16, tile_n=32, tile_k=256, in_dtype="fp8", maxnreg=80)
    assert fn.compile_hints == {"maxnreg": 80}
    c = np.zeros((16, 256), numpy_dtype("bf16"))
    z = np.zeros(256, np.float32)
    assert fn(c, np.zeros((16, 256), np.int8), np.zeros((256, 256), np.int8), z, z, c[0, :0], 16, 256) is None
    ptx = next((tmp_path / "kernel_gemm_0").glob("*final_isa.ptx")).read_text()
    assert ".maxnreg 80" in ptx
    with pytest.raises(ValueError, match="maxnreg"):
        compile_preshuffle_gemm(N=256, K=256, in_dtype="fp8", maxnreg=8)


# ---------------------------------------------------------------------------------------------------------
# configurations: mapped with one warning, or rejected
# ---------------------------------------------------------------------------------------------------------


def test_invalid_tiles_are_mapped_and_said_once():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a = compile_preshuffle_gemm(N=320, K=512, tile_m=20, tile_n=48, tile_k=200, in_dtype="fp8")
        b = compile_preshuffle_gemm(N=320, K=512, tile_m=20, tile_n=48, tile_k=200, in_dtype="fp8")
    cfg = a.gemm_config
    assert (cfg.tile_m, cfg.tile_n, cfg.tile_k) == (32, 40, 256) == (b.gemm_config.tile_m, 40, 256)
    text = [str(x.message) for x in w]
    assert len(text) == 3, text  # one per mapped value, not again for the second build
    assert any("tile_m=20" in t for t in text) and any("tile_n=48" in t for t in text)


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"in_dtype": "fp4"}, "in_dtype"),
        ({"out_dtype": "f32"}, "out_dtype"),
        ({"epilogue": "bias_tanh"}, "epilogue"),
        ({"N": 100}, "multiple of 64"),
        ({"K": 100}, "multiple of 128"),
        ({"tile_m": 0}, "positive"),
        ({"tile_n": -8}, "positive"),
        ({"warps": (1, 3, 1)}, "warps_n dividing"),
        ({"warps": (1, 1, 8), "tile_k": 512}, "whole 128-byte atoms"),
        ({"warps": (4, 4, 2)}, "1 to 16 warps"),
        ({"path": "tcgen05"}, "path"),
        ({"tile_m": 128, "warps": (2, 2, 1)}, "mma path"),
        ({"tile_m": 128, "c_store": "smem"}, "c_store"),
        ({"tile_m": 16, "c_store": "tma"}, "directly from registers"),
        ({"lds_stage": 7}, "lds_stage"),
        ({"tile_m": 128, "schedule": "pp"}, "schedule"),
        ({"schedule": "pingpong"}, "applies to the wgmma path"),
        ({"max_blocks": 4}, "max_blocks applies"),
        ({"stages": 3}, "stages applies"),
        ({"bogus": 1}, "unknown keyword"),
        # found by tools/gemm_config_fuzz.py (session 20): these reached the kernel's build or the assembler
        ({"path": "wgmma", "tile_m": 64, "b_cache": "cg"}, "b_cache='cg' applies to the mma path"),
        ({"path": "mma", "b_cache": "xx"}, "take 'cg', 'cs' or 'ca'"),
        ({"path": "wgmma", "tile_m": 64, "min_blocks": 1}, "min_blocks=1 applies to the mma and stream paths"),
        ({"min_blocks": 40}, r"min_blocks=40: 1\.\.32 blocks per SM"),
        (
            {
                "N": 2048,
                "K": 4096,
                "in_dtype": "bf16",
                "path": "mma",
                "tile_m": 64,
                "tile_n": 32,
                "tile_k": 512,
                "warps": (1, 2, 8),
            },
            "partial sums take 57344 bytes .* fewer K warps",
        ),
        (
            {
                "N": 256,
                "K": 256,
                "in_dtype": "int8",
                "path": "stream",
                "tile_m": 256,
                "tile_n": 128,
                "tile_k": 128,
                "streamk": "early",
            },
            r"streamk='early' \(the split tiles' heads\).*take a smaller tile \(tile_m, tile_n or tile_k\) or "
            "streamk='arrive'",
        ),
        (
            {
                "N": 256,
                "K": 512,
                "in_dtype": "bf16",
                "path": "stream",
                "tile_m": 256,
                "tile_n": 128,
                "tile_k": 128,
                "cluster_k": 4,
            },
            r"cluster_k=4 \(the other blocks' partial sums\).*take a smaller tile .* or cluster_k=2",
        ),
        # (session 21) the assembler's refusal at load on the GPU (C7602): two blocks' registers cannot hold a
        # 256-token tile's 128 accumulators per consumer thread
        (
            {"N": 2048, "K": 4096, "in_dtype": "int8", "path": "stream", "tile_m": 256, "tile_k": 64, "min_blocks": 2},
            r"min_blocks=2: stream tile 256x.* 128 accumulators per consumer thread .* leave each thread 128 .*"
            r"ask for min_blocks=1 or take tile_m <= 200",
        ),
        (
            {
                "N": 384,
                "K": 512,
                "in_dtype": "bf16",
                "path": "stream",
                "tile_m": 64,
                "tile_n": 128,
                "tile_k": 64,
                "min_blocks": 3,
            },
            r"min_blocks=3: .* 32 accumulators .* leave each thread 56 .*ask for min_blocks=2 or take tile_m <= 56",
        ),  # fmt: skip
    ],
)
def test_invalid_configurations_are_rejected(kw, match):
    args = {"N": 256, "K": 1024, "tile_m": 16, "tile_n": 64, "tile_k": 256, "in_dtype": "fp8", **kw}
    with pytest.raises(ValueError, match=match):
        compile_preshuffle_gemm(**args)


def test_default_warps_keep_the_split_k_partials_in_static_shared_memory():
    """bf16 64x32x512 on the mma path: eight K warps' partials would take 56 KB of static shared memory (the kernel
    failed to build); the default split stops at four (24 KB)."""
    fn = compile_preshuffle_gemm(N=2048, K=4096, in_dtype="bf16", path="mma", tile_m=64, tile_n=32, tile_k=512)
    cfg = fn.gemm_config
    assert cfg.warps_k == 4 and (cfg.warps_k - 1) * cfg.warps_m * cfg.warps_n * cfg.mt * cfg.nt * 512 <= 48 * 1024


def test_stream_min_blocks_only_where_the_registers_hold_the_tile():
    """A configuration's min_blocks is refused (above) where the accumulators cannot fit; under ``pdl=True`` the
    default of two blocks per SM is taken only where they fit (a 256-token tile stays at one)."""
    from kernels.gemm.gemm_fit import stream_blocks_fit

    fn = compile_preshuffle_gemm(N=7168, K=2048, M=16, pdl=True, path="stream", tile_m=256, tile_n=32, tile_k=64)
    assert fn.gemm_config.min_blocks == 0 and not stream_blocks_fit(fn.gemm_config, 2)
    assert compile_preshuffle_gemm(N=7168, K=2048, M=16, pdl=True).gemm_config.min_blocks == 2  # (its 16 tokens fit)


def test_a_register_cap_the_kernel_cannot_meet_is_explained(tmp_path, monkeypatch):
    """A register cap of 128 (``maxnreg``) on a 256x32 stream tile: ptxas needs 154 registers. The assembler's refusal
    (on the GPU: the driver's, at load) carries what to change, in the kernel author's terms."""
    from flydsl.codegen import CodegenError, find_ptxas, run_ptxas

    if find_ptxas() is None:
        pytest.skip("needs ptxas (pip install nvidia-cuda-nvcc)")
    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("COMPILE_ONLY", "1")
    monkeypatch.setenv("ARCH", "sm_90a")
    kw = {"N": 384, "K": 512, "in_dtype": "bf16", "path": "stream", "tile_n": 32, "tile_k": 64, "M": 129}
    fn = compile_preshuffle_gemm(**kw, tile_m=256, min_blocks=1)
    fn.compile_hints["maxnreg"] = 128
    run_gemm("bf16", 129, 384, 512, launch_fn=fn, cuda=False, log=lambda *a: None)
    (ptx,) = [p.read_text() for p in tmp_path.glob("*/*.ptx")]
    with pytest.raises(CodegenError, match="more registers per thread than its cap allows.*min_blocks"):
        run_ptxas(ptx, "sm_90a")


def test_amd_only_knobs_are_ignored_with_a_note():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        compile_preshuffle_gemm(N=256, K=256, tile_m=16, tile_n=32, tile_k=256, waves_per_eu=2, xcd_swizzle=4)
    text = " ".join(str(x.message) for x in w)
    assert "waves_per_eu=2" in text and "xcd_swizzle=4" in text and "AMD-only" in text


def test_wrong_operand_types_are_rejected(interpreter):
    fn = compile_preshuffle_gemm(N=64, K=128, tile_m=16, tile_n=64, tile_k=128, in_dtype="fp8")
    a = np.zeros((16, 128), np.float16)  # 2-byte elements for an fp8 kernel
    b = np.zeros((64, 128), np.int8)
    c = np.zeros((16, 64), numpy_dtype("bf16"))
    f = np.zeros(64, np.float32)
    with pytest.raises(TypeError, match="1-byte inputs"):
        fn(c, a, b, f, f, c[0], 16, 64)


# ---------------------------------------------------------------------------------------------------------
# the generated code and the command line (no device)
# ---------------------------------------------------------------------------------------------------------


def _cli(*argv, env=None, timeout=240):
    e = {**os.environ, "PYTHONPATH": _ROOT, **(env or {})}
    return subprocess.run(
        [sys.executable, __file__, *argv], capture_output=True, text=True, env=e, timeout=timeout, cwd=_ROOT
    )


def test_cli_compile_only_writes_the_dumps(tmp_path):
    r = _cli(
        "--in_dtype", "fp8", "-M", "2048", "-N", "4096", "-K", "512", "--tile_m", "128", "--tile_n", "128",
        "--tile_k", "256", "--use_async_copy", "--num_iters", "2", "--num_warmup", "0", "--no_aiter_bench",
        env={"COMPILE_ONLY": "1", "FLYDSL_DUMP_IR": "1", "FLYDSL_DUMP_DIR": str(tmp_path),
             "FLYDSL_RUNTIME_ENABLE_CACHE": "0"},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    d = tmp_path / "kernel_gemm_0"
    names = sorted(p.name for p in d.iterdir())
    assert names[0] == "00_origin.mlir" and names[-1].endswith("final_isa.ptx"), names
    ptx = (d / names[-1]).read_text()
    # tile_m 128: the wgmma path (TMA for A, bulk copies for B, setmaxnreg)
    for inst in ("wgmma.mma_async.sync.aligned.m64n128k32", "cp.async.bulk.tensor.2d", "cp.async.bulk.shared",
                 "setmaxnreg", "mbarrier"):  # fmt: skip
        assert inst in ptx, inst
    assert "compile only" in r.stdout and "wgmma tile 128x128x256" in r.stdout


def test_cli_runs_on_the_interpreter_and_ignores_amd_flags():
    r = _cli(
        "--in_dtype", "int8", "-M", "33", "-N", "256", "-K", "256", "--waves_per_eu", "2", "--xcd_swizzle", "4",
        env={"FLYDSL_RUNTIME_KIND": "cpu", "FLYDSL_RUNTIME_ENABLE_CACHE": "0"},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout and "ignored on NVIDIA" in r.stdout
    assert r.stdout.count("--waves_per_eu") == 1


def test_ptx_has_no_spills_and_uses_tensor_cores(tmp_path):
    """ptxas (when installed) reports no local memory for the decode configurations of the 8-bit dtypes (the
    stream and mma paths), FlyDSL's decode tiles (mma path), large M (wgmma path, cooperative and ping-pong);
    cuobjdump (when installed) shows the tensor-core instructions: HMMA/IMMA for mma.sync, QGMMA/HGMMA/IGMMA
    for wgmma."""
    import shutil

    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not installed")
    nv_bin = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "nvidia", "cu13", "bin")
    cuobjdump = shutil.which("cuobjdump") or shutil.which("cuobjdump", path=nv_bin)
    runs = [  # (in_dtype, M, N, K bytes, tiles, SASS): the decode defaults (7168 x 2048 and 4096 x 4096 at M = 16:
        # the stream path, 4096 x 4096 at M = 8: the mma path), FlyDSL's decode tiles, large M (cooperative
        # 128x256, ping-pong 128x128)
        ("fp8", "16", 7168, 2048, (), "QGMMA"),
        ("int8", "16", 7168, 2048, (), "IGMMA"),
        ("fp8", "16", 4096, 4096, (), "QGMMA"),
        ("fp8", "8", 4096, 4096, (), "HMMA"),
        ("int8", "16", 4096, 4096, ("16", "16", "1024"), "IMMA"),
        ("fp8", "4096", 4096, 4096, (), "QGMMA"),
        ("bf16", "4096", 4096, 4096, ("128", "128", "64"), "HGMMA"),
    ]
    for in_dtype, M, N, kb, tiles, sass in runs:
        e = 1 if in_dtype in ("fp8", "int8") else 2
        d = tmp_path / f"{in_dtype}-{M}-{N}-{len(tiles)}"
        tile_args = [x for flag, v in zip(("--tile_m", "--tile_n", "--tile_k"), tiles) for x in (flag, v)]
        r = _cli(
            "--in_dtype", in_dtype, "-M", M, "-N", str(N), "-K", str(kb // e), *tile_args,
            env={"COMPILE_ONLY": "1", "FLYDSL_DUMP_IR": "1", "FLYDSL_DUMP_DIR": str(d), "FLYDSL_RUNTIME_ENABLE_CACHE": "0"},
        )  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        ptx = next((d / "kernel_gemm_0").glob("*final_isa.ptx"))
        cubin = d / "k.cubin"
        out = subprocess.run([ptxas, "-arch=sm_90a", "-v", str(ptx), "-o", str(cubin)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in out.stdout + out.stderr
        if cuobjdump:
            text = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True).stdout
            assert sass in text and "LDL" not in text and "STL" not in text, (in_dtype, M, tiles, sass)


# ---------------------------------------------------------------------------------------------------------
# on the GPU
# ---------------------------------------------------------------------------------------------------------

GPU_SHAPES = [
    (1, 4096, 4096, None),
    (16, 5120, 8192, (16, 64, 512)),  # FlyDSL's first case
    (33, 1024, 2048, (32, 64, 512)),  # FlyDSL's second case (M not a tile multiple)
    (16, 10240, 8192, None),
    (32, 7168, 2048, None),
    (2048, 4096, 512, (128, 128, 256)),  # the seed command
    (1000, 2048, 1024, None),  # the heuristic's wgmma path, M not a tile multiple
]


@pytest.mark.gpu
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("M,N,K,tiles", GPU_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k, _ in GPU_SHAPES])
@pytest.mark.parametrize("in_dtype", IN_DTYPES)
def test_gemm_gpu(in_dtype, M, N, K, tiles, graph):
    tiles = tiles or (None, None, None)
    tk = tiles[2] if tiles[2] is None or in_dtype in ("fp8", "int8") else tiles[2] // 2
    res = run_gemm(in_dtype, M, N, K, tiles[0], tiles[1], tk, cuda=True, bench=True, graph=graph, iters=5, warmup=1)
    assert res.guard_ok and res.ok, res


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(2048, 4096, 512), (1000, 2048, 1024)])
@pytest.mark.parametrize("tiles", [(64, 256), (128, 128)], ids=["64x256", "128x128"])
@pytest.mark.parametrize("in_dtype", IN_DTYPES)
def test_pingpong_gpu(in_dtype, tiles, M, N, K):
    """The wgmma path's ping-pong schedule (eager and a CUDA-graph replay), M a tile multiple or not."""
    K = K if in_dtype in ("fp8", "int8") else K // 2
    res = run_gemm(in_dtype, M, N, K, *tiles, None, cuda=True, graph_check=True, schedule="pingpong")
    assert "ping-pong" in res.config and res.guard_ok and res.ok, res


@pytest.mark.gpu
@pytest.mark.parametrize("epilogue", ["bias", "bias_relu", "bias_silu", "bias_gelu"])
def test_fused_epilogue_gpu(epilogue):
    """FlyDSL's test_fused_epilogue_correctness shape (bf16, 16 x 5120 x 8192)."""
    res = run_gemm("bf16", 16, 5120, 8192, 16, 64, 512, epilogue=epilogue, cuda=True)
    assert res.ok and res.guard_ok and res.rel_err < 2**-6


@pytest.mark.gpu
@pytest.mark.parametrize("in_dtype", IN_DTYPES)
def test_gpu_matches_interpreter(in_dtype, monkeypatch):
    """The same small problem on the H200 and on the CPU interpreter gives the same output (up to the f32
    accumulation order inside the tensor cores: one output ulp)."""
    torch = pytest.importorskip("torch")
    M, N, K = 21, 128, 256
    a, b, sa, sb, _ = make_inputs(M, N, K, in_dtype, seed=11)
    fn = compile_preshuffle_gemm(N=N, K=K, tile_m=16, tile_n=32, tile_k=128 if in_dtype in ("fp8", "int8") else 64,
                                 in_dtype=in_dtype)  # fmt: skip
    outs = []
    for dev in ("cpu", "cuda"):
        monkeypatch.setenv("FLYDSL_RUNTIME_KIND", dev)
        from kernels.gemm.harness import _to_torch

        f32 = np.zeros(0, np.float32)
        host = [a, shuffle_weight(b), sa if sa is not None else f32, sb if sb is not None else f32]
        c = np.zeros((M, N), numpy_dtype("bf16"))
        if dev == "cuda":
            names = [in_dtype, in_dtype, "f32", "f32"]
            host = [_to_torch(x, nm) for x, nm in zip(host, names)]
            c = _to_torch(c, "bf16")
        fn(c, *host[:2], host[2], host[3], c[0], M, N)
        if dev == "cuda":
            torch.cuda.synchronize()
            c = c.view(torch.int16).cpu().numpy().view(numpy_dtype("bf16"))
        outs.append(c.astype(np.float32))
    ref = reference_gemm(a, b, sa, sb)
    assert verify_output(outs[1], ref)
    np.testing.assert_allclose(outs[1], outs[0], rtol=2**-7, atol=1e-3)


# ---------------------------------------------------------------------------------------------------------
# FlyDSL's command line
# ---------------------------------------------------------------------------------------------------------

_AMD_FLAGS = {  # flag: its default (parsed, ignored on NVIDIA, said once when set)
    "waves_per_eu": 0,
    "xcd_swizzle": 0,
    "dsrd_preload": 2,
    "dvmem_preload": 2,
    "use_cshuffle_epilog": False,
}


def _parser():
    import argparse

    p = argparse.ArgumentParser(description="Preshuffle GEMM benchmark (FlyDSL's command line)")
    p.add_argument("--in_dtype", type=str, default="fp8", choices=["fp8", "int8", "fp16", "bf16", "fp4"])
    p.add_argument("--out_dtype", type=str, default="bf16", choices=["fp16", "bf16"], help="Output dtype.")
    p.add_argument("-M", type=int, default=16)
    p.add_argument("-N", type=int, default=10240)
    p.add_argument("-K", type=int, default=8192)
    p.add_argument("--tile_m", type=int, default=None, help="default: the shape heuristic")
    p.add_argument("--tile_n", type=int, default=None)
    p.add_argument("--tile_k", type=int, default=None)
    p.add_argument("--lds_stage", type=int, default=2, choices=[1, 2])
    p.add_argument("--dsrd_preload", type=int, default=2)
    p.add_argument("--dvmem_preload", type=int, default=2)
    p.add_argument("--num_iters", type=int, default=20)
    p.add_argument("--num_warmup", type=int, default=3)
    p.add_argument("--flyc", action="store_true", default=True)
    p.add_argument("--use_async_copy", action="store_true", default=False)
    p.add_argument("--use_cshuffle_epilog", action="store_true", default=False)
    p.add_argument("--waves_per_eu", type=int, default=0, choices=[0, 1, 2, 3, 4])
    p.add_argument("--xcd_swizzle", type=int, default=0, help="AMD XCD rasterization (ignored on NVIDIA).")
    p.add_argument("--run_aiter_bench", action="store_true", default=True, help="compare with cuBLAS")
    p.add_argument("--no_aiter_bench", action="store_false", dest="run_aiter_bench")
    p.add_argument("--test_graph", "-tg", action="store_true", default=False)
    p.add_argument("--wfp4", action="store_true", default=False, help="MXFP4 weights (AMD gfx950 only).")
    p.add_argument(
        "--epilogue", type=str, default="none", choices=["none", "bias", "bias_relu", "bias_silu", "bias_gelu"]
    )
    p.add_argument("--warps", type=str, default=None, help="warps_m,warps_n,warps_k (ours)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.wfp4 or args.in_dtype == "fp4":
        print("Skipped: MXFP4 (--wfp4 / --in_dtype fp4) is an AMD gfx950 kernel; not available on NVIDIA")
        return 0
    ignored = [f"--{k}" for k, d in _AMD_FLAGS.items() if getattr(args, k) != d]
    if ignored:
        print(f"[flyc] {', '.join(ignored)}: AMD-only tuning, parsed and ignored on NVIDIA")
    from flydsl.utils.env import env

    compile_only = env.compile_only
    cuda = False if compile_only else cuda_device()
    warps = tuple(int(x) for x in args.warps.split(",")) if args.warps else None
    print("=" * 80)
    print(f"[flyc] {args.in_dtype.upper()} preshuffle GEMM {args.M}x{args.N}x{args.K} "
          f"on {'the GPU' if cuda else 'the CPU interpreter' if not compile_only else 'no device (compile only)'}")  # fmt: skip
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        fn = compile_preshuffle_gemm(
            N=args.N, K=args.K, tile_m=args.tile_m, tile_n=args.tile_n, tile_k=args.tile_k, in_dtype=args.in_dtype,
            out_dtype=args.out_dtype, epilogue=args.epilogue, use_async_copy=args.use_async_copy,
            lds_stage=args.lds_stage, warps=warps, M=args.M,
        )  # fmt: skip
    for n in notes:
        print(f"[flyc] note: {n.message}")
    print(f"[flyc] {fn.gemm_config.describe()}")
    print("=" * 80)
    if compile_only:
        e = 1 if args.in_dtype in ("fp8", "int8") else 2
        dt = np.int8 if e == 1 else numpy_dtype(args.in_dtype)
        f32 = np.zeros(0, np.float32)
        c = np.zeros((args.M, args.N), numpy_dtype(args.out_dtype))
        bias = np.zeros(args.N if args.epilogue != "none" else 0, numpy_dtype(args.out_dtype))
        fn(c, np.zeros((args.M, args.K), dt), np.zeros((args.N, args.K), dt), f32, f32, bias, args.M, args.N)
        print("[flyc] compile only (COMPILE_ONLY=1): compiled, not run")
        return 0
    if not cuda and args.M * args.N * args.K > 1 << 27:
        print(f"[flyc] note: the CPU interpreter runs every thread; {args.M}x{args.N}x{args.K} may take minutes")
    res = run_gemm(
        args.in_dtype, args.M, args.N, args.K, launch_fn=fn, out_dtype=args.out_dtype, epilogue=args.epilogue,
        cuda=cuda, bench=cuda, iters=max(2, args.num_iters), warmup=args.num_warmup, graph=args.test_graph,
        cublas=args.run_aiter_bench,
    )  # fmt: skip
    print(f"[flyc] check: {'PASS' if res.ok else 'FAIL'} (max |c - ref| / max |ref| = {res.rel_err:.2e}, "
          f"rows past M {'untouched' if res.guard_ok else 'WRITTEN'})")  # fmt: skip
    if cuda:
        if res.cublas_us == res.cublas_us:
            print(throughput_line("cuBLAS", res.cublas_us, res.flops, res.nbytes))
            print(f"[flyc] speedup over cuBLAS: {res.cublas_us / res.us:.2f}x")
        print(throughput_line("flyc", res.us, res.flops, res.nbytes))
    return 0 if res.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())


def test_b_smem_keeps_the_default_k_warps():
    """With ``b_smem`` the split-K partials are dynamic shared memory beside the weight bytes: the default eight K warps
    of fp16 64x32x512 stay (without it they are reduced to four to fit 48 KB of static shared memory)."""
    kw = {"N": 2048, "K": 4096, "in_dtype": "fp16", "path": "mma", "tile_m": 64, "tile_n": 32, "tile_k": 512}
    assert compile_preshuffle_gemm(**kw, b_smem=1).gemm_config.warps_k == 8
    assert compile_preshuffle_gemm(**kw).gemm_config.warps_k == 4
