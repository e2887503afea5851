"""The norm kernels at long rows whose length is not a power of two (issue 12): softmax, RMSNorm, the fused add +
RMSNorm and LayerNorm, bf16 and f32, 16K-64K elements, about 64 MB of rows per call.

Each row's kernel time (CUDA-graph replays of one call, median; the call's tensors rotated over
:data:`ROTATE_BYTES`, so every call reads its rows from HBM, not L2: session 23; ``--l2-warm``: one set, as before)
beside torch's copy of the same number of bytes (to 64 KB) as one flat buffer in the same process (torch's copy of
some of these byte counts, e.g. the rows of 20000, 40000, 49160 and 50304 elements, runs at 2/3 speed, flat or not —
not a fair reference). ``%`` = that copy's time over the kernel's. ``flydsl`` is the library's plan for the length;
``FLYDSL_NORM_VARIANTS=name,...`` adds named plans (:data:`VARIANTS`).

``python -m benchmarks.norm_ragged`` (GPU; ``--lengths``, ``--kernels``, ``--dtypes``; ``--workers N`` compiles every
configuration first in N processes sharing the disk cache). Results:
``benchmarks/results/2026-12-01-NVIDIA-H200-norm-ragged-s20.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

DEVICE = "cuda"  # "cpu": a dry run of the scripts on the interpreter (tests/kernels/test_norm_benchmarks.py)
# a cell's calls (and the copy's) rotate over copies of their tensors of at least this many bytes in all, twice the
# H200's 60 MB L2, so each call reads what the last few did not leave in L2 (0: one set; before session 23 a cell of
# 4-17 MB replayed one set, read from L2 by the kernel and the copy alike)
_ROTATE_DEFAULT = 120 << 20
ROTATE_BYTES = _ROTATE_DEFAULT
LENGTHS = [16384, 20000, 20480, 24576, 28672, 32768, 40000, 40960, 49160, 50304, 53248, 57344, 61440, 65536]
KERNEL_NAMES = ["softmax", "rmsnorm", "rmsnorm+add", "layernorm"]
_O512 = {"shape_defaults": False, "cache_hint": "cs", "onchip_threads": 512, "max_registers": 64}
# plans measured against the defaults (session 20): one-row blocks of 512 threads, two per SM
VARIANTS = {
    "o512": _O512,
    "o512k16": {**_O512, "kept_values": 16},
    "o512e16": {**_O512, "elems_per_thread": 16},
    "o512e32": {**_O512, "elems_per_thread": 32},
    "o512bal": {**_O512, "balance_chunks": True},
    "cluster": {"shape_defaults": False, "long_rows": "cluster"},  # a row over 2-4 blocks of a cluster (16K each)
    "cluster8k": {"shape_defaults": False, "long_rows": "cluster", "cluster_cols": 8192},
    # the tail launch (session 21, kernels/norm/row_tail.py) over the default plans, narrower slices, a register cap,
    # and with the persistent 512-thread plan (fuzzed: tools/norm_plan_fuzz.py, tests/kernels/test_norm_plan_variants)
    "tail4k": {"tail_cols": 4096},
    "tail8kr64": {"tail_cols": 8192, "tail_regs": 64},
    "o512p2tail": {**_O512, "persist": 2, "tail_cols": 8192},
    # the few-rows plan (session 22, kernels/norm/row_tail.py) alone, for a range of row counts or up to one
    "few512": {"tail_cols": 0, "few_rows": (2, 300), "few_plan": {"onchip_threads": 512, "max_registers": 64}},
    "few1024": {"tail_cols": 0, "few_rows": 165, "few_plan": {"cache_hint": "cs"}},
    "reg512": {
        "shape_defaults": False,
        "cache_hint": "cs",
        "register_limit": 32768,
        "max_row_threads": 512,
        "max_registers": 64,
    },  # fmt: skip
}


def rows_for(n: int, dtype: str) -> int:
    """About 64 MB of rows of ``n`` elements."""
    return max(64, (1 << 26) // (n * (2 if dtype == "bf16" else 4)))


def configs(lengths, kernels, dtypes, variants):
    return [(k, n, dt, name) for k in kernels for dt in dtypes for n in lengths for name in ["flydsl", *variants]]


def _plan(name: str) -> dict:
    return {} if name == "flydsl" else dict(VARIANTS[name])


def _tensors(kernel: str, M: int, n: int, dtype: str):
    import torch

    t = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    x = torch.randn(M, n, device=DEVICE, dtype=t)
    r, y, ro = torch.randn_like(x), torch.empty_like(x), torch.empty_like(x)
    w, b = torch.rand(n, device=DEVICE, dtype=t), torch.randn(n, device=DEVICE, dtype=t)
    args = {"softmax": (x, y, M), "rmsnorm": (x, w, y, M), "rmsnorm+add": (x, r, w, y, ro, M),
            "layernorm": (x, w, b, y, M)}[kernel]  # fmt: skip
    return (x, r, w, b), y, args


def reference(kernel: str, x, r, w, b):
    """``(output, residual)`` of ``kernel`` in float64 from torch tensors (the fused add's residual: ``x + r``
    rounded to the data type, as the kernel stores it; None for the others)."""
    import torch

    xf, s = x.double(), None
    if kernel == "softmax":
        return torch.softmax(xf, -1), None
    if kernel == "layernorm":
        return torch.nn.functional.layer_norm(xf, (x.shape[1],), w.double(), b.double(), 1e-5), None
    if kernel == "rmsnorm+add":
        s = (x.float() + r.float()).to(x.dtype)
        xf = s.double()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double(), s


def _build(kernel: str, n: int, dtype: str, plan: dict):
    from .cases.norm_sweep import KERNELS

    return KERNELS[kernel][0](n, dtype, plan)


def compile_share(builds, index: int, workers: int) -> None:
    """Compile (and run once, on three rows: a launcher's every kernel is traced) this worker's share of ``builds``
    (``(kernel, n, dtype, plan options)``): the disk cache keeps them. A plan the kernel refuses is skipped (the
    timing reports it)."""
    import torch

    for i, (k, n, dt, plan) in enumerate(builds):
        if i % workers == index:
            try:
                _build(k, n, dt, dict(plan))(*_tensors(k, 3, n, dt)[2])
            except ValueError:
                pass
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def parse_args(ap, argv):
    """``ap``'s arguments with the options every norm benchmark script shares (``--workers``, the hidden
    ``--compile-share``, ``--l2-warm``), the timing's rotation set from them."""
    ap.add_argument("--workers", type=int, default=0, help="compile first in this many processes")
    ap.add_argument("--compile-share", nargs=2, type=int, help=argparse.SUPPRESS)
    ap.add_argument("--l2-warm", action="store_true", help="time one set of tensors (read from L2 where they fit)")
    args = ap.parse_args(argv)
    set_rotation(args.l2_warm)
    return args


