"""Compile time and the disk cache, for the vector add of ``examples/01_vector_add.py``.

``python -m benchmarks.cold_start compile`` — a cold compile in this process (disk cache off): time from
the first call to PTX ready, split into trace+passes and LLVM→PTX (from the artifact's timings), printed
as JSON.

``python -m benchmarks.cold_start fill`` then ``python -m benchmarks.cold_start hit`` (two processes, the
same ``FLYDSL_RUNTIME_CACHE_DIR``): the first fills the disk cache with ``COMPILE_ONLY=1`` (no device
needed); the second measures the first launch in a fresh process — disk lookup, module load, launch,
synchronize — and whether it traced (it must not).

``python -m benchmarks.cold_start big`` — LLVM→PTX of a synthetic kernel of ~30k LLVM instructions (the
size where O3 + NVPTX codegen at opt 3 take 20-55 s); the chosen optimization levels must keep it to a
few seconds on the 2-core CI machine. (This is a timing, so it lives here and not in the test suite.)
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _example():
    spec = importlib.util.spec_from_file_location("ex01", ROOT / "examples" / "01_vector_add.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tensors(n: int):
    try:
        import torch

        if torch.cuda.is_available():
            a = torch.randn(n, device="cuda")
            return a, torch.randn_like(a), torch.empty_like(a), torch.cuda.synchronize
    except ImportError:
        pass
    import numpy as np

    a = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    return a, a.copy(), np.empty_like(a), lambda: None


def big_kernel() -> dict:
    from flydsl.codegen import Target, compile_module
    from flydsl.testing import branchy_kernel

    mod = branchy_kernel(800)
    t0 = time.perf_counter()
    ck = compile_module(mod, Target())
    dt = time.perf_counter() - t0
    return {
        "mode": "big",
        "seconds": round(dt, 3),
        "instructions": ck.stats["instructions"],
        "opt_level": ck.stats["opt_level"],
        "codegen_opt": ck.stats["codegen_opt"],
    }


def main(mode: str) -> dict:
    if mode == "big":
        return big_kernel()
    n = 1 << 20
    if mode == "compile":
        os.environ["FLYDSL_RUNTIME_ENABLE_CACHE"] = "0"
    if mode == "fill":
        os.environ["COMPILE_ONLY"] = "1"
    ex = _example()
    a, b, c, sync = _tensors(n)
    t0 = time.perf_counter()
    r = ex.vector_add(a, b, c, n)
    sync()
    dt = time.perf_counter() - t0
    jf = ex.vector_add
    out = {"mode": mode, "seconds": round(dt, 4), "returned": repr(r), "compiles": jf.compiles}
    info = jf.cache_info()
    if info is not None:
        out["cache"] = str(info)
    if mode == "hit":
        out["traced"] = jf.compiles > 0
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1] if len(sys.argv) > 1 else "compile")))
