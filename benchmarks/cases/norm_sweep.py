"""The norm kernels away from the headline shape (issue 12): long rows, many short rows, few rows.

Softmax, RMSNorm, RMSNorm with the fused residual add and LayerNorm on

* long rows (16K-64K elements, bf16 and f32; 64 MB read per call): ``onchip`` (one read: chunks kept in
  registers or staged in shared memory) against the ``two_pass`` plan it replaces and the ``cluster`` plans
  (a row over 2-8 blocks of a thread block cluster);
* many short rows (N <= 512, 32-64 MB): several row groups per block (``row_iters``);
* few rows (M <= 132): latency; wider or narrower rows per thread.

against torch eager, ``torch.compile`` (one shape per group and kernel: each compiles for seconds) and the
Triton kernels of the per-kernel cases, as back-to-back calls and as CUDA-graph replays (``<impl>:graph``).
flydsl's variants (:data:`VARIANTS`, chosen with ``FLYDSL_NORM_VARIANTS=name,name`` or ``all``) are
``flydsl-<name>`` rows; ``flydsl`` is the default plan. ``nbytes``: one read of each input, one write of each
output (weights once). ``python -m benchmarks.run norm_sweep`` (``--quick``: one shape per group;
``FLYDSL_NORM_SHAPES=long`` or ``short,few``: those groups only, ``long32``: the rows over 16K;
``FLYDSL_NORM_KERNELS=softmax,layernorm``: those kernels only).
"""

from __future__ import annotations

import functools
import os

from ..harness import Case

DEVICE = "cuda"  # tests replace it to dry-run the cases on the interpreter
EPS = {"softmax": None, "rmsnorm": 1e-6, "rmsnorm+add": 1e-6, "layernorm": 1e-5}
ATOL = {"f32": 2e-4, "f16": 1e-2, "bf16": 3e-2}

LONG = [(2048, 16384, "bf16"), (1024, 32768, "bf16"), (512, 65536, "bf16"),
        (1024, 16384, "f32"), (512, 32768, "f32"), (256, 65536, "f32")]  # fmt: skip
SHORT = [(131072, 128, "bf16"), (65536, 512, "bf16"), (65536, 256, "f32")]
FEW = [(1, 8192, "bf16"), (32, 8192, "bf16"), (132, 8192, "bf16"), (132, 4096, "f32")]
QUICK = [(1024, 32768, "bf16"), (65536, 512, "bf16"), (32, 8192, "bf16")]
COMPILE = set(QUICK)  # torch.compile here only: each shape and kernel compiles for seconds

