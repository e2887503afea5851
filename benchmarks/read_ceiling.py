"""The HBM read ceiling of a decode GEMM: one kernel that reads a weight's bytes once and writes almost nothing.

A decode GEMM (M = 1 … 32) is a read of B; its time can be no less than what the plainest kernel reading
the same bytes takes on the same GPU, launched the same way (CUDA-graph replays over inputs larger than the
L2). :func:`read_launcher` builds that kernel: ``blocks × threads`` threads, each loading ``per_thread``
16-byte chunks (``ld.global.v4``, every load of the thread issued before the first result is used when
``per_thread <= unroll``, else in a loop of ``unroll`` loads) strided so that each warp reads 512 contiguous
bytes per load, folding them with XOR into one word that is stored only if it equals a value it never has
(so that no load is dead code and the kernel writes nothing).

``pdl=True`` builds the kernel for programmatic dependent launch: it lets the next kernel of the stream
launch at once (``griddepcontrol.launch_dependents``) and waits for the previous one
(``griddepcontrol.wait``) only before its store — a GEMM reads its weight before the wait and the
activations after it. A kernel that calls ``griddep_wait`` is launched with the attribute that allows it
(``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION``: :attr:`flydsl.codegen.KernelInfo.pdl`).

``python -m benchmarks.read_ceiling`` (H200) prints µs and GB/s per size and configuration.
"""

from __future__ import annotations

import functools
import math

import flydsl.compiler as flyc
import flydsl.expr as fx

__all__ = ["read_launcher", "bulk_read_launcher", "empty_launcher", "ceiling"]

MAGIC = 0x5EED1234  # the XOR of a weight's words is never compared equal to this in the benchmark's data


