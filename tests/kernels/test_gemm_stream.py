"""The preshuffle GEMM's stream path (``kernels/gemm/gemm_stream.py``): swap-AB wgmma over a deep shared-memory
ring, stream-K across blocks and the deterministic split-K reduction (``kernels/gemm/streamk.py``).

On the CPU interpreter: every in_dtype with tiles split over 1 to 3 blocks, several token tiles (M past
``tile_m``), one and two 64-row panels per tile, one and two K atoms per stage; rows past M untouched;
the counters back at zero and the bits identical on a second launch; fused epilogues and fp16 output. The
schedule's invariants (every iteration once, one counter per split tile, at most two partial slots per
block) for many shapes in plain Python. Marked ``gpu``: the decode shapes on the H200 against the
interpreter's reference and bit-identical repeated runs.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kernels.gemm.harness import run_gemm
from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm, shuffle_weight
from kernels.gemm.reference import make_inputs, numpy_dtype
from kernels.gemm.streamk import COUNTER_WORDS, StreamK

IN_DTYPES = ["fp8", "int8", "bf16", "fp16"]

# (M, N, K in 8-bit elements, tiles (tokens, B rows, K in 8-bit elements), max_blocks)
CASES = [
    (1, 64, 256, (8, 64, 128), None),  # one block, no split tile
    (21, 128, 1024, (8, 64, 128), 10),  # 3 token tiles x 2 panels, 8 stages a tile over 5-stage blocks
    (40, 256, 1024, (16, 128, 256), 5),  # two panels per tile (two consumers), two K atoms per stage
    (33, 128, 512, (32, 64, 128), 3),  # blocks spanning whole and split tiles
    (9, 128, 512, (16, 32, 128), 5),  # 32 rows of B per tile (half a panel): 4 tiles, split
    (17, 64, 256, (24, 16, 256), None),  # 16 rows of B, 24 tokens, two K atoms per stage: whole tiles
    (45, 128, 512, (48, 32, 256), None),  # 48 tokens on 32 rows (the heuristic's M = 33-64 tiles): whole tiles
    (70, 128, 512, (72, 32, 256), None),  # 72 tokens (the heuristic's M = 65-72 where whole tiles fill the SMs)
]
IDS = [f"M{m}-N{n}-K{k}-t{'x'.join(map(str, t))}-b{b}" for m, n, k, t, b in CASES]


def _run(in_dtype, M, N, K, tiles, max_blocks, **kw):
    e = 1 if in_dtype in ("fp8", "int8") else 2
    tm, tn, tk = tiles
    return run_gemm(in_dtype, M, N, K // e, tm, tn, tk // e, cuda=False, path="stream", max_blocks=max_blocks, **kw)


@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize("M,N,K,tiles,max_blocks", CASES, ids=IDS)
def test_stream_interpreter(in_dtype, M, N, K, tiles, max_blocks, interpreter):
    res = _run(in_dtype, M, N, K, tiles, max_blocks, seed=M + K)
    assert res.config.startswith("stream"), res.config
    assert res.guard_ok, "rows past M were written"
    assert res.ok and res.rel_err < 2**-7, res


@pytest.mark.parametrize("epilogue,out", [("bias_gelu", "bf16"), ("bias_silu", "fp16"), ("bias_relu", "bf16")])
def test_stream_epilogues_interpreter(epilogue, out, interpreter):
    res = _run("fp8", 13, 128, 512, (16, 64, 128), 3, epilogue=epilogue, out_dtype=out, seed=4)
    assert res.ok and res.guard_ok and res.rel_err < 2**-7, res


def test_split_k_reduction_is_deterministic_and_resets(interpreter):
    """Two launches of one split-K launcher give identical bits; the arrival counters are zero after each;
    rows past M keep their sentinel; a launch with a fresh workspace passed explicitly agrees."""
    M, N, K = 19, 128, 1024
    fn = compile_preshuffle_gemm(N=N, K=K, tile_m=8, tile_n=64, tile_k=128, in_dtype="fp8", path="stream",
                                 max_blocks=5)  # fmt: skip
    _, _, _, segs = _schedule(tiles=2 * 3, iters=8, max_blocks=5, min_iters=4)  # 6 tiles over 5 blocks of 10
    assert sum(len(s) > 1 for s in segs.values()) >= 3
    sk_words = fn.workspace_words
    a, b, sa, sb, _ = make_inputs(M, N, K, "fp8", seed=2)
    bs = shuffle_weight(b)
    outs = []
    ws = np.zeros(sk_words, np.int32)
    for extra in ({}, {}, {"arg_workspace": ws}):
        c = np.full((M + 8, N), -8192.0, numpy_dtype("bf16"))
        fn(c[:M], a, bs, sa, sb, c[0, :0], M, N, **extra)
        assert (c[M:].astype(np.float32) == -8192.0).all()
        outs.append(c[:M].copy())
        assert not ws[:COUNTER_WORDS].any() and not fn.workspace[:COUNTER_WORDS].any()
    assert all(np.array_equal(o.view(np.int16), outs[0].view(np.int16)) for o in outs)
    ref = (a.astype(np.float32) * sa.reshape(-1, 1)) @ (b.astype(np.float32) * sb.reshape(-1, 1)).T
    assert np.abs(outs[0].astype(np.float32) - ref).max() <= 2**-7 * np.abs(ref).max()


def test_one_stream_kernel_serves_every_m(interpreter):
    fn = compile_preshuffle_gemm(N=64, K=256, tile_m=8, tile_n=64, tile_k=128, in_dtype="int8", path="stream",
                                 max_blocks=4)  # fmt: skip
    for M in (1, 8, 9, 30):
        res = run_gemm("int8", M, 64, 256, launch_fn=fn, cuda=False, seed=M)
        assert res.ok and res.guard_ok, (M, res)
    assert fn.cache_info().currsize == 1


def _schedule(tiles, iters, max_blocks, min_iters):
    sk = StreamK(iters, max_blocks, min_iters, 1, 128, 4)
    q, grid = int(sk.quantum(tiles)), int(sk.grid(tiles))
    segs = {}  # tile -> [(block, k_lo, k_hi)]
    for b in range(grid):
        _, it0, it1 = (int(x) for x in sk.block_range(tiles, b))
        assert it1 > it0
        for t in range(it0 // iters, (it1 - 1) // iters + 1):
            segs.setdefault(t, []).append((b, max(it0 - t * iters, 0), min(it1 - t * iters, iters)))
    return sk, q, grid, segs


@pytest.mark.parametrize(
    "tiles,iters,max_blocks,min_iters",
    [(t, i, mb, mi) for t, i, mb, mi in itertools.product((1, 3, 64, 160, 448), (1, 4, 16, 32, 64), (7, 132), (1, 4))],
)
def test_stream_k_schedule_invariants(tiles, iters, max_blocks, min_iters):
    """Every iteration of every tile is done once, by at most ``max_blocks`` blocks of one quantum; a split
    tile's segments are consecutive blocks ``first … last`` and its counter (its first block) belongs to
    no other split tile; a block writes at most two partial slots, distinct per tile."""
    sk, q, grid, segs = _schedule(tiles, iters, max_blocks, min_iters)
    assert grid <= max(max_blocks, 1) and q >= min_iters
    assert sorted(segs) == list(range(tiles))
    counters = {}
    for t, ss in segs.items():
        ks = sorted((lo, hi) for _, lo, hi in ss)
        assert ks[0][0] == 0 and ks[-1][1] == iters and all(a[1] == b[0] for a, b in zip(ks, ks[1:]))
        blocks = [b for b, _, _ in ss]
        assert blocks == list(range(int(sk.first_block(q, t)), int(sk.last_block(q, t)) + 1))
        if len(ss) > 1:
            fb = blocks[0]
            assert fb not in counters, (t, counters[fb])
            counters[fb] = t
            slots = [int(sk.slot(q, b, t)) for b in blocks]
            assert all(s // 2 == b for s, b in zip(slots, blocks))
    for b in range(grid):  # the slots of one block's split tiles differ
        mine = [int(sk.slot(q, b, t)) for t, ss in segs.items() if len(ss) > 1 and any(x[0] == b for x in ss)]
        assert len(mine) == len(set(mine)) <= 2


# (M, N, K in 8-bit elements, tiles, max_blocks): split tiles under streamk="early" (a block takes >= a tile)
EARLY_CASES = [
    (21, 128, 1024, (8, 64, 128), 4),  # 6 tiles of 8 stages over 4 blocks of 12: heads and tails
    (40, 256, 1024, (16, 128, 256), 3),  # two consumers, two K atoms a stage: 6 tiles of 4 over 3 blocks of 8
    (9, 128, 512, (16, 32, 128), 3),  # 32-row tiles: 4 tiles of 4 stages over 3 blocks of 6
    (5, 64, 256, (8, 64, 128), 7),  # one tile, one block (q = its 2 stages)
]


@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize("M,N,K,tiles,max_blocks", EARLY_CASES,
                         ids=[f"M{c[0]}-N{c[1]}-t{'x'.join(map(str, c[3]))}-b{c[4]}" for c in EARLY_CASES])  # fmt: skip
def test_stream_early_split_interpreter(in_dtype, M, N, K, tiles, max_blocks, interpreter):
    """``streamk="early"``: every block works its tiles last first; a split tile's head is published at its
    block's start and its finisher (the block holding the tail) starts its sum from it — right for every
    in_dtype, rows past M untouched, the flags back at zero, the same bits on a second launch."""
    e = 1 if in_dtype in ("fp8", "int8") else 2
    tm, tn, tk = tiles
    fn = compile_preshuffle_gemm(N=N, K=K // e, tile_m=tm, tile_n=tn, tile_k=tk // e, in_dtype=in_dtype,
                                 path="stream", max_blocks=max_blocks, streamk="early")  # fmt: skip
    assert fn.gemm_config.min_iters >= fn.gemm_config.iters and "heads first" in fn.gemm_config.describe()
    outs = []
    for _ in range(2):
        res = run_gemm(in_dtype, M, N, K // e, launch_fn=fn, cuda=False, seed=M + K)
        assert res.guard_ok and res.ok and res.rel_err < 2**-7, res
        assert not np.asarray(fn.workspace)[:COUNTER_WORDS].any()
        outs.append(res)
    assert outs[0].rel_err == outs[1].rel_err


@pytest.mark.parametrize(
    "tiles,iters,max_blocks", list(itertools.product((1, 3, 64, 160, 448), (1, 4, 32, 64), (7, 132)))
)
def test_stream_k_early_schedule(tiles, iters, max_blocks):
    """With a block taking at least a tile's stages (``streamk="early"``) no tile spans more than two blocks, and
    with each block's tiles worked last first, a split tile's finisher (the block holding its tail, working it
    last) is done within one quantum in lock step: its wait for the head (the first thing the block before it
    works) adds nothing beyond a block's share."""
    sk, q, grid, segs = _schedule(tiles, iters, max_blocks, iters)
    assert q >= iters
    for t, ss in segs.items():
        assert len(ss) <= 2
        if len(ss) == 2:
            (fb, h_lo, h_hi), (lb, t_lo, t_hi) = ss
            assert lb == fb + 1 and h_lo == 0 and t_lo == h_hi and t_hi == iters
            _, it0, it1 = (int(x) for x in sk.block_range(tiles, lb))
            before_tail = (it1 - it0) - (t_hi - t_lo)
            assert max(before_tail, h_hi) + (t_hi - t_lo) <= q, (t, ss, q)