# softmax's stream plan (kernels/norm/softmax_stream.py), chunks of 8 values per thread, no cache hint
_S8 = {"stream": True, "stream_values": 8, "cache_hint": ""}
_PAIR_CS = {"pair_rows": True, "onchip_threads": 1024, "max_registers": 0, "cache_hint": "cs"}
_PAIR_PCS = {**_PAIR_CS, "persist": 1}
_RR = {**_PAIR_CS, "pair_rows": "reread"}  # pairs whose rows' rest is read again for the output
_RR512 = {**_RR, "onchip_threads": 512, "max_registers": 128}
E16 = {"onchip_threads": 1024, "elems_per_thread": 16}  # 1024 threads x 16 values per chunk
_LS = {"stream": True, "cache_hint": "cs", "max_registers": 0}  # LayerNorm's stream plan, streaming hints
_LS512 = {**_LS, "stream_threads": 512, "stream_values": 8, "stream_kept": 64, "max_registers": 128}
# name -> plan options; which shapes each applies to is :func:`applicable`
VARIANTS = {
    "r3": {"shape_defaults": False},  # the plans before the per-shape rules (round 3): the "before" of round 4
    "two_pass": {"long_rows": "two_pass"},
    "onchip512": {"onchip_threads": 512},
    "onchip512k16": {"onchip_threads": 512, "kept_values": 16},  # fewer registers: more blocks per SM
    "t1024": {"register_limit": 8192},  # 16K rows: 1024 threads, 16 values each, instead of 512 x 32
    "iters2": {"row_iters": 2},
    "iters4": {"row_iters": 4},
    "bt512": {"block_threads": 512},
    "ept8": {"elems_per_thread": 8, "max_row_threads": 1024},
    "ept32": {"elems_per_thread": 32},
    # a row over a thread block cluster (sm_90), partials through distributed shared memory: 16K / 8K columns
    # per block (64K f32: 4 / 8 blocks per row)
    "cluster": {"long_rows": "cluster"},
    "cluster8k": {"long_rows": "cluster", "cluster_cols": 8192},
    # two blocks of 512 threads per SM (one row's reduction hides behind the other's memory traffic): rows
    # over 16K in 512-thread onchip chunks, registers capped at 64 (ptxas alone takes 70-120 for softmax)
    "o512r64": {"onchip_threads": 512, "max_registers": 64},
    "r64": {"max_registers": 64},  # 16K rows (512 threads): two blocks per SM where ptxas took more than 64
    # a persistent grid (2 blocks of 512 threads or 1 of 1024 per SM) looping over rows, the next row's chunks
    # prefetched into shared memory (cp.async) during this row's reduction and output
    "persist": {"persist": 2},
    "persist512": {"persist": 2, "onchip_threads": 512},  # rows over 16K: 2 persistent blocks of 512 per SM
    "cs": {"cache_hint": "cs"},  # the rows' loads and stores streaming (ld/st.global.cs: evict first)
    "persist_cs": {"persist": 2, "cache_hint": "cs"},
    "early": {"persist": 2, "prefetch_early": True},  # the next row's copies before this row's stats
    "early_cs": {"persist": 2, "prefetch_early": True, "cache_hint": "cs"},
    "persist_b32": {"persist": 2, "load_values": 32},  # 64K rows: loads in batches of 32 values (fewer registers)
    # the weights in shared memory, copied once per persistent block (not re-read from L2 for every row)
    "wsmem": {"persist": 2, "weights_smem": True},
    "wsmem_cs": {"persist": 2, "weights_smem": True, "cache_hint": "cs"},
    # 32K rows in registers (1024 threads x 32 values, one chunk): softmax computes each exp once, not twice
    "p32k": {"persist": 2, "register_limit": 32768, "max_row_threads": 1024},
    "e32k": {"persist": 2, "register_limit": 32768, "max_row_threads": 1024, "prefetch_early": True},
    "persist_r64": {"persist": 2, "max_registers": 64},
    # softmax (issue 12, 32K/64K rows): the (max, sum) reduction with one ex2 per stage, not two per level
    "lr": {"light_reduce": True},
    # softmax's stream plan (kernels/norm/softmax_stream.py): a persistent block per SM, the next row's chunks
    # loaded into each kept chunk's registers and staged slot as soon as this row's output frees them, and its
    # first staged chunks copied into spare slots while this row is reduced; chunks of 8 or 16 values per
    # thread, 32 or 16 values per thread in registers (the rest staged in a ring of shared-memory slots)
    "s8": {**_S8, "stream_kept": 32},
    "s8cs": {**_S8, "stream_kept": 32, "cache_hint": "cs"},
    "s16": {**_S8, "stream_values": 16, "stream_kept": 32},
    "s8k16": {**_S8, "stream_kept": 16},
    "s8k0": {**_S8, "stream_kept": 0},
    "s8k48": {**_S8, "stream_kept": 48},
    # f32: each chunk's exps replace its values (one ex2 per element); 24 in registers (32 spill)
    "s8x": {**_S8, "stream_kept": 24, "stream_exps": True},
    "s16cs": {**_S8, "stream_values": 16, "stream_kept": 32, "cache_hint": "cs"},
    # s8 with a ring of 5 (160 KB of shared memory, one chunk early): does the L1 left beside the ring matter (the
    # kept chunks' loads go through it)? s8 takes 224 KB (28 KB of L1 left), s16 192 KB
    "s8r5": {**_S8, "stream_kept": 32, "ring": 5},
    "again": {},  # the default plan timed a second time, last: the run's own noise
    "before": {"before": True},  # softmax, LayerNorm: the per-shape plans before the stream plan / re-read pairs
    # 64K bf16: persistent at chunks of 8 values (those of round 2's whole-row schedule, since removed)
    "p8lr": {"persist": 2, "elems_per_thread": 8, "light_reduce": True},
    # LayerNorm: two rows per block of 1024 threads, each thread the same columns of both, so each W and B chunk is
    # read once for the two rows (rows of at most 128 KB, where both rows' staged chunks fit); no register cap
    "pair": {"pair_rows": True, "onchip_threads": 1024, "max_registers": 0},
    "pair_cs": _PAIR_CS,
    "pair_csk8": {**_PAIR_CS, "kept_values": 16},
    # 512 threads with up to 128 registers each (the block still alone on its SM): 32 values of each row kept
    "pair_512cs": {**_PAIR_CS, "onchip_threads": 512, "max_registers": 128, "kept_values": 64},
    # (round 3: pair_512cs the fastest pair) loads of 128 values per batch; 48 values of each row kept; 256 threads
    # with up to 255 registers, 64 values of each row kept
    "pair_512l": {**_PAIR_CS, "onchip_threads": 512, "max_registers": 128, "kept_values": 64, "load_values": 128},
    "pair_512k96": {**_PAIR_CS, "onchip_threads": 512, "max_registers": 128, "kept_values": 96},
    "pair_256": {**_PAIR_CS, "onchip_threads": 256, "max_registers": 255, "kept_values": 128},
    "o512cs": {"onchip_threads": 512, "max_registers": 64, "cache_hint": "cs"},  # one row, 2 blocks of 512 per SM
    # 32K bf16 (64 KB rows): a pair-block of 512 threads takes 96 KB, so two fit an SM (one covers the other's
    # reduction and start, as the one-row plans' two blocks do)
    "pair_2b": {**_PAIR_CS, "onchip_threads": 512, "max_registers": 64, "persist": 0},
    # persistent: one pair-block per SM looping over pairs, the next pair's staged chunks copied in (cp.async)
    # while this pair is written
    "pair_p": {"pair_rows": True, "onchip_threads": 1024, "max_registers": 0, "persist": 1},
    "pair_pcs": _PAIR_PCS,
    # with streaming hints (round 1: pair_cs 4-8% faster than pair; from round 3 the next pair's staged chunks go
    # through registers, ld.global.cs, instead of cp.async): fewer values of each row kept in registers,
    # more staged: 8 (f32: 2 chunks of 4, 192 KB; bf16: 1 chunk of 8, 224 KB), 4 (f32: 1 chunk, 224 KB)
    "pair_pk8": {**_PAIR_PCS, "kept_values": 16},
    "pair_pk4": {**_PAIR_PCS, "kept_values": 8},
    # 512 threads with up to 128 registers each (the block still alone on its SM): 32 values of each row kept
    "pair_p512": {**_PAIR_PCS, "onchip_threads": 512, "max_registers": 128, "kept_values": 64},
    # the next pair's staged chunks also reduced during this pair's output, 2 chunks after their copies started
    # (the memory idles only through the kept chunks' statistics and the reduction, not every chunk's)
    "pair_pl": {**_PAIR_PCS, "pair_lag": 2},
    "pair_pk8l": {**_PAIR_PCS, "kept_values": 16, "pair_lag": 2},
    # rows over 16K in 1024-thread onchip chunks of 16 or 8 values per thread (16 or 32 kept in registers): all of a
    # row's loads in flight at once (the by-product of the weights-multicast rounds, docs/kernels.md)
    "e16": E16,
    "e8": {"onchip_threads": 1024, "elems_per_thread": 8},
    "e16k16": {**E16, "kept_values": 16},
    "e8k16": {"onchip_threads": 1024, "elems_per_thread": 8, "kept_values": 16},
    # the same for two blocks of 512 threads per SM (the 64K bf16 default's geometry): 16 or 8 values per chunk
    "o512e16": {"onchip_threads": 512, "elems_per_thread": 16, "max_registers": 64},
    "o512e8": {"onchip_threads": 512, "elems_per_thread": 8, "max_registers": 64},
    # the LayerNorm f32 long-row plan before the lnmc rounds (1024 threads x 32 values per chunk, 32 kept)
    "e32": {"onchip_threads": 1024, "elems_per_thread": 32, "kept_values": 32},
    # LayerNorm's stream plan (kernels/norm/row_stream.py, softmax's ring schedule): a persistent block per SM, the
    # next row's chunks loaded into each kept chunk's registers and staged slot as soon as this row's output frees
    # them; chunks of 8 or 16 values per thread, ``k``: values per thread in registers (default 32), ``a``: W and B
    # loaded a chunk ahead (the first chunk's through the reduction), ``nc``: no streaming hints on X and Y, ``c``: a
    # block's last next row clamped to the last row, so the kept chunks' loads are unpredicated and carry the hint;
    # ``ls512``: blocks of 512 threads with up to 128 registers (64 values kept)
    "ls8": {**_LS, "stream_values": 8, "stream_kept": 32},
    "ls8c": {**_LS, "stream_values": 8, "stream_kept": 32, "stream_clamp": True},
    "ls8k16c": {**_LS, "stream_values": 8, "stream_kept": 16, "stream_clamp": True},
    "ls8k24c": {**_LS, "stream_values": 8, "stream_kept": 24, "stream_clamp": True},
    "ls16c": {**_LS, "stream_values": 16, "stream_kept": 32, "stream_clamp": True},
    "ls512c": {**_LS512, "stream_clamp": True},
    "ls8a": {**_LS, "stream_values": 8, "stream_kept": 32, "stream_wb_ahead": True},
    "ls8k16": {**_LS, "stream_values": 8, "stream_kept": 16},
    "ls8k24": {**_LS, "stream_values": 8, "stream_kept": 24},
    "ls8k0": {**_LS, "stream_values": 8, "stream_kept": 0},  # 16-bit rows: everything staged
    "ls8nc": {**_LS, "stream_values": 8, "stream_kept": 32, "cache_hint": ""},
    "ls16": {**_LS, "stream_values": 16, "stream_kept": 32},
    "ls16k16": {**_LS, "stream_values": 16, "stream_kept": 16},  # 16-bit rows (f32: 3 staged 64 KB chunks)
    "ls512": _LS512,
    "ls512a": {**_LS512, "stream_wb_ahead": True},
    "ls512k32": {**_LS512, "stream_kept": 32},
    "ls512v16": {**_LS512, "stream_values": 16},
    # one-shot pairs of rows longer than a pair's chip (64K f32: 2 x 256 KB): each W and B chunk read once for the two
    # rows, each row's chunks beyond the registers and shared memory read for the statistics without the hint (they
    # stay in L2) and read again, first, for the output (1024 threads: 5 of 16 chunks per row; 512 threads with 128
    # registers, 64 or 96 values kept: 10 or 6 of 32; 256 threads with 255 registers, 128 kept: 20 of 64)
    "pair_rr": _RR,
    "pair_rr512": {**_RR, "onchip_threads": 512, "max_registers": 128, "kept_values": 64},
    "pair_rr512k96": {**_RR, "onchip_threads": 512, "max_registers": 128, "kept_values": 96},
    "pair_rr256": {**_RR, "onchip_threads": 256, "max_registers": 255, "kept_values": 128},
    # (round 3) the re-read chunks written last, each loaded once a kept chunk's registers are free (the default of
    # re-read pairs since; ``f``: first, loaded at use, as in round 2); 80 values kept (8 re-read of 32); ``w2``: W and
    # B two chunks ahead
    "pair_rr512k96f": {**_RR512, "kept_values": 96, "reread_first": True},
    "pair_rr512k96b": {**_RR512, "kept_values": 96},  # the same kernel as pair_rr512k96, timed again
    "pair_rr512k80": {**_RR512, "kept_values": 80},
    "pair_rr512w2": {**_RR512, "pair_wb_ahead": 2},
    "pair_rr512k80w2": {**_RR512, "kept_values": 80, "pair_wb_ahead": 2},
    "pair_rr512k96w2": {**_RR512, "kept_values": 96, "pair_wb_ahead": 2},
    # (round 4) one-shot pairs whose staged chunks are copied straight to their slots (cp.async: no registers held in
    # flight; the other chunks' loads as before): the re-read pairs, and the pairs that fit (64K bf16)
    "pair_rr512k80a": {**_RR512, "kept_values": 80, "pair_async": True},
    "pair_rr512k96a": {**_RR512, "kept_values": 96, "pair_async": True},
    "pair_512csa": {**_PAIR_CS, "onchip_threads": 512, "max_registers": 128, "kept_values": 64, "pair_async": True},
    "pair_csa": {**_PAIR_CS, "pair_async": True},
    # 64K bf16: two pair-blocks of 512 threads per SM, 64 registers and half the shared memory each (1 kept, 7 staged,
    # 8 re-read of 16 chunks per row), so that one block's start and reduction hide behind the other's traffic
    "pair_rr2b": {**_RR, "pair_rows": "reread2", "onchip_threads": 512, "max_registers": 64, "kept_values": 16},
    # RMSNorm (without the fused add) on the same schedule
    "rs8c": {**_LS, "stream_values": 8, "stream_kept": 32, "stream_clamp": True},
    "rs16c": {**_LS, "stream_values": 16, "stream_kept": 32, "stream_clamp": True},
    "rs512c": {**_LS512, "stream_clamp": True},
}


