"""A long-row kernel's last rows over thread block clusters: the *tail launch* (issue 12, session 21).

A row of 48K-64K f32 takes a whole SM slot, so a grid of ``M`` rows runs in ``ceil(M / 132)`` rounds and the
last one is partly empty: 273 rows of 61440 f32 take 3 rounds for 2.07 rows of work (70% of the copy rate at
best). With a tail (``tail_cols=c``) the launcher splits off, at run time, the last ``t = M % sms`` rows (paired
rows: ``M % (2 sms)``) where ``t * k <= tail_blocks`` and the main kernel has at most ``tail_rounds`` rounds, and
launches them as a second kernel whose rows each run over a cluster of ``k`` blocks
(the cluster plan, about ``c`` columns per block): the main kernel's grid covers whole rounds, and the tail's
blocks take the SMs as the main kernel's last rows leave them. ``M < sms`` rows are all tail when they are few
enough (``M * k <= tail_blocks``): a few long rows over many SMs instead of one SM each.

The two kernels overlap through programmatic dependent launch: the main kernel lets the tail launch as soon as
all of its blocks have started (``griddepcontrol.launch_dependents`` first thing); the tail reads only its own
rows, so it waits for the main kernel (``griddepcontrol.wait``) at its end, which makes what follows in the
stream see both finished. A tail without a main kernel (every row is the tail's) waits first: what came before
it in the stream wrote its input.

The main kernel's plan can be chosen by the row count too (session 22): launches of ``few_rows`` rows (at most
``n``, or a range ``(lo, hi)``) take the *few-rows plan* ``few_plan`` describes (a builder's plan options over its
base defaults, as with ``shape_defaults=False``). Beside a tail, a main plan whose blocks leave room on an SM (512
threads at 64 registers) lets the tail's blocks start at once; with fewer rows than SMs, a row per block of 1024
threads beats pairs of rows. A kernel takes ``role: Constexpr[int]`` (:data:`MAIN`, :data:`FEW`, :data:`TAIL`) and
builds the role's plan (:meth:`RowTail.kernel_plan`); the launcher launches what the row count asks for
(:meth:`RowTail.launch`): the choice is a branch of the launch plan, no second call.
"""

from __future__ import annotations

import dataclasses

import flydsl.expr as fx
from flydsl.compiler.ast_rewriter import ASTRewriter
from kernels.norm.norm_common import (
    FEW_OPTIONS,
    NUM_SMS,
    TAIL_OPTIONS,
    RowPlan,
    check_row_options,
    plan_rows,
    split_options,
)
from kernels.norm.row_stream import stream_options

__all__ = [
    "TAIL_OPTIONS",
    "FEW_OPTIONS",
    "ONE_PER_SM_TAIL",
    "CLUSTERS_AT_ONCE",
    "blocks_at_once",
    "MAIN",
    "FEW",
    "TAIL",
    "FEW_TAIL",
    "RowTail",
    "pop_tail_options",
    "tail_plan",
    "tail_begin",
    "launch_rows",
]

# a kernel's role (its ``role`` parameter): the main plan, the few-rows plan, the tail's, the few-rows launch's tail
MAIN, FEW, TAIL, FEW_TAIL = 0, 1, 2, 3
# the tail options a few-rows plan may give for its own launches' tail (their least values)
FEW_TAIL_OPTIONS = {"tail_cols": 0, "tail_blocks": 0}
# session 21's tails, a block per SM at all the registers it takes, up to two blocks per SM's worth (more than run at
# once, in clusters of 4: 120 blocks): RMSNorm and LayerNorm f32 rows measured slower with two blocks per SM beside
# their main kernel (140-273 rows, 1-3 us; LayerNorm f32 49160's tail spills at 64 registers; session 23)
ONE_PER_SM_TAIL = {"tail_regs": 255, "tail_blocks": 2 * NUM_SMS}
# thread block clusters of k blocks an H200 runs at once with b blocks per SM: {b: {k: clusters}}
# (cuOccupancyMaxActiveClusters, ``python -m benchmarks.cluster_capacity``, session 23): clusters are placed within
# a GPC, so fewer fit than 132 b / k (clusters of 4 at one block per SM: 30, 120 blocks)
CLUSTERS_AT_ONCE = {
    1: {1: 132, 2: 66, 4: 30, 8: 15, 16: 7},
    2: {1: 264, 2: 132, 4: 62, 8: 30, 16: 14},
    3: {1: 396, 2: 198, 4: 92, 8: 45, 16: 21},
    4: {1: 528, 2: 264, 4: 124, 8: 62, 16: 28},
}


