"""Vector add ``c = a + b`` (float32): the kernel of ``examples/01_vector_add.py`` (``launch(a, b, c, n)``) when
that example imports, else the same kernel written here — a tiled copy of 256 threads x 4 values (one 128-bit
``UniversalCopy128b`` access each), the last tile predicated by an identity tensor. Against torch
(``torch.add(a, b, out=c)``) and Triton's tutorial kernel. ``nbytes = 3 * n * 4``.
"""

from __future__ import annotations

import functools
import importlib.util
import pathlib

import torch

import flydsl.compiler as flyc
import flydsl.expr as fx

from ..harness import Case

THREADS, VALUES = 256, 4  # 1024 floats per block
_EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "01_vector_add.py"


@flyc.kernel
def vector_add_kernel(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, tiled: fx.TiledCopy):
    (n,) = A.shape.unpack()
    tile = tiled.tile_mn
    bx = fx.block_idx.x
    thr = tiled.get_slice(fx.thread_idx.x)
    a = thr.partition_S(fx.flat_divide(A, tile)[None, bx])
    b = thr.partition_S(fx.flat_divide(B, tile)[None, bx])
    c = thr.partition_D(fx.flat_divide(C, tile)[None, bx])
    crd = thr.partition_S(fx.flat_divide(fx.make_identity_tensor((n,)), tile)[None, bx])[(0, None), None]
    pred = fx.make_fragment_like(crd, dtype=fx.Boolean)
    for i in fx.range_constexpr(fx.size(pred)):
        pred[i] = fx.elem_less(crd[i], (n,))  # n must be a multiple of 4: one predicate per 128-bit access
    ra, rb, rc = fx.make_fragment_like(a), fx.make_fragment_like(b), fx.make_fragment_like(c)
    fx.copy(tiled, a, ra, pred=pred)
    fx.copy(tiled, b, rb, pred=pred)
    rc.store(ra.load() + rb.load())
    fx.copy(tiled, rc, c, pred=pred)


@flyc.jit
def vector_add(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, n: fx.Int32):
    atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
    tiled = fx.make_tiled_copy_tv(atom, fx.make_layout(THREADS), fx.make_layout(VALUES))
    vector_add_kernel(A, B, C, tiled).launch(grid=((n + 1023) // 1024, 1, 1), block=(THREADS, 1, 1))


@functools.lru_cache(maxsize=1)
def flydsl_vector_add():
    """(launch(a, b, c, n), where it comes from)."""
    try:
        spec = importlib.util.spec_from_file_location("flydsl_example_01_vector_add", _EXAMPLE)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.vector_add, "examples/01_vector_add.py"
    except Exception as e:  # not there (yet), or not importable: the same kernel, written here
        return vector_add, f"benchmarks/cases/vector_add.py ({type(e).__name__} importing the example)"


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
            launch, where = flydsl_vector_add()
            print(f"[bench] vector_add kernel from {where}", flush=True)
            compiled = flyc.compile(launch, a, b, c, n)
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