SOFTMAX_ONLY = ("lr", "s8", "s8cs", "s16", "s16cs", "s8k16", "s8k0", "s8k48", "s8x", "s8r5", "p8lr")


def applicable(name: str, M: int, N: int, dt: str | None = None, kernel: str | None = None) -> bool:
    """Whether variant ``name`` is timed at ``M x N`` (of ``dt``, for ``kernel``, where they are given)."""
    if name in SOFTMAX_ONLY and kernel not in (None, "softmax"):
        return False
    if name.startswith("ls"):  # LayerNorm's stream plan: rows over 32K (16-bit only: all staged, 16 kept)
        return kernel in (None, "layernorm") and N > 32768 and (name not in ("ls8k0", "ls16k16") or dt != "f32")
    if name.startswith("rs"):  # RMSNorm's
        return kernel in (None, "rmsnorm") and N > 32768
    if name == "r3":
        return N >= 16384
    if name in ("lr", "s8", "s8cs", "s16", "s16cs", "s8k16", "again"):
        return N > 16384
    if name == "s8k0":  # everything staged (64K f32, 256 KB, does not fit)
        return 16384 < N <= 32768
    if name == "s8k48":  # 48 values in registers: 16-bit rows (f32 ones spill)
        return N > 32768 and dt in (None, "bf16", "f16")
    if name == "before":  # where the rules differ (64K): softmax's and LayerNorm's
        return N > 32768 and kernel in (None, "softmax", "layernorm")
    if name == "p8lr":
        return N > 32768 and dt in (None, "bf16", "f16")
    if name == "s8r5":  # 64K f32 (4 staged chunks of 32 KB)
        return N > 32768 and dt in (None, "f32")
    if name == "s8x":  # exps in place of the values: f32 rows
        return N > 16384 and dt in (None, "f32")
    if name in ("two_pass", "onchip512", "onchip512k16", "o512r64", "o512cs", "persist512"):
        return N > 16384
    if name.startswith("pair"):  # (LayerNorm's: the others refuse pair_rows)
        return N > 16384 and kernel in (None, "layernorm")
    if name == "persist_b32":
        return N > 32768
    if name in ("p32k", "e32k"):
        return N == 32768
    if name in ("t1024", "r64"):
        return N == 16384
    if name in ("persist", "persist_r64", "cs", "persist_cs", "early", "early_cs", "wsmem", "wsmem_cs"):
        return N >= 16384
    if name in ("cluster", "e16", "e8", "e16k16", "e8k16", "e32", "o512e16", "o512e8"):
        return N > 16384
    if name == "cluster8k":
        return N >= 16384
    if name in ("iters2", "iters4", "bt512"):
        return N <= 512
    return M <= 132  # ept8, ept32


