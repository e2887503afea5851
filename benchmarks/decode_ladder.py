"""Where a decode GEMM's time goes: a ladder of kernels from the plain read of the weight to the full GEMM.

    PYTHONPATH=. python -m benchmarks.decode_ladder [--budget 130] [--plan ladder|final]

One H200 call (CUDA-graph replays over inputs larger than L2, as :mod:`benchmarks.gemm_decode_round`), per
decode problem and launch mode (plain, and programmatic dependent launch):

1. the read ceiling (:func:`benchmarks.read_ceiling.read_launcher`: every thread issues all its 16-byte
   loads at once; 132 blocks of 512 threads);
2. the mma path's kernel with stages left out (``probe``, :mod:`kernels.gemm.gemm_mma_sync`): ``b`` the
   weight's loads only (the GEMM's addresses, grid and loop), ``mma`` + widening and the mma chain, ``a`` +
   the activations' loads, ``red`` + the warps' reduction through shared memory, ``late`` the whole GEMM with
   the epilogue's operands loaded after the reduction (before this revision), then the GEMM itself;
   ``/mNN`` variants (``.minnctapersm``: ptxas keeps every load of the first iterations in flight);
3. candidate configurations against cuBLAS (the decode table's columns).

The difference between neighbouring rungs is what that stage costs. Stops adding measurements after
``--budget`` seconds; compact table last, ``decode_ladder.{md,json}`` in ``$OUT_DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

PROBE_STEPS = ["b/m2", "b", "mma", "a", "red", "late", "full", "full/m2"]
# (N, K, Ms, variant), in the order measured (the budget may cut the tail): candidates for the defaults, timed
# beside cuBLAS. /kN: the first N K iterations' weight bytes bulk-copied into shared memory at the start.
CANDIDATES_FIRST = [
    (4096, 4096, (1, 16), "auto"),
    (4096, 4096, (1,), "8x32x1024:1,1,8@mma/k4"),
    (4096, 4096, (16,), "16x32x1024:1,1,8@mma/k4"),
    (4096, 4096, (1, 16), "_x32x1024:1,1,8@mma/k3"),
    (4096, 4096, (1,), "8x32x1024:1,1,8@mma/m2/k3/pdl"),
    (4096, 4096, (16,), "16x32x1024:1,1,8@mma/m2/k3/pdl"),
    (4096, 4096, (1, 16), "auto/pdl"),
    (4096, 4096, (1, 16), "auto/pdlpf"),
    (4096, 4096, (1, 16), "_x32x1024:1,1,8@mma/m2/pdlpf"),
]
CANDIDATES = [
    (7168, 2048, (1, 16, 32), "auto"),
    (7168, 2048, (1, 16), "_x64x1024:1,1,8@mma/k2"),
    (7168, 2048, (1, 16), "_x8x1024:1,1,8@mma/k2"),
    (7168, 2048, (1, 16, 32), "auto/pdl"),
    (7168, 2048, (1, 16, 32), "auto/m2/pdl"),
    (4096, 4096, (32,), "auto"),
    (4096, 4096, (32,), "32x32x1024:1,1,8@mma/k4"),
    (4096, 4096, (32,), "auto/pdl"),
    (4096, 4096, (32,), "_x_x_@stream/m2/pdl"),
    (4096, 4096, (1,), "8x32x4096:1,1,16@mma/m1"),
    (4096, 4096, (16,), "16x32x4096:1,1,16@mma/m1"),
    (4096, 4096, (8,), "auto"),
    (4096, 4096, (8,), "8x32x1024:1,1,8@mma/k4"),
    (4096, 4096, (8,), "8x32x1024:1,1,8@mma/m2/k3/pdl"),
    (4096, 4096, (32,), "32x32x4096:2,1,8@mma/m1"),
]
# --plan sweep (round 2): the defaults and candidates per decode shape, every M, in this order
_M4, _M3 = (1, 8, 16, 32), (1, 8, 16)
SWEEP = [
    (4096, 4096, _M4, "auto"),
    (4096, 4096, _M4, "auto/pdl"),
    (7168, 2048, _M4, "auto"),
    (7168, 2048, _M4, "auto/pdl"),
    (7168, 2048, _M4, "auto/m2/pdl"),
    (4096, 4096, (32,), "32x64x256@stream"),
    (4096, 4096, (32,), "32x128x256@stream"),
    (4096, 4096, (32,), "32x64x256@stream/pdl"),
    (4096, 4096, (32,), "32x64x256@stream/m2/pdl"),
    (4096, 4096, (32,), "32x128x256@stream/pdl"),
    (4096, 4096, (32,), "auto/m2/pdl"),
    (7168, 2048, (16, 32), "_x128x256@stream"),
    (7168, 2048, (16, 32), "_x128x256@stream/pdl"),
    (7168, 2048, (16, 32), "_x128x256@stream/m2/pdl"),
    (7168, 2048, _M4, "_x32x256@stream"),
    (7168, 2048, _M4, "_x32x256@stream/pdl"),
    (4096, 4096, (1, 8), "8x16x1024:1,1,8@mma"),
    (4096, 4096, (1, 8), "8x16x1024:1,1,8@mma/pdl"),
    (4096, 4096, _M3, "_x16x2048:1,1,8@mma"),
    (4096, 4096, _M3, "_x16x2048:1,1,8@mma/m2"),
    (4096, 4096, _M3, "_x16x2048:1,1,8@mma/pdl"),
    (4096, 4096, _M3, "_x32x2048:1,1,16@mma"),
    (4096, 4096, _M3, "_x32x2048:1,1,16@mma/pdl"),
    (4096, 4096, (1, 8), "8x32x1024:1,1,8@mma/k4"),
    (4096, 4096, (16,), "16x32x1024:1,1,8@mma/k4"),
    (4096, 4096, _M3, "_x32x2048:1,1,16@mma/k2"),
    (4096, 4096, _M3, "_x32x1024:1,1,8@mma/m2/k3/pdl"),
    (4096, 4096, (1, 8), "8x32x1024:1,1,8@mma/m2/k3/pdl"),
    (4096, 4096, (1, 8), "8x16x1024:1,1,8@mma/m3/pdl"),
    (4096, 4096, _M3, "auto/m3/pdl"),
    (4096, 4096, _M3, "_x_x_@mma/bcs"),
    (4096, 4096, _M3, "_x_x_@mma/bcg"),
    (4096, 4096, _M3, "_x_x_@mma/m2/bcs"),
    (4096, 4096, _M3, "auto/bcs/pdl"),
    (4096, 4096, _M4, "_x_x_@stream"),
    (4096, 4096, _M4, "_x_x_@stream/pdl"),
    (4096, 4096, _M3, "_x_x_@stream/m2/pdl"),
    (4096, 4096, _M3, "auto/pdlpf"),
    (7168, 2048, (1, 8), "8x32x1024:1,1,8@mma"),
    (7168, 2048, (1, 16), "_x32x2048:1,2,8@mma/pdl"),
    (10240, 8192, (1, 32), "auto"),
    (10240, 8192, (1, 32), "auto/pdl"),
    (4096, 4096, _M4, "auto"),  # again: the spread between two measurements of one kernel in one run
    (7168, 2048, _M4, "auto"),
]
# --plan stream: where the stream path's time goes beyond the read (10240 x 8192 first), then 4096 x 4096 with each
# tile's K split over a cluster of 2 or 4 blocks (/cN, reduced in distributed shared memory). (N, K, M, variant, probe):
# probe "b" the ring only, "mma" + the wgmmas, "nored" + the epilogue without the split tiles' reduction, "" the
# GEMM (checked, beside cuBLAS). Read ceilings are (N, K, 0, "read"|"bulk", blocks).
_EARLY = ("_x64x256@stream/early", "_x64x128@stream/early")  # 64-row tiles, split tiles' heads first
_R5 = "_x128x256@stream/nopf"  # the 10240 x 8192 default before this session (round 1's "auto")
STREAM_PLAN = [
    (10240, 8192, 0, "read", 132),
    (10240, 8192, 0, "bulk", 132),
    (10240, 8192, 0, "bulk", 128),
    *[(10240, 8192, 1, _R5, p) for p in ("b", "mma", "nored", "")],
    *[(10240, 8192, 1, v, "") for v in _EARLY],
    *[(10240, 8192, 32, _R5, p) for p in ("b", "mma", "nored", "")],
    *[(10240, 8192, 32, v, "") for v in _EARLY],
    *[(4096, 4096, M, v, "") for M in (1, 8, 16, 32) for v in ("auto", "_x64x256@stream/c2")],
    *[(4096, 4096, M, "_x128x256@stream/c4", "") for M in (16, 32)],
    *[(10240, 8192, 1, v, p) for v, ps in (("_x64x128@stream", ("b", "nored", "")), ("_x64x256@stream", ("b", "")),
                                           ("_x128x128@stream", ("b", ""))) for p in ps],
    *[(10240, 8192, 16, v, p) for v, p in ((_R5, "nored"), (_R5, ""), (_EARLY[0], ""))],
    *[(10240, 8192, 32, v, p) for v, p in (("_x64x128@stream", "b"), ("_x64x256@stream", ""))],
]  # fmt: skip

# --plan stream2 (round 2): streamk="early" with the head fetched in the background against the default, every M;
# 4096 x 4096 cluster_k=2 probes (the stream path's fixed cost at a small weight)
_C2 = "_x64x256@stream/c2"
STREAM_PLAN2 = [
    (10240, 8192, 0, "read", 132),
    *[(10240, 8192, M, v, "") for M in (1, 8, 16, 32) for v in ("auto", _EARLY[0])],
    (4096, 4096, 0, "read", 132),
    *[(4096, 4096, M, v, p) for M, vps in ((16, (("auto", ""), (_C2, "b"), (_C2, "mma"), (_C2, ""))),
                                           (32, (("auto", ""), (_C2, "b"), (_C2, ""))), (1, ((_C2, "b"),)))
      for v, p in vps],
]  # fmt: skip

# --plan stream3 (round 3): "early" with both heads in the background, cluster_k=2 with st.async, /pf (the ring's
# first pass issued right after the mbarriers' init) against the defaults; the 64-row stream-K floor (nored)
_E, _EP = _EARLY[0], _EARLY[0] + "/pf"
STREAM_PLAN3 = [
    (10240, 8192, 0, "read", 132),
    *[(10240, 8192, 1, v, p) for v, p in (("auto", ""), (_E, ""), (_EP, ""), ("_x64x256@stream", "nored"))],
    *[(10240, 8192, 32, v, p) for v, p in (("auto", ""), (_E, ""), (_EP, ""), ("_x64x256@stream", "nored"))],
    (4096, 4096, 0, "read", 132),
    *[(4096, 4096, M, v, "") for M in (16, 32) for v in ("auto", _C2, _C2 + "/pf")],
    *[(10240, 8192, M, v, "") for M in (8, 16) for v in ("auto", _EP)],
    *[(4096, 4096, 1, v, "") for v in ("auto", _C2 + "/pf")],
    *[(7168, 2048, M, v, "") for M in (1, 32) for v in ("auto", "auto/pf")],
]

# --plan stream4 (round 4): where the early kernel's last microsecond goes (probes in its order), then the new defaults
# at every decode shape and M beside the read ceilings and the previous 10240 x 8192 default
STREAM_PLAN4 = [
    (10240, 8192, 0, "read", 132),
    *[(10240, 8192, 1, v, p) for v, p in (("auto", ""), (_E, "b"), (_E, "mma"), ("_x64x256@stream", "nored"),
                                          (_R5, ""))],
    *[(10240, 8192, M, "auto", "") for M in (8, 16, 32)],
    (4096, 4096, 0, "read", 132),
    *[(4096, 4096, M, "auto", "") for M in (1, 8, 16, 32)],
    (7168, 2048, 0, "read", 132),
    *[(7168, 2048, M, "auto", "") for M in (1, 8, 16, 32)],
]  # fmt: skip

# (N, K, M, variant): PDL chains (copy -> GEMM, GEMM -> GEMM) against both references
# (N, K, M, variant, write_b): B written by the copy before each GEMM — pdl="prefetch" must stay right; pdl=True
# (the promise broken on purpose) shows whether the race is real
PDL_CHECKS = [
    (4096, 4096, 16, "16x32x1024:1,1,8@mma/m2/k3/pdl", False),
    (4096, 4096, 16, "auto/pdlpf", True),
    (4096, 4096, 16, "16x32x1024:1,1,8@mma/m2/pdlpf", True),
    (4096, 4096, 16, "auto/pdl", True),
    (4096, 4096, 1, "8x32x1024:1,1,8@mma/m2/k3/pdl", False),
    (7168, 2048, 16, "auto/m2/pdl", False),
    (4096, 4096, 32, "32x64x256@stream/m2/pdl", False),
    (7168, 2048, 32, "_x128x256@stream/m2/pdl", False),
]
# (N, K, M, variant): the default's epilogue operands loaded late (before this revision) beside early
LATE = [(7168, 2048, 1, "auto"), (7168, 2048, 32, "auto"), (4096, 4096, 32, "auto")]


def row_line(r) -> str:
    """One candidate row, the variant in full."""
    ok = "y" if r.ok else "N"
    return (f"{r.M:>2}x{r.N}x{r.K:<5} {r.variant:34s} {ok} {r.us:6.2f} us  cuBLAS {r.cublas_us:6.2f}  "
            f"x{r.speedup:4.2f}  {r.pct_roofline:3.0f}% {r.note[:60]}")  # fmt: skip


def probe_launcher(N: int, K: int, M: int, step: str, pdl: bool):
    """The launcher of ladder rung ``step`` (``PROBE_STEPS``) for the default mma tile of ``N x K`` at ``M``."""
    from kernels.gemm.gemm_fit import with_min_blocks
    from kernels.gemm.gemm_mma_sync import build_mma_sync_gemm
    from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm

    name, _, opt = step.partition("/")
    cfg = compile_preshuffle_gemm(N=N, K=K, in_dtype="fp8", M=M, path="mma", pdl=pdl).gemm_config
    if opt:
        cfg = with_min_blocks(cfg, int(opt[1:]))
    return build_mma_sync_gemm(cfg, None if name == "full" else name)


def late_launcher(N: int, K: int, M: int, variant: str):
    """``variant``'s kernel with the epilogue's operands loaded after the main loop (probe ``"late"``)."""
    from benchmarks.cases.preshuffle_gemm import variant_kwargs
    from kernels.gemm.gemm_mma_sync import build_mma_sync_gemm
    from kernels.gemm.gemm_stream import build_stream_gemm
    from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm

    cfg = compile_preshuffle_gemm(N=N, K=K, in_dtype="fp8", M=M, **variant_kwargs(variant, M, N)).gemm_config
    return build_stream_gemm(cfg, probe="late") if cfg.path == "stream" else build_mma_sync_gemm(cfg, "late")


def time_probe(N, K, M, step, pdl, iters) -> tuple[float, str]:
    """µs per call of a probe (or the full GEMM, checked) in a CUDA graph over inputs larger than L2."""
    from kernels.gemm.harness import run_gemm

    fn = late_launcher(N, K, M, step[5:]) if step.startswith("late:") else probe_launcher(N, K, M, step, pdl)
    r = run_gemm("fp8", M, N, K, launch_fn=fn, cuda=True, bench=True, graph=True, iters=iters, warmup=3,
                 log=lambda *a, **k: None)  # fmt: skip
    full = step.startswith(("full", "late"))
    return r.us, ("ok" if r.ok else "WRONG") if full else "-"


def stream_probe_launcher(N: int, K: int, M: int, variant: str, probe: str):
    """``variant``'s stream-path kernel built as probe ``probe`` (:data:`kernels.gemm.gemm_stream.STREAM_PROBES`)."""
    from benchmarks.cases.preshuffle_gemm import variant_kwargs
    from kernels.gemm.gemm_stream import build_stream_gemm
    from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm

    cfg = compile_preshuffle_gemm(N=N, K=K, in_dtype="fp8", M=M, **variant_kwargs(variant, M, N)).gemm_config
    if cfg.path != "stream":
        raise ValueError(f"{variant} at {M}x{N}x{K} is not on the stream path ({cfg.describe()})")
    return build_stream_gemm(cfg, probe=probe)


