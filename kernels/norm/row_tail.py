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
"""

from __future__ import annotations

import dataclasses

import flydsl.expr as fx
from flydsl.compiler.ast_rewriter import ASTRewriter
from kernels.norm.norm_common import NUM_SMS, RowPlan, plan_rows

__all__ = ["TAIL_OPTIONS", "RowTail", "pop_tail_options", "tail_plan", "tail_begin", "launch_rows"]

# a builder's tail options and their defaults (0 columns: no tail): at most ``tail_blocks`` blocks in the tail (two
# per SM), and a tail only while the main kernel has at most ``tail_rounds`` rounds of rows (a row per SM, paired rows
# two; 0: only fewer rows than one round, every one of them the tail's) — with more, the last round is a small part
# of the time and splitting it off measured slower (H200, session 21)
# ``tail_regs``: the tail kernel's register cap (0: all that one of its blocks may take, 65536 / threads); a
# launcher's ``max_registers`` is the main kernel's
TAIL_OPTIONS = {"tail_cols": 0, "tail_blocks": 2 * NUM_SMS, "tail_rounds": 2, "tail_regs": 0}
# plan_rows options the tail's cluster plan keeps from the kernel's (how many values a thread holds)
_KEPT = ("elems_per_thread", "max_row_threads")


def pop_tail_options(plan_options: dict) -> tuple[dict, tuple]:
    """``(plan_options without the tail options, (tail_cols, tail_blocks, tail_rounds, tail_regs))``."""
    plan_options = dict(plan_options)
    cols, blocks, rounds, regs = (plan_options.pop(k, d) for k, d in TAIL_OPTIONS.items())
    if (
        not all(type(v) is int for v in (cols, blocks, rounds, regs))
        or min(cols, rounds, blocks - 1) < 0
        or not (regs == 0 or 16 <= regs <= 255)
    ):
        raise ValueError(
            f"tail_cols={cols!r}, tail_blocks={blocks!r}, tail_rounds={rounds!r}, tail_regs={regs!r}: give integers, "
            "tail_cols >= 0 (0: no tail), tail_blocks >= 1, tail_rounds >= 0, tail_regs 0 (its blocks' all) or 16-255"
        )
    return plan_options, (cols, blocks, rounds, regs)


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


def _launch_rows(m, plan: RowPlan, tail: RowPlan | None, limits: tuple, grid, launch) -> None:
    """Launch ``m`` rows (run-time): ``launch(rows, blocks, plan)`` once with ``grid(m)`` blocks of ``plan``, or,
    with a ``tail`` plan, the main kernel over the first ``m - t`` rows and the tail over the last ``t = m % round``
    (``round``: the rows one round of the SMs takes, one per SM or, paired rows, two) where the tail options
    (``limits``: blocks, rounds) allow it (else every row is the main kernel's); each launch only where it has
    rows: no rows, no launch (a negative ``m`` reaches the launch's own check, FLY222)."""
    if fx.const_expr(tail is None):
        if m != 0:
            launch(m, grid(m), plan)
    else:
        blocks, rounds = limits
        per_round = plan.sms * (2 if plan.paired else 1)
        t = m % per_round
        t = ((t > 0) & (t * tail.cluster <= blocks) & (m // per_round <= rounds)).select(t, fx.Int32(0))
        head = m - t
        if head != 0:
            launch(head, grid(head), plan)
        if t > 0:
            launch(m, t * tail.cluster, tail)


# run-time branches: rewritten as a kernel body's are
tail_begin = ASTRewriter.transform(_tail_begin)
launch_rows = ASTRewriter.transform(_launch_rows)


class RowTail:
    """A row kernel builder's tail (module docstring): ``RowTail(n, dtype, plan_options)`` takes the tail options
    out of ``plan_options`` (the rest: :attr:`plan_options`). In the kernel (a ``Constexpr[bool]`` parameter
    ``tail``, after ``rows`` and ``vec``): ``plan = rt.plan(vec) if tail else make_plan(vec)`` and
    ``rt.begin(plan, rows, vec)`` first; in the launcher, ``rt.launch(kernel, args, m, vec, plan, stream)`` in place
    of the one launch."""

    def __init__(self, n: int, dtype, plan_options: dict):
        self.plan_options, (self.cols, blocks, rounds, self.regs) = pop_tail_options(plan_options)
        self.limits = (blocks, rounds)
        self.n, self.elem_bytes = n, dtype.width // 8

    def plan(self, vec: int):
        """The tail's plan for accesses of ``vec`` elements, or None (no tail)."""
        return tail_plan(self.n, self.elem_bytes, vec, self.cols, self.plan_options)

    def begin(self, plan, rows, vec: int) -> None:
        tail_begin(plan, rows, self.plan(vec) is not None)

    def launch(self, kernel, args: tuple, m, vec: int, plan, stream, grid=None) -> None:
        """``kernel(*args, rows, vec, tail)`` over ``m`` rows of ``plan`` (a row plan, or a stream plan's): one launch,
        or the main kernel's and the tail's; ``grid(rows)``: the main kernel's blocks (default ``plan.grid``)."""
        plan = getattr(plan, "row", plan)

        def go(rows, blocks, p):
            # the tail's own register cap (the launcher's max_registers is the main plan's)
            attrs = {"max_registers": self.regs or min(255, 65536 // p.block_threads)} if p.tail else p.func_attrs
            kernel(*args, rows, vec, p.tail).launch(
                grid=(blocks, 1, 1),
                block=(p.block_threads, 1, 1),
                cluster=p.cluster_dims,
                value_attrs=attrs,
                stream=stream,
            )

        launch_rows(m, plan, self.plan(vec), self.limits, grid or plan.grid, go)
