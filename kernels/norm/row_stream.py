"""Long rows as a stream: a persistent block per SM that never lets its memory pipe run dry (softmax, LayerNorm).

Rows of 64K f32 (256 KB) take the whole of an SM: one 1024-thread block at 64 registers, part of the row in
registers and the rest staged in shared memory. Under the onchip plan every SM then reads its row, waits for the
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
and reads back only its own vectors, so no barrier guards the slots.

One schedule (:func:`stream_rows`) serves every kernel: what a kernel computes is a :class:`StreamOps` — the
per-thread statistic over a row's chunks (softmax: the online (max, sum); LayerNorm: (count, mean, M2)), its
reduction over the row's threads, and the output of a chunk (LayerNorm: with its W and B chunks).
"""

from __future__ import annotations

import dataclasses
import inspect

import flydsl.expr as fx
from flydsl.compiler.ast_rewriter import ASTRewriter
from kernels.norm.norm_common import (
    FEW_OPTIONS,
    KERNEL_OPTIONS,
    NUM_SMS,
    TAIL_OPTIONS,
    RowFragments,
    RowPlan,
    plan_rows,
)

__all__ = [
    "SMEM_LIMIT",
    "StreamPlan",
    "StreamOps",
    "plan_stream",
    "stream_rows",
    "STREAM_OPTIONS",
    "stream_options",
    "row_or_stream_plan",
]

SMEM_LIMIT = 227 * 1024 - 2048  # sm_90's opt-in shared memory per block, less the reduction's partials


