"""1-D copy through buffer resources (``examples/04_buffer_copy.py``: ``buffer_load``/``buffer_store`` with
``vec_width=4``, bounds by ``num_records``) against torch's ``clone()``. ``nbytes = 2 * n * 4``."""

from __future__ import annotations

import importlib.util
import pathlib

from ..harness import Case

_EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "04_buffer_copy.py"


def _example():
    spec = importlib.util.spec_from_file_location("flydsl_example_04_buffer_copy", _EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cases(quick: bool) -> list[Case]:
    import torch

    import flydsl.compiler as flyc

    ex = _example()
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
