"""Matrix transpose ``B = A.T`` (float32): flydsl's tiled transpose through swizzled shared memory
(``examples/03_transpose.py``) against torch's ``A.t().contiguous()``.

The op must read and write every element once: ``nbytes = 2 * M * N * 4``. The target is at least 80%
of the measured device-to-device copy bandwidth.
"""

from __future__ import annotations

from ..harness import Case
from ._common import load_example


def cases(quick: bool) -> list[Case]:
    import torch

    import flydsl.compiler as flyc

    ex = load_example("03_transpose")
    shapes = [(8192, 8192)] if quick else [(4096, 4096), (8192, 8192), (16384, 16384), (4096, 16384), (8100, 8100)]
    out = []
    for M, N in shapes:
        ragged = bool(M % ex.TILE or N % ex.TILE)

        def make_inputs(M=M, N=N):
            a = torch.randn(M, N, dtype=torch.float32, device="cuda")
            return a, torch.empty(N, M, dtype=torch.float32, device="cuda")

        def flydsl(inp, ragged=ragged):
            a, b = inp
            compiled = flyc.compile(ex.transpose_launch, a, b, ragged)
            return lambda: compiled(a, b, ragged)

        def torch_t(inp):
            a, _ = inp
            return lambda: a.t().contiguous()

        def check(inp):
            a, b = inp
            if not torch.equal(b, a.t()):
                raise AssertionError("flydsl transpose differs from A.t()")

        out.append(
            Case(
                kernel="transpose",
                shape=(M, N),
                dtype="f32",
                nbytes=2 * M * N * 4,
                make_inputs=make_inputs,
                impls={"flydsl": flydsl, "torch": torch_t},
                check=check,
            )
        )
    return out
