"""Repeat LayerNorm's ``weights_multicast`` plans on the GPU and locate wrong outputs: ``python -m
benchmarks.lnmc_stress [reps]`` (torch + a CUDA GPU).

Each (variant of :mod:`benchmarks.cases.norm_sweep`, long-row shape) runs ``reps`` times on a NaN-poisoned output
and is compared with a float64 reference. For a run with wrong elements, the report says where they are in the
pipeline: the cluster rank of the block that wrote them, the ring's piece (chunk ``c``, vector ``v``) of their
columns, and whether the row's W piece or B piece was wrong (a wrong B piece shifts a column by the same amount in
every row; a wrong W piece by an amount proportional to the normalized value).
"""

from __future__ import annotations

import sys

import torch

from benchmarks.cases.norm_sweep import ATOL, E16, MCAST, VARIANTS
from kernels.norm.layernorm_kernel import build_layernorm_module, plan_defaults
from kernels.norm.norm_common import plan_rows, split_options, vector_width

SHAPES = [(512, 32768, "f32"), (512, 65536, "bf16"), (256, 65536, "f32")]
# the ring without a cluster, one row per block: 8 stages, and as many as fit (12 at 32K f32)
EXTRA = {"ring8": {**E16, "weights_multicast": 1, "weight_stages": 8}, "ring": {**E16, "weights_multicast": 1}}
TORCH = {"f32": torch.float32, "bf16": torch.bfloat16}


def _plan(n: int, dt: str, opts: dict):
    eb = 4 if dt == "f32" else 2
    plan_opts, _ = split_options({**plan_defaults(n, dt), **opts})
    return plan_rows(n, eb, vector_width(n, eb), **plan_opts, weight_tensors=2, clusters=True)


def _where(y, x, w, b, plan, m: int) -> str:
    """Where the wrong elements of one run are: unwritten (NaN) or wrong values, the cluster ranks of their blocks,
    and which ring piece their values came from — each wrong value is matched against the output it would have
    with the W (or B) vector of another piece ``q`` of the row (a stale or early stage): ``W-2`` means W's piece
    two uses before the right one."""
    n = x.shape[1]
    xd = x.double()
    mean = xd.mean(1, keepdim=True)
    rstd = 1.0 / torch.sqrt(xd.var(1, unbiased=False, keepdim=True) + 1e-5)
    xhat = (xd - mean) * rstd
    wd, bd = w.double(), b.double()
    want = xhat * wd + bd
    err = (y.double() - want).abs()
    bad = ~(err <= ATOL[plan_dt(y)])
    nan = int(y.isnan().sum())
    rows, cols = bad.nonzero(as_tuple=True)
    grid = plan.grid(m)
    block = rows % grid if plan.persist else rows
    ranks = sorted(set((block % max(1, plan.mcast)).tolist()))
    piece = plan.threads * plan.vec
    pidx = cols // plan.chunk_cols * plan.vecs + cols % plan.chunk_cols // piece  # vector index of the row
    votes: dict = {}
    sel = torch.linspace(0, rows.numel() - 1, min(2000, rows.numel()), device=rows.device).long()  # a sample
    r, c, p = rows[sel], cols[sel], pidx[sel]
    got = y.double()[r, c]
    for q in range(plan.chunks * plan.vecs):
        cq = (q // plan.vecs) * plan.chunk_cols + (q % plan.vecs) * piece + (c - (p // plan.vecs) * plan.chunk_cols
                                                                           - (p % plan.vecs) * piece)  # fmt: skip
        cq = cq.clamp(0, n - 1)
        for kind, alt in (("W", xhat[r, c] * wd[cq] + bd[c]), ("B", xhat[r, c] * wd[c] + bd[cq])):
            hit = (alt - got).abs() <= ATOL[plan_dt(y)]
            for d in (q - p)[hit].tolist():
                if d:
                    votes[f"{kind}{d:+d}"] = votes.get(f"{kind}{d:+d}", 0) + 1
    top = sorted(votes.items(), key=lambda kv: -kv[1])[:3]
    pieces = sorted(set(pidx.tolist()))[:8]
    return (f"{int(bad.sum())} wrong ({nan} NaN), rows {sorted(set(rows.tolist()))[:4]}, ranks {ranks}, "
            f"vectors {pieces}, from {top}")  # fmt: skip


def plan_dt(y) -> str:
    return "f32" if y.dtype == torch.float32 else "bf16"


def main(reps: int) -> None:
    configs = {v: VARIANTS[v] for v in MCAST}
    configs.update(EXTRA)
    for m, n, dt in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(n + m)
        x = torch.randn(m, n, device="cuda", generator=g).to(TORCH[dt])
        w = torch.rand(n, device="cuda", generator=g).to(TORCH[dt])
        b = torch.randn(n, device="cuda", generator=g).to(TORCH[dt])
        want = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)
        for name, opts in configs.items():
            plan = _plan(n, dt, opts)
            launch = build_layernorm_module(n, dt, 1e-5, **opts)
            y = torch.empty_like(x)
            fails, first = 0, ""
            for _ in range(reps):
                y.fill_(float("nan"))
                launch(x, w, b, y, m)
                torch.cuda.synchronize()
                err = (y.double() - want).abs()
                bad = ~(err <= ATOL[dt])
                if bad.any():
                    fails += 1
                    first = first or _where(y, x, w, b, plan, m)
            desc = f"k={plan.mcast} stages={plan.wstages} persist={plan.persist} prefetch={plan.prefetch}"
            print(f"{m}x{n} {dt:4s} {name:9s} {desc:40s} {reps - fails}/{reps} ok  {first}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