def _build_softmax(n, dt, plan):
    from kernels.norm.softmax_kernel import build_softmax_module

    return build_softmax_module(0, n, dt, **plan)


def _build_rmsnorm(n, dt, plan):
    from kernels.norm.rmsnorm_kernel import build_rmsnorm_module

    return build_rmsnorm_module(n, dt, EPS["rmsnorm"], **plan)


def _build_fused(n, dt, plan):
    from kernels.norm.rmsnorm_kernel import build_fused_add_rmsnorm_module

    return build_fused_add_rmsnorm_module(n, dt, EPS["rmsnorm+add"], **plan)


def _build_layernorm(n, dt, plan):
    from kernels.norm.layernorm_kernel import build_layernorm_module

    return build_layernorm_module(n, dt, EPS["layernorm"], **plan)


def _defaults(kernel: str):
    """``(N, dtype) -> the kernel's default plan options`` (its per-shape defaults included)."""
    from kernels.norm import layernorm_kernel, rmsnorm_kernel, softmax_kernel

    if kernel == "rmsnorm+add":
        return lambda n, dt: rmsnorm_kernel.plan_defaults(n, dt, fused_add=True)
    mod = {"softmax": softmax_kernel, "layernorm": layernorm_kernel}.get(kernel, rmsnorm_kernel)
    return mod.plan_defaults