def set_rotation(l2_warm: bool) -> None:
    """``--l2-warm``: one set of tensors per cell (the timing before session 23)."""
    global ROTATE_BYTES
    ROTATE_BYTES = 0 if l2_warm else _ROTATE_DEFAULT


def rotation(nbytes: int) -> int:
    """How many sets of a call's tensors (``nbytes`` read and written per call) the timing rotates over."""
    if not ROTATE_BYTES or DEVICE != "cuda":
        return 1
    return max(1, min(64, -(-ROTATE_BYTES // max(nbytes, 1))))


def rotated(args, sets: int) -> list[tuple]:
    """``args`` and ``sets - 1`` copies of it (each tensor cloned, other values kept)."""
    import torch

    return [args] + [tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args) for _ in range(sets - 1)]


def _us(fn, sets: list | None = None) -> float:
    """Median µs of CUDA-graph replays of ``fn()`` (or, with ``sets``, of ``fn(*s)`` rotating over the sets: one graph
    each); a dry run: of three calls, wall clock."""
    calls = [fn] if sets is None else [lambda s=s: fn(*s) for s in sets]
    if DEVICE != "cuda":
        import time

        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            calls[0]()
            times.append((time.perf_counter() - t0) * 1e6)
        return statistics.median(times)
    from .cases._graph import graphed
    from .harness import time_thunks

    return statistics.median(time_thunks([graphed(c) for c in calls], warmup=20, reps=150))


def _case(k: str, n: int, dt: str, names: list[str]) -> str:
    """One table row: the copy of the same bytes, then each plan's time (checked against torch first)."""

    M = rows_for(n, dt)
    inputs, y, args = _tensors(k, M, n, dt)
    want, _ = reference(k, *inputs)
    copy = copy_us(k, M, n, inputs[0])
    cells = []
    for name in names:
        us = checked_us(k, n, dt, _plan(name), args, y, want)
        cells.append(f"{name} {us:.1f} ({copy / us * 100:.0f}%)")
    return f"| {k} | {dt} | {M} x {n} | {copy:.1f} | " + " | ".join(cells) + " |"


def copy_us(k: str, M: int, n: int, x) -> float:
    """torch's copy of the bytes ``k`` reads and writes over ``M`` rows of ``n`` elements of ``x``'s type, as one
    flat buffer (at least 64 KB): the reference a cell's ``%`` divides by."""
    import torch

    nbytes = 2 * M * n * x.element_size() * (2 if k == "rmsnorm+add" else 1)  # rows read and written
    # the bytes rounded down to 64 KB (< 0.1% fewer): torch's copy of 16,770,000 floats (20000 bf16 x 1677 rows)
    # took 52.7 us, of 16,773,120 (20480 x 1638) 35.1 on the H200 (session 20)
    src = torch.empty(max(16384, nbytes // 2 // 65536 * 16384), device=DEVICE, dtype=torch.float32)
    return _us(lambda s, d: d.copy_(s), rotated((src, torch.empty_like(src)), rotation(nbytes)))


def checked_us(k: str, n: int, dt: str, plan: dict, args, y, want) -> float:
    """The time of ``k``'s launcher with ``plan`` on ``args`` once its output ``y`` (NaN-filled first) matches the
    float64 reference ``want``."""
    launch = _build(k, n, dt, dict(plan))
    y.fill_(float("nan"))
    launch(*args)
    err = (y.float() - want).abs().max().item()
    assert err < (5e-2 if dt == "bf16" else 2e-3), (k, n, dt, plan, err)
    return _us(launch, rotated(args, rotation(call_bytes(args))))


def call_bytes(args) -> int:
    """The bytes of a call's tensors (a norm reads its inputs and writes its outputs once)."""
    return sum(a.numel() * a.element_size() for a in args if hasattr(a, "element_size"))


def compile_in_workers(module: str, argv, workers: int) -> None:
    """Run ``python -m module argv --compile-share i workers`` for each of ``workers`` (> 1) processes and wait: each
    compiles its share of the configurations into the disk cache the timing process then reads."""
    if workers <= 1:
        return
    cmd = [sys.executable, "-m", module, *(argv if argv is not None else sys.argv[1:])]
    procs = [subprocess.Popen([*cmd, "--compile-share", str(i), str(workers)]) for i in range(workers)]
    if any(p.wait() for p in procs):
        raise SystemExit("a compile worker failed")


def measure(todo) -> list[str]:
    lines, cases = [], {}
    for k, n, dt, name in todo:
        cases.setdefault((k, n, dt), []).append(name)
    for (k, n, dt), names in cases.items():
        lines.append(_case(k, n, dt, names))
        print(lines[-1], flush=True)
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    ap.add_argument("--kernels", default=",".join(KERNEL_NAMES))
    ap.add_argument("--dtypes", default="bf16,f32")
    args = parse_args(ap, argv)
    variants = [v for v in os.environ.get("FLYDSL_NORM_VARIANTS", "").split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"FLYDSL_NORM_VARIANTS: unknown {unknown}; choose from {', '.join(VARIANTS)}")
    todo = configs([int(n) for n in args.lengths.split(",")], args.kernels.split(","), args.dtypes.split(","),
                   variants)  # fmt: skip
    if args.compile_share:
        compile_share([(k, n, dt, _plan(name)) for k, n, dt, name in todo], *args.compile_share)
        return 0
    compile_in_workers("benchmarks.norm_ragged", argv, args.workers)
    print("| kernel | dtype | shape | copy us | " + " | ".join(["flydsl", *variants]) + " |", flush=True)
    measure(todo)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
