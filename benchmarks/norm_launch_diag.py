"""Each launch of a norm launcher at a row count, with its blocks, threads, shared memory, registers and, for cluster
kernels, how many of its clusters run at once: ``python -m benchmarks.norm_launch_diag`` (GPU).

Session 23 found with it that the tails' clusters of 4 at 72-128 registers ran 30 at a time while up to 66 were
launched (``benchmarks/results/2026-12-02-NVIDIA-H200-norm-tails-s23-diag.log``). One line per cell: per variant its
time (us, CUDA-graph replays) and its launches ``blocks x threads s<dynamic smem KB>k [c<cluster>/max<clusters at
once>] /r<registers>``.
"""

from __future__ import annotations

import argparse
import json

from . import norm_ragged as nr
from .cluster_capacity import active_clusters

RECORDS: list = []


def _record_launches() -> None:
    """Wrap every CudaKernel's raw launcher to append ``(kernel, grid, block, smem)`` to :data:`RECORDS`."""
    from flydsl.runtime import cuda as rc

    init = rc.CudaKernel.__init__

    def recording_init(self, *a, **k):
        init(self, *a, **k)
        inner = self.launcher

        def rec(gx, gy, gz, bx, by, bz, smem, stream, *p):
            RECORDS.append((self, (gx, gy, gz), (bx, by, bz), smem))
            return inner(gx, gy, gz, bx, by, bz, smem, stream, *p)

        self.launcher = rec

    rc.CudaKernel.__init__ = recording_init


def _describe(rec) -> str:
    kernel, grid, block, smem = rec
    text = f"{grid[0]}x{block[0]}s{smem // 1024}k"
    cluster = kernel.attribute("REQUIRED_CLUSTER_WIDTH")
    if cluster > 1:
        text += f"c{cluster}/max{active_clusters(kernel.func, grid, block, smem)}"
    return text + f"/r{kernel.attribute('NUM_REGS')}"


def main(argv=None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default='[["rmsnorm", "bf16", 65536, 64]]', help="JSON [[kernel, dtype, n, M], ...]")
    ap.add_argument("--variants", default='{"default": {}}', help='JSON {"name": {options}, ...}')
    args = ap.parse_args(argv)
    _record_launches()
    variants = json.loads(args.variants)
    for k, dt, n, M in json.loads(args.cells):
        inputs, y, call = nr._tensors(k, M, n, dt)
        want, _ = nr.reference(k, *inputs)
        out = []
        for name, plan in variants.items():
            RECORDS.clear()
            nr._build(k, n, dt, dict(plan))(*call)
            torch.cuda.synchronize()
            launches = "+".join(_describe(r) for r in RECORDS)
            out.append(f"{name}={nr.checked_us(k, n, dt, plan, call, y, want):.1f}[{launches}]")
        print(f"{k:11s} {dt:4s} {n:6d} M={M:4d} | " + " ".join(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
