"""What the row kernels (softmax, RMSNorm, LayerNorm) share: how a block covers its rows, the per-thread
row fragment (128-bit loads and stores through a tiled copy), and warp/block reductions.

A block owns ``rows`` consecutive rows (``iters`` groups of them, one after the other); ``threads``
consecutive threads share one row, each holding ``vecs`` vectors of ``vec`` elements per chunk of
``threads * vecs * vec`` columns. When the row fits in one chunk (``chunks == 1``), it stays in registers
between the reduction and the output: the kernel reads and writes every element once. Longer rows:

* ``onchip`` (the default): every chunk is loaded once (all loads issued before the first use); the first
  ``kept`` chunks stay in registers and the others are *staged* in dynamic shared memory — each thread
  writes its own vectors and reads them back after the reduction (thread-private, so no barrier) — so the
  kernel still reads and writes every element once;
* ``two_pass``: statistics over the chunks, then a second read of the row (mostly from L2) for the output;
* ``cluster`` (sm_90): the row is split over a thread block cluster of ``cluster`` blocks (2, 4 or 8), each
  holding its slice of ``chunk_cols`` columns in registers; the blocks exchange only their partial statistics
  through distributed shared memory (each warp's partial in its block's shared memory, one cluster barrier,
  every warp reads all of the cluster's partials and reduces them in the same order, so every block gets the
  same result). A row of 64K f32 becomes four blocks of 16K (the in-register plan) instead of one block with
  half of its row staged in shared memory: 4x the blocks, several per SM, so one block's reduction hides
  behind another's loads. A block must not exit while another may still read its shared memory: kernels end
  with :func:`finish_rows` (the wait of a second, arrive-only barrier).

Persistent plans (``persist``, rows of one block): a grid of at most ``persist`` blocks per SM, each looping
over rows (:func:`each_row`); the next row's first ``prefetch`` chunks are copied into shared memory by
``cp.async`` while this row is reduced and written, so an SM's loads do not stop at every row's reduction
(with one 1024-thread block per SM nothing else would cover it). Each thread copies and later reads back only
its own vectors: no barrier. Optionally the weights stay in shared memory for all of a block's rows
(``weights``) and every slot is doubled so the next row's copies start before this row's stats (``early``).
"""

from __future__ import annotations

import dataclasses

import flydsl.expr as fx
from flydsl.compiler.ast_rewriter import ASTRewriter
from kernels.norm.row_reduce import (
    LOG2E,
    WARP,
    combine_add,
    combine_max_sum,
    combine_mean_m2,
    finish_rows,
    per_row,
    row_reduce,
    tree_sum,
)

__all__ = [
    "DTYPES",
    "MASKED_MIN",
    "LOG2E",
    "RowPlan",
    "plan_rows",
    "row_groups",
    "each_row",
    "finish_rows",
    "staging_buffer",
    "SMEM_BUDGET",
    "PAIR_SMEM_BUDGET",
    "NUM_SMS",
    "TAIL_OPTIONS",
    "FEW_OPTIONS",
    "vector_width",
    "RowFragments",
    "row_reduce",
    "tree_sum",
    "combine_add",
    "combine_max_sum",
    "combine_mean_m2",
    "per_row",
    "split_options",
    "check_row_options",
    "defaults_for",
    "WIDE_ONLY",
    "with_defaults",
    "with_register_cap",
]

DTYPES = {"f32": fx.Float32, "f16": fx.Float16, "bf16": fx.BFloat16}
# Softmax's value for masked-off elements: below any real input and finite even times log2(e), so that a
# thread holding no valid element computes exp2(0) = 1 (not exp2(inf - inf) = NaN), which the merge with
# the row's real maximum then scales to 0. A power of two: x * log2e - m * log2e, contracted to one fma, is
# then exactly 0 for x = m = MASKED_MIN (the product is exact); at -1e38 the fma kept the product's rounding
# error, about 2**103, and a block of a cluster plan holding no column of the row (softmax f32, 40000 columns
# over 8 blocks of 6144) computed exp2(+2**103) = inf, and the whole row NaN, on the H200.
MASKED_MIN = {"f32": -(2.0**126), "f16": -65504.0, "bf16": -(2.0**126)}

VEC_BYTES = 16  # one 128-bit access


