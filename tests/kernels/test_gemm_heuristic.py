"""The preshuffle GEMM's heuristic (``kernels/gemm/gemm_config.py``): the path and tiles it picks for a problem are
the measured winners (docs/gemm.md, "Tile arguments and the heuristic", and the results it cites)."""

from __future__ import annotations

from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm


def test_heuristic_and_defaults(interpreter):
    """The heuristic's paths and tiles: the measured winners (docs/gemm.md, "Tile arguments and the heuristic";
    benchmarks/results/2026-12-01-NVIDIA-H200-preshuffle-r2.md, …-gemm-decode-sweep-r2.md)."""

    def cfg(N, K, dt, M=None, **kw):
        c = compile_preshuffle_gemm(N=N, K=K, in_dtype=dt, M=M, **kw).gemm_config
        extra = ((c.max_blocks,) + ((c.cluster_k,) if c.cluster_k else ()) + ((c.streamk,) if c.streamk else ())
                 if c.path == "stream" else (c.stages, c.schedule) if c.path == "wgmma" else ())  # fmt: skip
        return (c.path, c.tile_m, c.tile_n, c.tile_k) + extra

    # decode of a 16-MB weight with long rows (fp8 4096 x 4096, M <= 8): the mma path starts streaming sooner;
    # 8-row tiles up to M = 8, the weight's loads evict-first (round 2 of the decode session)
    assert cfg(4096, 4096, "int8", 1) == ("mma", 8, 16, 1024)
    assert cfg(4096, 4096, "fp8", 8) == ("mma", 8, 16, 1024)
    assert cfg(4096, 4096, "fp8", 1, pdl=True) == ("mma", 16, 16, 1024)  # under PDL the 16-row tile
    assert cfg(4096, 4096, "fp8", 16, pdl=True) == ("mma", 16, 16, 1024)
    assert compile_preshuffle_gemm(N=4096, K=4096, M=8).gemm_config.b_cache == "cs"
    # ... above 8 rows (and unknown M: 16) the stream path's 64-row tiles, each tile's K over a cluster of two
    # blocks (128 blocks; session dec, round 3: 6.60 / 6.84 us at M = 16 / 32 against 7.23 / 7.55)
    assert cfg(4096, 4096, "fp8") == ("stream", 16, 64, 256, 132, 2)
    assert cfg(4096, 4096, "int8", 32) == ("stream", 32, 64, 256, 132, 2)
    assert compile_preshuffle_gemm(N=4096, K=4096, M=16).gemm_config.prefill
    assert compile_preshuffle_gemm(N=4096, K=4096, tile_m=16, tile_n=16, tile_k=1024).gemm_config.b_cache == ""
    # PDL on the stream path: two blocks per SM when the halved ring holds more than half of a tile's K stages
    assert compile_preshuffle_gemm(N=7168, K=2048, M=16, pdl=True).gemm_config.min_blocks == 2
    assert compile_preshuffle_gemm(N=7168, K=2048, M=32, pdl=True).gemm_config.min_blocks == 0
    assert compile_preshuffle_gemm(N=4096, K=4096, M=32, pdl=True).gemm_config.min_blocks == 0
    assert compile_preshuffle_gemm(N=10240, K=8192, M=1, pdl=True).gemm_config.min_blocks == 0
    assert cfg(4096, 4096, "fp8", 32, pdl=True) == ("stream", 32, 32, 256, 128)  # whole tiles: 128 of 32 rows
    assert cfg(4096, 4096, "bf16", 8) == ("stream", 8, 32, 128, 128)  # 32 MB: the stream path
    assert cfg(7168, 2048, "fp8", 8) == ("stream", 8, 64, 256, 112)  # K = 2 KB: the stream path's 112 tiles
    assert cfg(7168, 2048, "int8", 32) == ("stream", 32, 64, 256, 112)
    # no whole-tile fit: 8-bit, up to 32 tokens, 64-row tiles at least one per SM: stream-K with the split tiles'
    # heads first (session dec: 10240 x 8192 1.2-2.3 us faster); else on 128-row tiles while they make >= 66
    # tiles (10240: 80), else 64 rows
    assert cfg(10240, 8192, "fp8", 1) == ("stream", 8, 64, 256, 132, "early")
    assert cfg(10240, 8192, "int8", 32) == ("stream", 32, 64, 256, 132, "early")
    assert cfg(10240, 8192, "fp8", 32, pdl=True) == ("stream", 32, 128, 256, 132)  # two atoms: a ring of 5 fits
    assert cfg(10240, 8192, "bf16", 16) == ("stream", 16, 128, 128, 132)
    # tokens: the smallest wgmma N holding M up to 64, on whole tiles where they fill the SMs (s. 24: 4096 x 4096 M = 33
    # bf16 11.4 us on 40 x 32 against 14.6 on 64 x 64); else 33-64 rows of >= 4 KB (16-bit: 16 KB) take wgmma (s. 23)
    assert cfg(4096, 4096, "fp8", 64) == ("stream", 64, 32, 256, 128)
    assert cfg(4096, 4096, "bf16", 33) == ("stream", 40, 32, 128, 128)
    assert cfg(4096, 4096, "fp8", 20) == ("stream", 24, 64, 256, 132, 2)  # 17-24 rows: 24 tokens, K over two blocks
    assert cfg(7168, 2048, "int8", 33)[1:3] == (48, 64)  # s8: 8, 16, 24 or multiples of 16 tokens
    # ... and up to 96 rows where such tiles fill the SMs whole (s. 24: 7168 x 2048 fp8 at M = 65 6.8 us against 7.8)
    assert cfg(7168, 2048, "fp8", 65) == ("stream", 72, 64, 256, 112)
    assert cfg(4096, 4096, "bf16", 96)[:4] == ("stream", 96, 32, 128)
    assert cfg(10240, 8192, "bf16", 80)[0] == cfg(4096, 4096, "fp8", 97)[0] == "wgmma"
    assert cfg(4096, 4096, "int8", 65)[0] == "wgmma" and cfg(4096, 4096, "int8", 80)[:2] == ("stream", 80)  # s8: 80
    assert cfg(10240, 8192, "int8", 40) == ("wgmma", 64, 128, 128, 8, "cooperative")  # 16-bit: 16 KB; PDL: stream
    cases = ((7168, 2048, "fp8", 64, False), (4096, 4096, "fp8", 64, True), (4096, 4096, "bf16", 64, False),
             (10240, 8192, "fp16", 32, False), (4096, 4096, "fp8", 33, False), (10240, 8192, "bf16", 48, False),
             (10240, 8192, "fp8", 33, False))  # fmt: skip
    assert [cfg(n, k, dt, m, pdl=p)[0] for n, k, dt, m, p in cases] == ["stream"] * 5 + ["wgmma"] * 2
    # above 64 rows the wgmma path: cooperative 64-row tiles at M = 128 / 256 (one wave), ping-pong 128x128
    # where it needs no more waves than 128x256 at the epilogue's cost (the seed, 5120^2), 128x256 else
    assert cfg(4096, 4096, "fp8", 128) == ("wgmma", 64, 64, 128, 8, "cooperative")
    assert cfg(4096, 4096, "fp8", 256) == ("wgmma", 64, 128, 128, 8, "cooperative")
    assert cfg(4096, 512, "fp8", 2048) == ("wgmma", 128, 128, 128, 6, "pingpong")
    assert cfg(4096, 512, "bf16", 2048) == ("wgmma", 128, 128, 64, 6, "pingpong")
    assert cfg(5120, 8320, "int8", 5120)[-1] == "pingpong"
    assert cfg(4096, 4096, "fp8", 8192) == ("wgmma", 128, 256, 128, 4, "cooperative")
    assert cfg(8192, 8192, "bf16", 8192)[:3] == ("wgmma", 128, 256)
    # given tiles: 128x128 and 64x256 run ping-pong unless asked otherwise
    assert cfg(4096, 512, "fp8", tile_m=128, tile_n=128, tile_k=256)[-1] == "pingpong"
    assert cfg(4096, 512, "fp8", tile_m=128, tile_n=128, schedule="cooperative")[-1] == "cooperative"
    assert cfg(4096, 512, "fp8", tile_m=64, tile_n=128)[-1] == "cooperative"
    # the mma path keeps its own heuristic when asked for
    assert cfg(4096, 4096, "fp8", path="mma")[:4] == ("mma", 16, 16, 1024)
    assert cfg(10240, 8192, "bf16", 32, path="mma")[:4] == ("mma", 32, 32, 256)  # 512 bytes: 4 x 128
    assert cfg(4096, 4096, "fp8", 64, path="mma")[:3] == ("mma", 64, 16)


