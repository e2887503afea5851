"""2-D copy ``B = A`` (float32): flydsl's predicated tiled copy with 128-bit atoms
(``examples/02_tiled_copy.py``) against torch's ``A.clone()``. ``nbytes = 2 * M * N * 4``."""

from __future__ import annotations

from ..harness import Case
from ._common import load_example


def cases(quick: bool) -> list[Case]:
    import torch

    import flydsl.compiler as flyc

    ex = load_example("02_tiled_copy")
    shapes = [(8192, 8192)] if quick else [(4096, 4096), (8192, 8192), (16384, 16384), (1000, 100004)]
    out = []
    for M, N in shapes:

        def make_inputs(M=M, N=N):
            a = torch.randn(M, N, dtype=torch.float32, device="cuda")
            return a, torch.empty_like(a)

        def flydsl(inp):
            a, b = inp
            compiled = flyc.compile(ex.tiled_copy, a, b)
            return lambda: compiled(a, b)

        def torch_clone(inp):
            a, _ = inp
            return lambda: a.clone()

        def check(inp):
            a, b = inp
            if not torch.equal(a, b):
                raise AssertionError("flydsl copy differs from A")

        out.append(
            Case(
                kernel="copy2d",
                shape=(M, N),
                dtype="f32",
                nbytes=2 * M * N * 4,
                make_inputs=make_inputs,
                impls={"flydsl": flydsl, "torch": torch_clone},
                check=check,
            )
        )
    return out
