"""Vector add, ``C = A + B``, written the FlyDSL way: layouts, a tiled copy and 128-bit copy atoms.

* Each block owns a tile of ``THREADS * VEC`` elements: ``flat_divide(A, tile)[None, bid]``.
* ``make_tiled_copy_tv(UniversalCopy128b, threads, values)`` gives each thread ``VEC = 4`` consecutive
  floats — one 128-bit load or store per thread (``ld.global.v4.b32`` / ``st.global.v4.b32`` in the PTX).
* The last tile may be partial: an identity tensor gives every copy its coordinate, ``fx.elem_less``
  its predicate, and predicated-off copies neither read nor write.

Runs on the GPU when there is one (and prints the bandwidth next to ``torch.add``'s), else on the CPU
interpreter: ``python examples/01_vector_add.py [n]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import flydsl.compiler as flyc
import flydsl.expr as fx

THREADS = 256  # threads per block
VEC = 4  # float32 values per thread: one 128-bit access


@flyc.kernel
def vector_add_kernel(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, tiled: fx.TiledCopy):
    tid, bid = fx.thread_idx.x, fx.block_idx.x
    (n,) = A.shape.unpack()
    tile = tiled.tile_mn  # (THREADS * VEC,)

    # this block's tile of every tensor, and of the coordinates 0..n-1 (for the tail predicate)
    gA, gB, gC = (fx.flat_divide(t, tile)[None, bid] for t in (A, B, C))
    cA = fx.flat_divide(fx.make_identity_tensor((n,)), tile)[None, bid]

    thr = tiled.get_slice(tid)
    src_a, src_b, dst_c = thr.partition_S(gA), thr.partition_S(gB), thr.partition_D(gC)
    crd = thr.partition_S(cA)

    # one predicate per copy: is this thread's first element inside the tensor? (n % VEC == 0)
    pred = fx.make_fragment_like(crd[(0, None), None], dtype=fx.Boolean)
    for i in fx.range_constexpr(fx.size(pred)):
        pred[i] = fx.elem_less(crd[(0, None), None][i], (n,))

    ra, rb = fx.make_fragment_like(src_a), fx.make_fragment_like(src_b)
    fx.copy(tiled, src_a, ra, pred=pred)
    fx.copy(tiled, src_b, rb, pred=pred)
    rc = fx.make_fragment_like(ra)
    rc.store(ra.load() + rb.load())
    fx.copy(tiled, rc, dst_c, pred=pred)


@flyc.jit
def vector_add(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, n: fx.Int32, stream: fx.Stream = fx.Stream(None)):
    atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
    tiled = fx.make_tiled_copy_tv(atom, fx.make_layout(THREADS), fx.make_layout(VEC))
    blocks = (n + THREADS * VEC - 1) // (THREADS * VEC)
    vector_add_kernel(A, B, C, tiled).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1), stream=stream)


def _on_gpu(n: int) -> bool:
    import torch

    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.full_like(a, float("nan"))
    compiled = flyc.compile(vector_add, a, b, c, n)  # trace + compile (or the cache); None under COMPILE_ONLY=1
    if compiled is None:
        print("COMPILE_ONLY=1: compiled and cached, nothing run")
        return True
    compiled(a, b, c, n)
    torch.cuda.synchronize()
    ok = torch.equal(c, a + b)
    print(f"vector add of {n} float32 on the GPU: {'PASS' if ok else 'FAIL'}")
    if ok:
        # back-to-back calls between two CUDA events (the host queues launches while the GPU works, as
        # in a real program); the median of several batches
        gbps = {}
        for name, fn in (("flydsl", lambda: compiled(a, b, c, n)), ("torch.add", lambda: torch.add(a, b, out=c))):
            for _ in range(10):
                fn()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            times = []
            for _ in range(10):
                start.record()
                for _ in range(20):
                    fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e-3 / 20)
            gbps[name] = 3 * 4 * n / float(np.median(times)) / 1e9
        print(
            f"bandwidth: flydsl {gbps['flydsl']:.0f} GB/s, torch.add {gbps['torch.add']:.0f} GB/s "
            f"({100 * gbps['flydsl'] / gbps['torch.add']:.0f}%)"
        )
    return ok


def _on_cpu(n: int) -> bool:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = np.full(n, np.nan, np.float32)
    t0 = time.perf_counter()
    compiled = flyc.compile(vector_add, a, b, c, n)  # trace + compile (or the cache); None under COMPILE_ONLY=1
    if compiled is None:
        print("COMPILE_ONLY=1: compiled and cached, nothing run")
        return True
    compiled(a, b, c, n)
    ok = np.array_equal(c, a + b)
    print(
        f"vector add of {n} float32 on the CPU interpreter: {'PASS' if ok else 'FAIL'} "
        f"({time.perf_counter() - t0:.2f} s, compile included)"
    )
    return ok


def main(argv: list[str]) -> bool:
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    n = int(argv[1]) if len(argv) > 1 else (1 << 26 if gpu else 100_000)
    if n % VEC:
        print(f"n must be a multiple of {VEC}: each thread moves {VEC} floats with one 128-bit access")
        return False
    return _on_gpu(n) if gpu else _on_cpu(n)


if __name__ == "__main__":
    raise SystemExit(0 if main(sys.argv) else 1)