def test_default_tokens_fit_the_cluster_asked_for():
    """``cluster_k=4`` shares a tile's ``tile_m / 4`` value pairs over four blocks: the default token tile for M = 33
    (40) is raised to the next that divides (48) instead of refusing the request."""
    fn = compile_preshuffle_gemm(N=4096, K=4096, in_dtype="bf16", M=33, path="stream", tile_n=128, cluster_k=4)
    assert (fn.gemm_config.tile_m, fn.gemm_config.cluster_k) == (48, 4)


def test_a_bad_cluster_k_is_refused_before_the_default_tile_is_fitted():
    import pytest

    for bad in (100, "2"):
        with pytest.raises(ValueError, match="cluster_k must be 1, 2 or 4"):
            compile_preshuffle_gemm(N=4096, K=4096, in_dtype="bf16", M=33, path="stream", cluster_k=bad)


def test_wide_token_tiles_keep_wide_b_tiles():
    """The 32-row floor of fine-token tiles (<= 96 tokens) does not reach wider token tiles asked for with
    ``path="stream"`` (128 tokens re-reading A from L2 on 32-row tiles was never measured)."""
    assert compile_preshuffle_gemm(N=4096, K=4096, in_dtype="fp8", M=128, path="stream").gemm_config.tile_n == 128
