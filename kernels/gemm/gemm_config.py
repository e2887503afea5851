"""Tile configurations of the preshuffle GEMM: what is valid for each path, how invalid requests are mapped,
and the shape heuristic used when no tile is given.

Three paths (docs/gemm.md):

* ``"mma"`` — warp-level ``mma.sync`` with every operand loaded from global memory straight into registers
  (B in the preshuffled layout, one 16-byte load per lane per two mma k-steps). Any ``tile_m`` that is a
  multiple of 16; made for small M (decode), correct for every M.
* ``"wgmma"`` — warpgroup MMA fed by a shared-memory pipeline (TMA for A, one 1-D bulk copy per 8-KB
  piece of B), for large M (sm_90a). ``tile_m`` 64 or 128 (one or two consumer warpgroups), ``tile_n`` a
  multiple of 64 up to 256 dividing N, ``tile_k`` one or two 128-byte K atoms; ``stages`` as many as fit
  in the 227 KB of shared memory beside the epilogue's buffers (at most 8); C leaves through shared
  memory and TMA stores (``c_store="tma"``) or straight from registers (``"direct"``); ``schedule``
  cooperative or ping-pong.
* ``"stream"`` — swap-AB wgmma (the tokens are the wgmma's N) over a deep ring of bulk-copied B, stream-K
  over the SMs: decode and small M.

Given tiles, the path follows ``tile_m``: below 64 rows the mma path, from 64 on the wgmma path (``path=``
forces one); with none, :func:`heuristic_path` picks it from M, N and K.

A configuration of the mma path names the block tile (``tile_m × tile_n × tile_k``, ``tile_k`` in
elements) and how the block's warps share it: ``warps_m × warps_n`` warps side by side over the output
tile, times ``warps_k`` warps that split each ``tile_k`` step between them (their partial sums are added
through shared memory at the end). Each warp then owns ``tile_m / warps_m`` rows (``mt`` m16 tiles) by
``tile_n / warps_n`` columns (``nt`` n8 tiles), and loads ``tile_k / warps_k`` of K per iteration.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

from .preshuffle_layout import ATOM_BYTES, ELEM_BYTES, PANEL_N, check_weight_shape
from .reference import EPILOGUES, IN_DTYPES, OUT_DTYPES

__all__ = ["GemmConfig", "make_config", "heuristic_tiles", "heuristic_path", "wgmma_choice", "default_schedule",
           "NUM_SMS", "MAX_WARPS", "PATHS"]  # fmt: skip

NUM_SMS = 132  # H200
MAX_WARPS = 16  # 512 threads per block
MAX_MT, MAX_NT = 4, 2  # default m16 / n8 tiles per warp (registers: the loads in flight need them)
LIMIT_TILES = 8  # m16 or n8 tiles per warp accepted with explicit warps
STEP_BYTES = 64  # one lane load covers 64 bytes of K per warp row group: two mma k-steps
PATHS = ("mma", "wgmma", "stream")
SMEM_LIMIT = 227 * 1024  # per block on sm_90
EPI_BYTES = 2 * 64 * 64 * 2  # per consumer warpgroup: two 64x64 16-bit buffers of the TMA-store epilogue
MAX_STAGES = 8
STREAM_FINE_TOKENS = 96  # the heuristic's token tile is the smallest valid wgmma N >= M up to this many tokens ...
STREAM_TOKENS = (128, 256)  # ... and the smallest of these above (session 24: fine tiles at M = 33-96, docs/gemm.md)
STREAM_MIN_ROWS = 32  # whole stream tiles of at least min(tile_m, this) rows of B (narrower: most of the m64 dropped)
STREAM_MAX_M = 64  # the heuristic's stream path up to this M; wgmma above (docs/gemm.md, round 2) ...
STREAM_WHOLE_MAX_M = 96  # ... but up to this M where its fine-token tiles fill the SMs whole (session 24)
# ... but where its tiles do not fill the SMs whole (stream-K), weights with rows of at least this many bytes (by
# element size) take the wgmma path above STREAM_DEEP_K_MAX_M rows: its 64-row tiles beat the stream path there
# (H200, sessions 23-24, M = 33-64: fp8 10240x8192 24.5-26.8 us against 27.1-29.5, bf16 10240x8192 at 48-64 rows
# 43.9-45.3 against 47.8-49.2; 4096x4096 and 7168x2048 stay: their fine-token tiles fill the SMs whole and win, fp8
# 4096x4096 7.7-8.1 us against 8.3-9.4); not under PDL (the wgmma path has none)
STREAM_DEEP_K_BYTES = {1: 4096, 2: 16384}
STREAM_DEEP_K_MAX_M = 32
# decode problems whose B is read in about 4 us (the launch and ramp dominate): the mma path starts streaming
# sooner (no mbarriers, tensor maps, register reallocation); measured on fp8 4096x4096 at M <= 16 (round 2)
MMA_DECODE_MAX_M = 16
MMA_DECODE_MAX_BYTES = 16 << 20  # B of at most this many bytes ...
MMA_DECODE_MIN_KB = 4096  # ... and rows of at least this many (K = 2 KB: two mma iterations a block, slow)
STREAM_WIDE_TILES = NUM_SMS // 2  # stream-K over 128-row tiles when they make at least this many tiles
STREAM_MAX_STAGES = 32
DECODE_B_CACHE = "cs"  # the heuristic's mma decode kernel: evict-first weight loads (round 2: -0.27..-0.35 us)
STREAM_MIN_ITERS = 4  # a stream-K block takes at least this many K stages (fewer, smaller partial tiles)
STREAM_EARLY = True  # the heuristic's stream-K on 64-row tiles with streamk="early" (stream_early)
STREAM_CLUSTER = True  # the heuristic's 64-row tiles split over clusters of two (stream_cluster)
STREAM_PREFILL = True  # the stream path's default for prefill (session dec, round 3: 7168 x 2048 -0.2 us, else even)
STREAM_WHOLE = 0.75  # whole tiles (no split-K) when they fill at least this share of the SMs
# two K atoms a stage while a ring of this many fits (round 2: 32 x 10240 x 8192 on 128-row tiles, 5 stages of
# two atoms, 27.2 us; 64-row tiles: two atoms 28.0, one atom 29.1)
STREAM_TWO_ATOM_STAGES = 5


class GemmConfig(NamedTuple):
    """A validated configuration (a compile-time value: it enters the kernel's cache key)."""

    path: str
    in_dtype: str
    out_dtype: str
    epilogue: str
    N: int
    K: int
    tile_m: int
    tile_n: int
    tile_k: int
    warps_m: int
    warps_n: int
    warps_k: int
    stages: int = 0  # wgmma/stream: shared-memory stages (0 on the mma path)
    c_store: str = "direct"  # how C leaves: "direct" (guarded 4-byte stores) or "tma" (smem + TMA store)
    max_blocks: int = 0  # stream: the most blocks of the stream-K grid (0 elsewhere)
    min_iters: int = 0  # stream: the fewest K stages a block takes (its share of the work)
    schedule: str = "cooperative"  # wgmma: both consumers on each tile, or "pingpong" (whole tiles in turn)
    min_blocks: int = 0  # mma: blocks per SM the registers must allow (PTX .minnctapersm; 0: ptxas's choice)
    pdl: bool | str = False  # programmatic dependent launch: True: B's first share read before griddepcontrol.wait;
    # "prefetch" (mma path): only brought into L2 before it (no promise about B needed)
    b_smem: int = 0  # mma: leading K iterations whose B is bulk-copied into shared memory at the start
    b_cache: str = ""  # mma: cache hint of the weight's loads ("cg": L2 only, "cs": evict first; "": default)
    streamk: str = ""  # stream: how split tiles are reduced: "" the last block to arrive sums; "early": docs/gemm.md
    cluster_k: int = 0  # stream: a cluster of this many blocks per tile, each a share of K, reduced in DSMEM (0: no)
    prefill: bool = False  # stream: the ring's first pass issued by thread 0 right after the mbarriers' init

    @property
    def elem_bytes(self) -> int:
        return ELEM_BYTES[self.in_dtype]

    @property
    def num_warps(self) -> int:
        return self.warps_m * self.warps_n * self.warps_k

    @property
    def mt(self) -> int:
        """m16 tiles per warp (one for the mma path's 8-row tile: the m16 tile's other rows are zeros)."""
        return max(1, self.tile_m // self.warps_m // 16)

    @property
    def nt(self) -> int:
        """n8 tiles per warp."""
        return self.tile_n // self.warps_n // 8

    @property
    def steps_per_warp(self) -> int:
        """64-byte K steps each warp loads per main-loop iteration."""
        return self.tile_k * self.elem_bytes // STEP_BYTES // self.warps_k

    @property
    def iters(self) -> int:
        """Main-loop iterations (``K / tile_k``)."""
        return self.K // self.tile_k

    def describe(self) -> str:
        extra = (f", >= {self.min_blocks} blocks/SM" if self.min_blocks else "") + (
            ", PDL" if self.pdl is True else ", PDL (L2 prefetch)" if self.pdl else ""
        )
        if self.b_smem:
            extra += f", B of {self.b_smem} iteration(s) through shared memory"
        if self.b_cache:
            extra += f", B loads .{self.b_cache}"
        return self._describe() + extra

    def _describe(self) -> str:
        if self.path == "stream":
            wgs = max(1, self.tile_n // 64)
            return (
                f"stream tile {self.tile_m}x{self.tile_n}x{self.tile_k} (tokens x B rows x K), {self.stages} stages, "
                f"stream-K over <= {self.max_blocks} blocks of >= {self.min_iters} K stages, "
                f"{wgs} consumer warpgroup(s) + 1 producer ({128 * (1 + wgs)} threads)"
                + (", split tiles' heads first" if self.streamk == "early" else "")
                + (f", K over clusters of {self.cluster_k}" if self.cluster_k > 1 else "")
                + (", prefilled" if self.prefill and not self.pdl else "")
            )
        if self.path == "wgmma":
            if self.schedule == "pingpong":
                return (
                    f"wgmma tile {self.tile_m}x{self.tile_n}x{self.tile_k}, {self.stages} stages, C by {self.c_store}, "
                    "ping-pong: 2 consumer warpgroups on alternate tiles + 1 producer (384 threads)"
                )
            return (
                f"wgmma tile {self.tile_m}x{self.tile_n}x{self.tile_k}, {self.stages} stages, C by {self.c_store}, "
                f"{self.tile_m // 64} consumer warpgroup(s) + 1 producer ({128 * (1 + self.tile_m // 64)} threads)"
            )
        return (
            f"{self.path} tile {self.tile_m}x{self.tile_n}x{self.tile_k}, warps {self.warps_m}x{self.warps_n}"
            f"x{self.warps_k} ({self.num_warps * 32} threads; per warp {self.mt}x{self.nt} mma tiles, "
            f"{self.steps_per_warp} loads of 64 B of K per row group per iteration)"
        )


_noted: set = set()


def _note(key, msg: str) -> None:
    """Say ``msg`` once per process (a UserWarning), however many times the same mapping happens."""
    if key not in _noted:
        _noted.add(key)
        warnings.warn(f"compile_preshuffle_gemm: {msg}", stacklevel=4)


def _divisors(n: int, step: int) -> list[int]:
    return [d for d in range(step, n + 1, step) if n % d == 0]


def _nearest(value: int, candidates: list[int]) -> int:
    return min(candidates, key=lambda c: (abs(c - value), -c))


def _pow2_floor(x: int) -> int:
    return 1 << (max(1, x).bit_length() - 1)


def heuristic_path(M: int | None, N: int | None = None, K: int | None = None, in_dtype: str = "fp8",
                   pdl=False) -> str:  # fmt: skip
    """The path for an expected row count ``M`` (None: decode-sized, 16) of an ``N × K`` weight: ``"mma"`` for
    decode rows (<= :data:`MMA_DECODE_MAX_M`) of a small weight (<= :data:`MMA_DECODE_MAX_BYTES`, rows of
    >= :data:`MMA_DECODE_MIN_KB`) — but above 8 rows the stream path where its tiles split over clusters of two
    (:func:`stream_cluster`), else ``"stream"`` up to :data:`STREAM_MAX_M` rows (up to :data:`STREAM_DEEP_K_MAX_M`
    for rows of :data:`STREAM_DEEP_K_BYTES` or more without PDL, where its tiles do not fill the SMs whole) and up to
    :data:`STREAM_WHOLE_MAX_M` where they fill the SMs whole with at most 7 tokens past M, ``"wgmma"`` otherwise
    (docs/gemm.md has the measurements behind each bound)."""
    m, e = 16 if M is None else M, ELEM_BYTES[in_dtype]
    tn = stream_tokens(m, in_dtype)
    if m <= MMA_DECODE_MAX_M and N is not None and K is not None:
        kb = K * e
        if kb >= MMA_DECODE_MIN_KB and N * kb <= MMA_DECODE_MAX_BYTES:
            return "stream" if m > 8 and stream_cluster(N, K, tn, m, in_dtype, pdl) else "mma"
    whole = N is not None and m <= STREAM_WHOLE_MAX_M and _stream_whole(N, tn, m)
    if m > STREAM_MAX_M and not (whole and tn - m < 8):  # (int8's 80-token tile at M = 65: 15 rows zero-filled, slower)
        return "wgmma"
    deep = K is not None and not pdl and K * e >= STREAM_DEEP_K_BYTES[e]
    return "wgmma" if deep and m > STREAM_DEEP_K_MAX_M and not whole else "stream"


def stream_tokens(m: int, in_dtype: str) -> int:
    """The heuristic's token tile (the stream path's wgmma N) for ``m`` rows: the smallest valid one
    (:func:`stream_tokens_ok`) holding them up to :data:`STREAM_FINE_TOKENS`, above it the smallest of
    :data:`STREAM_TOKENS` (256 for more). Measured (session 24, H200): M = 33 on 4096x4096 bf16 40 tokens 11.4 us
    against 64 tokens 14.6, fp8 7168x2048 6.4-6.5 against 7.6-7.7; M = 65 on 7168x2048 fp8 72 tokens 6.8 against
    the wgmma path's 7.8."""
    if m <= STREAM_FINE_TOKENS:
        return next(t for t in stream_tokens_ok(in_dtype) if t >= m)
    return next((t for t in STREAM_TOKENS if t >= m), STREAM_TOKENS[-1])


def heuristic_tiles(N: int, K: int, in_dtype: str, M: int | None = None, path: str | None = None, pdl=False):
    """``(tile_m, tile_n, tile_k)`` for an expected row count ``M`` (None: decode-sized) on ``path``
    (default: :func:`heuristic_path`).

    * ``"stream"``: ``tile_m`` (the tokens of a tile, the wgmma's N) from :func:`stream_tokens` (the smallest
      valid wgmma N that holds M up to 96, then 128 or 256); the rows of B per tile from :func:`_stream_rows`
      (whole tiles filling the SMs when a width gives them, else stream-K); two 128-byte K atoms per stage
      while five such stages fit (up to 112 tokens on tiles of <= 64 rows), else one.
    * ``"mma"``: ``tile_m`` the smallest of 16/32/64 that covers M; ``tile_n`` the largest of 64/32/16/8
      that still gives about two blocks per SM (``N / tile_n >= 1.9 * 132``); ``tile_k`` one 128-byte K
      atom per warp and iteration for 8 warps (1024 bytes when one warp covers tile_n, 512 when two do).
    * ``"wgmma"``: one 128-byte K atom per stage and the tile of :func:`wgmma_choice` (its schedule:
      :func:`default_schedule`).
    """
    e = ELEM_BYTES[in_dtype]
    kb = K * e
    m = 16 if M is None else M
    path = path or heuristic_path(M, N, K, in_dtype, pdl)
    if path == "stream":
        tn = stream_tokens(m, in_dtype)
        rows = _stream_rows(N, tn, m, K, in_dtype, pdl)
        # two K atoms a stage (half the barrier round trips) while that leaves a ring of STREAM_TWO_ATOM_STAGES
        ring = SMEM_LIMIT // ((tn + max(rows, PANEL_N)) * 2 * ATOM_BYTES)
        two = kb % (2 * ATOM_BYTES) == 0 and ring >= STREAM_TWO_ATOM_STAGES
        return tn, rows, (2 if two else 1) * ATOM_BYTES // e
    if path == "wgmma":
        return (*wgmma_choice(max(m, 1), N, kb // ATOM_BYTES)[:2], ATOM_BYTES // e)
    # 8 rows up to M = 8 (no A loads for rows 8-15) — but not under PDL, where the 16-row tile measured faster
    tile_m = 8 if m <= 8 and not pdl else 16 if m <= 16 else 32 if m <= 32 else 64
    tile_n = 8
    for cand in (64, 32, 16, 8):
        if N % cand == 0 and N // cand >= 1.9 * NUM_SMS:
            tile_n = cand
            break
    # 8 warps, each loading one 128-byte K atom per iteration: tile_k = 128 B x the K-splitting warps
    wm, wn, _ = _warps(tile_m, tile_n, ATOM_BYTES)
    want = ATOM_BYTES * max(1, 8 // (wm * wn))
    tile_kb = max(d for d in (1024, 512, 256, 128) if kb % d == 0 and d <= want)
    return tile_m, tile_n, tile_kb // e


def _stream_fill(N: int, tile_m: int, tile_n: int, M: int) -> int:
    """Tiles of the stream path for ``M`` rows."""
    return N // tile_n * -(-M // tile_m)


def _fills(tiles: int) -> bool:
    """Whether ``tiles`` blocks fill between :data:`STREAM_WHOLE` of the SMs and all of them."""
    return STREAM_WHOLE * NUM_SMS <= tiles <= NUM_SMS


def _stream_widths(N: int, tile_m: int) -> list[int]:
    """The stream tile's candidate rows of B, widest first: 128, 64, 32, 16 dividing N, at least ``tile_m`` up
    to :data:`STREAM_MIN_ROWS` (up to 128 for token tiles wider than :data:`STREAM_FINE_TOKENS`). (Up to session 23
    at least ``tile_m`` up to 128, to keep the activations re-read per tile under the bytes of B: 64 tokens on 32 rows
    measured faster than on 64, 4096x4096 bf16 11.9 against 12.9 us — their re-reads come from L2 — while a whole
    tile per SM saves the reduction.)"""
    floor = STREAM_MIN_ROWS if tile_m <= STREAM_FINE_TOKENS else 128  # (wider token tiles: measured on >= 128 rows)
    return [r for r in (128, 64, 32, 16) if N % r == 0 and r >= min(tile_m, floor)]


def _stream_whole(N: int, tile_m: int, M: int) -> int:
    """The widest of :func:`_stream_widths` whose whole tiles fill the SMs (:func:`_fills`); 0: none does."""
    return next((r for r in _stream_widths(N, tile_m) if _fills(_stream_fill(N, tile_m, r, M))), 0)


def _stream_rows(N: int, tile_m: int, M: int, K: int | None = None, in_dtype: str = "fp8", pdl=False) -> int:
    """Rows of B per stream tile: the widest of 128, 64, 32, 16 (dividing N; at least ``tile_m`` up to
    :data:`STREAM_MIN_ROWS`: :func:`_stream_widths`) whose tiles exactly fill
    between 3/4 of the SMs and all of them — one whole tile per block, no split tile to reduce; else stream-K
    splits the tiles' K over all the SMs, on 128-row tiles (two consumer warpgroups) when they still make
    :data:`STREAM_WIDE_TILES` tiles (10240 x 8192: 80 tiles, 2-3% faster than 160 of 64 rows at M = 1-32 in
    round 2), else on 64-row ones."""
    mode = stream_mode(N, K, tile_m, M, in_dtype, pdl)
    if mode in ("cluster", "early"):
        return PANEL_N
    if mode == "whole":
        return _stream_whole(N, tile_m, M)
    wide = 2 * PANEL_N
    if N % wide == 0 and (tile_m >= 128 or _stream_fill(N, tile_m, wide, M) >= STREAM_WIDE_TILES):
        return wide
    ok = _stream_widths(N, tile_m)
    return PANEL_N if N % PANEL_N == 0 else (ok[-1] if ok else 16)


def stream_mode(N: int, K: int | None, tile_m: int, M: int | None, in_dtype: str = "fp8", pdl=False) -> str:
    """The heuristic's stream kernel for tiles of ``tile_m`` tokens — the one decision that both its tile
    (:func:`_stream_rows`) and its reduction (:func:`make_config`) follow: ``"cluster"`` (64-row tiles, each tile's K
    over a cluster of two: :func:`stream_cluster`), ``"whole"`` (whole tiles fill the SMs: nothing to reduce),
    ``"early"`` (64-row stream-K tiles, ``streamk="early"``: :func:`stream_early`) or ``""`` (stream-K, the last
    block to arrive reduces)."""
    m = 16 if M is None else M
    if K is not None and stream_cluster(N, K, tile_m, M, in_dtype, pdl):
        return "cluster"
    if _stream_whole(N, tile_m, m):
        return "whole"
    return "early" if stream_early(N, tile_m, M, pdl, in_dtype) else ""


def stream_early(N: int, tile_m: int, M: int | None, pdl=False, in_dtype: str = "fp8") -> bool:
    """Whether the heuristic's stream-K kernel is ``streamk="early"`` on 64-row tiles: when no width of whole tiles
    fills the SMs and 64-row tiles are at least one per SM (a block then takes at least a tile's K stages on a
    full grid); 8-bit weights up to 32 tokens without PDL (where it was measured: 10240 x 8192, docs/gemm.md)."""
    if not STREAM_EARLY or N % PANEL_N or tile_m > 32 or pdl or ELEM_BYTES[in_dtype] != 1:
        return False
    m = 16 if M is None else M
    return not _stream_whole(N, tile_m, m) and _stream_fill(N, tile_m, PANEL_N, m) >= NUM_SMS


def stream_cluster(N: int, K: int, tile_m: int, M: int | None, in_dtype: str, pdl=False) -> bool:
    """Whether the heuristic's stream kernel splits each 64-row tile's K over a cluster of two blocks
    (``cluster_k=2``): 8-bit weights, up to 32 tokens, no PDL, when the 64-row tiles do not fill the SMs but twice
    as many blocks do (4096 x 4096: 64 tiles, 128 blocks), with an even number of 256-byte K stages. Measured
    (docs/gemm.md, session ``dec``): 4096 x 4096 at M = 16 / 32 6.60 / 6.84 µs against 7.23 / 7.55."""
    if not STREAM_CLUSTER or ELEM_BYTES[in_dtype] != 1 or tile_m > 32 or pdl or N % PANEL_N or K % 512:
        return False
    tiles = _stream_fill(N, tile_m, PANEL_N, 16 if M is None else M)
    return tiles < STREAM_WHOLE * NUM_SMS and _fills(2 * tiles)


def stream_blocks(N: int, tile_m: int, tile_n: int, M: int | None) -> int:
    """The stream-K grid bound: the tile count when whole tiles fill 3/4 of the SMs or more (one per block,
    nothing to reduce), else one block per SM."""
    tiles = _stream_fill(N, tile_m, tile_n, 16 if M is None else M)
    return tiles if _fills(tiles) else NUM_SMS


# relative speed of a wgmma tile and schedule (per output element, full machine) — docs/gemm.md, calibrated
# on the H200: round 1 (cooperative tiles), round 2 (ping-pong 128x128: 0.88-0.99 against cooperative
# 128x256 over the seed, 8192^3 and 5120x5120x8320 in three dtypes once the cooperative schedule's
# unhidden epilogue is counted, see wgmma_choice)
WGMMA_CANDIDATES = {
    (128, 256, "cooperative"): 1.0,
    (128, 128, "pingpong"): 0.93,
    (64, 256, "pingpong"): 0.85,
    (128, 64, "cooperative"): 0.7,
    (64, 128, "cooperative"): 0.75,
    (64, 64, "cooperative"): 0.55,
}
# round 1's table (every tile cooperative, 128x128 at 0.9): the benchmarks' "r1" baseline
ROUND1_WGMMA_CANDIDATES = {(tm, tn, "cooperative"): e for (tm, tn, _), e in WGMMA_CANDIDATES.items()}
ROUND1_WGMMA_CANDIDATES[(128, 128, "cooperative")] = 0.9


def wgmma_choice(M: int, N: int, k_tiles: int, candidates: dict = WGMMA_CANDIDATES) -> tuple[int, int, str]:
    """``(tile_m, tile_n, schedule)`` of ``candidates`` minimizing ``waves × tile_m × tile_n / efficiency``,
    times ``(k_tiles + 1) / k_tiles`` for the cooperative schedule: the persistent grid's rounds of 132 tiles,
    each as long as its tile's work at that tile's relative speed, and a cooperative tile's epilogue (about
    one K stage, measured: ping-pong 128x128 is 19% faster than cooperative at 4 K stages, 12% at 8, 0-2%
    at 64) not hidden under another tile's mainloop."""
    best = None
    for (tm, tn, schedule), eff in candidates.items():
        if N % tn:
            continue
        tiles = -(-M // tm) * (N // tn)
        cost = -(-tiles // NUM_SMS) * tm * tn / eff
        if schedule == "cooperative":
            cost *= (k_tiles + 1) / max(k_tiles, 1)
        if best is None or cost < best[0]:
            best = (cost, tm, tn, schedule)
    return best[1:]


def default_schedule(tile_m: int, tile_n: int) -> str:
    """The wgmma schedule of a tile when none is asked: ping-pong for the tiles :data:`WGMMA_CANDIDATES` runs
    that way (round 2: never more than 1% slower than cooperative on the same tile, up to 19% faster)."""
    return "pingpong" if (tile_m, tile_n, "pingpong") in WGMMA_CANDIDATES else "cooperative"


def _warps(tile_m: int, tile_n: int, tile_kb: int) -> tuple[int, int, int]:
    """Default warp split: at most 4 m16 × 2 n8 mma tiles per warp (more n8 tiles per warp keep too many
    registers live: 170 for 1×4 fp8 tiles, one block per SM), then K-splitting warps so that each loads
    one 128-byte K atom per iteration (two 64-byte steps: the fewest registers for the loads in flight),
    at most 16 warps in all (beyond that, warps take more atoms each)."""
    m16, n8 = tile_m // 16, tile_n // 8
    wm = max(1, m16 // MAX_MT)
    wn = max(1, n8 // MAX_NT)
    while m16 % wm:
        wm += 1
    while n8 % wn:
        wn += 1
    wk = 1
    while wm * wn * wk * 2 <= MAX_WARPS and tile_kb % (ATOM_BYTES * wk * 2) == 0:
        wk *= 2
    return wm, wn, wk


def make_config(
    *,
    N: int,
    K: int,
    tile_m: int | None,
    tile_n: int | None,
    tile_k: int | None,
    in_dtype: str = "fp8",
    out_dtype: str = "bf16",
    epilogue: str = "none",
    path: str | None = None,
    warps: tuple[int, int, int] | None = None,
    M: int | None = None,
    c_store: str | None = None,
    stages: int | None = None,
    max_blocks: int | None = None,
    schedule: str | None = None,
    pdl=False,
    streamk: str | None = None,
    cluster_k: int | None = None,
    prefill: bool | None = None,
    b_smem: bool = False,
) -> GemmConfig:
    """Validate a request and return the configuration the kernel will use.

    The path: ``path`` when given; else the heuristic's (:func:`heuristic_path`) when ``tile_m`` is not
    given; else it follows ``tile_m`` (below 64 rows the mma path, from 64 on the wgmma path), as FlyDSL's
    tile arguments always did. ``stages`` (wgmma/stream) caps the shared-memory ring (default: as many as
    fit); ``max_blocks`` (stream, wgmma) caps the persistent grid (default: one block per SM); ``schedule`` (wgmma):
    ``"cooperative"`` (the consumer warpgroups share each tile) or ``"pingpong"`` (each of two consumer
    warpgroups takes whole tiles in turn, one's epilogue under the other's mainloop); default: ping-pong for
    128x128 and 64x256 tiles, cooperative for the others (:func:`default_schedule`).

    ``streamk`` (stream path): ``"arrive"`` (the default: the last block to arrive at a split tile sums its
    partials) or ``"early"`` (each block works its tiles last first, so that the head of a split tile is done
    and published at a block's start and the block holding its tail adds it before its own last stage; a
    block then takes at least a tile's K stages, so that no tile is split over more than two blocks).
    ``prefill`` (stream path): thread 0 issues the ring's first pass right after initializing the mbarriers
    (default :data:`STREAM_PREFILL`). ``cluster_k`` (stream path): each tile is one thread block cluster of that
    many blocks (2 or 4), block ``r`` taking the ``r``-th share of K; the partials are summed through distributed
    shared memory (no stream-K, no workspace round trips); the tile's K stages and its ``tile_m / 4`` value pairs
    must divide by it. ``b_smem``: the caller will put B's first iterations in shared memory
    (:func:`with_b_smem`), where the mma path's split-K partials are dynamic shared memory, so the default K warps
    are not reduced to fit the 48 KB of static shared memory.

    ``pdl``: the launch the tiles are for (the heuristic's mma decode tile keeps 16 rows under PDL: round 2
    and the final round measured the 8-row tile 0.5 µs slower there).

    Raises ``ValueError`` for what cannot be mapped (dtypes, epilogue, N/K the preshuffled layout cannot
    hold, non-positive tiles, impossible warp splits). Tile values that are merely invalid for the path
    are mapped to the nearest valid one, with a warning said once.
    """
    if in_dtype not in IN_DTYPES:
        raise ValueError(f"in_dtype must be one of {IN_DTYPES}, got {in_dtype!r} (fp4/MXFP4 is AMD gfx950-only)")
    if out_dtype not in OUT_DTYPES:
        raise ValueError(f"out_dtype must be one of {OUT_DTYPES}, got {out_dtype!r}")
    if epilogue not in EPILOGUES:
        raise ValueError(f"epilogue must be one of {EPILOGUES}, got {epilogue!r}")
    if path is not None and path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got {path!r}")
    e = ELEM_BYTES[in_dtype]
    check_weight_shape(N, K, e)
    given = (tile_m, tile_n, tile_k)
    for name, v in zip(("tile_m", "tile_n", "tile_k"), given):
        if v is not None and (type(v) is not int or v <= 0):
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    for name, v in (("stages", stages), ("max_blocks", max_blocks)):
        if v is not None and (type(v) is not int or v < 1):
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    decode_mma = path is None and tile_m is None and heuristic_path(M, N, K, in_dtype, pdl) == "mma"
    if path is None:
        path = heuristic_path(M, N, K, in_dtype, pdl) if tile_m is None else ("wgmma" if tile_m >= 64 else "mma")
    hm, hn, hk = heuristic_tiles(N, K, in_dtype, M, path, pdl)
    if cluster_k not in (None, 1, 2, 4):
        raise ValueError(f"cluster_k must be 1, 2 or 4, got {cluster_k!r}")
    if tile_m is None and path == "stream" and (cluster_k or 1) > 1:  # value pairs a cluster's blocks can share
        hm = next(t for t in stream_tokens_ok(in_dtype) if t >= hm and (t // 4) % cluster_k == 0)
    tile_m = hm if tile_m is None else tile_m
    tile_n = hn if tile_n is None else tile_n
    tile_k = hk if tile_k is None else tile_k
    if schedule not in (None, "cooperative", "pingpong"):
        raise ValueError(f"schedule must be 'cooperative' or 'pingpong', got {schedule!r}")
    if schedule == "pingpong" and path != "wgmma":
        raise ValueError("schedule='pingpong' applies to the wgmma path")
    if (cluster_k or 1) > 1 and path != "stream":
        raise ValueError(f"cluster_k={cluster_k} applies to the stream path")
    if streamk is not None and path != "stream":
        raise ValueError(f"streamk={streamk!r} applies to the stream path (its split tiles)")
    if path == "mma" and max_blocks is not None:
        raise ValueError("max_blocks applies to the stream and wgmma paths (their persistent grids); the mma path's "
                         "grid is one block per tile")  # fmt: skip
    if path in ("wgmma", "stream"):
        if warps is not None:
            raise ValueError(
                f"warps=(...) applies to the mma path; the {path} path has one producer and consumer warpgroups"
            )
        if streamk not in (None, "arrive", "early"):
            raise ValueError(f"streamk must be 'arrive' or 'early', got {streamk!r}")
        if prefill is not None and path != "stream":
            raise ValueError("prefill applies to the stream path (its ring)")
        if path == "stream":
            if c_store not in (None, "direct"):
                raise ValueError(f"c_store={c_store!r}: the stream path stores C directly from registers")
            cfg = _stream_config(in_dtype, out_dtype, epilogue, N, K, tile_m, tile_n, tile_k, stages, max_blocks)
            cfg = cfg._replace(prefill=STREAM_PREFILL if prefill is None else bool(prefill))
            auto_rows = given[1] is None and cfg.tile_n == PANEL_N and cfg.tile_k * cfg.elem_bytes == 2 * ATOM_BYTES
            if cluster_k is None and streamk is None and auto_rows:  # the heuristic's reduction for its 64-row tiles
                mode = stream_mode(N, K, cfg.tile_m, M, in_dtype, pdl)
                cluster_k, streamk = (2 if mode == "cluster" else None), ("early" if mode == "early" else None)
            if streamk == "early":
                cfg = _early_config(cfg, stages)
            if (cluster_k or 1) > 1:
                if streamk == "early" or cfg.iters % cluster_k or (cfg.tile_m // 4) % cluster_k:
                    raise ValueError(
                        f"cluster_k={cluster_k}: {cfg.describe()} needs K stages ({cfg.iters}) and value "
                        f"pairs (tile_m / 4 = {cfg.tile_m // 4}) divisible by it, and no streamk='early'"
                    )
                return _reserve(cfg._replace(cluster_k=cluster_k), stages, cluster_recv_bytes(cfg, cluster_k),
                                f"cluster_k={cluster_k} (the other blocks' partial sums)",
                                "cluster_k=2" if cluster_k > 2 else "no cluster_k")  # fmt: skip
            return cfg if max_blocks else cfg._replace(max_blocks=stream_blocks(N, cfg.tile_m, cfg.tile_n, M))
        if c_store not in (None, "tma", "direct"):
            raise ValueError(f"c_store must be 'tma' or 'direct', got {c_store!r}")
        cfg = _wgmma_config(in_dtype, out_dtype, epilogue, N, K, tile_m, tile_n, tile_k, c_store or "tma", stages,
                            schedule)  # fmt: skip
        return cfg._replace(max_blocks=max_blocks or NUM_SMS)
    if c_store not in (None, "direct"):
        raise ValueError(f"c_store={c_store!r}: the mma path stores C directly from registers")
    if stages is not None:
        raise ValueError("stages applies to the wgmma and stream paths (shared-memory rings); the mma path has none")

    if tile_m != 8 and (tile_m % 16 or tile_m > 128):
        new = min(128, max(16, -(-tile_m // 16) * 16))
        _note(
            ("tile_m", tile_m), f"tile_m={tile_m} is not 8 or a multiple of 16 up to 128 (mma.sync rows); using {new}"
        )
        tile_m = new
    n_ok = [d for d in _divisors(N, 8) if d <= 256]
    if tile_n not in n_ok:
        new = _nearest(tile_n, n_ok)
        _note(
            ("tile_n", N, tile_n), f"tile_n={tile_n} must be a multiple of 8 dividing N={N} (at most 256); using {new}"
        )
        tile_n = new
    kb = K * e
    k_ok = [d // e for d in _divisors(kb, ATOM_BYTES) if d <= 4096]
    if tile_k not in k_ok:
        new = _nearest(tile_k, k_ok)
        _note(
            ("tile_k", K, e, tile_k),
            f"tile_k={tile_k} must be a multiple of {ATOM_BYTES // e} dividing K={K} (whole 128-byte atoms); "
            f"using {new}",
        )
        tile_k = new

    tile_kb = tile_k * e
    if warps is None:
        wm, wn, wk = _warps(tile_m, tile_n, tile_kb)
    else:
        wm, wn, wk = (int(w) for w in warps)
        problems = []
        if min(wm, wn, wk) < 1 or wm * wn * wk > MAX_WARPS:
            problems.append(f"1 to {MAX_WARPS} warps")
        elif max(1, tile_m // 16) % wm or (tile_n // 8) % wn:
            problems.append("warps_m dividing tile_m/16 and warps_n dividing tile_n/8")
        elif tile_kb % (ATOM_BYTES * wk):
            problems.append(f"warps_k dividing tile_k into whole {ATOM_BYTES}-byte atoms")
        if problems:
            raise ValueError(f"warps={warps} for tile {tile_m}x{tile_n}x{tile_k}: need {problems[0]}")
    cfg = GemmConfig(path, in_dtype, out_dtype, epilogue, N, K, tile_m, tile_n, tile_k, wm, wn, wk)
    # fewer K warps: their partials fit static shared memory (with ``b_smem`` they are dynamic, beside B's bytes)
    while warps is None and not b_smem and cfg.warps_k > 1 and mma_partials_bytes(cfg) > MMA_STATIC_SMEM:
        cfg = cfg._replace(warps_k=cfg.warps_k // 2)
    if decode_mma:  # the heuristic's decode kernel: the weight's loads evict first (A stays in L1; round 2)
        cfg = cfg._replace(b_cache=DECODE_B_CACHE)
    if cfg.mt > LIMIT_TILES or cfg.nt > LIMIT_TILES:
        raise ValueError(f"{cfg.describe()}: at most {LIMIT_TILES}x{LIMIT_TILES} mma tiles per warp (registers)")
    return cfg


def _wgmma_config(in_dtype, out_dtype, epilogue, N, K, tile_m, tile_n, tile_k, c_store, stages=None,
                  schedule=None) -> GemmConfig:  # fmt: skip
    """The wgmma configuration (tiles mapped to valid ones, said once); ``schedule`` None: the tile's
    :func:`default_schedule`."""
    e = ELEM_BYTES[in_dtype]
    if tile_m not in (64, 128):
        new = 64 if tile_m < 96 else 128
        _note(
            ("wg_tile_m", tile_m),
            f"tile_m={tile_m}: the wgmma path takes 64 or 128 (one or two consumer warpgroups); using {new}",
        )
        tile_m = new
    n_ok = [d for d in _divisors(N, PANEL_N) if d <= 256]
    if tile_n not in n_ok:
        new = _nearest(tile_n, n_ok)
        _note(
            ("wg_tile_n", N, tile_n),
            f"tile_n={tile_n}: the wgmma path takes a multiple of 64 dividing N={N} (at most 256); using {new}",
        )
        tile_n = new
    k_ok = [d // e for d in (ATOM_BYTES, 2 * ATOM_BYTES) if (K * e) % d == 0]
    if tile_k not in k_ok:
        new = _nearest(tile_k, k_ok)
        _note(
            ("wg_tile_k", K, e, tile_k),
            f"tile_k={tile_k}: the wgmma path stages one or two 128-byte K atoms ({k_ok}); using {new}",
        )
        tile_k = new
    schedule = schedule or default_schedule(tile_m, tile_n)
    if schedule == "pingpong" and tile_m * tile_n > 64 * 256:
        new = 64 if tile_n > 128 else tile_m
        _note(("pp_tile", tile_m, tile_n), f"ping-pong tile {tile_m}x{tile_n}: a warpgroup holds at most 64x256 or "
              f"128x128 accumulators; using tile_m={new}")  # fmt: skip
        tile_m = new
    stage_bytes = (tile_m + tile_n) * tile_k * e
    consumers = 2 if schedule == "pingpong" else tile_m // 64
    # 1 KB: aligning the base to the swizzle period at run time; 16 bytes per stage: its two mbarriers
    budget = SMEM_LIMIT - 1024 - (EPI_BYTES * consumers if c_store == "tma" else 0)
    budget -= 16 * MAX_STAGES
    fit = max(2, min(MAX_STAGES, budget // stage_bytes))
    stages = _stages(stages, fit)
    return GemmConfig("wgmma", in_dtype, out_dtype, epilogue, N, K, tile_m, tile_n, tile_k, 1, 1, 1, stages, c_store,
                      schedule=schedule)  # fmt: skip


def _stages(asked: int | None, fit: int) -> int:
    """``asked`` stages when they fit (at least 2), else the most that fit, said once."""
    if asked is None:
        return fit
    if not 2 <= asked <= fit:
        new = min(max(asked, 2), fit)
        _note(("stages", asked, fit), f"stages={asked}: {fit} fit in shared memory (at least 2); using {new}")
        return new
    return asked


def _map(name: str, key, value: int, ok: list[int], why: str) -> int:
    """``value`` if it is in ``ok``, else the nearest of ``ok`` (said once)."""
    if value in ok:
        return value
    new = _nearest(value, ok)
    _note((name, key, value), f"{name}={value}: {why}; using {new}")
    return new


def stream_tokens_ok(in_dtype: str) -> list[int]:
    """The stream path's valid token tiles (the wgmma N: multiples of 8 up to 256; s8: 8, 16, 24 or a
    multiple of 16)."""
    return [n for n in range(8, 257, 8) if in_dtype != "int8" or n <= 24 or n % 16 == 0]


def _stream_config(in_dtype, out_dtype, epilogue, N, K, tile_m, tile_n, tile_k, stages, max_blocks) -> GemmConfig:
    e = ELEM_BYTES[in_dtype]
    tile_m = _map("tile_m", in_dtype, tile_m, stream_tokens_ok(in_dtype),
                  "the stream path's token tile is the wgmma N (multiples of 8 up to 256; int8: 8, 16, 24 or "
                  "multiples of 16)")  # fmt: skip
    n_ok = [d for d in (16, 32, PANEL_N, 2 * PANEL_N) if N % d == 0]
    tile_n = _map("tile_n", N, tile_n, n_ok, f"the stream path takes 16, 32, 64 or 128 rows of B dividing N={N}")
    k_ok = [d // e for d in (ATOM_BYTES, 2 * ATOM_BYTES) if (K * e) % d == 0]
    tile_k = _map("tile_k", (K, e), tile_k, k_ok, f"the stream path stages one or two 128-byte K atoms ({k_ok})")
    stage_bytes = (tile_m + max(tile_n, PANEL_N)) * tile_k * e  # narrow tiles keep whole m64 tiles in smem
    # 1 KB: aligning the base to the swizzle period; 16 bytes: the reduction's flag; 16 per stage: mbarriers
    budget = SMEM_LIMIT - 1024 - 16
    fit = max(2, min(STREAM_MAX_STAGES, budget // (stage_bytes + 16)))
    stages = _stages(stages, fit)
    blocks = max_blocks or NUM_SMS
    return GemmConfig("stream", in_dtype, out_dtype, epilogue, N, K, tile_m, tile_n, tile_k, 1, 1, 1, stages,
                      "direct", blocks, STREAM_MIN_ITERS)  # fmt: skip


def early_head_bytes(cfg: GemmConfig) -> int:
    """Shared bytes of the split tiles' heads under ``streamk="early"`` (the one fetched, the one published):
    ``tile_m / 2`` accumulators per consumer thread each, and their mbarriers."""
    return 2 * max(1, cfg.tile_n // PANEL_N) * 128 * (cfg.tile_m // 2) * 4 + 16


def cluster_recv_bytes(cfg: GemmConfig, cluster_k: int) -> int:
    """Shared bytes a ``cluster_k`` block receives: the other blocks' shares of its value pairs, and an mbarrier."""
    return (cluster_k - 1) * max(1, cfg.tile_n // PANEL_N) * 128 * (cfg.tile_m // 2 // cluster_k) * 4 + 16


def _reserve(cfg: GemmConfig, stages: int | None, extra: int, what: str, instead: str) -> GemmConfig:
    """``cfg`` with a ring that leaves ``extra`` bytes of shared memory (``stages`` when they still fit); a
    ValueError naming ``what`` needs them, and ``instead`` (the option that needs fewer), where not even two stages
    fit beside them."""
    stage_bytes = (cfg.tile_m + max(cfg.tile_n, PANEL_N)) * cfg.tile_k * cfg.elem_bytes
    room = SMEM_LIMIT - 1024 - 16 - extra
    if room < 2 * (stage_bytes + 16):
        raise ValueError(
            f"{what}: {cfg.describe()} keeps {extra} bytes of shared memory for it beside a ring of at least two "
            f"stages of {stage_bytes} bytes, more than a block's {SMEM_LIMIT}; take a smaller tile (tile_m, tile_n "
            f"or tile_k) or {instead}"
        )
    fit = max(2, min(STREAM_MAX_STAGES, room // (stage_bytes + 16)))
    return cfg._replace(stages=_stages(stages, fit))


def _early_config(cfg: GemmConfig, stages: int | None) -> GemmConfig:
    """``cfg`` with ``streamk="early"``: a block takes at least a tile's K stages, and its ring leaves room for the
    copies of the split tiles' heads (``tile_m / 2`` values per consumer thread each)."""
    cfg = cfg._replace(streamk="early", min_iters=max(cfg.min_iters, cfg.iters))
    return _reserve(cfg, stages, early_head_bytes(cfg), "streamk='early' (the split tiles' heads)", "streamk='arrive'")


MMA_STATIC_SMEM = 48 * 1024  # the mma path's split-K partials are static shared memory (without b_smem)


def mma_partials_bytes(cfg: GemmConfig) -> int:
    """Shared bytes of the mma path's split-K partials: every K-splitting warp but the first stores its sums."""
    return (cfg.warps_k - 1) * cfg.warps_m * cfg.warps_n * cfg.mt * cfg.nt * 32 * 16


def check_mma_partials(cfg: GemmConfig, warps) -> None:
    """A ValueError where the mma path's split-K partials would pass the 48 KB of static shared memory (they are
    static unless ``b_smem`` puts them beside the weight bytes); the default warps never ask for that."""
    if cfg.path == "mma" and not cfg.b_smem and mma_partials_bytes(cfg) > MMA_STATIC_SMEM:
        raise ValueError(
            f"warps={warps}: {cfg.describe()}: the K-splitting warps' partial sums take {mma_partials_bytes(cfg)} "
            f"bytes of shared memory, more than the {MMA_STATIC_SMEM} of static shared memory; use fewer K warps "
            "(warps_k) or leave warps out"
        )


def grid_blocks(cfg: GemmConfig, M: int) -> int:
    """Blocks of a launch for ``M`` rows."""
    return (cfg.N // cfg.tile_n) * math.ceil(M / cfg.tile_m)


assert PANEL_N % 8 == 0
