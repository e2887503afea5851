"""Registers, spills and shared memory of the norm kernels' variants, offline: ``python -m benchmarks.norm_ptxas``.

Each (kernel, row length, dtype, variant) of :mod:`benchmarks.cases.norm_sweep` is compiled to PTX for sm_90a
(``COMPILE_ONLY``: no GPU needed) and assembled by ``ptxas -v``; the table shows what the assembler reports.
A variant that spills (``spill`` > 0) or needs more registers than its block allows (``regs * threads >
65536``) is a bad candidate before any timing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

os.environ["COMPILE_ONLY"] = "1"
os.environ.setdefault("ARCH", "sm_90a")
os.environ["FLYDSL_RUNTIME_ENABLE_CACHE"] = "0"

import ml_dtypes  # noqa: E402

from benchmarks.cases.norm_sweep import KERNELS, VARIANTS, applicable  # noqa: E402
from kernels.norm.norm_common import plan_rows, split_options, vector_width  # noqa: E402

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def ptx_of(kernel: str, n: int, dt: str, plan: dict) -> str:
    build, args, _ = KERNELS[kernel]
    launcher = build(n, dt, plan)
    x = np.zeros((2, n), NP[dt])
    w = np.zeros(n, NP[dt])
    launcher(*args(x, w), 2)
    return launcher._last[1].artifact.ptx


def ptxas(ptx: str, exe: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([exe, "-arch=sm_90a", "-v", src, "-o", os.path.join(d, "k.cubin")], capture_output=True,
                           text=True)  # fmt: skip
    text = r.stdout + r.stderr

    def worst(pattern: str, none: int) -> int:  # over the module's kernels (a launcher's main kernel and its tail)
        return max((int(v) for v in re.findall(pattern, text)), default=none)

    return {
        "regs": worst(r"Used (\d+) registers", -1),
        "spill": worst(r"(\d+) bytes spill stores", 0),
        "smem": worst(r"(\d+) bytes smem", 0),
        "ok": r.returncode == 0,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ptxas", default=shutil.which("ptxas") or "/usr/local/bin/ptxas")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--rows", default="128,512,8192,16384,32768,65536")
    args = ap.parse_args(argv)
    print(f"{'kernel':12s} {'N':>6s} {'dt':4s} {'variant':14s} {'thr':>5s} {'chunks':>6s} {'kept':>4s} "
          f"{'stage KB':>8s} {'regs':>4s} {'spill':>5s} {'smem':>7s}")  # fmt: skip
    for kernel in args.kernels.split(","):
        for n in map(int, args.rows.split(",")):
            for dt in ("bf16", "f32"):
                for name, plan in [("default", {}), *VARIANTS.items()]:
                    if name != "default" and not applicable(name, 4096, n):
                        continue
                    esz = np.dtype(NP[dt]).itemsize
                    opts = split_options({**KERNELS[kernel][2](n, dt), **plan})[0]
                    wts = {"rmsnorm": 1, "rmsnorm+add": 1, "layernorm": 2}.get(kernel, 0)
                    p = plan_rows(n, esz, vector_width(n, esz), **opts, inputs=2 if kernel == "rmsnorm+add" else 1,
                                  weight_tensors=wts)  # fmt: skip
                    r = ptxas(ptx_of(kernel, n, dt, plan), args.ptxas)
                    print(f"{kernel:12s} {n:6d} {dt:4s} {name:14s} {p.block_threads:5d} {p.chunks:6d} {p.kept:4d} "
                          f"{p.staging_bytes(esz) / 1024:8.1f} {r['regs']:4d} {r['spill']:5d} {r['smem']:7d}"
                          + ("" if r["ok"] else "  ptxas FAILED"))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