# (M, N, K in 8-bit elements, tiles, cluster_k): each tile's K over a cluster, reduced in distributed shared memory
CLUSTER_CASES = [
    (3, 128, 1024, (8, 64, 128), 2),  # 2 tiles x 2 blocks, 8-token tile (one value pair per block)
    (21, 128, 1024, (16, 64, 256), 4),  # 2 token tiles x 2 panels x 4 blocks, two K atoms a stage
    (9, 128, 512, (16, 32, 128), 2),  # 32-row tiles (half an m64 tile stored)
    (40, 256, 1024, (32, 128, 256), 4),  # two consumer warpgroups
    (20, 128, 1024, (24, 64, 256), 2),  # 24 tokens (the heuristic's at M = 17-24): three value pairs per block
]


@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize("M,N,K,tiles,ck", CLUSTER_CASES,
                         ids=[f"M{c[0]}-N{c[1]}-t{'x'.join(map(str, c[3]))}-c{c[4]}" for c in CLUSTER_CASES])  # fmt: skip
def test_stream_cluster_k_interpreter(in_dtype, M, N, K, tiles, ck, interpreter):
    """``cluster_k``: block ``r`` of a tile's cluster takes the ``r``-th share of its K stages; the partials meet
    in distributed shared memory, each block summing and storing its share of the value pairs — right for
    every in_dtype, rows past M untouched, no workspace used."""
    res = _run(in_dtype, M, N, K, tiles, None, seed=M + 3, cluster_k=ck)
    assert f"clusters of {ck}" in res.config, res.config
    assert res.guard_ok and res.ok and res.rel_err < 2**-7, res


