"""CUDA-graph capture of the vector add through the default stream: ``python -m benchmarks.graph_check``.

``fx.Stream(None)`` resolves per call to torch's current stream, so a launch inside ``torch.cuda.graph`` is
captured and replays correctly.
"""

from __future__ import annotations

import importlib.util

import torch


def main() -> bool:
    spec = importlib.util.spec_from_file_location("ex01", "examples/01_vector_add.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    n = 1 << 20
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.zeros_like(a)
    ex.vector_add(a, b, c, n)
    torch.cuda.synchronize()
    g, s = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.cuda.graph(g, stream=s):
        ex.vector_add(a, b, c, n)
    c.zero_()
    g.replay()
    torch.cuda.synchronize()
    ok = torch.equal(c, a + b)
    print("graph capture with the default stream:", "PASS" if ok else "FAIL")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
