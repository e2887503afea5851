"""The host side of a cached start of the decode GEMM (issue 11: a cached start < 100 ms), measurable on a CPU.

    python -m benchmarks.gemm_cached_start [runs]

One process fills a fresh disk cache with ``COMPILE_ONLY=1`` (device code made, nothing run: what a GPU host
stores); then ``runs`` fresh processes each time the first call of ``compile_preshuffle_gemm(N=K=4096, fp8,
M=16)`` with ``COMPILE_ONLY=1``: the dependency digest, the disk lookup and the artifact load — everything a
GPU process does before it loads the module and launches. Prints the times and one cProfile (top entries).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = r"""
import sys, time
import ml_dtypes, numpy as np
from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm
fn = compile_preshuffle_gemm(N=4096, K=4096, in_dtype='fp8', M=16)
c = np.zeros(16 * 4096, np.uint16).view(ml_dtypes.bfloat16)
a, b, s = np.zeros(16 * 4096, np.int8), np.zeros(4096 * 4096, np.int8), np.ones(4096, np.float32)
pr = None
if sys.argv[1] == 'prof':
    import cProfile
    pr = cProfile.Profile()
    pr.enable()
t = time.perf_counter()
fn(c, a, b, s[:16], s, c[:0], 16, 4096)
t = time.perf_counter() - t
if pr:
    import io, pstats
    pr.disable()
    o = io.StringIO()
    pstats.Stats(pr, stream=o).sort_stats('cumulative').print_stats(14)
    print('\n'.join(ln[:140] for ln in o.getvalue().splitlines()[6:]))
print('RESULT', t)
"""


def main(runs: int = 5) -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "FLYDSL_RUNTIME_CACHE_DIR": cache, "COMPILE_ONLY": "1", "PYTHONPATH": str(ROOT)}
        env.pop("FLYDSL_RUNTIME_ENABLE_CACHE", None)
        times = []
        for i in range(runs + 2):
            what = "fill" if i == 0 else "prof" if i == runs + 1 else "hit"
            r = subprocess.run([sys.executable, "-c", CODE, what], env=env, capture_output=True, text=True)
            got = [float(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith("RESULT")]
            if not got:
                raise SystemExit(r.stderr[-2000:])
            if what == "hit":
                times.append(got[0])
            if what == "prof":
                print(r.stdout)
            print(f"{what:5s} first call {got[0] * 1e3:7.1f} ms", flush=True)
    print(f"cached first call (host side, {runs} processes): median {statistics.median(times) * 1e3:.1f} ms, "
          f"min {min(times) * 1e3:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