# kernel -> (build(N, dtype, plan), the launcher's arguments but M from (x, w), its plan defaults(N, dtype))
KERNELS = {
    "softmax": (_build_softmax, lambda x, w: (x, x), {}),
    "rmsnorm": (_build_rmsnorm, lambda x, w: (x, w, x), {}),
    "rmsnorm+add": (_build_fused, lambda x, w: (x, x, w, x, x), {}),
    "layernorm": (_build_layernorm, lambda x, w: (x, w, w, x), {}),
}
for _k in KERNELS:
    KERNELS[_k] = (KERNELS[_k][0], KERNELS[_k][1], _defaults(_k))


@functools.cache
def launcher(kernel: str, n: int, dt: str, plan: tuple):
    """One launcher per configuration: every input set reuses its compiled kernel."""
    return KERNELS[kernel][0](n, dt, dict(plan))


def _timing() -> str:
    """``FLYDSL_NORM_TIMING``: ``both`` (default: back-to-back calls and CUDA-graph replays), ``graph`` (replays
    only: kernel times, for decisive variant sweeps in little device time) or ``b2b``."""
    t = os.environ.get("FLYDSL_NORM_TIMING", "both").strip() or "both"
    if t not in ("both", "graph", "b2b"):
        raise ValueError(f"FLYDSL_NORM_TIMING must be both, graph or b2b, got {t!r}")
    return t