@functools.cache
def read_launcher(nbytes: int, blocks: int, threads: int, unroll: int = 64, pdl=False, convert: int = 0):
    """``launch(b, out)``: read the first ``nbytes`` (a multiple of 16) of ``b``; ``out`` an int32 tensor
    that is written only if the XOR of everything read equals :data:`MAGIC`. ``pdl``: False, True (read at
    once, wait before the store) or ``"prefetch"`` (prefetch into L2, wait, then read). ``convert``: widen
    every byte read from e4m3 to f16 that many times (the mma path's ``cvt.rn.f16x2.e4m3x2`` per two bytes
    of B, and as many again for A) before folding it: what the conversions cost a pure read."""
    chunks = nbytes // 16
    total = blocks * threads
    per = math.ceil(chunks / total)
    u = min(per, unroll)
    rounds = math.ceil(per / u)

    @flyc.kernel(known_block_size=(threads, 1, 1))
    def read_kernel(B: fx.Tensor, OUT: fx.Tensor):
        if fx.const_expr(pdl):
            fx.nvvm.griddep_launch_dependents()
        p = B.iterator.recast(fx.Int32)
        first = fx.block_idx.x * threads + fx.thread_idx.x
        if fx.const_expr(pdl == "prefetch"):
            # the GEMM's way: the block's bytes into L2 (one 16-byte chunk per thread and load, so
            # ``threads`` consecutive chunks per load), then nothing read into the SM before the wait
            if fx.thread_idx.x == 0:
                g = B.iterator.recast(fx.Int8)
                for k in fx.range_constexpr(rounds * u):
                    start = fx.min(fx.block_idx.x * threads + k * total, chunks - threads)
                    fx.nvvm.bulk_prefetch_l2(g + start * 16, threads * 16)
            fx.nvvm.griddep_wait()
        acc = fx.full(4, 0, fx.Int32)
        for r in range(rounds):
            vs = []
            for j in fx.range_constexpr(u):
                idx = fx.min(first + (r * u + j) * total, chunks - 1)  # the ragged end re-reads the last chunk
                vs.append((p + idx * 4).load(vec_width=4, align=16))
            for v in vs:
                if fx.const_expr(convert):
                    for w in fx.range_constexpr(4):
                        for c in fx.range_constexpr(convert):
                            word = v[w : w + 1] if c == 0 else (v[w : w + 1] ^ c)
                            h = word.bitcast(fx.Float8E4M3FN).to(fx.Float16).bitcast(fx.Int32)
                            acc = acc ^ fx.Vector.from_elements([h[0], h[1], fx.Int32(0), fx.Int32(0)], fx.Int32)
                else:
                    acc = acc ^ v
        word = acc[0] ^ acc[1] ^ acc[2] ^ acc[3]
        if fx.const_expr(pdl is True):
            fx.nvvm.griddep_wait()  # the store may follow the previous kernel's writes
        if word == MAGIC:
            OUT.iterator.recast(fx.Int32).store(word)

    @flyc.jit
    def launch(b: fx.Tensor, out: fx.Tensor, stream: fx.Stream = fx.Stream(None)):
        # ptxas schedules for occupancy without a bound: it would keep only 7 of 16 loads in flight
        minb = max(1, min(2048 // threads, -(-blocks // 132)))
        read_kernel(b, out).launch(grid=(blocks, 1, 1), block=(threads, 1, 1), stream=stream,
                                   value_attrs={"min_blocks_per_sm": minb})  # fmt: skip

    return launch


@functools.cache
def bulk_read_launcher(nbytes: int, blocks: int, piece: int = 16384, slots: int = 12, pdl: bool = False):
    """``launch(b, out)``: read the first ``nbytes`` (a multiple of ``piece``) of ``b`` with 1-D bulk copies
    (``cp.async.bulk``, the stream path's mechanism) into ``slots`` shared-memory slots per block: piece ``p``
    goes to block ``p % blocks``; one thread issues the block's first ``slots`` pieces at once and reissues
    a slot as soon as its copy has landed (no registers hold the bytes in flight)."""
    pieces = nbytes // piece
    per = math.ceil(pieces / blocks)
    slots = min(slots, per)

    @flyc.kernel(known_block_size=(32, 1, 1))
    def bulk_read_kernel(B: fx.Tensor, OUT: fx.Tensor):
        if fx.const_expr(pdl):
            fx.nvvm.griddep_launch_dependents()
        raw = fx.SharedAllocator(static=False).allocate(slots * piece + 8 * slots + 128).ptr
        base = fx.nvvm.align_shared(raw, 128).recast(fx.Int8)
        bars = (base + slots * piece).recast(fx.Int64)
        g = B.iterator.recast(fx.Int8)
        blk = fx.block_idx.x
        if fx.thread_idx.x == 0:
            for s in fx.range_constexpr(slots):
                fx.nvvm.mbarrier_init(bars + s, 1)
            fx.nvvm.fence_mbarrier_init()
            for s in fx.range_constexpr(slots):
                p = blk + s * blocks
                if p < pieces:
                    fx.nvvm.mbarrier_arrive_expect_tx(bars + s, piece)
                    fx.nvvm.bulk_copy_g2s(base + s * piece, g + p * piece, piece, bars + s)
            word = fx.Int32(0)
            for i in range(per):
                s = i % slots
                p = blk + i * blocks
                if p < pieces:
                    fx.nvvm.mbarrier_wait(bars + s, (i // slots) % 2)
                    word = word ^ (base + s * piece).recast(fx.Int32).load()
                    q = p + slots * blocks
                    if q < pieces:
                        fx.nvvm.mbarrier_arrive_expect_tx(bars + s, piece)
                        fx.nvvm.bulk_copy_g2s(base + s * piece, g + q * piece, piece, bars + s)
            if fx.const_expr(pdl):
                fx.nvvm.griddep_wait()
            if word == MAGIC:
                OUT.iterator.recast(fx.Int32).store(word)

    @flyc.jit
    def launch(b: fx.Tensor, out: fx.Tensor, stream: fx.Stream = fx.Stream(None)):
        bulk_read_kernel(b, out).launch(grid=(blocks, 1, 1), block=(32, 1, 1), stream=stream)

    return launch


@functools.cache
def empty_launcher(blocks: int, threads: int, pdl: bool = False):
    """``launch(out)``: a kernel that does nothing but (with ``pdl``) the two griddepcontrol steps."""

    @flyc.kernel(known_block_size=(threads, 1, 1))
    def empty_kernel(OUT: fx.Tensor):
        if fx.const_expr(pdl):
            fx.nvvm.griddep_launch_dependents()
            fx.nvvm.griddep_wait()
        if fx.thread_idx.x == threads + 1:  # never: a kernel with a parameter it might write
            OUT.iterator.recast(fx.Int32).store(fx.Int32(1))

    @flyc.jit
    def launch(out: fx.Tensor, stream: fx.Stream = fx.Stream(None)):
        empty_kernel(out).launch(grid=(blocks, 1, 1), block=(threads, 1, 1), stream=stream)

    return launch


def _reads(bufs, out, f) -> list:
    """One call of the read launcher ``f`` per buffer (the graph rotates over them)."""
    return [lambda b=b: f(b, out) for b in bufs]


def _graph_us(thunks, iters: int = 60) -> float:
    """µs per call of a CUDA graph of ``iters`` calls rotating over ``thunks`` (the GEMM benchmark's timer)."""
    from kernels.gemm.harness import time_calls

    return time_calls(thunks, iters, warmup=len(thunks), graph=True)


SIZES = {"4096x4096": 4096 * 4096, "7168x2048": 7168 * 2048, "10240x8192": 10240 * 8192}
# (blocks, threads, unroll): one wave of 132 SMs at 1-4 blocks each, all loads of a thread in flight at once
CONFIGS = [(132, 512, 16), (264, 512, 16), (528, 256, 16), (132, 1024, 16), (264, 512, 8)]


def ceiling(sizes=SIZES, configs=CONFIGS, pdl=(False, True), log=print, empty=True, extras=True) -> list[tuple]:
    """``(what, size name, MB, µs, GB/s)`` rows: a torch copy of the bytes (read + written), an empty kernel,
    and the read kernels per configuration, launched plainly and (``pdl``) with programmatic dependent
    launch; ``extras``: also the widening and bulk-copy variants. A kernel that fails is reported and skipped."""
    import torch

    rows = []
    out = torch.zeros(4, dtype=torch.int32, device="cuda")

    def one(what, name, nbytes, thunks, make, *args, moved=None):
        """Time ``make(*args)`` over ``thunks(launcher)``; a kernel that fails is reported and skipped."""
        try:
            us = _graph_us(thunks(make(*args)))
        except Exception as ex:  # reported, the others still run
            log(f"ceiling {what:34s} {name:11s} FAILED {type(ex).__name__}: {str(ex)[:200]}", flush=True)
            return
        rows.append((what, name, nbytes / 1e6, us, (moved or nbytes) / us / 1e3))
        log(f"ceiling {what:34s} {name:11s} {us:7.2f} us {rows[-1][4]:7.0f} GB/s", flush=True)

    def on_out(f):
        return [lambda: f(out)]

    for mode in pdl if empty else ():
        for blocks, threads in ((132, 256), (1, 32)):
            one(f"empty {blocks}x{threads} {'pdl' if mode else 'plain'}", "-", 0, on_out, empty_launcher, blocks,
                threads, mode)  # fmt: skip
    for name, nbytes in sizes.items():
        copies = max(2, math.ceil(110e6 / nbytes))
        bufs = [torch.randint(-(2**31), 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device="cuda")
                for _ in range(copies)]  # fmt: skip
        reads = functools.partial(_reads, bufs, out)
        if empty:
            dsts = [torch.empty_like(b) for b in bufs]
            one("torch copy (read+write)", name, nbytes, lambda pairs: [lambda s=s, d=d: d.copy_(s) for s, d in pairs],
                list, zip(bufs, dsts), moved=2 * nbytes)  # fmt: skip
            del dsts
        for mode in (*pdl, "prefetch") if True in pdl else pdl:
            tag = "pdl-prefetch" if mode == "prefetch" else "pdl" if mode else "plain"
            for blocks, threads, unroll in configs:
                if mode and (blocks, threads, unroll) not in (configs[0], (264, 512, 16)):
                    continue
                one(f"read {blocks}x{threads} u{unroll} {tag}", name, nbytes, reads, read_launcher, nbytes, blocks,
                    threads, unroll, mode)  # fmt: skip
            # what the mma path's widening costs
            for convert in (1, 2) if extras and mode is False and nbytes < 40e6 else ():
                one(f"read {configs[0][0]}x{configs[0][1]} u{configs[0][2]} cvt x{convert}", name, nbytes, reads,
                    read_launcher, nbytes, *configs[0], False, convert)  # fmt: skip
            for blocks, piece, slots in ((132, 16384, 12), (264, 16384, 6)) if extras and mode != "prefetch" else ():
                one(f"bulk {blocks}x{piece // 1024}KBx{slots} {tag}", name, nbytes, reads, bulk_read_launcher, nbytes,
                    blocks, piece, slots, mode)  # fmt: skip
        del bufs
        torch.cuda.empty_cache()
    return rows


if __name__ == "__main__":
    ceiling()
