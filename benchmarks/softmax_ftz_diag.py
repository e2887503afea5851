"""What softmax's long rows lose to ``ex2.approx.f32``: the default plans timed (CUDA-graph replays) beside the same
kernels with every ``ex2.approx.f32`` of their PTX made ``ex2.approx.ftz.f32`` (subnormal results flushed to zero),
and torch's copy of the same bytes.

ptxas expands the non-``ftz`` form to ``MUFU.EX2`` plus a range test and two predicated multiplies (the subnormal
results); the ``ftz`` form is the ``MUFU.EX2`` alone: 1280 -> 880 SASS instructions for 64K bf16 rows, 1216 -> 816
for 64K f32 (ptxas 13.0). Not a plan of the library (the codegen has no ``ftz`` exp2 yet, and the interpreter would
have to flush the same results): a measurement of what such a codegen flag would buy.

``FLYDSL_RUNTIME_ENABLE_CACHE=0 python -m benchmarks.softmax_ftz_diag`` (GPU; ~15 s). Prints one line per shape:
µs and copy time / time, and each kernel's largest error against ``torch.softmax`` in f32.
"""

from __future__ import annotations

import contextlib
import importlib
import statistics

import flydsl.compiler as flyc
from flydsl.utils.env import env
from kernels.norm.softmax_kernel import build_softmax_module

_jit = importlib.import_module("flydsl.compiler.jit")  # the module (``flydsl.compiler.jit`` is also the decorator)

SHAPES = [(256, 65536, "f32"), (512, 65536, "bf16"), (1024, 32768, "bf16"), (512, 32768, "f32"),
          (2048, 16384, "bf16"), (1024, 16384, "f32")]  # fmt: skip


@contextlib.contextmanager
def ftz_exp2():
    """Kernels compiled inside: their PTX's ``ex2.approx.f32`` become ``ex2.approx.ftz.f32`` (assembled from it)."""
    orig = _jit.compile_traced

    def patched(*args, **kwargs):
        result = orig(*args, **kwargs)
        if result.ptx:
            result.ptx = result.ptx.replace("ex2.approx.f32", "ex2.approx.ftz.f32")
            result.cubin = None  # assembled again, from the patched PTX
        return result

    _jit.compile_traced = patched
    try:
        yield
    finally:
        _jit.compile_traced = orig


def _time(thunks) -> float:
    from .cases._graph import graphed
    from .harness import time_thunks

    return statistics.median(time_thunks([graphed(t) for t in thunks], reps=200))


def main() -> int:
    import torch

    if env.runtime_enable_cache:
        raise SystemExit("set FLYDSL_RUNTIME_ENABLE_CACHE=0: a patched kernel must not reach the disk cache")
    print(f"{'shape':18s} {'copy':>6s} {'default':>14s} {'ftz exp2':>14s}  max error (default, ftz)")
    for M, N, dt in SHAPES:
        sets = [torch.randn(M, N, device="cuda", dtype=getattr(torch, {"f32": "float32"}.get(dt, "bfloat16"))) * 2
                for _ in range(4)]  # fmt: skip
        outs = [torch.empty_like(x) for x in sets]
        want = torch.softmax(sets[0].float(), dim=-1)
        row = {}
        for name, ctx in (("default", contextlib.nullcontext()), ("ftz", ftz_exp2())):
            with ctx:
                f = flyc.compile(build_softmax_module(M, N, dt), sets[0], outs[0], M)
            f(sets[0], outs[0], M)
            err = (outs[0].float() - want).abs().max().item()
            row[name] = (_time([lambda x=x, y=y, f=f, m=M: f(x, y, m) for x, y in zip(sets, outs)]), err)
        copy = _time([lambda x=x, y=y: y.copy_(x) for x, y in zip(sets, outs)])
        (d, de), (z, ze) = row["default"], row["ftz"]
        print(f"{M}x{N} {dt:4s}".ljust(18) + f" {copy:6.1f} {d:6.1f} ({100 * copy / d:3.0f}%) {z:6.1f} "
              f"({100 * copy / z:3.0f}%)  {de:.1e}, {ze:.1e}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