def _selected() -> list[str]:
    sel = os.environ.get("FLYDSL_NORM_VARIANTS", "all").strip()
    if sel in ("", "none"):
        return []
    return list(VARIANTS) if sel == "all" else [v for v in sel.split(",") if v in VARIANTS]


def _torch_ref(kernel, torch, F):
    """(eager function, the formula torch.compile fuses) of ``kernel`` over the inputs tuple."""
    if kernel == "softmax":
        f = lambda x, r, w, b: torch.softmax(x, dim=-1)  # noqa: E731
        return f, f
    if kernel == "layernorm":
        return (lambda x, r, w, b: F.layer_norm(x, (x.shape[-1],), w, b, EPS[kernel])), None

    def formula(x, r, w, b):
        s = x + r if kernel == "rmsnorm+add" else x
        xf = s.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS[kernel]) * w.float()).to(x.dtype)

    if kernel == "rmsnorm":
        return (lambda x, r, w, b: F.rms_norm(x, (x.shape[-1],), w, EPS[kernel])), formula

    def eager_add(x, r, w, b):
        s = x + r
        return F.rms_norm(s, (x.shape[-1],), w, EPS[kernel]), s

    return eager_add, formula


def _triton(kernel):
    from . import layernorm, rmsnorm, softmax

    if kernel == "softmax":
        tri = softmax.triton_softmax()
        return lambda x, r, w, b, y, s: tri(x, y)
    if kernel == "layernorm":
        tri = layernorm.triton_layernorm()
        return lambda x, r, w, b, y, s: tri(x, w, b, y)
    tri = rmsnorm.triton_rmsnorm()
    if kernel == "rmsnorm":
        return lambda x, r, w, b, y, s: tri(x, w, y)
    return lambda x, r, w, b, y, s: tri(x, w, y, r, s)


