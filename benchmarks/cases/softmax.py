"""Row softmax: flydsl (``kernels/norm/softmax_kernel.py``) against torch eager (``torch.softmax``),
``torch.compile`` (on the 32768 x 8192 shapes: each shape compiles for seconds) and a Triton kernel written
the way a user would (one program per row, the row in registers). ``nbytes = 2 * M * N * elem``: one read,
one write. The target: >= 85% of the measured copy bandwidth on 32768 x 8192 bf16, faster than torch eager.

``FLYDSL_BENCH_VARIANTS=1`` adds flydsl tuning variants (see ``variants``).
"""

from __future__ import annotations

import functools
import os

import torch

from ..harness import Case
from ._common import NORM_COMPILE as COMPILE
from ._common import NORM_HEADLINE as HEADLINE
from ._common import NORM_QUICK as QUICK
from ._common import NORM_SWEEP as SWEEP
from ._graph import graphed

ATOL = {"f32": 1e-5, "f16": 1e-2, "bf16": 2e-2}


def variants(M, N, dt) -> dict:
    """flydsl tuning variants (``FLYDSL_BENCH_VARIANTS=1``): 32 values per thread on the headline shape."""
    return {"flydsl-ept32": {"elems_per_thread": 32}} if (M, N, dt) == HEADLINE else {}


@functools.lru_cache(maxsize=1)
def triton_softmax():
    import triton
    import triton.language as tl

    @triton.jit
    def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        tl.store(y_ptr + row * n_cols + offs, y.to(y_ptr.dtype.element_ty), mask=mask)

    def launch(x, y):
        M, N = x.shape
        block = triton.next_power_of_2(N)
        softmax_kernel[(M,)](x, y, N, BLOCK=block, num_warps=min(32, max(4, block // 1024)))

    return launch


@functools.cache
def launcher(N, dt, plan=()):
    """One launcher per configuration: every input set reuses its compiled kernel."""
    from kernels.norm.softmax_kernel import build_softmax_module

    return build_softmax_module(0, N, dt, **dict(plan))


def cases(quick: bool) -> list[Case]:
    import flydsl.compiler as flyc

    dt_torch = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    out = []
    for M, N, dt in QUICK if quick else [HEADLINE, *SWEEP]:

        def make_inputs(M=M, N=N, dt=dt):
            x = torch.randn(M, N, device="cuda", dtype=dt_torch[dt]) * 2
            nan = float("nan")
            return x, torch.full_like(x, nan), torch.full_like(x, nan)  # x, flydsl's y, triton's y

        def flydsl(inp, M=M, N=N, dt=dt, plan=None, graph=False):
            x, y, _ = inp
            compiled = flyc.compile(launcher(N, dt, tuple(sorted((plan or {}).items()))), x, y, M)
            if graph:  # the capturing stream, named (Stream(None) would follow torch's current stream too)
                return graphed(lambda: compiled(x, y, M, torch.cuda.current_stream()))
            return lambda: compiled(x, y, M)

        def torch_eager(inp):
            x = inp[0]
            return lambda: torch.softmax(x, dim=-1)

        def torch_compile(inp):
            x = inp[0]
            fn = torch.compile(lambda t: torch.softmax(t, dim=-1))
            fn(x)
            return lambda: fn(x)

        def triton(inp):
            x, _, yt = inp
            launch = triton_softmax()
            return lambda: launch(x, yt)

        def check(inp, dt=dt):
            x, y, yt = inp
            want = torch.softmax(x.float(), dim=-1)
            for name, got in (("flydsl", y), ("triton", yt)):
                if name != "flydsl" and got.isnan().all():
                    continue  # that alternative did not run here (reported as failed)
                err = (got.float() - want).abs().max().item()
                if not err <= ATOL[dt]:
                    raise AssertionError(f"{name} softmax max error {err:.3e} > {ATOL[dt]}")

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
        nbytes = 2 * M * N * dt_torch[dt].itemsize
        out.append(Case("softmax", (M, N), dt, nbytes, make_inputs, impls, check))
    return out