def time_bulk_ceiling(nbytes: int, blocks: int) -> float:
    """µs of the bulk-copy read ceiling (16-KB pieces, 12 slots) on ``blocks`` blocks."""
    import math

    import torch

    from benchmarks.read_ceiling import _graph_us, _reads, bulk_read_launcher

    out = torch.zeros(4, dtype=torch.int32, device="cuda")
    bufs = [torch.randint(-(2**31), 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device="cuda")
            for _ in range(max(2, math.ceil(110e6 / nbytes)))]  # fmt: skip
    us = _graph_us(_reads(bufs, out, bulk_read_launcher(nbytes, blocks, 16384, 12)))
    del bufs
    torch.cuda.empty_cache()
    return us


def time_ceiling(nbytes: int, pdl: bool) -> float:
    import math

    import torch

    from benchmarks.read_ceiling import _graph_us, _reads, read_launcher

    out = torch.zeros(4, dtype=torch.int32, device="cuda")
    bufs = [torch.randint(-(2**31), 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device="cuda")
            for _ in range(max(2, math.ceil(110e6 / nbytes)))]  # fmt: skip
    us = _graph_us(_reads(bufs, out, read_launcher(nbytes, 132, 512, 16, pdl)))
    del bufs
    torch.cuda.empty_cache()
    return us


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=130.0)
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--ms", default="1,16")
    ap.add_argument("--shapes", default="4096x4096")
    ap.add_argument("--no-candidates", action="store_true")
    ap.add_argument("--plan", default="ladder", choices=("ladder", "sweep", "stream", "stream2", "stream3", "stream4"),
                    help="ladder: round 1 (ladder, candidates, PDL checks); sweep: ceilings, SWEEP; stream: "
                         "STREAM_PLAN (the stream path's probes and grids)")  # fmt: skip
    ap.add_argument("--only", default="", help="--plan stream: only the items whose variant contains one of these "
                    "','-separated strings")  # fmt: skip
    ap.add_argument("--skip", default="", help="--plan stream: leave out the items whose variant contains one of these")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    import torch

    from benchmarks.cases.preshuffle_gemm import hbm_bandwidth, measure

    out = Path(os.environ.get("OUT_DIR") or os.environ.get("OUT") or "/tmp")
    bw = hbm_bandwidth()
    commit = os.environ.get("GEMM_COMMIT") or os.popen("git rev-parse --short HEAD 2>/dev/null").read().strip()
    print(f"[ladder] HBM copy bandwidth {bw / 1e9:.0f} GB/s, commit {commit}", flush=True)
    ladder = []  # (shape, M, mode, step, us, note)

    def over() -> bool:
        return time.perf_counter() - t0 > args.budget

    rows, cublas = [], {}

    def rung(shape, M, mode, step):
        N, K = (int(x) for x in shape.split("x"))
        try:
            if M == 0:
                us, note = time_ceiling(N * K, mode == "pdl"), "-"
            else:
                us, note = time_probe(N, K, M, step, mode == "pdl", args.iters)
        except Exception as ex:  # reported, the others still run
            us, note = float("nan"), f"FAILED {type(ex).__name__}: {str(ex)[:120]}"
        ladder.append((shape, M, mode, step, us, note))
        print(f"ladder {shape} M={M or '-'} {mode:5s} {step:22s} {us:6.2f} us {note}", flush=True)
        torch.cuda.empty_cache()

    def candidate(N, K, M, v):
        cub = cublas.get((N, K, M))
        r = measure("decode", "fp8", M, N, K, v, bw, iters=args.iters, log=lambda *a, **k: None, cublas=cub is None)
        if cub is None:
            cublas[(N, K, M)] = r.cublas_us
        else:
            r.cublas_us = cub
        rows.append(r)
        print(row_line(r), flush=True)
        torch.cuda.empty_cache()

    def ladder_tasks(mode):
        for shape in args.shapes.split(","):
            yield (rung, shape, 0, mode, "read ceiling 132x512")
            for M in (int(m) for m in args.ms.split(",")):
                for step in PROBE_STEPS:
                    yield (rung, shape, M, mode, step)

    def candidate_tasks(cands):
        for N, K, ms, v in () if args.no_candidates else cands:
            for M in ms:
                yield (candidate, N, K, M, v)

    checks = []

    def pdl_check(N, K, M, v, write_b):
        from benchmarks.gemm_decode_round import pdl_chain_check

        try:
            checks.append(pdl_chain_check(N, K, M, v, write_b))
        except Exception as ex:  # reported, not fatal
            checks.append(f"pdl-check {M}x{N}x{K} {v}: ERROR {type(ex).__name__}: {str(ex)[:200]}")
        print(checks[-1], flush=True)

    def stream_item(N, K, M, v, probe):
        """One STREAM_PLAN entry: a read ceiling, a probe kernel, or the GEMM beside cuBLAS."""
        shape = f"{N}x{K}"
        if M and not probe:
            candidate(N, K, M, v)
            r = rows[-1]
            ladder.append((shape, M, "plain", f"{v} full", r.us, "ok" if r.ok else "WRONG"))
            return
        try:
            if M == 0:
                us = time_ceiling(N * K, False) if v == "read" else time_bulk_ceiling(N * K, probe)
                step = f"{v} ceiling {probe} blocks"
            else:
                from kernels.gemm.harness import run_gemm

                fn = stream_probe_launcher(N, K, M, v, probe)
                us = run_gemm("fp8", M, N, K, launch_fn=fn, cuda=True, bench=True, graph=True, iters=args.iters,
                              warmup=3, log=lambda *a, **k: None).us  # fmt: skip
                step = f"{v} {probe}"
            note = "-"
        except Exception as ex:  # reported, the others still run
            us, note, step = float("nan"), f"FAILED {type(ex).__name__}: {str(ex)[:120]}", f"{v} {probe}"
        ladder.append((shape, M, "plain", step, us, note))
        print(f"stream {shape} M={M or '-'} {step:28s} {us:6.2f} us {note}", flush=True)
        torch.cuda.empty_cache()

    late = ((rung, f"{N}x{K}", M, "plain", f"late:{v}") for N, K, M, v in LATE)
    pdl_checks = ((pdl_check, *c) for c in PDL_CHECKS)
    if args.plan.startswith("stream"):
        only, skip = [x for x in args.only.split(",") if x], [x for x in args.skip.split(",") if x]
        plans = {"stream": STREAM_PLAN, "stream2": STREAM_PLAN2, "stream3": STREAM_PLAN3, "stream4": STREAM_PLAN4}
        items = [it for it in plans[args.plan]
                 if (not only or any(o in it[3] for o in only)) and not any(k in it[3] for k in skip)]  # fmt: skip
        plan = [((stream_item, *item) for item in items)]
    elif args.plan == "sweep":
        ceilings = ((rung, "4096x4096", 0, mode, "read ceiling 132x512") for mode in ("plain", "pdl", "plain"))
        plan = [ceilings, candidate_tasks(SWEEP), pdl_checks]
    else:
        plan = [ladder_tasks("plain"), candidate_tasks(CANDIDATES_FIRST), pdl_checks, ladder_tasks("pdl"), late,
                candidate_tasks(CANDIDATES)]  # fmt: skip
    for tasks in plan:
        for fn, *task in tasks:
            if over():
                print(f"[ladder] budget spent: {task} and the rest not measured", flush=True)
                break
            fn(*task)
    meta = {"commit": commit, "hbm_gbps": bw / 1e9, "gpu": torch.cuda.get_device_name()}
    lines = [
        f"# decode ladder, {meta['gpu']} (commit {commit}), HBM copy {bw / 1e9:.0f} GB/s",
        "",
        "| B | M | launch | rung | µs | % of the copy roofline | note |",
        "|---|---|---|---|---|---|---|",
    ]

    def pct(shape, us):
        n, k = (int(x) for x in shape.split("x"))
        return 100 * n * k / bw / (us * 1e-6)

    for shape, M, mode, step, us, note in ladder:
        lines.append(f"| {shape} | {M or '-'} | {mode} | {step} | {us:.2f} | {pct(shape, us):.0f} | {note} |")
    from benchmarks.cases.preshuffle_gemm import table

    text = "\n".join(lines) + "\n\n" + (table(rows) if rows else "") + "\n"
    (out / "decode_ladder.md").write_text(text)
    (out / "decode_ladder.json").write_text(json.dumps({"meta": meta, "ladder": ladder, "checks": checks,
                                                         "rows": [r.__dict__ for r in rows]}, indent=1))  # fmt: skip
    print("\n" + "=" * 90)
    print(f"decode ladder, {time.perf_counter() - t0:.0f} s, HBM copy {bw / 1e9:.0f} GB/s, commit {commit}")
    for shape, M, mode, step, us, note in ladder:
        print(f"{shape:10s} M={M or '-':>2} {mode:5s} {step:22s} {us:6.2f} us {pct(shape, us):4.0f}% {note}")
    for line in checks:
        print(line)
    for r in rows:
        print(row_line(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