def _flydsl_call(kernel, compiled, inp, y, s, M):
    x, r, w, b = inp[:4]
    if kernel == "softmax":
        return lambda: compiled(x, y, M)
    if kernel == "rmsnorm":
        return lambda: compiled(x, w, y, M)
    if kernel == "layernorm":
        return lambda: compiled(x, w, b, y, M)
    return lambda: compiled(x, r, w, y, s, M)


def _case(kernel: str, M: int, N: int, dt: str, quick: bool) -> Case:
    import torch
    import torch.nn.functional as F

    import flydsl.compiler as flyc

    from ._graph import graphed

    t = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dt]
    nan = float("nan")
    eager, formula = _torch_ref(kernel, torch, F)
    n_in = 2 if kernel == "rmsnorm+add" else 1
    n_out = 2 if kernel == "rmsnorm+add" else 1
    weights = {"softmax": 0, "layernorm": 2}.get(kernel, 1)
    nbytes = ((n_in + n_out) * M * N + weights * N) * t.itemsize

    def make_inputs():
        inp = _make_inputs()
        checked[0] = checked[0] or inp  # the first set: variants are checked on it
        return inp

    def _make_inputs():
        x = torch.randn(M, N, device=DEVICE, dtype=t) * (2 if kernel == "softmax" else 1)
        r = torch.randn(M, N, device=DEVICE, dtype=t) if kernel == "rmsnorm+add" else x
        w, b = torch.rand(N, device=DEVICE, dtype=t), torch.randn(N, device=DEVICE, dtype=t)
        outs = [torch.full_like(x, nan) for _ in range(6)]  # flydsl's y and sum, triton's, the copy's
        return (x, r, w, b, *outs)

    def flydsl(inp, plan=(), graph=False):
        x, r, w, b, y, s = inp[:6]
        args = {"softmax": (x, y), "rmsnorm": (x, w, y), "layernorm": (x, w, b, y)}.get(kernel, (x, r, w, y, s))
        compiled = flyc.compile(launcher(kernel, N, dt, plan), *args, M)
        thunk = _flydsl_call(kernel, compiled, inp, y, s, M)
        if plan and inp is checked[0]:  # every variant's output is checked, not only the last
            y.fill_(nan)
            s.fill_(nan)
            thunk()
            check(inp, triton_too=False)
        return graphed(thunk) if graph else thunk

    def torch_eager(inp, graph=False):
        thunk = functools.partial(eager, *inp[:4])
        return graphed(thunk) if graph else thunk

    def torch_compile(inp, graph=False):
        fn = torch.compile(formula or eager)
        fn(*inp[:4])
        thunk = functools.partial(fn, *inp[:4])
        return graphed(thunk) if graph else thunk

    def triton(inp, graph=False):
        run = _triton(kernel)
        x, r, w, b, _, _, yt, st = inp[:8]
        thunk = functools.partial(run, x, r, w, b, yt, st)
        return graphed(thunk) if graph else thunk

    def copy(inp, graph=False):
        """The same bytes through torch's device copy (x to y; with the fused add also r to s): the memory
        ceiling at this shape, ramp-up and tail included."""
        x, r, y, s = inp[0], inp[1], inp[8], inp[9]
        thunk = (lambda: (y.copy_(x), s.copy_(r))) if kernel == "rmsnorm+add" else (lambda: y.copy_(x))
        return graphed(thunk) if graph else thunk

    checked = [None]

    def check(inp, triton_too=True):
        x, r, w, b, y, s, yt, st = inp[:8]
        want = eager(x.float(), r.float(), w.float(), b.float())
        if kernel == "rmsnorm+add":
            want = F.rms_norm((x + r).float(), (N,), w.float(), EPS[kernel])
            if not torch.equal(s, x + r):
                raise AssertionError("flydsl: residual sum differs from x + r")
        for name, got in (("flydsl", y), ("triton", yt)):
            if name != "flydsl" and (not triton_too or got.isnan().all()):
                continue  # that alternative did not run here (reported as failed)
            err = (got.float() - want).abs().max().item()
            if not err <= ATOL[dt]:
                raise AssertionError(f"{name} {kernel} max error {err:.3e} > {ATOL[dt]}")

    timing = _timing()
    variants = [v for v in _selected() if applicable(v, M, N, dt, kernel)]
    impls = {}
    if timing != "graph":
        impls.update({"flydsl": flydsl, "torch": torch_eager, "triton": triton})
        if (M, N, dt) in COMPILE:
            impls["torch.compile"] = torch_compile
        for v in variants:
            impls[f"flydsl-{v}"] = functools.partial(flydsl, plan=tuple(sorted(VARIANTS[v].items())))
        if (M, N, dt) in LONG:
            impls["copy"] = copy
    if timing != "b2b":
        if (M, N, dt) in COMPILE and timing == "both":
            impls["torch.compile:graph"] = functools.partial(torch_compile, graph=True)
        impls["flydsl:graph"] = functools.partial(flydsl, graph=True)
        impls["torch:graph"] = functools.partial(torch_eager, graph=True)
        impls["triton:graph"] = functools.partial(triton, graph=True)
        if (M, N, dt) in LONG:
            impls["copy:graph"] = functools.partial(copy, graph=True)
        if N <= 16384 or timing == "graph":  # short kernels (or a replay-only sweep): the variants' kernel times
            for v in variants:
                plan = tuple(sorted(VARIANTS[v].items()))
                impls[f"flydsl-{v}:graph"] = functools.partial(flydsl, plan=plan, graph=True)
    return Case(kernel, (M, N), dt, nbytes, make_inputs, impls, check)


