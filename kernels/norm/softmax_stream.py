"""Softmax over long rows as a stream: a persistent block per SM that never lets its memory pipe run dry.

Rows of 64K f32 (256 KB) take the whole of an SM: one 1024-thread block at 64 registers, half of the row in
registers and half staged in shared memory. Under the onchip plan every SM then reads its row, waits for the
reduction, writes the row, and only then starts reading the next one: the SMs run in step, so the whole GPU's
memory idles while they reduce. The stream plan (``stream=True``, :func:`plan_stream`) keeps reads in flight
through every phase of a row:

* the row's ``kept`` chunks sit in registers, its ``staged`` ones in a ring of ``ring`` shared-memory slots
  (``ring > staged``: the spare slots hold the next row's first staged chunks);
* at the start of row ``i`` the next row's first ``ring - staged`` staged chunks are copied to the spare slots
  (``cp.async``): they are what the memory system serves while this row is reduced;
* during row ``i``'s output, each kept chunk's registers are refilled with the next row's chunk
  (``ld.global`` right after the chunk's last use), and each staged slot, once written out, receives a
  further staged chunk of the next row — so by the end of the row all of the next one is in flight.

Staged chunk ``k`` of the block's ``i``-th row lives in slot ``(i * staged + k) % ring``. Every thread copies
and reads back only its own vectors, so no barrier guards the slots. The reduction of (max, sum) is
:func:`max_sum_reduce` (one ``ex2`` per thread per stage instead of two per butterfly level).
"""

from __future__ import annotations

import dataclasses

import flydsl.expr as fx
from flydsl.compiler.ast_rewriter import ASTRewriter
from kernels.norm.norm_common import LOG2E, NUM_SMS, WARP, RowFragments, RowPlan, tree_sum

__all__ = ["StreamPlan", "plan_stream", "stream_rows", "max_sum_reduce"]

SMEM_LIMIT = 227 * 1024 - 2048  # sm_90's opt-in shared memory per block, less the reduction's partials


@dataclasses.dataclass(frozen=True)
class StreamPlan:
    row: RowPlan  # one row per block (rows = 1), onchip chunks: the first ``row.kept`` in registers
    ring: int  # shared-memory slots (of one chunk each) for the staged chunks of this row and the next
    exps: bool = False  # the stats replace kept chunks' values (and, f32 rows, staged ones') by their exps

    @property
    def staged(self) -> int:
        return self.row.chunks - self.row.kept

    @property
    def early(self) -> int:
        """Staged chunks of the next row copied at the start of this one (into the spare slots)."""
        return min(self.staged, self.ring - self.staged)

    def staging_bytes(self, elem_bytes: int) -> int:
        return self.ring * self.row.chunk_cols * elem_bytes