@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize("kw", [dict(max_blocks=10), dict(max_blocks=4, streamk="early"), dict(cluster_k=2),
                                dict(max_blocks=10, pdl=True)], ids=["arrive", "early", "c2", "pdl"])  # fmt: skip
def test_stream_prefill_interpreter(in_dtype, kw, interpreter):
    """``prefill``: thread 0 issues the ring's first pass (B and A) right after the mbarriers' init; the producer
    goes on from the next stage — right with split tiles, early heads, clusters (and ignored under PDL, which
    issues the first pass before griddepcontrol.wait)."""
    res = _run(in_dtype, 21, 128, 1024, (8, 64, 128), kw.pop("max_blocks", None), seed=5, prefill=True, **kw)
    assert ("prefilled" in res.config) != bool(kw.get("pdl")), res.config
    assert res.guard_ok and res.ok and res.rel_err < 2**-7, res


@pytest.mark.parametrize("kw", [dict(max_blocks=4, streamk="early"), dict(cluster_k=2)], ids=["early", "c2"])
@pytest.mark.parametrize("min_blocks", [None, 2])
def test_stream_schedules_with_pdl_interpreter(kw, min_blocks, interpreter):
    """The early and cluster schedules built for programmatic dependent launch (their heads' warps and the
    consumers wait for the previous kernel before the workspace; with two blocks per SM the ring leaves room for
    the heads / the other blocks' shares)."""
    res = _run("fp8", 21, 128, 1024, (8, 64, 128), kw.pop("max_blocks", None), seed=6, pdl=True,
               min_blocks=min_blocks, **kw)  # fmt: skip
    assert "PDL" in res.config and res.guard_ok and res.ok and res.rel_err < 2**-7, res


