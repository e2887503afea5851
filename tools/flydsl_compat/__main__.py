"""Run ROCm FlyDSL's own programs, unmodified, against this package and print a pass/fail table.

Usage (from the repository root)::

    python -m tools.flydsl_compat --flydsl-src DIR [--device cpu|gpu] [--jobs N] [--timeout S]
                                  [--only SUBSTR ...] [--json OUT.json] [--all-kernels]

``DIR`` is a checkout (or ``git archive``) of github.com/ROCm/FlyDSL: its ``examples/``, ``tests/``
and ``kernels/`` are used as they are. Each program runs in its own process with
``PYTHONPATH=DIR:<this repo>`` and the working directory ``DIR``, so FlyDSL's tests import *their*
``kernels.*`` and ``tests.*`` helpers (DIR comes first; it has no top-level ``flydsl`` package, so
``flydsl`` is ours). ``--device cpu`` (the default without a GPU) runs on the CPU interpreter
(``FLYDSL_RUNTIME_KIND=cpu``) with ``cpu_shim/sitecustomize.py`` mapping torch's "cuda" device
strings to the CPU, and the norm tests get FlyDSL's own smaller shape overrides
(``ROCDSL_*_SHAPES``, :data:`~tools.flydsl_compat.programs.CPU_SETTINGS`); ``--device gpu`` runs as
FlyDSL's users would, on the CUDA GPU, at the default shapes.

The programs: ``examples/*.py`` (run as scripts: pass = exit 0 and no ``FAIL`` line),
``tests/system``, ``tests/unit`` and the portable kernel tests (softmax, RMSNorm, LayerNorm, vector
add; ``--all-kernels`` adds every ``tests/kernels`` file), each file run by pytest (pass = no test
failed or errored and at least one passed; a test file that collects no test but is a script — FlyDSL's
dispatch benchmark — is run as the script it is). Programs that exercise AMD-only instructions or FlyDSL's
native C++/MLIR tooling are listed in :data:`~tools.flydsl_compat.programs.NOT_PORTABLE` with the
reason; they run too, but the headline rate counts only the portable ones. Single AMD-only tests of
otherwise portable programs (:data:`~tools.flydsl_compat.programs.NOT_PORTABLE_TESTS`) are deselected,
and the table's note says how many.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .programs import NOT_PORTABLE, PORTABLE_KERNEL_TESTS, Result, run_program

REPO = Path(__file__).resolve().parents[2]


def discover(src: Path, all_kernels: bool) -> list[str]:
    """The matrix: program paths relative to ``src``, in table order."""
    progs = sorted(f"examples/{p.name}" for p in (src / "examples").glob("*.py"))
    for sub in ("tests/system", "tests/unit"):
        progs += sorted(f"{sub}/{p.name}" for p in (src / sub).glob("test_*.py"))
    kern = sorted(p.name for p in (src / "tests/kernels").glob("test_*.py"))
    progs += [f"tests/kernels/{k}" for k in kern if all_kernels or k in PORTABLE_KERNEL_TESTS]
    return progs


def _default_device() -> str:
    sys.path.insert(0, str(REPO))
    try:
        from flydsl.runtime.device import _cuda_available

        return "gpu" if _cuda_available() else "cpu"
    except Exception:
        return "cpu"


def print_table(results: list[Result], device: str) -> None:
    w = max(len(r.program) for r in results)
    print(f"\n{'program':<{w}}  {'status':<7} {'pass':>4} {'fail':>4} {'err':>3} {'skip':>4} {'time':>6}  note")
    for r in results:
        note = r.note if r.status != "PASS" else ""
        if r.program in NOT_PORTABLE:
            note = f"[not portable: {NOT_PORTABLE[r.program]}] {note}"
        if r.deselected:
            note = f"[{r.deselected} AMD-only test(s) deselected] {note}"
        print(
            f"{r.program:<{w}}  {r.status:<7} {r.passed:>4} {r.failed:>4} {r.errors:>3} {r.skipped:>4} "
            f"{r.seconds:>5.0f}s  {note[:160]}"
        )
    port = [r for r in results if r.program not in NOT_PORTABLE]
    ok = sum(r.status == "PASS" for r in port)
    ok_all = sum(r.status == "PASS" for r in results)
    tests_p = sum(r.passed for r in results)
    tests_n = sum(r.passed + r.failed + r.errors for r in results)
    print(
        f"\n[{device}] portable programs: {ok}/{len(port)} pass ({100.0 * ok / max(1, len(port)):.1f}%); "
        f"all programs: {ok_all}/{len(results)}; tests: {tests_p}/{tests_n} passed "
        f"(+{sum(r.skipped for r in results)} skipped, {sum(r.deselected for r in results)} AMD-only deselected)"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.flydsl_compat", description=__doc__.split("\n")[0])
    ap.add_argument("--flydsl-src", required=True, type=Path, help="a checkout of ROCm/FlyDSL")
    ap.add_argument("--device", choices=("cpu", "gpu"), default=None)
    ap.add_argument("--jobs", "-j", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=None, help="seconds per program (cpu 600, gpu 300)")
    ap.add_argument("--only", nargs="*", default=None, help="run programs whose path contains one of these")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    ap.add_argument("--all-kernels", action="store_true", help="every tests/kernels file, not only the portable")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the programs")
    args = ap.parse_args(argv)

    src = args.flydsl_src.resolve()
    device = args.device or _default_device()
    timeout = args.timeout or (600.0 if device == "cpu" else 300.0)
    progs = discover(src, args.all_kernels)
    if args.only:
        progs = [p for p in progs if any(s in p for s in args.only)]
    if not progs:
        print("no programs matched", file=sys.stderr)
        return 2
    for mod, why in (("torch", "nearly every FlyDSL program"), ("pandas", "FlyDSL's tests/test_common.py")):
        if importlib.util.find_spec(mod) is None:
            print(f"warning: {mod} is not importable here; {why} needs it (those programs will fail)", flush=True)
    t0 = time.time()

    def one(p):
        r = run_program(p, src=src, repo=REPO, device=device, timeout=timeout, python=args.python)
        print(f"  {r.status:<7} {p} ({r.seconds:.0f}s)", flush=True)
        return r

    # the kernel tests take longest: start them first so that parallel jobs finish together
    order = sorted(progs, key=lambda p: not p.startswith("tests/kernels/"))
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        done = dict(zip(order, pool.map(one, order)))
    results = [done[p] for p in progs]
    print_table(results, device)
    print(f"wall time {time.time() - t0:.0f}s")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