def blocks_at_once(cluster: int, per_sm: int) -> int:
    """The blocks of a grid in clusters of ``cluster`` blocks that the GPU runs at once with ``per_sm`` blocks per SM
    (:data:`CLUSTERS_AT_ONCE`; a cluster size between its columns as many clusters as the next larger one, more than
    4 per SM as 4): the most blocks a tail launch may have to run in one wave."""
    per_sm = max(1, min(per_sm, 4))
    size = next((k for k in sorted(CLUSTERS_AT_ONCE[per_sm]) if k >= cluster), 16)
    return CLUSTERS_AT_ONCE[per_sm][size] * cluster


# the shared memory a tail block asks for to take an SM alone (two blocks need 2 x (113 KB + 1 KB reserved) of the
# SM's 228 KB): RowTail.tail_limits' spread. The tails' cluster plans hold their slices in registers (static shared
# memory only: their reductions' partials); a tail plan that needed more dynamic shared memory than this would be
# refused when traced (FLY217: less shared memory than the kernel allocates), never launched short
SPREAD_SMEM = 116 * 1024
# plan_rows options the tail's cluster plan keeps from the kernel's (how many values a thread holds)
_KEPT = ("elems_per_thread", "max_row_threads")


def pop_tail_options(plan_options: dict) -> tuple[dict, tuple]:
    """``(plan_options without the tail and few-rows options, (tail_cols, tail_blocks, tail_rounds, tail_regs,
    tail_spread, few_rows, few_plan))``, ``few_rows`` a range ``(lo, hi)`` of row counts (an int ``n``: ``(1, n)``) or
    None."""
    plan_options = dict(plan_options)
    cols, blocks, rounds, regs, spread = (plan_options.pop(k, d) for k, d in TAIL_OPTIONS.items())
    few_rows, few_plan = (plan_options.pop(k, d) for k, d in FEW_OPTIONS.items())
    if (
        not all(type(v) is int for v in (cols, blocks, rounds, regs))
        or type(spread) is not bool
        or min(cols, rounds, blocks) < 0
        or not (regs == 0 or 16 <= regs <= 255)
    ):
        raise ValueError(
            f"tail_cols={cols!r}, tail_blocks={blocks!r}, tail_rounds={rounds!r}, tail_regs={regs!r}, "
            f"tail_spread={spread!r}: give integers, tail_cols >= 0 (0: no tail), tail_blocks >= 0 (0: as many as run "
            "at once), tail_rounds >= 0, tail_regs 0 (two blocks per SM) or 16-255, and tail_spread True or False"
        )
    return plan_options, (cols, blocks, rounds, regs, spread, *_few_options(few_rows, few_plan))


def _few_options(few_rows, few_plan) -> tuple:
    """``(range (lo, hi), few_plan)`` of the few-rows options, or ``(None, None)`` (``few_rows=0``: none, whatever
    ``few_plan`` is: that switches a per-shape rule off)."""
    rows = (1, few_rows) if type(few_rows) is int else few_rows
    if not (isinstance(rows, tuple) and len(rows) == 2 and all(type(r) is int for r in rows)) or rows[1] < 0:
        rows = None
    if rows is None or not 1 <= rows[0] <= max(1, rows[1]) or (rows[1] > 0) != isinstance(few_plan, dict):
        raise ValueError(
            f"few_rows={few_rows!r}, few_plan={few_plan!r}: give few_rows (the launches of at most few_rows rows, or "
            "a range (lo, hi) of row counts, 1 <= lo <= hi) with few_plan, a dict of the plan's options for them, "
            "or neither (few_rows=0: none; a few_plan alone would not be used)"
        )
    if rows[1] == 0:
        return None, None
    regs = few_plan.get("max_registers", 0)
    if not (type(regs) is int and (regs == 0 or 16 <= regs <= 255)):
        raise ValueError(f"few_plan={few_plan!r}: its max_registers is an integer 16-255 (or 0: no cap)")
    if few_plan.keys() & ({*TAIL_OPTIONS, *FEW_OPTIONS, "shape_defaults"} - set(FEW_TAIL_OPTIONS)):
        raise ValueError(
            f"few_plan={few_plan!r}: the tail options but tail_cols and tail_blocks (the few-rows launches' own tail) "
            "and shape_defaults are the launcher's; give them beside few_plan, not in it"
        )
    if not all(type(few_plan.get(k, lo)) is int and few_plan.get(k, lo) >= lo for k, lo in FEW_TAIL_OPTIONS.items()):
        raise ValueError(
            f"few_plan={few_plan!r}: its tail_cols is a column count >= 0 (0: no tail for these launches), its "
            "tail_blocks a block count >= 0 (0: as many as run at once)"
        )
    return rows, few_plan


