"""Every named norm plan on the GPU against torch: ``python -m tools.norm_plan_fuzz`` (needs CUDA and torch).

Each variant of :data:`benchmarks.cases.norm_sweep.VARIANTS` and :data:`benchmarks.norm_ragged.VARIANTS` (and the
default) x softmax / RMSNorm / fused add / LayerNorm x row lengths (odd, ragged, power-of-two neighbours, longer
than 64K) x f32 / bf16 (f16 at the odd length) x a few row counts is built, run once and compared with torch in
float64. A plan must give the right rows or refuse with a ValueError that names what is wrong; a wrong row (``BAD``),
any other exception, a CUDA error or a hang is a defect. Work is spread over ``--workers`` processes (each its own
CUDA context). Prints the counts, every BAD row and the distinct error messages (what a user asking for that plan
reads; an error the DSL raised from inside a kernel's trace is named with its file, so only the kernel library's own
ValueErrors count as refusals). Session 20 found with it: wrong rows from ``light_reduce`` over a cluster, a negative
re-read count, a stream plan's cp.async of 2 bytes, and options rejected by a TypeError from inside the trace.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter

from benchmarks.norm_ragged import reference
from tools.fuzz_pool import error_text, run_workers

LENGTHS = (3001, 20000, 65528, 100000)
KERNEL_NAMES = ("softmax", "rmsnorm", "rmsnorm+add", "layernorm")


def configs(lengths=LENGTHS, plans: str = ""):
    """Every (kernel, plan name, plan, length, dtype, rows); ``plans``: only the plans whose names start with one of
    these comma-separated prefixes (e.g. ``default,nr_tail``)."""
    from benchmarks.cases.norm_sweep import VARIANTS
    from benchmarks.norm_ragged import VARIANTS as RAGGED

    variants = {"default": {}, **VARIANTS, **{"nr_" + k: v for k, v in RAGGED.items()}}
    if plans:
        variants = {k: v for k, v in variants.items() if k.startswith(tuple(plans.split(",")))}
    return [
        (k, name, plan, n, dt, M)
        for k in KERNEL_NAMES
        for name, plan in variants.items()
        for n in lengths
        for dt in (("f32", "bf16", "f16") if n == min(lengths) else ("f32", "bf16"))
        for M in ((1, 3, 40, 150, 300) if n == 65528 else (3,))  # (40, 150: the few-rows plans and their tails)
    ]


def _one(k, plan, n, dt, M, seed):
    import torch

    from benchmarks.cases.norm_sweep import KERNELS

    t = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dt]
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(M, n, device="cuda", dtype=t, generator=g) * 2
    r = torch.randn(M, n, device="cuda", dtype=t, generator=g)
    w = torch.rand(n, device="cuda", dtype=t, generator=g) + 0.5
    b = torch.randn(n, device="cuda", dtype=t, generator=g)
    y, ro = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    args = {"softmax": (x, y, M), "rmsnorm": (x, w, y, M), "rmsnorm+add": (x, r, w, y, ro, M),
            "layernorm": (x, w, b, y, M)}[k]  # fmt: skip
    try:
        KERNELS[k][0](n, dt, dict(plan))(*args)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - every refusal is recorded with its message
        return "ERR", error_text(e, 200)
    want, s = reference(k, x, r, w, b)
    err = ((y.double() - want).abs().max() / want.abs().max()).item()
    bad = not err < (1e-4 if dt == "f32" else 2e-2) or (s is not None and not torch.equal(ro, s))
    return ("BAD" if bad else "ok"), f"{err:.2e}"


def _worker(index: int, workers: int, out: str, plans: str = "") -> None:
    res = []
    for i, (k, name, plan, n, dt, M) in enumerate(configs(plans=plans)):
        if i % workers == index:
            res.append([k, name, n, dt, M, *_one(k, plan, n, dt, M, i)])
            if len(res) % 20 == 0:
                json.dump(res, open(out, "w"))
    json.dump(res, open(out, "w"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=15)
    ap.add_argument("--limit", type=float, default=400, help="seconds before unfinished workers are stopped")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--plans", default="", help="only plans whose names start with these (comma-separated)")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _worker(int(args.worker[0]), int(args.worker[1]), args.worker[2], args.plans)
        return 0
    os.environ.setdefault("FLYDSL_RUNTIME_CACHE_DIR", tempfile.mkdtemp(prefix="flydsl_fuzz_"))
    t0, tmp = time.time(), tempfile.mkdtemp()
    outs = [os.path.join(tmp, f"w{i}.json") for i in range(args.workers)]
    cmd = [sys.executable, "-m", "tools.norm_plan_fuzz", "--plans", args.plans, "--worker"]
    res, stopped = run_workers([[*cmd, str(i), str(args.workers), o] for i, o in enumerate(outs)], outs, args.limit)
    if args.json:
        json.dump(res, open(args.json, "w"))
    total = len(configs(plans=args.plans))
    print(f"# {len(res)} of {total} configurations in {time.time() - t0:.0f} s ({stopped} workers stopped):",
          dict(Counter(r[5] for r in res)))  # fmt: skip
    for r in res:
        if r[5] == "BAD":
            print("BAD", *r[:5], r[6])
    for msg, count in Counter(r[6] for r in res if r[5] == "ERR").most_common():
        print(f"ERR x{count}: {msg}")
    bad = sum(r[5] == "BAD" for r in res) + sum(r[5] == "ERR" and not r[6].startswith("ValueError") for r in res)
    return 1 if bad or stopped or len(res) < total else 0


if __name__ == "__main__":
    raise SystemExit(main())