def vector_width(n: int, elem_bytes: int, align_bytes: int = VEC_BYTES) -> int:
    """Elements per access: the largest power of two that divides ``n`` (every row starts aligned), fits
    in 128 bits and in the tensors' known alignment."""
    v = max(1, min(VEC_BYTES, align_bytes) // elem_bytes)
    while n % v:
        v //= 2
    return v


def _pow2_at_least(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


@dataclasses.dataclass(frozen=True)
class RowPlan:
    n: int  # row length
    vec: int  # elements per access
    threads: int  # threads per row (a power of two)
    rows: int  # rows per block (per iteration)
    vecs: int  # accesses per thread per chunk
    chunks: int  # 1: the row stays in registers; more: onchip (kept + staged) or two passes
    onchip: bool = False  # chunks > 1: one read (kept in registers, staged in shared memory)
    kept: int = 1  # onchip: chunks kept in registers (the others are staged in shared memory)
    iters: int = 1  # row groups a block handles (loads of all issued first); onchip: rows paired per thread
    batch: int = 1  # onchip: chunks whose loads are issued together, before their first use
    cluster: int = 1  # blocks sharing one row (a thread block cluster); each holds chunk_cols columns
    persist: int = 0  # > 0: a persistent grid of ``persist`` blocks per SM, each looping over rows
    prefetch: int = 0  # persistent plans: chunks of the next row copied to shared memory (cp.async) ahead
    sms: int = 132  # persistent plans: the SMs the grid fills (NUM_SMS)
    cache: str = ""  # the rows' global loads and stores: "" or "cs" (streaming: evict first; not the weights)
    inputs: int = 1  # persistent plans: tensors prefetched (the fused add: X and R)
    early: bool = False  # persistent plans: every prefetch slot in two sets, the next row's copies start first
    weights: int = 0  # persistent plans: weight tensors held in shared memory (loaded once per block)
    lag: int = 0  # persistent paired rows: the next pair's staged chunks reduced in this pair's output, this far behind
    reread: int = 0  # one-shot pairs: each row's last chunks, neither kept nor staged: read again for the output
    tail: bool = False  # a tail launch's cluster plan (row_tail.py): its rows are the last grid / cluster of ``rows``

    @property
    def chunk_cols(self) -> int:
        return self.threads * self.vecs * self.vec

    @property
    def block_threads(self) -> int:
        return self.threads * self.rows

    @property
    def ragged(self) -> bool:
        """Some accesses of the last chunk (of the last block of a cluster) lie past the row's end (they are
        predicated off)."""
        return self.cluster * self.chunks * self.chunk_cols != self.n

    @property
    def paired(self) -> bool:
        """Each block (each iteration of a persistent one) holds two rows, every thread the same columns of both
        (``pair_rows``; its blocks and their rows: ``kernels/norm/pair_rows.py``)."""
        return self.onchip and self.iters == 2 and self.rows == 1

    def grid(self, m):
        """Blocks for ``m`` rows (a run-time Int32 or an int); persistent plans: at most ``persist`` per SM (paired
        plans: ``pair_rows.pair_grid``)."""
        if self.cluster > 1:
            return m * self.cluster
        blocks = (m + self.rows_per_block - 1) // self.rows_per_block
        if self.persist:
            cap = self.persist * self.sms
            return min(blocks, cap) if isinstance(blocks, int) else fx.min(blocks, cap)
        return blocks

    @property
    def func_attrs(self) -> dict:
        """``launch(value_attrs=...)``: a persistent plan's ``persist`` blocks must fit an SM together, so ptxas
        is told (``.minnctapersm``: 512-thread blocks get at most 64 registers), else the grid's second half
        would run after the first."""
        return {"min_blocks_per_sm": self.persist} if self.persist else {}

    @property
    def cluster_dims(self):
        """``launch(cluster=...)``: None, or the blocks that share a row."""
        return (self.cluster, 1, 1) if self.cluster > 1 else None

    @property
    def staged(self) -> int:
        """Chunks staged in shared memory (onchip plans)."""
        return self.chunks - self.kept - self.reread if self.onchip else 0

    def batches(self) -> list[list[int]]:
        """The chunks in load batches (onchip plans): each batch's loads are issued before its first use."""
        return [list(range(i, min(i + self.batch, self.chunks))) for i in range(0, self.chunks, self.batch)]

    @property
    def rows_per_block(self) -> int:
        return self.rows * self.iters

    @property
    def prefetch_kept(self) -> int:
        """Kept chunks that arrive through shared memory (prefetched): one slot each, refilled after the stats."""
        return min(self.prefetch, self.kept)

    @property
    def prefetch_staged(self) -> int:
        """Staged chunks that are prefetched: they stay in their slot until the output, so the next row's copies
        go to a second set of slots (two sets, alternating by row)."""
        return max(0, self.prefetch - self.kept) if self.chunks > 1 else 0

    def slot(self, c: int, parity=0, region: int = 0):
        """The shared-memory slot (in chunks) of chunk ``c`` (prefetched or staged); ``parity`` (0/1, run-time
        allowed) picks the set of a prefetched staged chunk (and, ``early``, of every prefetched chunk).
        ``region`` ``i > 0``: the prefetched chunk of the plan's ``i``-th other input (one set unless ``early``:
        it is read at the stats, before the next row's copies start)."""
        pk, ps = self.prefetch_kept, self.prefetch_staged
        sets = 2 if self.early else 1
        kx = sets * pk
        if region:
            return kx + self.staged + ps + ((region - 1) * sets + (parity if self.early else 0)) * self.prefetch + c
        if c < self.kept:
            return c + (parity * pk if self.early else 0)  # a prefetched kept chunk
        if c < self.kept + ps:
            return kx + (self.staged - ps) + parity * ps + (c - self.kept)
        return kx + (c - self.kept - ps)  # staged, not prefetched: written by RowFragments.keep

    @property
    def slots(self) -> int:
        sets = 2 if self.early else 1
        return sets * self.prefetch_kept + self.staged + self.prefetch_staged + (self.inputs - 1) * sets * self.prefetch

    def weight_slot(self, k: int, c: int) -> int:
        """The slot of chunk ``c`` of weight tensor ``k`` held in shared memory (after every other slot)."""
        return self.slots + k * self.chunks + c

    def staging_bytes(self, elem_bytes: int) -> int:
        """Dynamic shared memory of the staged, prefetched and weight chunks (each row group its own slots)."""
        return (self.slots * self.iters + self.weights * self.chunks) * self.rows * self.chunk_cols * elem_bytes


SMEM_BUDGET = 200 * 1024  # staging stays under sm_90's 227 KB per block, with room for the reductions
PAIR_SMEM_BUDGET = 224 * 1024  # paired rows: a block alone on its SM (its reduction's partials take 1.5 KB more)
# threads an SM holds at 64 registers each (65536 registers): the row kernels take 33-64, so no more fit
THREADS_PER_SM = 1024
NUM_SMS = 132  # H200: a persistent grid's size (any size is correct; this one fills the GPU)

# a builder's launch options (kernels/norm/row_tail.py) and their defaults: the tail launch's (0 columns: no tail) at
# most ``tail_blocks`` blocks in the tail (0: as many as the GPU runs at once, row_tail.blocks_at_once), and a tail only
# while the main kernel has at most ``tail_rounds`` rounds of rows (a row per SM, paired rows two; 0: only fewer rows
# than one round, every one of them the tail's) — with more, the last round is a small part of the time and splitting
# it off measured slower (H200, session 21); ``tail_regs``: the tail kernel's register cap (0: two of its blocks per SM
# where they have 512 threads or fewer, else all that one block may take; a cap above what one block may take is
# that); ``tail_spread``: a tail after a main kernel whose blocks fill their SMs takes an SM per block
# (row_tail.RowTail.tail_limits); a launcher's ``max_registers`` is the main kernel's.
TAIL_OPTIONS = {"tail_cols": 0, "tail_blocks": 0, "tail_rounds": 2, "tail_regs": 0, "tail_spread": True}
# the few-rows plan's: launches of at most ``few_rows`` rows (or of a range ``(lo, hi)`` of row counts; 0: none, and
# ``few_plan`` unused: ``few_rows=0`` switches a per-shape rule's off) take
# the plan ``few_plan`` describes (a builder's options over its base defaults, as with ``shape_defaults=False``) for
# their main kernel
FEW_OPTIONS = {"few_rows": 0, "few_plan": None}


KERNEL_OPTIONS = ("max_registers",)  # options of the kernel's compilation, not of the row plan


def with_defaults(shape_defaults: dict, base: dict, options: dict) -> dict:
    """``options`` over a kernel's defaults: ``shape_defaults`` (its per-shape rules over ``base``), or only
    ``base`` with ``shape_defaults=False`` among ``options`` (the plans before the per-shape rules). A rule's
    ``few_plan`` goes where ``options`` switch its few-rows plan off (``few_rows=0``)."""
    options = dict(options)
    merged = {**(shape_defaults if options.pop("shape_defaults", True) else base), **options}
    if not merged.get("few_rows") and "few_plan" not in options:  # (a caller's few_rows=0 over a rule's few_plan)
        merged.pop("few_plan", None)
    return merged


WIDE_ONLY = "wide_only"  # a per-shape rule's mark: only for rows of 8-byte accesses or wider (see defaults_for)


def defaults_for(rules, n: int, dtype_str: str) -> dict:
    """The options of the first rule ``((n_min, n_max, dtypes), options)`` whose range holds ``n`` and whose
    dtypes (a tuple of ``dtype_str`` names, or None for all) hold ``dtype_str``; ``{}`` when none does. A
    kernel's per-shape defaults: what measured fastest for rows of that length and type. A rule whose options
    hold ``WIDE_ONLY`` applies only to rows whose accesses are 8 bytes or wider (a row length that 2 f32 or 4
    16-bit values divide, as :func:`vector_width` finds it): it was measured on those; narrower accesses carry a
    predicate per value and take other plans (an odd bf16 row of 32767 spilled 194 bytes under a 64-register rule).
    Only the row length is seen here: tensors less aligned than their rows get narrower accesses at launch and keep
    the wide rules."""
    narrow = vector_width(n, DTYPES[dtype_str].width // 8) * (DTYPES[dtype_str].width // 8) < 8
    for (lo, hi, dtypes), options in rules:
        if lo <= n <= hi and (dtypes is None or dtype_str in dtypes) and not (narrow and options.get(WIDE_ONLY)):
            return {k: v for k, v in options.items() if k != WIDE_ONLY}
    return {}


def split_options(options: dict, pairs: bool = False) -> tuple[dict, dict]:
    """(the row plan's options, the kernel's options :data:`KERNEL_OPTIONS`) of a builder's keyword arguments;
    ``pair_rows`` only for a kernel that reads paired rows (``pairs``: LayerNorm)."""
    if options.get("pair_rows") and not pairs:
        raise ValueError("pair_rows=True: only LayerNorm pairs rows (it shares W and B loads); leave it out here")
    plan = {k: v for k, v in options.items() if k not in KERNEL_OPTIONS}
    return plan, {k: v for k, v in options.items() if k in KERNEL_OPTIONS}


def with_register_cap(launcher, kernel_options: dict):
    """``launcher`` with the register cap of ``kernel_options["max_registers"]`` (PTX ``.maxnreg``) when given:
    a block of ``t`` threads fits ``b`` times in an SM only at ``65536 / (b * t)`` registers or fewer (2 blocks
    of 512 threads: 64), which ptxas does not aim for by itself."""
    cap = kernel_options.get("max_registers")
    if cap:
        launcher.compile_hints["maxnreg"] = int(cap)
    return launcher


def plan_rows(
    n: int,
    elem_bytes: int,
    vec: int,
    *,
    elems_per_thread: int = 32,
    block_threads: int = 256,
    register_limit: int = 16384,
    max_row_threads: int = 1024,
    chunk_threads: int = 512,
    long_rows: str = "onchip",
    onchip_threads: int = 1024,
    kept_values: int = 32,
    load_values: int = 64,
    row_iters: int = 1,
    cluster_cols: int = 16384,
    clusters: bool = True,
    persist: int = 0,
    persist_from: int = 0,
    sms: int = 0,
    inputs: int = 1,
    prefetch_early: bool = False,
    weights_smem: bool = False,
    weight_tensors: int = 0,
    cache_hint: str = "",
    pair_rows: bool = False,
    pair_lag: int = 0,
    balance_chunks: bool = False,
) -> RowPlan:
    """Cover rows of ``n`` elements: about ``elems_per_thread`` values per thread (enough 128-bit loads in
    flight, few enough registers for several blocks per SM); rows of at most ``register_limit`` elements in
    one chunk; small rows packed ``rows`` to a block of about ``block_threads`` threads, ``row_iters``
    groups of them per block.

    Longer rows (``long_rows``): ``"onchip"`` in chunks of ``onchip_threads`` threads, about
    ``kept_values`` values per thread kept in registers and the rest staged in shared memory (at most
    :data:`SMEM_BUDGET` bytes: more chunks are kept when the row would need more), loads issued in batches of
    about ``load_values`` values per thread (more in flight; fewer registers held); rows with accesses
    narrower than 8 bytes use at most 512 threads, 16 kept values and one chunk per batch (each value
    carries a predicate: 1024 threads' 64 registers spill). ``"two_pass"``: chunks of ``chunk_threads``
    threads, read twice. ``"cluster"`` (sm_90): a cluster of 2, 4 or 8 blocks per row, each holding about
    ``cluster_cols`` columns in registers (rows longer than 8 such slices of at most ``register_limit``
    elements fall back to ``"onchip"``); it applies to rows longer than ``cluster_cols``, and only where the
    target has clusters (``clusters``: the kernels pass ``fx.nvvm.has_clusters()``; else ``"onchip"``).

    ``persist=b`` (rows of one block each, in registers or onchip): a persistent grid of ``b`` blocks per SM (at
    most as many as :data:`THREADS_PER_SM` allows),
    each looping over rows, with the next row's first ``prefetch`` chunks copied to shared memory (``cp.async``)
    while this row is reduced and written — as many as fit :data:`SMEM_BUDGET` per SM (:func:`_persistent`);
    ``persist_from``: only rows of at least that many elements (shorter ones keep one block per row group);
    ``sms``: the SMs to fill (0: :data:`NUM_SMS`; fewer make each block loop over more rows, as the tests do);
    ``inputs``: the tensors a persistent plan prefetches (each takes its own slots); ``prefetch_early``: the next
    row's copies start before this row's stats (two sets of every slot, where they fit); ``weights_smem``: the
    kernel's ``weight_tensors`` weights held in shared memory by each persistent block (read from L2 once per
    block instead of once per row: the L2 serves the rows' own traffic too).
    ``cache_hint="cs"``: the rows' unpredicated global loads and stores as ``ld/st.global.cs`` (streaming).
    ``pair_rows`` (onchip rows, accesses of 8 bytes or more): each block holds two rows, every thread the same
    columns of both (``iters=2``; chunks of one access per thread and row, ``kept_values / 2`` values of each row
    kept in registers, the rest of each row in its own staged slots, loads in batches of
    ``load_values`` values over both rows), so a kernel reads each weight chunk once for the two rows; where the
    two rows' staged chunks do not fit :data:`PAIR_SMEM_BUDGET`, the plan is not paired (``pair_rows="reread"``: it
    is, each row's chunks beyond those re-read from L2 for the output, ``RowPlan.reread``; ``"reread2"``: sized for
    two pair-blocks per SM, half the shared memory each). With ``persist``: a
    persistent grid looping over pairs, the next pair's staged chunks copied in during this pair's output
    (``pair_rows.py``); ``pair_lag=k``: each such chunk also reduced there, ``k`` chunks after its copy started.
    ``balance_chunks`` (onchip rows, not paired): as many accesses per thread per chunk as leave the fewest empty
    ones (at most ``elems_per_thread / vec``): a ragged row's last chunk less empty (no default uses it).
    """
    plan = _plan_rows(n, elem_bytes, vec, elems_per_thread, block_threads, register_limit, max_row_threads,
                      chunk_threads, long_rows, onchip_threads, kept_values, load_values, row_iters, cluster_cols,
                      clusters, persist if n >= persist_from else 0, sms, inputs, prefetch_early,
                      weight_tensors if weights_smem else 0, pair_rows, balance_chunks)  # fmt: skip
    if pair_lag > 0 and plan.iters > 1 and plan.persist:
        plan = dataclasses.replace(plan, lag=pair_lag)
    return dataclasses.replace(plan, cache=cache_hint) if cache_hint else plan


# plan_rows' integer options and their least values (a row's thread counts: powers of two, at most 1024)
_LEAST = {"elems_per_thread": 1, "block_threads": 1, "register_limit": 0, "kept_values": 0, "load_values": 1,
          "row_iters": 1, "cluster_cols": 1, "persist": 0, "persist_from": 0, "sms": 0, "pair_lag": 0}  # fmt: skip
_POW2_THREADS = ("max_row_threads", "chunk_threads", "onchip_threads")


def check_row_options(options: dict) -> None:
    """A ValueError naming the option unless plan_rows ``options`` are in range: thread counts of a row powers of two
    up to 1024 (a row's threads reduce by XOR butterflies within a warp and over its warps' partials: 96 threads gave
    wrong rows), ``block_threads`` at most 1024, the counts at least their least value, ``long_rows`` one of its
    names. The builders check their options with it before any trace (a zero ``cluster_cols`` was a division by zero
    inside it)."""
    for name in _POW2_THREADS:
        t = options.get(name, 1)
        if type(t) is not int or not 1 <= t <= 1024 or t & (t - 1):
            raise ValueError(f"{name}={t!r}: a row's threads are a power of two up to 1024 (e.g. 256, 512, 1024)")
    for name, least in _LEAST.items():
        v = options.get(name, least)
        if type(v) is not int or v < least or (name == "block_threads" and v > 1024):
            most = " and at most 1024 (a block's threads)" if name == "block_threads" else ""
            raise ValueError(f"{name}={v!r}: give an integer of at least {least}{most}")
    if options.get("long_rows", "onchip") not in ("onchip", "two_pass", "cluster"):
        raise ValueError(f"long_rows must be 'onchip', 'two_pass' or 'cluster', got {options['long_rows']!r}")


def _plan_rows(n, elem_bytes, vec, elems_per_thread, block_threads, register_limit, max_row_threads, chunk_threads,
               long_rows, onchip_threads, kept_values, load_values, row_iters, cluster_cols, clusters, persist,
               sms, inputs, early, weights, pair_rows=False, balance=False):  # fmt: skip
    check_row_options(
        {"max_row_threads": max_row_threads, "chunk_threads": chunk_threads, "onchip_threads": onchip_threads,
         "elems_per_thread": elems_per_thread, "block_threads": block_threads, "register_limit": register_limit,
         "kept_values": kept_values, "load_values": load_values, "row_iters": row_iters, "cluster_cols": cluster_cols,
         "sms": sms, "long_rows": long_rows}
    )  # fmt: skip
    vecs_target = max(1, elems_per_thread // vec)
    n_vecs = -(-n // vec)
    if long_rows == "cluster" and not clusters:
        long_rows = "onchip"
    if long_rows == "cluster" and n > cluster_cols:
        plan = _cluster_plan(n, vec, n_vecs, vecs_target, max_row_threads, register_limit, cluster_cols)
        if plan is not None:
            return plan
        long_rows = "onchip"
    if n <= register_limit:
        threads = min(max_row_threads, _pow2_at_least(-(-n_vecs // vecs_target)))
        vecs, chunks = -(-n_vecs // threads), 1
        rows = max(1, block_threads // threads)
        plan = RowPlan(n, vec, threads, rows, vecs, chunks, iters=max(1, row_iters), inputs=inputs)
        return _persistent(plan, persist, sms, elem_bytes, early, weights)
    if long_rows == "two_pass":
        threads, vecs = chunk_threads, vecs_target
        chunks = -(-n_vecs // (threads * vecs))
        return RowPlan(n, vec, threads, max(1, block_threads // threads), vecs, chunks)
    threads = onchip_threads
    narrow = vec * elem_bytes < 8  # odd or unaligned rows: a predicate per value, registers run short
    if narrow:
        threads, kept_values = min(threads, 512), min(kept_values, 16)
    reread, budget = 0, PAIR_SMEM_BUDGET // (2 if pair_rows == "reread2" else 1)
    for pair in (2, 1) if pair_rows and not narrow else (1,):
        # paired rows: chunks of one access per thread and row (at 1024 threads, both rows' values of a chunk, W and
        # B of this chunk and the next fit the 64 registers), the kept values shared by the two rows
        vecs, kept_for = (1, kept_values // 2) if pair > 1 else (vecs_target, kept_values)
        if balance and pair == 1:
            vecs = _balanced_vecs(n_vecs, threads, vecs)
        chunks = -(-n_vecs // (threads * vecs))
        kept = min(chunks, max(1, kept_for // (vecs * vec)))
        staged = (chunks - kept) * threads * vecs * vec * elem_bytes
        if pair == 1 or 0 < pair * staged <= budget:  # both rows' staged chunks fit
            break
        if pair_rows in ("reread", "reread2") and not persist and pair * staged > budget:  # read again for the output
            reread = chunks - kept - budget // (pair * threads * vecs * vec * elem_bytes)
            break
    while (chunks - kept - reread) * threads * vecs * vec * elem_bytes > SMEM_BUDGET:
        kept += 1
    batch = 1 if narrow else max(1, load_values // (pair * vecs * vec))
    plan = RowPlan(n, vec, threads, 1, vecs, chunks, onchip=chunks > 1, kept=kept, batch=batch, inputs=inputs,
                   iters=pair, sms=sms or NUM_SMS, reread=reread)  # fmt: skip
    return _persistent(plan, persist, sms, elem_bytes, early, weights)


def _balanced_vecs(n_vecs: int, threads: int, vecs: int) -> int:
    """Accesses per thread per chunk, at most ``vecs``, whose chunks cover ``n_vecs`` accesses with the fewest
    empty ones (the widest of those): a row of 49160 bf16 at 1024 threads takes 7 chunks of one access per thread
    (86% of them in the row), not 4 of two (75%)."""
    return min(range(vecs, 0, -1), key=lambda v: -(-n_vecs // (threads * v)) * v)


def _persistent(
    plan: RowPlan, persist: int, sms: int, elem_bytes: int, early: bool = False, weights: int = 0
) -> RowPlan:
    """``plan`` as a persistent grid of ``persist`` blocks per SM prefetching as many chunks of the next row as
    fit :data:`SMEM_BUDGET` per SM (of each of ``plan.inputs`` tensors, else of the first one only); unchanged
    for ``persist=0``, blocks of several rows (short rows: their blocks are many and small already), 16-bit or
    narrower accesses (a ``cp.async`` moves 4-16 bytes) and rows whose first chunk does not fit (no prefetch:
    nothing to gain from the loop). ``early``: every prefetch slot in two sets where that prefetches as much
    (the next row's copies then start as soon as this row's have landed). ``weights``: that many weight tensors
    held in shared memory for all of the block's rows (where some prefetch still fits beside them; else read
    from L2 for every row as without persistence)."""
    if persist > 0 and plan.iters > 1 and plan.onchip:  # paired rows: their staged slots refilled (pair_rows.py)
        persist = max(1, min(persist, THREADS_PER_SM // plan.block_threads))
        while persist > 1 and persist * plan.staging_bytes(elem_bytes) > SMEM_BUDGET:
            persist -= 1
        return dataclasses.replace(plan, persist=persist, sms=sms or NUM_SMS)
    if persist <= 0 or plan.rows_per_block != 1 or plan.vec * elem_bytes < 4:
        return plan
    persist = max(1, min(persist, THREADS_PER_SM // plan.block_threads))
    chunk_bytes = plan.chunk_cols * elem_bytes
    fits = [
        cand
        for wt in sorted({weights, 0}, reverse=True)
        for dbl in ((True, False) if early else (False,))
        for inputs in sorted({plan.inputs, 1}, reverse=True)  # every input prefetched, else the first only
        for pf in range(plan.chunks, 0, -1)
        for cand in [
            dataclasses.replace(
                plan, persist=persist, prefetch=pf, sms=sms or NUM_SMS, inputs=inputs, early=dbl, weights=wt
            )
        ]  # fmt: skip
        if (cand.slots + wt * plan.chunks) * chunk_bytes * persist <= SMEM_BUDGET
    ]
    if fits:  # weights on chip; then the most chunks prefetched; of those, of every input, early
        return max(fits, key=lambda p: (p.weights, p.prefetch * p.inputs, p.inputs, p.early))
    return plan  # not even one chunk of the next row fits beside the staging: one block per row


def _cluster_plan(n, vec, n_vecs, vecs_target, max_row_threads, register_limit, cluster_cols) -> RowPlan | None:
    """A row over a cluster of 2, 4 or 8 blocks (a power of two: the partials' reduction is a butterfly), each
    slice in registers; None when 8 slices of at most ``register_limit`` elements do not cover the row."""
    k = min(8, _pow2_at_least(-(-n // cluster_cols)))
    slice_vecs = -(-n_vecs // k)
    threads = max(WARP, min(max_row_threads, _pow2_at_least(-(-slice_vecs // vecs_target))))
    vecs = -(-slice_vecs // threads)
    if threads * vecs * vec > register_limit:
        return None
    return RowPlan(n, vec, threads, 1, vecs, 1, cluster=k)


class RowFragments:
    """Per-thread views of a block's rows, chunk by chunk: ``load(T, c)`` returns this thread's values of
    chunk ``c`` of tensor ``T`` (rows x n, row-major) as one flat Vector, ``store(T, c, v)`` writes them;
    ``load(W, c, broadcast=True)`` reads a length-n vector ``W`` (a weight) at the same columns. ``T`` is a
    tensor or its iterator: the kernels take iterators (one pointer parameter each instead of a pointer, two
    extents and a stride they never read: fewer values to pack per launch and for the driver to copy).

    One tiled copy (``plan.rows x plan.threads`` threads, ``1 x vec`` values each) moves every vector with
    one ``vec``-wide access (``ld.global.v4``/``st.global.v4`` for 128 bits); accesses past the row's end
    or past the last row are predicated off, and their registers keep ``fill``.
    """

    def __init__(self, plan: RowPlan, dtype, row0, rows_left, staging=None, col0=None, parity=0, weights=()):
        self.plan = plan
        self.weights = weights  # persistent plans with ``plan.weights``: the weight tensors held in shared memory
        self.dtype = dtype
        self.staging = staging  # the shared-memory pointer (``dtype``) of the staged and prefetched chunks
        self.col0 = col0  # cluster plans: this block's first column (run-time)
        self.parity = parity  # persistent plans: which set of slots this row's prefetched staged chunks use
        self.thr_layout = fx.make_ordered_layout((plan.rows, plan.threads), (1, 0))
        self.tiled, self.tiled_plain = (
            fx.make_tiled_copy_tv(
                fx.make_copy_atom(fx.UniversalCopy(plan.vec * dtype.width, cache=hint), dtype),
                self.thr_layout,
                fx.make_layout((1, plan.vec)),
            )
            for hint in (plan.cache, "")
        )
        self.thr = self.tiled.get_slice(fx.thread_idx.x)
        self.rows_left = rows_left
        # NOTE: the row offset is the only run-time part of an address: the (rows, chunk, chunks) views are
        # static, so the hot path has no index arithmetic beyond one multiply-add per thread.
        self.offset = fx.Int64(row0) * plan.n + (0 if col0 is None else fx.Int64(col0))
        self.layout = fx.make_layout((plan.rows, plan.chunk_cols, plan.chunks), (plan.n, 1, plan.chunk_cols))
        self.bcast = fx.make_layout((plan.rows, plan.chunk_cols, plan.chunks), (0, 1, plan.chunk_cols))
        self.crd = self.thr.partition_S(fx.make_identity_tensor((plan.rows, plan.chunk_cols)))[(0, None), None, None]

    def _view(self, t, c, broadcast=False):
        it = getattr(t, "iterator", t)  # a tensor or its iterator (a pointer with its known alignment)
        if broadcast:
            base = it if self.col0 is None else it + fx.Int64(self.col0)
            return fx.make_view(base, self.bcast)[None, None, c]
        return fx.make_view(it + self.offset, self.layout)[None, None, c]

    def pred(self, c=0, rows_checked=False):
        """None when every access of chunk ``c`` is in bounds, else one Boolean per access (or one for all of
        them where only the row can be out of bounds and ``rows_checked``: a prefetch of a row past the last)."""
        p = self.plan
        if p.rows == 1 and not self.ragged_chunk(c):
            return self.rows_left > 0 if rows_checked else None
        pred = fx.make_fragment_like(self.crd, dtype=fx.Boolean)
        cols_left = p.n - c * p.chunk_cols if self.col0 is None else p.n - self.col0
        for i in fx.range_constexpr(fx.size(pred)):
            pred[i] = fx.elem_less(self.crd[i], (self.rows_left, cols_left))
        return pred

    def ragged_chunk(self, c=0) -> bool:
        """Whether some access of chunk ``c`` may lie past the row's end: only a ragged plan's last chunk (every
        chunk of a run-time ``c``, a two-pass loop's; the last block's of a cluster). Predicating the full chunks
        too costs each of their accesses a predicate register, which at 64 registers spills (ptxas)."""
        p = self.plan
        if not p.ragged:
            return False
        return not isinstance(c, int) or self.col0 is not None or (c + 1) * p.chunk_cols > p.n

    def lane_mask(self, c=0):
        """None when every value of chunk ``c`` lies inside the row, else a Boolean Vector, one lane per value."""
        if not self.ragged_chunk(c):
            return None
        pred = self.pred(c)
        lanes = [pred[i] for i in range(fx.size(pred)) for _ in range(self.plan.vec)]
        return fx.Vector.from_elements(lanes, dtype=fx.Boolean)

    def load(self, t, c=0, fill=None, broadcast=False, rows_checked=False, hint=True):
        """This thread's values of chunk ``c`` of ``t`` from global memory (``broadcast``: of a weight, the same
        for every row); ``fill`` where nothing is read. ``rows_checked``: the row may lie past the last (a next
        row's load in a persistent loop), so it reads nothing there. ``hint=False``: no cache hint (a re-read chunk)."""
        if broadcast and self.plan.weights and any(t is w for w in self.weights):
            k = next(i for i, w in enumerate(self.weights) if t is w)
            return self._from_slot(c, weight=k)  # this thread's columns, copied once per block (load_weights)
        src = self.thr.partition_S(self._view(t, c, broadcast))
        regs = fx.make_fragment_like(src)
        pred = self.pred(c, rows_checked)
        if fill is not None and pred is not None:
            regs.fill(fill)
        fx.copy(self.tiled if hint and not broadcast else self.tiled_plain, src, regs, pred=pred)  # weights: no hint
        return regs.load()

    def store(self, t, c, values):
        dst = self.thr.partition_D(self._view(t, c))
        regs = fx.make_fragment_like(dst)
        regs.store(values.to(t.dtype))
        fx.copy(self.tiled, regs, dst, pred=self.pred(c))

    # -- onchip plans: chunks kept in registers or staged in shared memory; persistent plans' prefetches ------

    def _slot_view(self, c, region=0, weight=None):
        """This thread's part of chunk ``c``'s shared-memory slot (:meth:`RowPlan.slot`; of weight tensor
        ``weight``: :meth:`RowPlan.weight_slot`)."""
        p = self.plan
        slot = p.slot(c, self.parity, region) if weight is None else p.weight_slot(weight, c)
        base = self.staging + slot * (p.rows * p.chunk_cols)
        return self.thr.partition_S(fx.make_view(base, fx.make_layout((p.rows, p.chunk_cols), (p.chunk_cols, 1))))

    def _from_slot(self, c, region=0, weight=None):
        src = self._slot_view(c, region, weight)
        regs = fx.make_fragment_like(src)
        fx.copy(self.tiled, src, regs)
        return regs.load()

    def copy_async(self, t, c, staging, slot, rows_checked=True):
        """Start copying this thread's vectors of chunk ``c`` of ``t`` to slot ``slot`` (an int or a run-time
        Int32) of the chunk-sized slots at ``staging`` (``cp.async``; zeros past the row's end or for a row past
        the last, unless ``rows_checked`` is False: the row is known to be one); the caller commits the group. Each
        thread reads back only what its own copies wrote, so no barrier guards the slot."""
        p = self.plan
        atom = fx.make_copy_atom(fx.nvvm.CopyG2SOp(fx.nvvm.LoadCacheMode.GLOBAL, p.vec * self.dtype.width), self.dtype)
        thr = fx.make_tiled_copy_tv(atom, self.thr_layout, fx.make_layout((1, p.vec))).get_slice(fx.thread_idx.x)
        src = thr.partition_S(self._view(t, c))
        base = staging + slot * (p.rows * p.chunk_cols)
        dst = thr.partition_D(fx.make_view(base, fx.make_layout((p.rows, p.chunk_cols), (p.chunk_cols, 1))))
        fx.copy(atom, src, dst, pred=self.pred(c, rows_checked=rows_checked))

    def load_weights(self):
        """Start copying this thread's columns of every chunk of the weights held in shared memory (one group,
        completed by the first row's wait): the same columns for every row, so each thread reads back only what
        it copied."""
        p = self.plan
        atom = fx.make_copy_atom(fx.nvvm.CopyG2SOp(fx.nvvm.LoadCacheMode.GLOBAL, p.vec * self.dtype.width), self.dtype)
        thr = fx.make_tiled_copy_tv(atom, self.thr_layout, fx.make_layout((1, p.vec))).get_slice(fx.thread_idx.x)
        for k, w in enumerate(self.weights[: p.weights]):
            for c in fx.range_constexpr(p.chunks):
                src = thr.partition_S(self._view(w, c, broadcast=True))
                base = self.staging + p.weight_slot(k, c) * (p.rows * p.chunk_cols)
                dst = thr.partition_D(fx.make_view(base, fx.make_layout((p.rows, p.chunk_cols), (p.chunk_cols, 1))))
                fx.copy(atom, src, dst, pred=self.pred(c) if self.ragged_chunk(c) else None)
        fx.nvvm.cp_async_commit_group()

    def prefetch(self, t, region=0):
        """Start copying this row's first ``plan.prefetch`` chunks of ``t`` (input ``region`` of the plan's
        ``inputs``) to their shared-memory slots (``cp.async``, 4-16 bytes per access, one group); accesses past
        the row's end or of a row past the last read nothing (zero fill). :meth:`fetch` waits for them."""
        p = self.plan
        for c in fx.range_constexpr(p.prefetch):
            self.copy_async(t, c, self.staging, p.slot(c, self.parity, region))
        fx.nvvm.cp_async_commit_group()

    def fetch(self, t, c=0, fill=None, region=0):
        """Chunk ``c`` of ``t`` (this row; input ``region``): from its shared-memory slot where it was prefetched
        (each thread reads back only what its own copies wrote, so no barrier), else from global memory. Values
        past the row's end are ``fill`` (if given) either way."""
        p = self.plan
        if p.prefetch == 0 or region >= p.inputs or c >= p.prefetch:  # (two-pass plans: c is a run-time index)
            return self.load(t, c, fill)
        if c == 0 and region == 0 and not p.early:
            fx.nvvm.cp_async_wait_group(0)  # every input's copies of this row (early plans: waited already)
        v = self._from_slot(c, region)
        mask = self.lane_mask(c)
        if fill is not None and mask is not None:
            v = mask.select(v, fill)
        return v

    def keep(self, c, values, fetched=True):
        """Hold chunk ``c``'s values (of the data type) until :meth:`recall`: in registers for the first
        ``plan.kept`` chunks, else in this thread's own slots of shared memory (no barrier needed). ``fetched``:
        the values are what :meth:`fetch` gave, so a prefetched chunk is in its slot already."""
        p = self.plan
        if c < p.kept:
            return values
        if fetched and c < p.prefetch or c >= p.kept + p.staged:  # (prefetched; re-read for the output)
            return None
        dst = self._slot_view(c)
        regs = fx.make_fragment_like(dst)
        regs.store(values)
        fx.copy(self.tiled, regs, dst)
        return None

    def recall(self, c, kept):
        """Chunk ``c``'s values given to :meth:`keep`."""
        if c < self.plan.kept:
            return kept
        return self._from_slot(c)


def staging_buffer(plan: RowPlan, dtype):
    """The shared memory of an onchip plan's staged chunks and a persistent plan's prefetched ones (None when
    there are none)."""
    if plan.staging_bytes(1) == 0:
        return None
    alloc = fx.SharedAllocator(static=False)
    return alloc.allocate(plan.staging_bytes(dtype.width // 8), alignment=16).ptr.recast(dtype)


def row_groups(plan: RowPlan, dtype, rows):
    """The RowFragments of each of the block's ``plan.iters`` row groups (one shared staging buffer: onchip plans
    have one group; cluster plans: this block's slice of its cluster's row). A group of one row past the last row is
    the last row again; groups of several rows predicate their accesses on the row count."""
    if plan.cluster > 1:
        bid = fx.block_idx.x
        row0 = bid // plan.cluster
        if plan.tail:  # a tail launch (row_tail.py): the last rows
            row0 = row0 + (rows - fx.grid_dim.x // plan.cluster)
        return [RowFragments(plan, dtype, row0, rows - row0, col0=bid % plan.cluster * plan.chunk_cols)]
    staging = staging_buffer(plan, dtype)
    out = []
    for i in fx.range_constexpr(plan.iters):
        row0 = fx.block_idx.x * plan.rows_per_block + i * plan.rows
        if plan.rows == 1 and i > 0:  # past the last row: the last row again (the same values stored twice),
            row0 = fx.min(row0, rows - 1)  # not a predicate on every access (a branch around every store)
        out.append(RowFragments(plan, dtype, row0, rows - row0, staging))
    return out


def _persistent_row(plan: RowPlan, dtype, inputs, r, rows, step, staging, parity, weights=()):
    """A persistent plan's iteration over row ``r``: ``([its RowFragments], after_stats)``, where
    ``after_stats()`` starts the prefetch of row ``r + step`` (the block's next) of each of the ``inputs``
    tensors into the other parity's slots; run it once row ``r``'s values have all been read (its slots are
    free then). ``early`` plans wait for row ``r``'s copies and start the next row's here instead (their
    slots are all in two sets): ``after_stats`` does nothing."""
    frag = RowFragments(plan, dtype, r, rows - r, staging, parity=parity, weights=weights)
    nxt = RowFragments(plan, dtype, r + step, rows - r - step, staging, parity=1 - parity)

    def prefetch_next():
        for i, t in enumerate(inputs[: plan.inputs]):
            nxt.prefetch(t, region=i)

    if plan.early:
        fx.nvvm.cp_async_wait_group(0)
        prefetch_next()
        return [frag], lambda: None
    return [frag], prefetch_next


def _each_row(plan: RowPlan, dtype, rows, inputs, row_body, weights=()):
    """Run ``row_body(groups, after_stats)`` over the block's rows: once over its row groups, or (persistent
    plans) in a loop over rows ``block, block + grid, ...`` with each next row's prefetch of ``inputs``
    started by ``after_stats()`` (the first one before the loop), so that it overlaps this row's reduction and
    output; ``weights`` (the kernel's weight tensors) are copied to shared memory first where the plan holds
    them there."""
    if plan.persist:
        staging, step, first = staging_buffer(plan, dtype), fx.grid_dim.x, fx.block_idx.x
        head = RowFragments(plan, dtype, first, rows - first, staging, weights=weights)
        if plan.weights:
            head.load_weights()
        for i, t in enumerate(inputs[: plan.inputs]):
            head.prefetch(t, region=i)
        parity = fx.Int32(0)
        for r in range(first, rows, step):
            row_body(*_persistent_row(plan, dtype, inputs, r, rows, step, staging, parity, weights))
            parity = 1 - parity
    else:
        row_body(row_groups(plan, dtype, rows), lambda: None)


# the row loop is a run-time loop: the helper's control flow is rewritten as a kernel body's is
each_row = ASTRewriter.transform(_each_row)