def tail_plan(n: int, elem_bytes: int, vec: int, cols: int, plan_options: dict):
    """The tail's cluster plan (``RowPlan.tail``) for rows of ``n`` elements, about ``cols`` columns per block, or
    None: no tail asked for (``cols`` 0), none on a target without clusters, or the row too short to split. It
    keeps the kernel's values per thread and threads per row (``plan_options``); its launch sets its own register
    cap (``tail_regs``: :meth:`RowTail.launch`)."""
    if not cols or not fx.nvvm.has_clusters():
        return None
    opts = {k: v for k, v in plan_options.items() if k in _KEPT}
    plan = plan_rows(n, elem_bytes, vec, long_rows="cluster", cluster_cols=cols, clusters=True, **opts)
    return dataclasses.replace(plan, tail=True) if plan.cluster > 1 else None


def _tail_begin(plan, rows, has_tail: bool) -> None:
    """A kernel's first step: the main kernel of a launcher with a tail lets the tail launch; a tail that has every
    row (no main kernel before it) waits for what came before it in the stream."""
    plan = getattr(plan, "row", plan)  # (a stream plan's rows)
    if fx.const_expr(plan.tail):
        if rows * plan.cluster == fx.grid_dim.x:
            fx.nvvm.griddep_wait()
    elif fx.const_expr(has_tail):
        fx.nvvm.griddep_launch_dependents()