def test_stream_cluster_k_rejected():
    for kw, match in [({"cluster_k": 3}, "1, 2 or 4"), ({"cluster_k": 2, "path": "mma"}, "stream path"),
                      ({"cluster_k": 4, "tile_m": 8}, "divisible"), ({"cluster_k": 2, "streamk": "early"}, "early")]:  # fmt: skip
        kw = {"path": "stream", "tile_m": 16, "tile_n": 64, "tile_k": 256, **kw}
        with pytest.raises(ValueError, match=match):
            compile_preshuffle_gemm(N=256, K=1024, **kw)


def test_stream_config_mapping_and_rejection():
    import warnings

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cfg = compile_preshuffle_gemm(N=192, K=512, tile_m=12, tile_n=96, tile_k=384, in_dtype="int8",
                                      path="stream").gemm_config  # fmt: skip
    assert (cfg.tile_m, cfg.tile_n, cfg.tile_k) == (16, 64, 256)  # 192 rows: 64 (128 does not divide)
    assert len(w) == 3
    for kw, match in [({"c_store": "tma"}, "stores C directly"), ({"warps": (1, 1, 2)}, "mma path"),
                      ({"max_blocks": 0}, "positive"), ({"stages": 0}, "positive")]:  # fmt: skip
        with pytest.raises(ValueError, match=match):
            compile_preshuffle_gemm(N=256, K=512, tile_m=16, tile_n=64, tile_k=128, path="stream", **kw)
    with pytest.raises(ValueError, match="max_blocks applies"):
        compile_preshuffle_gemm(N=256, K=512, tile_m=16, tile_n=64, tile_k=128, path="mma", max_blocks=4)
    with pytest.raises(ValueError, match=r"streamk='early' applies to the stream path \(its split tiles\)"):
        compile_preshuffle_gemm(N=256, K=512, tile_m=16, tile_n=64, tile_k=128, path="mma", streamk="early")
    with pytest.raises(ValueError, match="streamk must be 'arrive' or 'early', got 'late'"):
        compile_preshuffle_gemm(N=256, K=512, path="stream", streamk="late")
    with pytest.raises(ValueError, match=r"prefill applies to the stream path \(its ring\)"):
        compile_preshuffle_gemm(N=256, K=512, path="wgmma", prefill=True)


