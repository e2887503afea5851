"""LayerNorm ``y = (x - mean) * rsqrt(var + eps) * w + b``: flydsl (``kernels/norm/layernorm_kernel.py``)
against torch eager (``torch.nn.functional.layer_norm``), ``torch.compile`` (on the 32768 x 8192 shape) and a
Triton kernel written the way a user would (one program per row, the row in registers, two-pass variance).

``nbytes = 2 * M * N * elem + 2 * N * elem`` (x read, y written, weight and bias once).
``FLYDSL_BENCH_VARIANTS=1`` adds flydsl tuning variants (see ``variants``).
"""

from __future__ import annotations

import functools
import os

import torch
import torch.nn.functional as F

from ..harness import Case
from ._common import NORM_COMPILE as COMPILE
from ._common import NORM_HEADLINE as HEADLINE
from ._common import NORM_QUICK as QUICK
from ._common import NORM_SWEEP as SWEEP
from ._graph import graphed

EPS = 1e-5

ATOL = {"f32": 1e-4, "f16": 2e-2, "bf16": 6e-2}  # |y| reaches ~8 here: half a bf16 ulp is 3e-2


def variants(M, N, dt) -> dict:
    """flydsl tuning variants (``FLYDSL_BENCH_VARIANTS=1``): 16 values per thread on the headline shape."""
    return {"flydsl-ept16": {"elems_per_thread": 16}} if (M, N, dt) == HEADLINE else {}


@functools.lru_cache(maxsize=1)
def triton_layernorm():
    import triton
    import triton.language as tl

    @triton.jit
    def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / n_cols
        d = tl.where(mask, x - mean, 0.0)
        rstd = tl.rsqrt(tl.sum(d * d, axis=0) / n_cols + eps)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n_cols + offs, (d * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)

    def launch(x, w, b, y):
        M, N = x.shape
        block = triton.next_power_of_2(N)
        layernorm_kernel[(M,)](x, w, b, y, N, EPS, BLOCK=block, num_warps=min(32, max(4, block // 1024)))

    return launch


@functools.cache
def launcher(N, dt, plan=()):
    """One launcher per configuration: every input set reuses its compiled kernel."""
    from kernels.norm.layernorm_kernel import build_layernorm_module

    return build_layernorm_module(N, dt, EPS, **dict(plan))


def cases(quick: bool) -> list[Case]:
    import flydsl.compiler as flyc

    dt_torch = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    nan = float("nan")
    out = []
    for M, N, dt in QUICK if quick else [HEADLINE, *SWEEP]:
        t = dt_torch[dt]

        def make_inputs(M=M, N=N, t=t):
            x = torch.randn(M, N, device="cuda", dtype=t)
            w = torch.rand(N, device="cuda", dtype=t)
            b = torch.randn(N, device="cuda", dtype=t)
            return x, w, b, torch.full_like(x, nan), torch.full_like(x, nan)  # ..., flydsl's y, triton's y

        def flydsl(inp, M=M, N=N, dt=dt, plan=None, graph=False):
            x, w, b, y, _ = inp
            compiled = flyc.compile(launcher(N, dt, tuple(sorted((plan or {}).items()))), x, w, b, y, M)
            if graph:  # the capturing stream, named (Stream(None) would follow torch's current stream too)
                return graphed(lambda: compiled(x, w, b, y, M, torch.cuda.current_stream()))
            return lambda: compiled(x, w, b, y, M)

        def torch_eager(inp, N=N):
            x, w, b = inp[:3]
            return lambda: F.layer_norm(x, (N,), w, b, EPS)

        def torch_compile(inp, N=N):
            x, w, b = inp[:3]
            fn = torch.compile(lambda x, w, b: F.layer_norm(x, (N,), w, b, EPS))
            fn(x, w, b)
            return lambda: fn(x, w, b)

        def triton(inp):
            x, w, b, _, yt = inp
            launch = triton_layernorm()
            return lambda: launch(x, w, b, yt)

        def check(inp, N=N, dt=dt):
            x, w, b, y, yt = inp
            want = F.layer_norm(x.float(), (N,), w.float(), b.float(), EPS)
            for name, got in (("flydsl", y), ("triton", yt)):
                if name != "flydsl" and got.isnan().all():
                    continue  # that alternative did not run here (reported as failed)
                err = (got.float() - want).abs().max().item()
                if not err <= ATOL[dt]:
                    raise AssertionError(f"{name} layernorm max error {err:.3e} > {ATOL[dt]}")

        impls = {"flydsl": flydsl, "torch": torch_eager, "triton": triton}
        if (M, N, dt) in COMPILE and not quick:  # compiling takes seconds per shape
            impls["torch.compile"] = torch_compile
        if (M, N, dt) != HEADLINE:  # kernels shorter than a host launch: also time CUDA-graph replays
            impls["flydsl:graph"] = functools.partial(flydsl, graph=True)
            impls["torch:graph"] = lambda inp, f=torch_eager: graphed(f(inp))
            impls["triton:graph"] = lambda inp, f=triton: graphed(f(inp))
        if os.environ.get("FLYDSL_BENCH_VARIANTS"):
            for name, plan in variants(M, N, dt).items():
                impls[name] = functools.partial(flydsl, plan=plan)
        out.append(Case("layernorm", (M, N), dt, (2 * M * N + 2 * N) * t.itemsize, make_inputs, impls, check))
    return out
