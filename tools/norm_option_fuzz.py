"""Random norm builder options on the CPU interpreter: ``python -m tools.norm_option_fuzz --seed 0 --count 300``.

Each case draws a kernel (softmax, RMSNorm, the fused add, LayerNorm), a short row (1-4096 elements, f32 or bf16), a
few rows and a random set of the builders' options (plan_rows', the stream plan's, the tail's and a few-rows plan,
itself random) — mostly valid values, now and then an invalid one (a zero, a negative, a thread count that is not a
power of two). A case must give the right rows or a ValueError raised by the kernel library (``kernels/``) that names
the option; wrong rows, any other exception (a ZeroDivisionError inside a trace, a launch the interpreter refuses) or a
DSL error is a defect, printed with its seed and options. No GPU: tools/norm_plan_fuzz.py runs the named plans on one.
Session 22 found with it: ``cluster_cols=0`` (a division by zero inside the trace) and ``block_threads`` over 1024
(refused only at launch); with its reviewer, thread counts that are not powers of two (wrong rows).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys

from tools.fuzz_pool import REPO, error_text, raised_in

_BAD = {"elems_per_thread": [0, -4], "block_threads": [0, 2048], "register_limit": [-5], "max_row_threads": [0, 48],
        "chunk_threads": [96], "long_rows": ["bogus"], "onchip_threads": [2048], "kept_values": [-1],
        "load_values": [0], "row_iters": [0], "cluster_cols": [0], "persist": [-1], "sms": [-1], "tail_blocks": [-1],
        "tail_spread": [1]}  # fmt: skip
_GOOD = {
    "elems_per_thread": [1, 2, 3, 4, 8, 12, 16, 32, 64], "block_threads": [32, 64, 96, 128, 256, 512, 1024],
    "register_limit": [0, 256, 1000, 4096, 16384], "max_row_threads": [32, 64, 128, 256, 512, 1024],
    "chunk_threads": [32, 64, 128, 256], "long_rows": ["onchip", "two_pass", "cluster"],
    "onchip_threads": [32, 64, 128, 256], "kept_values": [0, 1, 4, 8, 16, 24, 48], "load_values": [1, 8, 16, 40, 64],
    "row_iters": [1, 2, 3], "cluster_cols": [256, 512, 700, 1024, 2048], "persist": [0, 1, 2, 3],
    "sms": [0, 1, 2, 3, 4, 5], "prefetch_early": [True, False], "weights_smem": [True, False], "cache_hint": ["", "cs"],
    "balance_chunks": [True, False], "tail_cols": [0, 256, 640, 1024], "tail_blocks": [0, 4, 16, 264],
    "tail_rounds": [0, 1, 2], "tail_spread": [True, False], "tail_regs": [0, 64, 255],
}  # fmt: skip


def options(r: random.Random, kernel: str, few: bool = True) -> dict:
    """A random option set for ``kernel`` (each option drawn with probability 1/2; 3% of the drawn ones invalid)."""
    o = {"shape_defaults": r.random() < 0.5}
    for name, good in _GOOD.items():
        if r.random() < 0.5:
            o[name] = r.choice(_BAD[name]) if name in _BAD and r.random() < 0.03 else r.choice(good)
    if kernel == "layernorm" and r.random() < 0.3:
        o["pair_rows"], o["pair_lag"] = r.choice([True, False, "reread"]), r.choice([0, 1, 2])
    if kernel != "rmsnorm+add" and r.random() < 0.2:
        o.update(stream=True, stream_values=r.choice([4, 8, 16]), stream_threads=r.choice([32, 64, 128]),
                 stream_kept=r.choice([0, 8, 16, 32]))  # fmt: skip
    if few and r.random() < 0.25:
        plan = {k: v for k, v in options(r, kernel, False).items()
                if k not in ("shape_defaults", "tail_blocks", "tail_rounds", "tail_spread", "tail_regs")}  # fmt: skip
        o.update(few_rows=r.choice([3, (2, 4), (5, 9)]), few_plan=plan)
    return o


def case(seed: int) -> tuple[str, str]:
    """Run case ``seed``: ``("ok" | "refused" | "defect", what)``; a defect's ``what`` describes it."""
    for d in (os.path.join(REPO, "tests"), os.path.join(REPO, "tests", "kernels")):  # (norm_cases and its helpers)
        if d not in sys.path:
            sys.path.insert(0, d)
    from norm_cases import check_rows, kernel_args

    from benchmarks.cases.norm_sweep import KERNELS

    r = random.Random(seed)
    k = r.choice(list(KERNELS))
    n, dt, m = r.choice([1, 7, 64, 500, 1000, 2500, 3001, 4096]), r.choice(["f32", "bf16"]), r.choice([1, 2, 3, 5, 9])
    o = options(r, k)
    what = f"seed {seed}: {k} {m} x {n} {dt} {json.dumps(o, default=str)}"
    try:
        inputs, y, ro, args = kernel_args(k, m, n, dt)
        KERNELS[k][0](n, dt, dict(o))(*args)
        check_rows(k, inputs, y, ro, 1e-4 if dt == "f32" else 3e-2)
    except ValueError as e:
        if not raised_in(e).startswith("kernels"):
            return "defect", f"DSL ERROR {what}: {error_text(e, 300)}"
        return "refused", str(e).splitlines()[0][:100]
    except AssertionError as e:
        return "defect", f"WRONG ROWS {what}: {e}"
    except Exception as e:  # noqa: BLE001 - every other failure is the defect this tool looks for
        return "defect", f"{type(e).__name__} {what}: {str(e)[:300]}"
    return "ok", what


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=200)
    args = ap.parse_args(argv)
    os.environ["FLYDSL_RUNTIME_KIND"] = "cpu"
    results = [case(s) for s in range(args.seed, args.seed + args.count)]
    defects = [w for kind, w in results if kind == "defect"]
    for d in defects:
        print(d, flush=True)
    counts = {k: sum(kind == k for kind, _ in results) for k in ("ok", "refused", "defect")}
    print(
        f"# {args.count} cases from seed {args.seed}: {counts['ok']} right, {counts['refused']} refused by the "
        f"kernel library, {len(defects)} defect(s)"
    )
    return 1 if defects else 0


if __name__ == "__main__":
    raise SystemExit(main())
