"""Vector add ``c = a + b`` (float32): the kernel of ``examples/01_vector_add.py`` (a tiled copy of 256 threads
x 4 values, one 128-bit ``UniversalCopy128b`` access each, the last tile predicated) against torch
(``torch.add(a, b, out=c)``) and Triton's tutorial kernel. ``nbytes = 3 * n * 4``.
"""

from __future__ import annotations

import functools

import torch

import flydsl.compiler as flyc

from ..harness import Case
from ._common import load_example


@functools.lru_cache(maxsize=1)
def triton_add():
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)

    def launch(a, b, c):
        n = a.numel()
        add_kernel[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)

    return launch


def cases(quick: bool) -> list[Case]:
    sizes = [1 << 26, 1 << 28] if quick else [1 << 24, 1 << 26, 1 << 28, 100_000_004]  # 2^26: the size
    nan = float("nan")
    out = []
    for n in sizes:

        def make_inputs(n=n):
            a = torch.randn(n, device="cuda")
            return a, torch.randn(n, device="cuda"), torch.full_like(a, nan), torch.full_like(a, nan)

        def flydsl(inp, n=n):
            a, b, c, _ = inp
            compiled = flyc.compile(load_example("01_vector_add").vector_add, a, b, c, n)
            return lambda: compiled(a, b, c, n)

        def torch_add(inp):
            a, b = inp[:2]
            c = torch.empty_like(a)
            return lambda: torch.add(a, b, out=c)

        def triton(inp):
            a, b, _, ct = inp
            launch = triton_add()
            return lambda: launch(a, b, ct)

        def check(inp):
            a, b, c, ct = inp
            if not torch.equal(c, a + b):
                raise AssertionError("flydsl vector add differs from a + b")
            if not ct.isnan().all() and not torch.equal(ct, a + b):
                raise AssertionError("triton vector add differs from a + b")

        impls = {"flydsl": flydsl, "torch": torch_add, "triton": triton}
        out.append(Case("vector_add", (n,), "f32", 3 * n * 4, make_inputs, impls, check))
    return out