@dataclasses.dataclass(frozen=True)
class StreamPlan:
    row: RowPlan  # one row per block (rows = 1), onchip chunks: the first ``row.kept`` in registers
    ring: int  # shared-memory slots (of one chunk each) for the staged chunks of this row and the next
    exps: bool = False  # softmax: the stats replace kept chunks' values (and, f32 rows, staged ones') by their exps
    clamp: bool = False  # a next row past the last is read as the last row again (unpredicated: streaming hints)

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
    clamp: bool = False,
) -> StreamPlan:
    """Rows of ``n`` elements over ``threads`` threads, in chunks of ``elems_per_thread`` values per thread;
    about ``kept_values`` values per thread (of the row's type) in registers, the rest staged; ``ring`` slots
    (0: as many as fit :data:`SMEM_LIMIT`, at most two per staged chunk); a persistent grid over ``sms`` SMs
    (0: :data:`NUM_SMS`). ``exps`` (softmax): each kept chunk's exps (to the running max after it; f32, in
    registers) replace its values, and f32 rows' staged chunks' exps their slot's values, so the output scales
    them (one ``ex2`` per chunk) instead of recomputing them. ``clamp``: the next row's loads and copies read the
    last row again where the block has no next row, instead of being predicated off (a predicated load carries no
    cache hint: with ``cache_hint="cs"`` the kept chunks' loads are then streaming too)."""
    vecs = max(1, elems_per_thread // vec)
    chunk_cols = threads * vecs * vec
    chunks = -(-n // chunk_cols)
    kept = min(chunks, max(0, kept_values // (vecs * vec)))
    staged = chunks - kept
    fit = SMEM_LIMIT // (chunk_cols * elem_bytes)
    if staged and staged >= fit:  # the ring holds every staged chunk and at least one more (the next row's first)
        raise ValueError(
            f"stream plan: {staged} staged chunks of {chunk_cols * elem_bytes} bytes and a spare slot do not fit in "
            f"shared memory ({fit} such slots); keep more values in registers (stream_kept, now {kept_values}) or "
            "take smaller chunks (stream_values, stream_threads)"
        )
    ring = ring or min(fit, 2 * staged)
    if staged and not staged < ring <= fit:
        raise ValueError(
            f"stream plan: ring={ring} slots for {staged} staged chunks: the ring holds each of them and at least one "
            f"more, and {fit} fit in shared memory: give {staged + 1} to {fit} (or 0: as many as fit, at most "
            f"{2 * staged})"
        )
    row = RowPlan(n, vec, threads, 1, vecs, chunks, onchip=chunks > 1, kept=kept, persist=1, sms=sms or NUM_SMS,
                  cache=cache_hint)  # fmt: skip
    return StreamPlan(row, ring if staged else 0, exps, clamp)


# a builder's options of the stream plan (``stream=True``) -> plan_stream's names for them
STREAM_OPTIONS = {"stream_values": "elems_per_thread", "stream_threads": "threads", "stream_kept": "kept_values",
                  "ring": "ring", "sms": "sms", "cache_hint": "cache_hint", "stream_exps": "exps",
                  "stream_clamp": "clamp"}  # fmt: skip
SHARED_OPTIONS = {"sms", "cache_hint"}  # options of both plan_stream and plan_rows


# what plan_rows takes from a builder's options: not the row length, element size and access width, nor what the
# builder gives itself (``clusters``: whether the target has them, a second value was a TypeError inside the trace;
# ``weight_tensors`` and ``inputs``: the kernel's tensors)
ROW_PLAN_OPTIONS = frozenset(inspect.signature(plan_rows).parameters) - {
    "n", "elem_bytes", "vec", "clusters", "weight_tensors", "inputs"
}  # fmt: skip


# options that do not describe a plan_rows plan (a kernel adds its own): given alone, they keep a stream default
NOT_ROW_PLAN = frozenset({*STREAM_OPTIONS, *TAIL_OPTIONS, *FEW_OPTIONS, "stream", "shape_defaults", "max_registers"})


def rule_defaults_off(plan_options: dict, not_row_plan) -> dict:
    """A builder's ``plan_options`` with the per-shape rules' plan choices switched off where the caller describes a
    plan of their own, so that they get it (not a rule's) at every row count: ``stream=False`` where they describe
    another plan (an option outside ``not_row_plan``: ``persist``, ``long_rows``, ``pair_rows``...) and do not say
    ``stream``; ``few_rows=0`` (no few-rows plan, ``kernels/norm/row_tail.py``) where they describe a plan (those
    options, ``stream`` or the stream plan's own) and do not say ``few_rows``. Tail options, ``cache_hint`` or
    ``max_registers`` alone keep both."""
    described = plan_options.keys() - not_row_plan
    out = dict(plan_options)
    if "stream" not in out and described:
        out["stream"] = False
    stream_plan = plan_options.keys() & (STREAM_OPTIONS.keys() - SHARED_OPTIONS | {"stream"})
    if "few_rows" not in out and (described or stream_plan):
        out["few_rows"] = 0
    return out


def stream_options(plan_options: dict, kernel: str, own: tuple = ()) -> tuple[bool, dict, dict]:
    """``(stream, plan_stream's options, plan_rows' options)`` of a builder's plan options: ``stream`` and the
    options of :data:`STREAM_OPTIONS` (under plan_stream's names) taken out, the shared ones left in both. Any other
    option plan_rows does not take (another kernel's, or misspelt) is a ValueError naming ``kernel`` and what it takes
    (``own``: the builder's own options, taken out before), raised when the kernel is built (not, as before, a
    TypeError from inside its trace)."""
    plan_options = dict(plan_options)
    streamed = plan_options.pop("stream", False)
    options = {k: plan_options[o] for o, k in STREAM_OPTIONS.items() if o in plan_options}
    for o in STREAM_OPTIONS.keys() - SHARED_OPTIONS:  # the stream plan's own (left over when it is switched off)
        plan_options.pop(o, None)
    unknown = sorted(plan_options.keys() - ROW_PLAN_OPTIONS)
    if unknown:
        takes = sorted(ROW_PLAN_OPTIONS | STREAM_OPTIONS.keys() | {"stream", "shape_defaults", *KERNEL_OPTIONS, *own})
        raise ValueError(
            f"{kernel}: unknown plan option(s) {', '.join(map(repr, unknown))} (another kernel's option, one the "
            f"kernel sets itself, or misspelt); it takes {', '.join(takes)}"
        )
    return streamed, options, plan_options


def row_or_stream_plan(n: int, dtype, vec: int, streamed: bool, stream_plan_options: dict, plan_options: dict):
    """The stream plan where asked for (``streamed``) and its copies can be ``cp.async`` (4 bytes or more), else
    plan_rows' (LayerNorm's and RMSNorm's builders; options as :func:`stream_options` splits them)."""
    if streamed and vec * dtype.width >= 32:
        return plan_stream(n, dtype.width // 8, vec, **stream_plan_options)
    return plan_rows(n, dtype.width // 8, vec, **plan_options, clusters=fx.nvvm.has_clusters())


class StreamOps:
    """What a kernel computes over a streamed row (:func:`stream_rows` calls these while it is traced).

    ``fill``: the value of loads past the row's end (None: left as loaded; the kernel masks them itself).
    ``begin()``: a thread's empty running statistic. ``chunk(state, x, frag, c)``: the statistic after chunk
    ``c``'s values ``x`` (f32) -> ``(state, hold, aux)``: ``hold`` (or None) replaces what is held of the chunk
    (its registers, or its slot's values), ``aux`` is given back to its output. ``reduce(state, frag, plan,
    parity)``: the row's statistics over its threads (``parity``: the persistent row's set of partials).
    ``output(frag, c, v, aux, stats)``: write chunk ``c`` from its held values ``v`` (the row's type, or ``hold``).
    """

    fill = None

    def begin(self):
        raise NotImplementedError

    def chunk(self, state, x, frag: RowFragments, c: int):
        raise NotImplementedError

    def reduce(self, state, frag: RowFragments, plan: RowPlan, parity):
        raise NotImplementedError

    def output(self, frag: RowFragments, c: int, v, aux, stats):
        raise NotImplementedError


def _slot(staging, plan: StreamPlan, slot):
    """The shared-memory view of ring slot ``slot`` (run-time) over the row's threads."""
    p = plan.row
    return fx.make_view(staging + slot * p.chunk_cols, fx.make_layout((1, p.chunk_cols), (p.chunk_cols, 1)))


def _read_slot(frag: RowFragments, c, staging, plan: StreamPlan, slot, fill):
    """This thread's values of chunk ``c`` from ring slot ``slot`` (``fill`` past the row's end, unless None)."""
    src = frag.thr.partition_S(_slot(staging, plan, slot))
    regs = fx.make_fragment_like(src)
    fx.copy(frag.tiled, src, regs)
    v = regs.load()
    mask = None if fill is None else frag.lane_mask(c)
    return v if mask is None else mask.select(v, fill)


def _write_slot(frag: RowFragments, staging, plan: StreamPlan, slot, values):
    """Overwrite this thread's vectors of ring slot ``slot`` (read back by this thread only: no barrier)."""
    dst = frag.thr.partition_D(_slot(staging, plan, slot))
    regs = fx.make_fragment_like(dst)
    regs.store(values)
    fx.copy(frag.tiled, regs, dst)


def _stream_rows(plan: StreamPlan, dtype, rows, A, ops: StreamOps, fastmath):
    """Rows ``block, block + grid, ...`` of ``A`` through ``ops`` (the module docstring's schedule)."""
    p = plan.row
    K, S, R, E = p.kept, plan.staged, plan.ring, plan.early
    staging = None
    if S:
        alloc = fx.SharedAllocator(static=False)
        staging = alloc.allocate(plan.staging_bytes(dtype.width // 8), alignment=16).ptr.recast(dtype)
    step, first = fx.grid_dim.x, fx.block_idx.x
    checked = not plan.clamp  # (clamped: every next row is a row; a block's first is one: the grid is at most rows)
    head = RowFragments(p, dtype, first, rows - first)
    for k in fx.range_constexpr(S):  # the first row's staged chunks: slots 0 .. S-1, in the groups of every row's
        head.copy_async(A, K + k, staging, k, checked)
        if fx.const_expr(k == E - 1 or k == S - 1):  # (early ones, then the others)
            fx.nvvm.cp_async_commit_group()
    kept = [head.load(A, c, ops.fill, rows_checked=checked) for c in range(K)]
    base = fx.Int32(0)  # slot of this row's first staged chunk: (i * S) % R for the block's i-th row
    parity = fx.Int32(0)
    for r in range(first, rows, step):
        frag = RowFragments(p, dtype, r, rows - r)
        if fx.const_expr(plan.clamp):
            nxt = RowFragments(p, dtype, fx.min(r + step, rows - 1), rows - r - step)
        else:
            nxt = RowFragments(p, dtype, r + step, rows - r - step)
        if fx.const_expr(S):
            for k in fx.range_constexpr(E):  # the next row's first staged chunks: the spare slots
                nxt.copy_async(A, K + k, staging, (base + S + k) % R, checked)
            fx.nvvm.cp_async_commit_group()
        with fx.fastmath(fastmath):
            state = ops.begin()
            # what landed first first: the early staged chunks (copied during the last row's reduction), the kept
            # ones (loaded during its output), the other staged ones (copied last). Groups pending here: this
            # row's early copies, its others (where there are any), the next row's early ones (just started)
            held, aux = list(kept), [None] * (K + S)
            for c in [K + k for k in range(E)] + list(range(K)) + [K + k for k in range(E, S)]:
                if fx.const_expr(c == K and E):
                    fx.nvvm.cp_async_wait_group(2 if S > E else 1)
                if fx.const_expr(c == K + E and S > E):
                    fx.nvvm.cp_async_wait_group(1)
                if fx.const_expr(c < K):
                    x = kept[c].to(fx.Float32)
                else:
                    x = _read_slot(frag, c, staging, plan, (base + c - K) % R, ops.fill).to(fx.Float32)
                state, hold, a = ops.chunk(state, x, frag, c)
                aux[c] = a
                if fx.const_expr(hold is not None and c < K):
                    held[c] = hold
                if fx.const_expr(hold is not None and c >= K):
                    _write_slot(frag, staging, plan, (base + c - K) % R, hold)
            stats = ops.reduce(state, frag, p, parity)
            nxt_kept = []
            for c in fx.range_constexpr(K):
                ops.output(frag, c, held[c], aux[c], stats)
                nxt_kept.append(nxt.load(A, c, ops.fill, rows_checked=checked))  # this chunk's registers, refilled
            for k in fx.range_constexpr(S):
                slot = (base + k) % R
                v = _read_slot(frag, K + k, staging, plan, slot, ops.fill)
                ops.output(frag, K + k, v, aux[K + k], stats)
                if fx.const_expr(k < S - E):  # the slot is free: a later staged chunk of the next row
                    nxt.copy_async(A, K + E + k, staging, slot, checked)
            if fx.const_expr(S > E):
                fx.nvvm.cp_async_commit_group()
        kept = nxt_kept
        base = (base + S) % R if S else base
        parity = 1 - parity
    if fx.const_expr(S):
        fx.nvvm.cp_async_wait_group(0)  # no copy (of a row past the last: zeros) outlives the block


# the row loop is a run-time loop: the helper's control flow is rewritten as a kernel body's is
stream_rows = ASTRewriter.transform(_stream_rows)