GROUPS = {"long": LONG, "short": SHORT, "few": FEW, "quick": QUICK, "long32": [s for s in LONG if s[1] > 16384],
          "rows128k": [s for s in LONG if s[1] * (4 if s[2] == "f32" else 2) == 131072]}  # fmt: skip
GROUPS["rows64k"] = sorted([s for s in LONG if s[1] == 65536], key=lambda s: s[2] != "f32")  # 64K f32, 64K bf16
GROUPS["long64"] = sorted(GROUPS["long32"], key=lambda s: (-s[1], s[2] != "f32"))  # 64K f32 first, then 64K bf16
# long rows of lengths that are not powers of two (the last chunk masked; where the 64-register plans spilled and
# LayerNorm bf16 ran at 50-65% of the copy, session 19): opt in with FLYDSL_NORM_SHAPES=ragged
GROUPS["ragged"] = [(1536, 20000, "bf16"), (1024, 30000, "bf16"), (512, 49160, "bf16"), (512, 65528, "bf16"),
                    (768, 40000, "f32"), (256, 57000, "f32")]  # fmt: skip


def _shapes(quick: bool) -> list[tuple]:
    """``--quick``: :data:`QUICK`; else ``FLYDSL_NORM_SHAPES`` (``long,short,few,quick`` or ``all``, the default)."""
    if quick:
        return QUICK
    sel = os.environ.get("FLYDSL_NORM_SHAPES", "all").strip() or "all"
    names = list(GROUPS)[:3] if sel == "all" else sel.split(",")
    unknown = [g for g in names if g not in GROUPS]
    if unknown:
        raise ValueError(f"FLYDSL_NORM_SHAPES: unknown group(s) {unknown}; choose from {', '.join(GROUPS)} or all")
    return [s for g in names for s in GROUPS[g]]


def _kernels() -> list[str]:
    """``FLYDSL_NORM_KERNELS``: a comma-separated subset of :data:`KERNELS` (default: all)."""
    sel = os.environ.get("FLYDSL_NORM_KERNELS", "").strip()
    if not sel or sel == "all":
        return list(KERNELS)
    unknown = [k for k in sel.split(",") if k not in KERNELS]
    if unknown:
        raise ValueError(f"FLYDSL_NORM_KERNELS: unknown kernel(s) {unknown}; choose from {', '.join(KERNELS)}")
    return sel.split(",")


def cases(quick: bool) -> list[Case]:
    shapes = _shapes(quick)
    # shape-major: a run cut short still has every kernel on the shapes it reached
    # (the run's first case is timed twice, the first pass discarded: benchmarks.harness.run_cases)
    return [_case(k, M, N, dt, quick) for M, N, dt in shapes for k in _kernels()]