def test_stream_probe_and_early_rejections():
    from kernels.gemm.gemm_stream import build_stream_gemm

    cfg = compile_preshuffle_gemm(N=256, K=1024, tile_m=16, tile_n=64, tile_k=256, path="stream").gemm_config
    with pytest.raises(ValueError, match="probe must be one of .* on the stream path, got 'fast'"):
        build_stream_gemm(cfg, probe="fast")
    early = compile_preshuffle_gemm(N=256, K=1024, tile_m=16, tile_n=64, tile_k=256, path="stream",
                                    streamk="early").gemm_config  # fmt: skip
    with pytest.raises(ValueError, match="streamk='early' needs min_iters >= the K stages of a tile"):
        build_stream_gemm(early, probe="nored")


# ---------------------------------------------------------------------------------------------------------
# on the GPU
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize("M,N,K", [(1, 4096, 4096), (16, 7168, 2048), (32, 10240, 8192), (64, 4096, 4096),
                                   (200, 2048, 1024), (20, 4096, 4096), (37, 4096, 4096), (41, 7168, 2048),
                                   (65, 7168, 2048), (96, 4096, 4096)])  # fmt: skip
def test_stream_gpu(in_dtype, M, N, K):
    e = 1 if in_dtype in ("fp8", "int8") else 2
    res = run_gemm(in_dtype, M, N, K // e, cuda=True, graph_check=True, path="stream")
    assert res.config.startswith("stream") and res.ok and res.guard_ok, res


@pytest.mark.gpu
@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize("M,N,K,tile_n,tile_k", [(1, 10240, 8192, 64, 256), (33, 10240, 8192, 64, 128),
                                                 (33, 7168, 2048, 32, 128)])  # fmt: skip
def test_stream_early_gpu(in_dtype, M, N, K, tile_n, tile_k):
    """``streamk="early"`` on the H200 (finishers spin on their head's flag): right, rows past M untouched, in a
    CUDA graph too, and the flags back at zero after the launches."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    e = 1 if in_dtype in ("fp8", "int8") else 2
    fn = compile_preshuffle_gemm(N=N, K=K // e, tile_n=tile_n, tile_k=tile_k // e, in_dtype=in_dtype, M=M,
                                 path="stream", streamk="early")  # fmt: skip
    res = run_gemm(in_dtype, M, N, K // e, launch_fn=fn, cuda=True, graph_check=True)
    assert res.ok and res.guard_ok, res
    torch.cuda.synchronize()
    assert int(fn.workspace[:COUNTER_WORDS].abs().sum()) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("in_dtype", IN_DTYPES)
@pytest.mark.parametrize(
    "M,N,K,tile_n,ck", [(1, 4096, 4096, 64, 2), (33, 4096, 4096, 128, 4), (16, 10240, 8192, 64, 2)]
)
def test_stream_cluster_k_gpu(in_dtype, M, N, K, tile_n, ck):
    """``cluster_k`` on the H200: right, rows past M untouched, in a CUDA graph too."""
    e = 1 if in_dtype in ("fp8", "int8") else 2
    res = run_gemm(in_dtype, M, N, K // e, cuda=True, graph_check=True, path="stream", tile_n=tile_n, cluster_k=ck)
    assert f"clusters of {ck}" in res.config and res.ok and res.guard_ok, res


def test_gpu_check_variants_build_for_every_problem():
    """Every variant the GPU check compares (and every check it runs) makes a configuration for every problem
    of its group — a typo or an invalid combination fails here, not on the H200."""
    from benchmarks.cases.preshuffle_gemm import problems, variant_kwargs
    from benchmarks.gemm_gpu_check import CHECKS, DEFAULT_VARIANTS
    from kernels.gemm.gemm_config import make_config

    seen = 0
    for group, variants in DEFAULT_VARIANTS.items():
        for _, dt, M, N, K in problems([group]):
            for v in variants:
                kw = variant_kwargs(v, M, N)
                kw.pop("maxnreg", None)
                cfg = make_config(N=N, K=K, in_dtype=dt, M=M, **{"tile_m": None, "tile_n": None, "tile_k": None, **kw})
                assert cfg.path in ("mma", "wgmma", "stream"), (group, v)
                seen += 1
    for dt, M, N, K, v, ep, out in CHECKS:
        e = 1 if dt in ("fp8", "int8") else 2
        kw = variant_kwargs(v, M, N)
        if kw.get("tile_k"):
            kw["tile_k"] //= e
        make_config(N=N, K=K // e, in_dtype=dt, M=M, epilogue=ep, out_dtype=out,
                    **{"tile_m": None, "tile_n": None, "tile_k": None, **kw})  # fmt: skip
    assert seen > 100
