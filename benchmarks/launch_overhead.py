"""Host-side cost of calling a cached ``@flyc.jit`` launcher: ``python -m benchmarks.launch_overhead``.

Measured with the process's CPU time (robust to other load on the machine), best of several repeats:

* ``host path``: argument conversion, key, in-memory lookup, launch plan, packing — with the device's
  launch replaced by a no-op (what flydsl adds on top of the driver / interpreter);
* ``cpu device``: a full call on the interpreter of a 1-block kernel (memory registration + run);
* on a CUDA machine, ``cuda call``: wall time per call of back-to-back launches of a tiny vector add
  (host path + ``cuLaunchKernel``), next to ``torch.add`` on the same tensors.

The budget (issue 2): under ~20 us per cached launch on the host path.
"""

from __future__ import annotations

import os
import time
import timeit

import numpy as np

os.environ.setdefault("FLYDSL_RUNTIME_ENABLE_CACHE", "0")

import flydsl.compiler as flyc  # noqa: E402
import flydsl.expr as fx  # noqa: E402
from flydsl.expr.typing import Tensor  # noqa: E402


@flyc.kernel
def vadd(a: Tensor, b: Tensor, c: Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        c[i] = a[i] + b[i]


@flyc.jit
def launch(a, b, c, n: fx.Int32):
    vadd(a, b, c, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def cpu_us(fn, number=2000, repeat=7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=time.process_time)) / number * 1e6


def host_path(args) -> float:
    """Per-call cost with the device's launch replaced by a no-op."""
    launch(*args)
    entry = launch._prepare(args, {})[0]
    real = entry.launcher
    host = real.host

    def call():
        entry, vals, _ = launch._prepare(args, {})
        out = []
        for v in vals:  # what a launcher resolves per call
            out.append(getattr(v, "ptr", v))
        host(out, lambda *a: None)

    try:
        return cpu_us(call)
    finally:
        entry.launcher = real


def main() -> None:
    import torch

    rows = []
    n = 128
    for kind, mk in (("numpy", lambda: np.ones(n, np.float32)), ("torch cpu", lambda: torch.ones(n))):
        os.environ["FLYDSL_RUNTIME_KIND"] = "cpu"
        a, b, c = mk(), mk(), mk()
        rows.append((f"host path, 3 {kind} tensors + int", host_path((a, b, c, n))))
        rows.append((f"cpu device, full call ({kind})", cpu_us(lambda a=a, b=b, c=c: launch(a, b, c, n), number=50)))
    if torch.cuda.is_available():
        os.environ["FLYDSL_RUNTIME_KIND"] = "cuda"
        a, b, c = (torch.ones(n, device="cuda") for _ in range(3))
        launch(a, b, c, n)
        torch.cuda.synchronize()
        rows.append(("host path, 3 cuda tensors + int", host_path((a, b, c, n))))
        for name, fn in (
            ("cuda call (flydsl)", lambda: launch(a, b, c, n)),
            ("cuda call (torch.add)", lambda: torch.add(a, b, out=c)),
        ):
            fn()
            torch.cuda.synchronize()
            k = 5000
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            torch.cuda.synchronize()
            rows.append((name, (time.perf_counter() - t0) / k * 1e6))
    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  us/call")
    for name, us in rows:
        print(f"{name:<{width}}  {us:8.2f}")


if __name__ == "__main__":
    main()