def _launch_split(m, plan: RowPlan, role: int, tail: tuple, limits: tuple, grid, launch) -> None:
    """Launch ``m`` rows (run-time): ``launch(rows, blocks, plan, role, spread)`` once with ``grid(plan, m)`` blocks of
    ``plan``, or, with a ``tail`` plan, the main kernel over the first ``m - t`` rows and the tail over the last
    ``t = m % round`` (``round``: the rows one round of the SMs takes, one per SM or, paired rows, two) where the tail
    options (``limits``: blocks, rounds, spread) allow it (else every row is the main kernel's); each launch only where
    it has rows: no rows, no launch (a negative ``m`` reaches the launch's own check, FLY222). ``tail``: ``(plan or
    None, its role)``; ``spread`` (0: never, else a block count): a tail of at most that many blocks launched after a
    main kernel takes an SM per block (:meth:`RowTail.tail_limits`)."""
    tail, tail_role = tail
    if fx.const_expr(tail is None):
        if m != 0:
            launch(m, grid(plan, m), plan, role, False)
    else:
        blocks, rounds, spread = limits
        per_round = plan.sms * (2 if plan.paired else 1)
        t = m % per_round
        t = ((t > 0) & (t * tail.cluster <= blocks) & (m // per_round <= rounds)).select(t, fx.Int32(0))
        head = m - t
        if head != 0:
            launch(head, grid(plan, head), plan, role, False)
        if t > 0:
            if fx.const_expr(spread):
                if (head != 0) & (t * tail.cluster <= spread):
                    launch(m, t * tail.cluster, tail, tail_role, True)
                else:
                    launch(m, t * tail.cluster, tail, tail_role, False)
            else:
                launch(m, t * tail.cluster, tail, tail_role, False)


def _launch_rows(m, plan: RowPlan, few: tuple, tail: tuple, limits: tuple, grid, launch) -> None:
    """:func:`_launch_split` of ``m`` rows over the main ``plan`` or, with ``few = ((lo, hi), plan, tail, limits)``,
    over the few-rows plan and its tail where ``lo <= m <= hi``."""
    if fx.const_expr(few is None):
        _launch_split(m, plan, MAIN, tail, limits, grid, launch)
    else:
        (lo, hi), few_plan, few_tail, few_limits = few
        if (m >= lo) & (m <= hi):
            _launch_split(m, few_plan, FEW, few_tail, few_limits, grid, launch)
        else:
            _launch_split(m, plan, MAIN, tail, limits, grid, launch)


# run-time branches: rewritten as a kernel body's are
tail_begin = ASTRewriter.transform(_tail_begin)
_launch_split = ASTRewriter.transform(_launch_split)
launch_rows = ASTRewriter.transform(_launch_rows)


def _row_grid(plan, m):
    return plan.grid(m)


class RowTail:
    """A row kernel builder's launch choices (module docstring): ``RowTail(n, dtype, plan_options, kernel, base, own,
    pairs, regs)`` (``regs``: the main plan's ``max_registers``, 0: none) takes the tail and few-rows options out of
    ``plan_options`` and splits the rest, and the few-rows plan's options over ``base`` (the builder's defaults
    without its per-shape rules), as :func:`kernels.norm.row_stream.stream_options` does (``kernel``, ``own``: for
    its errors): :attr:`main`, :attr:`few` (None without a few-rows plan): ``(stream, plan_stream's options,
    plan_rows' options)``.

    In the kernel (a ``Constexpr[int]`` parameter ``role``, after ``rows`` and ``vec``): ``plan =
    rt.kernel_plan(role, vec, make_plan)`` and ``rt.begin(plan, rows, vec, role)`` first, ``make_plan(vec, split)`` the
    builder's plan of one of those splits; in the launcher, ``rt.launch(kernel, args, m, vec, make_plan, stream)`` in
    place of the one launch."""

    def __init__(
        self, n: int, dtype, plan_options: dict, kernel: str, base: dict, own=(), pairs: bool = False, regs: int = 0
    ):
        plan_options, (self.cols, blocks, rounds, self.regs, self.spread, self.few_rows, few_plan) = pop_tail_options(
            plan_options
        )
        self.limits, self.main_regs = (blocks, rounds), regs  # (the main plan's register cap: the launcher's)
        self.n, self.elem_bytes = n, dtype.width // 8
        self.main = stream_options(plan_options, kernel, own)
        check_row_options(self.main[2])
        self.few, self.few_regs, self.few_cols, self.few_limits = None, 0, self.cols, self.limits
        if few_plan is not None:
            few_plan = dict(few_plan)
            # the few-rows launches' own tail
            self.few_cols, few_blocks = few_plan.pop("tail_cols", self.cols), few_plan.pop("tail_blocks", blocks)
            self.few_limits = (few_blocks, rounds)
            mine = sorted(few_plan.keys() & set(own))
            if mine:
                raise ValueError(
                    f"{kernel}: few_plan={few_plan!r}: {', '.join(map(repr, mine))} are the kernel's options, "
                    "every plan's: give them beside few_plan, not in it"
                )
            few_options, kernel_options = split_options({**base, **few_plan}, pairs)
            self.few = stream_options(few_options, kernel, own)
            check_row_options(self.few[2])
            self.few_regs = kernel_options.get("max_registers", 0)

    def plan(self, vec: int, role: int = TAIL):
        """The tail's plan for accesses of ``vec`` elements (``role``: :data:`FEW_TAIL`, the few-rows launches'), or
        None (no tail)."""
        # (a tail keeps its main plan's values per thread: plan_rows' options of the split)
        cols, split = (self.few_cols, self.few) if role == FEW_TAIL else (self.cols, self.main)
        return tail_plan(self.n, self.elem_bytes, vec, cols, split[2])

    def tail(self, vec: int, role: int) -> tuple:
        """``(the tail plan or None, its role)`` of the launches of a main kernel of ``role``: the few-rows launches'
        own tail (:data:`FEW_TAIL`) only where it differs from the main kernel's (one kernel, not two alike)."""
        if role == FEW:
            few_tail = self.plan(vec, FEW_TAIL)
            if few_tail != self.plan(vec):
                return few_tail, FEW_TAIL
        return self.plan(vec), TAIL

    def kernel_plan(self, role: int, vec: int, make_plan):
        """The plan of a kernel of ``role`` (:data:`MAIN`, :data:`FEW`, :data:`TAIL`, :data:`FEW_TAIL`)."""
        if role in (TAIL, FEW_TAIL):
            return self.plan(vec, role)
        return make_plan(vec, self.few if role == FEW else self.main)

    def begin(self, plan, rows, vec: int, role: int = MAIN) -> None:
        """A kernel's first step (:func:`tail_begin`): a main kernel whose launches have a tail lets it launch."""
        tail_begin(plan, rows, role in (MAIN, FEW) and self.tail(vec, role)[0] is not None)

    def launch(self, kernel, args: tuple, m, vec: int, make_plan, stream, grid=_row_grid) -> None:
        """``kernel(*args, rows, vec, role)`` over ``m`` rows: one launch, or the main (or few-rows) kernel's and the
        tail's; ``grid(plan, rows)``: a main kernel's blocks (default ``plan.grid(rows)``; a stream plan's: its row
        plan's)."""

        def go(rows, blocks, p, role, spread):
            # the register caps: the main plan's is the launcher's (its max_registers, PTX .maxnreg of every kernel
            # that sets none); the few-rows plan's its own, else none as its options alone would give (under a
            # launcher's cap, which it would inherit, all that one of its blocks may take: 255 is more than 1024
            # threads can launch with, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES); a tail's :meth:`tail_registers`
            whole = fx.nvvm.max_registers(p.block_threads)
            if role == FEW:
                cap = self.few_regs or (whole if self.main_regs else 0)
            else:
                cap = 0 if role == MAIN else self.tail_registers(p)
            attrs = {**p.func_attrs, "max_registers": cap} if cap else p.func_attrs
            kernel(*args, rows, vec, role).launch(
                grid=(blocks, 1, 1),
                block=(p.block_threads, 1, 1),
                smem=SPREAD_SMEM if spread else None,
                cluster=p.cluster_dims,
                value_attrs=attrs,
                stream=stream,
            )

        def rows_of(split):
            plan = make_plan(vec, split)
            return getattr(plan, "row", plan)  # (a stream plan's rows)

        few = None
        if self.few is not None:
            few_tail = self.tail(vec, FEW)
            few_main = rows_of(self.few)
            few_limits = self.tail_limits(few_tail[0], self.few_limits, few_main, self.few_regs)
            few = (self.few_rows, few_main, few_tail, few_limits)
        main, tail = rows_of(self.main), self.tail(vec, MAIN)
        launch_rows(m, main, few, tail, self.tail_limits(tail[0], self.limits, main, self.main_regs), grid, go)

    def tail_registers(self, plan) -> int:
        """A tail kernel's register cap: its ``tail_regs`` (at most all that one of its blocks may take), else two
        of its blocks per SM where they have 512 threads or fewer (64 registers at 512: the tail's blocks fit beside
        a main kernel's 512-thread blocks, and twice as many run at once), else all that one block may take."""
        threads = plan.block_threads
        whole = fx.nvvm.max_registers(threads)
        if self.regs:
            return min(self.regs, whole)
        return fx.nvvm.max_registers(2 * threads) if threads <= 512 else whole

    def tail_limits(self, plan, limits: tuple, main=None, main_regs: int = 0) -> tuple:
        """``(blocks, rounds, spread)`` of a tail's launches (:func:`launch_rows`): ``tail_blocks`` 0 is as many
        blocks as the GPU runs at once in the tail's clusters at the blocks per SM its register cap allows
        (:func:`blocks_at_once`): a larger tail would run in waves. ``spread`` (``tail_spread``, where two tail blocks
        fit an SM but the ``main`` plan's blocks, one per SM at its register cap ``main_regs`` or all one may take,
        leave no room for one beside them; 0: never): a tail of at most ``spread`` blocks (as many as run at once with
        one per SM) launched after the main kernel asks for :data:`SPREAD_SMEM` of shared memory, so its blocks take
        an SM each as the main kernel's blocks leave them, not two on the first SMs freed (H200, session 23: the fused
        add bf16 65536 at 140-160 rows, 1.1 us). (Two 512-thread main blocks at 64 registers per SM leave no room
        either; they are not counted: such plans' tails were measured with two blocks per SM.)"""
        blocks, rounds = limits
        spread = 0
        if plan is not None:
            regs = self.tail_registers(plan)
            per_sm = fx.nvvm.blocks_per_sm(regs, plan.block_threads)
            blocks = blocks or blocks_at_once(plan.cluster, per_sm)
            if main is not None and self.spread and per_sm >= 2:
                threads = main.block_threads
                main_regs = main_regs or fx.nvvm.max_registers(threads)
                if threads * main_regs + plan.block_threads * regs > 65536:
                    spread = blocks_at_once(plan.cluster, 1)
        return blocks, rounds, spread
