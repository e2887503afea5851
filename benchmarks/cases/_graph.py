"""Kernel time without the host's launch path: a CUDA graph of one call, replayed.

Rows named ``<impl>:graph`` in the norm cases time ``graph.replay()``: for shapes whose kernels run for
less time than a launch takes on the host (tens of µs), per-call CUDA events measure the host instead.
``python -m benchmarks.cases._graph`` prints the host time per call of each implementation.
"""

from __future__ import annotations

import time

import torch


def graphed(thunk):
    """Capture one call of ``thunk`` (after one warm-up call) in a CUDA graph; return its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        thunk()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        thunk()
    return graph.replay


def host_us(thunk, calls: int = 2000) -> float:
    """Host time per call (µs) of back-to-back calls of a tiny kernel: the launch path's cost."""
    for _ in range(20):
        thunk()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        thunk()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def main() -> None:
    import flydsl.compiler as flyc

    from . import rmsnorm, softmax

    x = torch.randn(4, 1024, device="cuda", dtype=torch.bfloat16)
    y, w = torch.empty_like(x), torch.rand(1024, device="cuda", dtype=torch.bfloat16)
    sm = flyc.compile(softmax.launcher(1024, "bf16"), x, y, 4)
    rms = flyc.compile(rmsnorm.launcher(1024, "bf16"), x, w, y, 4)
    tri = softmax.triton_softmax()
    rows = {
        "flydsl softmax (flyc.compile)": lambda: sm(x, y, 4),
        "flydsl softmax (jit call)": lambda: softmax.launcher(1024, "bf16")(x, y, 4),
        "flydsl rmsnorm (flyc.compile)": lambda: rms(x, w, y, 4),
        "torch.softmax": lambda: torch.softmax(x, -1),
        "triton softmax": lambda: tri(x, y),
    }
    for name, fn in rows.items():
        print(f"[host] {name:32s} {host_us(fn):6.1f} us per call", flush=True)


if __name__ == "__main__":
    main()
