"""1-D copy through buffer resources (``examples/04_buffer_copy.py``: ``buffer_load``/``buffer_store`` with
``vec_width=4``, bounds by ``num_records``) against torch's ``clone()``. ``nbytes = 2 * n * 4``."""

from __future__ import annotations

from ..harness import Case
from ._common import load_example


def cases(quick: bool) -> list[Case]:
    import torch

    import flydsl.compiler as flyc

    ex = load_example("04_buffer_copy")
    sizes = [1 << 26, 1 << 28] if quick else [1 << 24, 1 << 26, 1 << 28, 100_000_003]
    out = []
    for n in sizes:

        def make_inputs(n=n):
            a = torch.randn(n, dtype=torch.float32, device="cuda")
            return a, torch.empty_like(a)

        def flydsl(inp, n=n):
            a, b = inp
            compiled = flyc.compile(ex.buffer_copy, a, b, n)
            return lambda: compiled(a, b, n)

        def torch_clone(inp):
            a, _ = inp
            return lambda: a.clone()

        def check(inp):
            a, b = inp
            if not torch.equal(a, b):
                raise AssertionError("buffer copy differs from the source")

        out.append(
            Case(
                kernel="buffer_copy",
                shape=(n,),
                dtype="f32",
                nbytes=2 * n * 4,
                make_inputs=make_inputs,
                impls={"flydsl": flydsl, "torch": torch_clone},
                check=check,
            )
        )
    return out
