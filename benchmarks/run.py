"""Benchmark entry point: ``python -m benchmarks.run [names...] [--quick] [--reps N] [--tag T]``.

Each module in ``benchmarks/cases/`` defines ``cases(quick: bool) -> list[Case]``; names select
modules (default: all). Needs a CUDA GPU and torch. Writes ``benchmarks/results/<date>-<gpu>.json``,
a markdown table and a PNG plot, and prints a progress line per case.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

from . import cases as cases_pkg
from .harness import copy_bandwidth, run_cases, write_results


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(cases_pkg.__path__) if not m.name.startswith("_"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("names", nargs="*", help=f"case modules ({', '.join(available())})")
    ap.add_argument("--quick", action="store_true", help="fewer shapes")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--tag", default="")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("benchmarks need a CUDA GPU", file=sys.stderr)
        return 2
    names = args.names or available()
    unknown = [n for n in names if n not in available()]
    if unknown:
        print(f"unknown case modules {unknown}; available: {available()}", file=sys.stderr)
        return 2
    copy = copy_bandwidth()
    print(f"[bench] device-to-device copy: {copy:.0f} GB/s", flush=True)
    results = []
    for n in names:
        mod = importlib.import_module(f"benchmarks.cases.{n}")
        done = list(results)
        results += run_cases(
            mod.cases(args.quick),
            copy,
            reps=args.reps,
            on_case=lambda rs, done=done: write_results(done + rs, copy, Path(args.out), args.tag, plot_it=False),
        )
    path = write_results(results, copy, Path(args.out), args.tag)
    print(f"[bench] wrote {path}")
    print(path.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
