"""RMSNorm ``y = x * rsqrt(mean(x^2) + eps) * w``: flydsl (``kernels/norm/rmsnorm_kernel.py``) against torch
eager (``torch.nn.functional.rms_norm``), ``torch.compile`` of the formula (on the 32768 x 8192 shapes) and a
Triton kernel written the way a user would (one program per row, the row in registers). Also the fused
residual add (``s = x + r`` written back, ``y = rmsnorm(s) * w``) on the headline shape.

``nbytes``: ``2 * M * N * elem + N * elem`` (x read, y written, the weight once); with the fused add,
``4 * M * N * elem + N * elem``. ``FLYDSL_BENCH_VARIANTS=1`` adds flydsl tuning variants (see ``variants``).
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

EPS = 1e-6

ATOL = {"f32": 1e-4, "f16": 1e-2, "bf16": 3e-2}


def variants(M, N, dt) -> dict:
    """flydsl tuning variants (``FLYDSL_BENCH_VARIANTS=1``): 32 values per thread on the headline shape."""
    return {"flydsl-ept32": {"elems_per_thread": 32}} if (M, N, dt) == HEADLINE else {}


@functools.lru_cache(maxsize=1)
def triton_rmsnorm():
    import triton
    import triton.language as tl

    @triton.jit
    def rmsnorm_kernel(x_ptr, r_ptr, w_ptr, y_ptr, s_ptr, n_cols, eps, ADD: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
        if ADD:
            x = x + tl.load(r_ptr + row * n_cols + offs, mask=mask, other=0.0)
            tl.store(s_ptr + row * n_cols + offs, x, mask=mask)
        x = x.to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n_cols + offs, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)

    def launch(x, w, y, r=None, s=None):
        M, N = x.shape
        block = triton.next_power_of_2(N)
        add = r is not None
        warps = min(32, max(4, block // 1024))
        rmsnorm_kernel[(M,)](x, r if add else x, w, y, s if add else y, N, EPS, ADD=add, BLOCK=block, num_warps=warps)

    return launch


def _formula(x, w):
    """RMSNorm as a user writes it in torch (what torch.compile fuses)."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)


@functools.cache
def launcher(N, dt, plan=()):
    """One launcher per configuration: every input set reuses its compiled kernel."""
    from kernels.norm.rmsnorm_kernel import build_rmsnorm_module

    return build_rmsnorm_module(N, dt, EPS, **dict(plan))


def cases(quick: bool) -> list[Case]:
    import flydsl.compiler as flyc
    from kernels.norm.rmsnorm_kernel import build_fused_add_rmsnorm_module

    dt_torch = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    nan = float("nan")
    out = []
    for M, N, dt in QUICK if quick else [HEADLINE, *SWEEP]:
        t = dt_torch[dt]

        def make_inputs(M=M, N=N, t=t):
            x = torch.randn(M, N, device="cuda", dtype=t)
            w = torch.rand(N, device="cuda", dtype=t)
            return x, w, torch.full_like(x, nan), torch.full_like(x, nan)  # x, w, flydsl's y, triton's y

        def flydsl(inp, M=M, N=N, dt=dt, plan=None, graph=False):
            x, w, y, _ = inp
            compiled = flyc.compile(launcher(N, dt, tuple(sorted((plan or {}).items()))), x, w, y, M)
            if graph:  # the capturing stream, named (Stream(None) would follow torch's current stream too)
                return graphed(lambda: compiled(x, w, y, M, torch.cuda.current_stream()))
            return lambda: compiled(x, w, y, M)

        def torch_eager(inp, N=N):
            x, w = inp[:2]
            return lambda: F.rms_norm(x, (N,), w, EPS)

        def torch_compile(inp):
            x, w = inp[:2]
            fn = torch.compile(_formula)
            fn(x, w)
            return lambda: fn(x, w)

        def triton(inp):
            x, w, _, yt = inp
            launch = triton_rmsnorm()
            return lambda: launch(x, w, yt)

        def check(inp, N=N, dt=dt):
            x, w, y, yt = inp
            want = F.rms_norm(x.float(), (N,), w.float(), EPS)
            for name, got in (("flydsl", y), ("triton", yt)):
                if name != "flydsl" and got.isnan().all():
                    continue  # that alternative did not run here (reported as failed)
                err = (got.float() - want).abs().max().item()
                if not err <= ATOL[dt]:
                    raise AssertionError(f"{name} rmsnorm max error {err:.3e} > {ATOL[dt]}")

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
        out.append(Case("rmsnorm", (M, N), dt, (2 * M * N + N) * t.itemsize, make_inputs, impls, check))

    M, N, dt = HEADLINE
    out.append(_fused_add_case(M, N, dt, dt_torch[dt], flyc, build_fused_add_rmsnorm_module, quick))
    return out


def _fused_add_case(M, N, dt, t, flyc, build, quick):
    nan = float("nan")

    def make_inputs():
        x = torch.randn(M, N, device="cuda", dtype=t)
        r = torch.randn(M, N, device="cuda", dtype=t)
        w = torch.rand(N, device="cuda", dtype=t)
        outs = [torch.full_like(x, nan) for _ in range(4)]  # flydsl's y and sum, triton's y and sum
        return x, r, w, *outs

    def flydsl(inp):
        x, r, w, y, s = inp[:5]
        compiled = flyc.compile(build(N, dt, EPS), x, r, w, y, s, M)
        return lambda: compiled(x, r, w, y, s, M)

    def torch_eager(inp):
        x, r, w = inp[:3]

        def run():
            s = x + r
            return F.rms_norm(s, (N,), w, EPS), s

        return run

    def torch_compile(inp):
        x, r, w = inp[:3]
        fn = torch.compile(lambda x, r, w: (_formula(x + r, w), x + r))
        fn(x, r, w)
        return lambda: fn(x, r, w)

    def triton(inp):
        x, r, w, _, _, yt, st = inp
        launch = triton_rmsnorm()
        return lambda: launch(x, w, yt, r, st)

    def check(inp):
        x, r, w, y, s, yt, st = inp
        want_s = x + r
        want = F.rms_norm(want_s.float(), (N,), w.float(), EPS)
        for name, got, got_s in (("flydsl", y, s), ("triton", yt, st)):
            if name != "flydsl" and got.isnan().all():
                continue
            if not torch.equal(got_s, want_s):
                raise AssertionError(f"{name}: residual sum differs from x + r")
            err = (got.float() - want).abs().max().item()
            if not err <= ATOL[dt]:
                raise AssertionError(f"{name} fused add rmsnorm max error {err:.3e} > {ATOL[dt]}")

    impls = {"flydsl": flydsl, "torch": torch_eager, "triton": triton}
    if not quick:
        impls["torch.compile"] = torch_compile
    return Case("rmsnorm+add", (M, N), dt, (4 * M * N + N) * t.itemsize, make_inputs, impls, check)
