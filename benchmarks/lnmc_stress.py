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

from benchmarks.cases.norm_sweep import ATOL, VARIANTS
from kernels.norm.layernorm_kernel import build_layernorm_module, plan_defaults
from kernels.norm.norm_common import plan_rows, split_options, vector_width

SHAPES = [(512, 32768, "f32"), (512, 65536, "bf16"), (256, 65536, "f32")]
TORCH = {"f32": torch.float32, "bf16": torch.bfloat16}


def _plan(n: int, dt: str, opts: dict):
    eb = 4 if dt == "f32" else 2
    plan_opts, _ = split_options({**plan_defaults(n, dt), **opts})
    return plan_rows(n, eb, vector_width(n, eb), **plan_opts, weight_tensors=2, clusters=True)


def _where(bad, err, plan, m: int) -> str:
    rows, cols = bad.nonzero(as_tuple=True)
    grid = plan.grid(m)
    block = rows % grid if plan.persist else rows
    rank = (block % plan.mcast).tolist()
    piece = plan.threads * plan.vec
    c, v = (cols // plan.chunk_cols).tolist(), (cols % plan.chunk_cols // piece).tolist()
    ranks = sorted(set(rank))
    pieces = sorted(set(zip(c, v)))[:8]
    # a wrong B piece: the same error down a column; a wrong W piece: errors that vary with the row
    col0 = int(cols[0])
    col_rows = bad[:, col0].nonzero().flatten()
    spread = float(err[col_rows, col0].std()) if col_rows.numel() > 1 else 0.0
    which = "B" if spread < 1e-3 else "W"
    first_rows = sorted(set(rows.tolist()))[:6]
    return f"{int(bad.sum())} wrong, rows {first_rows}, ranks {ranks}, (chunk, vector) {pieces}, {which}"


def main(reps: int) -> None:
    names = [v for v in VARIANTS if v.startswith(("mcast", "ring"))]
    for m, n, dt in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(n + m)
        x = torch.randn(m, n, device="cuda", generator=g).to(TORCH[dt])
        w = torch.rand(n, device="cuda", generator=g).to(TORCH[dt])
        b = torch.randn(n, device="cuda", generator=g).to(TORCH[dt])
        want = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)
        for name in names:
            opts = VARIANTS[name]
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
                    first = first or _where(bad, (y.double() - want), plan, m)
            desc = f"k={plan.mcast} stages={plan.wstages} persist={plan.persist} prefetch={plan.prefetch}"
            print(f"{m}x{n} {dt:4s} {name:9s} {desc:40s} {reps - fails}/{reps} ok  {first}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