def plan_stream(
    n: int,
    elem_bytes: int,
    vec: int,
    *,
    elems_per_thread: int = 8,
    threads: int = 1024,
    kept_values: int = 32,
    ring: int = 0,
    sms: int = 0,
    cache_hint: str = "",
    exps: bool = False,
) -> StreamPlan:
    """Rows of ``n`` elements over ``threads`` threads, in chunks of ``elems_per_thread`` values per thread;
    about ``kept_values`` values per thread (of the row's type) in registers, the rest staged; ``ring`` slots
    (0: as many as fit :data:`SMEM_LIMIT`, at most two per staged chunk); a persistent grid over ``sms`` SMs
    (0: :data:`NUM_SMS`). ``exps``: each kept chunk's exps (to the running max after it; f32, in registers) replace
    its values, and f32 rows' staged chunks' exps their slot's values, so the output scales them (one ``ex2`` per
    chunk) instead of recomputing them."""
    vecs = max(1, elems_per_thread // vec)
    chunk_cols = threads * vecs * vec
    chunks = -(-n // chunk_cols)
    kept = min(chunks, max(0, kept_values // (vecs * vec)))
    staged = chunks - kept
    fit = SMEM_LIMIT // (chunk_cols * elem_bytes)
    if staged > fit:
        raise ValueError(
            f"stream plan: {staged} staged chunks of {chunk_cols * elem_bytes} bytes do not fit in shared memory; "
            f"keep more values in registers (kept_values={kept_values})"
        )
    ring = ring or min(fit, 2 * staged)
    if staged and not staged < ring <= fit:
        raise ValueError(f"stream plan: ring={ring} must lie in ({staged}, {fit}] for {staged} staged chunks")
    row = RowPlan(n, vec, threads, 1, vecs, chunks, onchip=chunks > 1, kept=kept, persist=1, sms=sms or NUM_SMS,
                  cache=cache_hint)  # fmt: skip
    return StreamPlan(row, ring if staged else 0, exps)


def _butterfly(v, width, op):
    off = width // 2
    while off >= 1:
        v = op(v, fx.shuffle_xor(v, off))
        off //= 2
    return v


def _merge(m, s, width):
    """(max, sum of exp(x - max)) over ``width`` lanes: the max first, then each lane's sum rescaled to it once."""
    big = _butterfly(m, width, fx.max)
    s = s * fx.exp2((m - big) * LOG2E, fastmath="afn")
    return big, _butterfly(s, width, lambda a, b: a + b)


def max_sum_reduce(m, s, plan: RowPlan, parity=0):
    """Softmax's row statistics: each thread's (max ``m``, sum ``s`` of exp(x - m)) merged over the
    ``plan.threads`` threads of its row; every thread gets the row's (max, sum).

    As :func:`kernels.norm.norm_common.row_reduce` with ``combine_max_sum`` (XOR shuffles in a warp, each warp's
    partial through shared memory, one barrier, every warp merging its row's partials itself), but each stage
    reduces the max first and rescales the sums to it once: two ``ex2`` per thread in all instead of two per
    butterfly level (20 for a 1024-thread row). Persistent plans alternate two sets of partials by row
    (``parity``), as ``row_reduce`` does."""
    m, s = _merge(m, s, min(plan.threads, WARP))
    if plan.threads <= WARP:
        return m, s
    tid = fx.thread_idx.x
    lane, warp = tid % WARP, tid // WARP
    nw, bw = plan.threads // WARP, plan.block_threads // WARP
    smem = fx.alloc_shared(fx.Float32, 2 * bw * (2 if plan.persist else 1))
    if plan.persist:
        smem = smem + parity * (2 * bw)
    (smem + warp).store(m, mask=lane == 0)
    (smem + (bw + warp)).store(s, mask=lane == 0)
    fx.barrier()
    first = warp - warp % nw
    return _merge(smem[first + lane % nw], smem[bw + first + lane % nw], nw)


def _slot(staging, plan: StreamPlan, slot):
    """The shared-memory view of ring slot ``slot`` (run-time) over the row's threads."""
    p = plan.row
    return fx.make_view(staging + slot * p.chunk_cols, fx.make_layout((1, p.chunk_cols), (p.chunk_cols, 1)))


def _read_slot(frag: RowFragments, c, staging, plan: StreamPlan, slot, fill):
    """This thread's values of chunk ``c`` from ring slot ``slot`` (``fill`` past the row's end)."""
    src = frag.thr.partition_S(_slot(staging, plan, slot))
    regs = fx.make_fragment_like(src)
    fx.copy(frag.tiled, src, regs)
    v = regs.load()
    mask = frag.lane_mask(c)
    return v if mask is None else mask.select(v, fill)


def _write_slot(frag: RowFragments, staging, plan: StreamPlan, slot, values):
    """Overwrite this thread's vectors of ring slot ``slot`` (read back by this thread only: no barrier)."""
    dst = frag.thr.partition_D(_slot(staging, plan, slot))
    regs = fx.make_fragment_like(dst)
    regs.store(values)
    fx.copy(frag.tiled, regs, dst)


def _output(v, chunk_max, big_m, inv_s):
    """A chunk's softmax from its values ``v`` or, where ``chunk_max`` is given (exps plans), from its exps to it."""
    if chunk_max is None:
        return fx.exp2(v.to(fx.Float32) * LOG2E - big_m * LOG2E) * inv_s
    return v * (fx.exp2((chunk_max - big_m) * LOG2E) * inv_s)


def _online(m, s, x):
    """One chunk's step of the online (max, sum): the new running max and sum, and the chunk's exps to that max."""
    m_new = fx.max(m, x.reduce("max"))
    e = fx.exp2(x * LOG2E - m_new * LOG2E)
    return m_new, s * fx.exp2((m - m_new) * LOG2E) + tree_sum(e), e


def _stream_rows(plan: StreamPlan, dtype, rows, A, C, masked_min, fastmath):
    """Softmax of rows ``block, block + grid, ...`` of ``A`` into ``C`` (the module docstring's schedule)."""
    p = plan.row
    K, S, R, E = p.kept, plan.staged, plan.ring, plan.early
    X, XS = plan.exps, plan.exps and dtype.width == 32  # exps held: kept chunks; staged ones too (f32 rows)
    staging = None
    if S:
        alloc = fx.SharedAllocator(static=False)
        staging = alloc.allocate(plan.staging_bytes(dtype.width // 8), alignment=16).ptr.recast(dtype)
    step, first = fx.grid_dim.x, fx.block_idx.x
    head = RowFragments(p, dtype, first, rows - first)
    for k in fx.range_constexpr(S):  # the first row's staged chunks: slots 0 .. S-1, in the groups of every row's
        head.copy_async(A, K + k, staging, k)
        if fx.const_expr(k == E - 1 or k == S - 1):  # (early ones, then the others)
            fx.nvvm.cp_async_commit_group()
    kept = [head.load(A, c, masked_min, rows_checked=True) for c in range(K)]
    base = fx.Int32(0)  # slot of this row's first staged chunk: (i * S) % R for the block's i-th row
    parity = fx.Int32(0)
    for r in range(first, rows, step):
        frag = RowFragments(p, dtype, r, rows - r)
        nxt = RowFragments(p, dtype, r + step, rows - r - step)
        if fx.const_expr(S):
            for k in fx.range_constexpr(E):  # the next row's first staged chunks: the spare slots
                nxt.copy_async(A, K + k, staging, (base + S + k) % R)
            fx.nvvm.cp_async_commit_group()
        with fx.fastmath(fastmath):
            m = fx.Float32(masked_min)
            s = fx.Float32(0.0)
            # what landed first first: the early staged chunks (copied during the last row's reduction), the kept
            # ones (loaded during its output), the other staged ones (copied last). Groups pending here: this
            # row's early copies, its others (where there are any), the next row's early ones (just started)
            held, maxes = list(kept), [None] * (K + S)  # exps plans: each chunk's exps and the max they are to
            for c in [K + k for k in range(E)] + list(range(K)) + [K + k for k in range(E, S)]:
                if fx.const_expr(c == K and E):
                    fx.nvvm.cp_async_wait_group(2 if S > E else 1)
                if fx.const_expr(c == K + E and S > E):
                    fx.nvvm.cp_async_wait_group(1)
                if fx.const_expr(c < K):
                    x = kept[c].to(fx.Float32)
                else:
                    x = _read_slot(frag, c, staging, plan, (base + c - K) % R, masked_min).to(fx.Float32)
                m, s, e = _online(m, s, x)
                if fx.const_expr(X and c < K):
                    held[c], maxes[c] = e, m
                if fx.const_expr(XS and c >= K):
                    _write_slot(frag, staging, plan, (base + c - K) % R, e)
                    maxes[c] = m
            big_m, s = max_sum_reduce(m, s, p, parity)
            inv_s = 1.0 / s
            nxt_kept = []
            for c in fx.range_constexpr(K):
                frag.store(C, c, _output(held[c], maxes[c], big_m, inv_s))
                nxt_kept.append(nxt.load(A, c, masked_min, rows_checked=True))  # this chunk's registers, refilled
            for k in fx.range_constexpr(S):
                slot = (base + k) % R
                v = _read_slot(frag, K + k, staging, plan, slot, masked_min)
                frag.store(C, K + k, _output(v, maxes[K + k], big_m, inv_s))
                if fx.const_expr(k < S - E):  # the slot is free: a later staged chunk of the next row
                    nxt.copy_async(A, K + E + k, staging, slot)
            if fx.const_expr(S > E):
                fx.nvvm.cp_async_commit_group()
        kept = nxt_kept
        base = (base + S) % R if S else base
        parity = 1 - parity
    if fx.const_expr(S):
        fx.nvvm.cp_async_wait_group(0)  # no copy (of a row past the last: zeros) outlives the block


# the row loop is a run-time loop: the helper's control flow is rewritten as a kernel body's is
stream_rows = ASTRewriter.transform(_stream_rows)
