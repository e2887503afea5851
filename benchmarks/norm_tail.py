"""The norm kernels' long rows at row counts that leave the last round of SMs partly empty (issue 12, session 21):
softmax, RMSNorm, the fused add + RMSNorm and LayerNorm, bf16 and f32, rows of 40K-64K elements, a few rows (8, 24),
a round and a few (140), two rounds and a few (270, or the ~64 MB of ``norm_ragged``).

Each cell: the library's plan (its per-shape tail, ``kernels/norm/row_tail.py``: the last rows over thread block
clusters; and its few-rows plan), the same plan without the tail (``tail_cols=0``) or without the few-rows plan
(``few_rows=0``; ``--plans`` picks the columns) and torch eager, as CUDA-graph replays of one call (median),
beside torch's copy of the same bytes; ``%`` = that copy's time over the kernel's (for a few rows, launch latency
dominates both). Every output is checked against a float64 reference first.

``python -m benchmarks.norm_tail`` (GPU; ``--lengths``, ``--kernels``, ``--dtypes``, ``--rows``, ``--plans``,
``--workers N``: compile every configuration first in N processes sharing the disk cache). Results:
``benchmarks/results/2026-12-01-NVIDIA-H200-norm-tail-s21.md`` (the tail), ``...-norm-few-s22.md`` (the few-rows
plans: ``--rows 34,64,100,132,140,160,200,273 --lengths 49160,65536 --plans flydsl,"no few"``).
"""

from __future__ import annotations

import argparse

from .norm_ragged import (
    KERNEL_NAMES,
    _tensors,
    _us,
    call_bytes,
    checked_us,
    compile_in_workers,
    compile_share,
    copy_us,
    parse_args,
    reference,
    rotated,
    rotation,
    rows_for,
)

LENGTHS = [40000, 49160, 57344, 61440, 65536]
ROWS = ["8", "24", "140", "270", "64MB"]
# the library's plan against itself without the tail (session 21), without the few-rows plan (session 22), or with
# the tails of sessions 21-22 (all of a block's registers, up to 264 blocks; session 23: two blocks per SM, as many as
# run at once)
PLANS = {"flydsl": {}, "no tail": {"tail_cols": 0}, "no few": {"few_rows": 0},
         "s22 tail": {"tail_regs": 255, "tail_blocks": 264}}  # fmt: skip


def _rows(spec: str, n: int, dtype: str) -> int:
    return rows_for(n, dtype) if spec == "64MB" else int(spec)


def _case(k: str, n: int, dt: str, M: int, plans: list[str]) -> str:
    import torch
    import torch.nn.functional as F

    from .cases.norm_sweep import _torch_ref

    inputs, y, args = _tensors(k, M, n, dt)
    want, _ = reference(k, *inputs)
    copy = copy_us(k, M, n, inputs[0])
    cells = []
    for name in plans:
        us = checked_us(k, n, dt, PLANS[name], args, y, want)
        cells.append(f"{us:.1f} ({copy / us * 100:.0f}%)")
    eager = _torch_ref(k, torch, F)[0]  # torch.softmax, F.rms_norm (the fused add: x + r first), F.layer_norm
    us = _us(eager, rotated(inputs, rotation(call_bytes(inputs) + call_bytes((y,)))))
    cells.append(f"{us:.1f} ({copy / us * 100:.0f}%)")
    return f"| {k} | {dt} | {M} x {n} | {M % 132} | {copy:.1f} | " + " | ".join(cells) + " |"


def _todo(args):
    return [(k, n, dt, _rows(spec, n, dt)) for k in args.kernels.split(",") for dt in args.dtypes.split(",")
            for n in map(int, args.lengths.split(",")) for spec in args.rows.split(",")]  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    ap.add_argument("--kernels", default=",".join(KERNEL_NAMES))
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--rows", default=",".join(ROWS), help="row counts; 64MB: about 64 MB of rows")
    ap.add_argument("--plans", default="flydsl,no tail", help=f"columns, of {', '.join(PLANS)}")
    args = parse_args(ap, argv)
    todo = _todo(args)
    plans = args.plans.split(",")
    if set(plans) - PLANS.keys():
        ap.error(f"--plans: {', '.join(sorted(set(plans) - PLANS.keys()))} unknown; give some of {', '.join(PLANS)}")
    if args.compile_share:
        shapes = dict.fromkeys((k, n, dt) for k, n, dt, _ in todo)
        compile_share([(*shape, PLANS[p]) for shape in shapes for p in plans], *args.compile_share)
        return 0
    compile_in_workers("benchmarks.norm_tail", argv, args.workers)
    heads = [f"{p} us (%)" if p == "flydsl" else p for p in plans]
    print("| kernel | dtype | shape | M % 132 | copy us | " + " | ".join(heads) + " | torch eager |", flush=True)
    print("|---" * (len(plans) + 6) + "|", flush=True)
    for k, n, dt, M in todo:
        print(_case(k, n, dt, M, plans), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
