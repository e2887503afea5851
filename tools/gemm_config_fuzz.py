"""Random preshuffle-GEMM configurations on the GPU against the reference: ``python -m tools.gemm_config_fuzz``.

Draws ``--count`` configurations of :func:`kernels.gemm.preshuffle_gemm.compile_preshuffle_gemm` (dtypes, epilogue,
path, tiles, and each path's knobs: warps, registers, PDL, weight staging and cache hints on the mma path; schedule,
C store and stages on the wgmma path; stream-K kind, clusters, prefill, grid cap and stages on the stream path —
given to any path, as a user might) over a few problem shapes and row counts, and runs each once through
:func:`kernels.gemm.harness.run_gemm` (FlyDSL's tolerance rule, rows past M pre-filled and checked untouched). A
configuration must compute the right C or be refused by a ValueError that says why (or mapped to a valid one with a
note); a wrong C, a write past row M, any other exception or a hang is a defect. Work is spread over ``--workers``
processes. Prints the counts, every defect and the distinct refusals.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter

from tools.fuzz_pool import error_text, run_workers

SHAPES = [(256, 256), (384, 512), (1024, 1024), (2048, 4096)]  # (N, K)
ROWS = [1, 7, 16, 33, 129, 600]


def configs(count: int, seed: int = 0) -> list[dict]:
    rnd = random.Random(seed)

    def maybe(p, values):
        return rnd.choice(values) if rnd.random() < p else None

    out = []
    for _ in range(count):
        N, K = rnd.choice(SHAPES)
        kw = {
            "in_dtype": rnd.choice(["fp8", "int8", "bf16", "fp16"]),
            "out_dtype": rnd.choice(["bf16", "bf16", "fp16"]),
            "epilogue": rnd.choice(["none", "none", "bias", "bias_relu", "bias_silu", "bias_gelu"]),
            "path": rnd.choice([None, None, "mma", "wgmma", "stream"]),
            "tile_m": maybe(0.6, [16, 32, 64, 128, 256]),
            "tile_n": maybe(0.6, [32, 64, 128, 256]),
            "tile_k": maybe(0.5, [32, 64, 128, 256]),
            "warps": maybe(0.15, [(1, 4, 1), (2, 2, 1), (1, 2, 2), (4, 1, 1)]),
            "maxnreg": maybe(0.1, [64, 128]),
            "pdl": maybe(0.2, [True, "prefetch"]),
            "b_smem": maybe(0.1, [1, 2]),
            "b_cache": maybe(0.1, ["cg", "cs"]),
            "schedule": maybe(0.15, ["cooperative", "pingpong"]),
            "c_store": maybe(0.15, ["tma", "direct"]),
            "stages": maybe(0.15, [2, 3, 4]),
            "min_blocks": maybe(0.1, [1, 2]),
            "streamk": maybe(0.2, ["arrive", "early"]),
            "cluster_k": maybe(0.15, [2, 4]),
            "prefill": maybe(0.15, [True, False]),
            "max_blocks": maybe(0.1, [8, 64]),
        }
        out.append({"M": rnd.choice(ROWS), "N": N, "K": K, **{k: v for k, v in kw.items() if v is not None}})
    return out


def _one(cfg: dict, cuda: bool = True) -> tuple[str, str]:
    import warnings

    from kernels.gemm.harness import run_gemm

    kw = dict(cfg)
    M, N, K, in_dtype = kw.pop("M"), kw.pop("N"), kw.pop("K"), kw.pop("in_dtype")
    tiles = [kw.pop(t, None) for t in ("tile_m", "tile_n", "tile_k")]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = run_gemm(in_dtype, M, N, K, *tiles, cuda=cuda, log=lambda *a: None, **kw)
    except Exception as e:  # noqa: BLE001 - every refusal is recorded with its message
        return "ERR", error_text(e, 220)
    if not res.guard_ok:
        return "BAD", f"wrote past row M ({res.config})"
    return ("ok" if res.ok else "BAD"), f"rel {res.rel_err:.2e} ({res.config})"


def _worker(index: int, workers: int, count: int, seed: int, out: str) -> None:
    res = []
    for i, cfg in enumerate(configs(count, seed)):
        if i % workers == index:
            res.append([cfg, *_one(cfg)])
            json.dump(res, open(out, "w"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0, help="which configurations are drawn")
    ap.add_argument("--workers", type=int, default=15)
    ap.add_argument("--limit", type=float, default=400, help="seconds before unfinished workers are stopped")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--worker", nargs=4, type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _worker(*args.worker, args.out)
        return 0
    os.environ.setdefault("FLYDSL_RUNTIME_CACHE_DIR", tempfile.mkdtemp(prefix="flydsl_gemm_fuzz_"))
    t0, tmp = time.time(), tempfile.mkdtemp()
    outs = [os.path.join(tmp, f"w{i}.json") for i in range(args.workers)]
    head = [sys.executable, "-m", "tools.gemm_config_fuzz", "--worker"]
    cmds = [[*head, str(i), str(args.workers), str(args.count), str(args.seed), "--out", o] for i, o in enumerate(outs)]
    res, stopped = run_workers(cmds, outs, args.limit)
    if args.json:
        json.dump(res, open(args.json, "w"))
    print(f"# {len(res)} of {args.count} configurations in {time.time() - t0:.0f} s ({stopped} workers stopped):",
          dict(Counter(r[1] for r in res)))  # fmt: skip
    for cfg, status, msg in res:
        if status == "BAD" or (status == "ERR" and not msg.startswith("ValueError")):
            print(status, json.dumps(cfg), msg)
    for msg, count in Counter(r[2][:150] for r in res if r[1] == "ERR" and r[2].startswith("ValueError")).most_common():
        print(f"refused x{count}: {msg}")
    bad = [r for r in res if r[1] == "BAD" or (r[1] == "ERR" and not r[2].startswith("ValueError"))]
    return 1 if bad or stopped or len(res) < args.count else 0


if __name__ == "__main__":
    raise SystemExit(main())
