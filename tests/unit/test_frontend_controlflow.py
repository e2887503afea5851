"""The control-flow rewrite: which constructs become scf ops, which stay Python, and what the traced
kernels compute (run on the CPU interpreter, compared exactly with numpy)."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import Constexpr, Tensor, count_ops, cpu_device, flyc, fx, traced  # noqa: F401

pytestmark = pytest.mark.usefixtures("cpu_device")


# -- static conditions emit no IR -------------------------------------------------------------------


@flyc.kernel
def static_branches(out: Tensor, MODE: Constexpr[int]):
    x = 0
    if MODE == 1:
        x = 10
    elif MODE == 2:
        x = 20
    else:
        x = 30
    y = fx.Int32(5)
    if y > 3:  # a compile-time Int32: folded in Python
        x = x + 1
    z = 7 if MODE > 1 else 8
    k = 0
    while k < 3:  # a Python loop: the test is static every time
        k += 1
    flag = MODE == 1 and y > 2 or not MODE
    out[0] = x
    out[1] = z
    out[2] = k
    out[3] = 1 if flag else 0


@flyc.jit
def launch_static(out, MODE: Constexpr[int]):
    static_branches(out, MODE).launch(grid=1, block=1)


@pytest.mark.parametrize("mode,expect", [(1, [11, 8, 3, 1]), (2, [21, 7, 3, 0]), (3, [31, 7, 3, 0])])
def test_static_conditions_emit_no_control_flow(mode, expect):
    out = np.zeros(4, np.int32)
    text = traced(launch_static, out, mode)
    assert count_ops(text, "scf.if") == 0
    assert count_ops(text, "scf.while") == 0
    assert count_ops(text, "scf.for") == 0
    launch_static(out, mode)
    assert out.tolist() == expect


# -- run-time if / elif / else with carried values ----------------------------------------------------


@flyc.kernel
def divergent_if(out: Tensor):
    tid = fx.thread_idx.x
    v = tid * 10
    w = 0
    if tid % 2 == 0:
        v = v + 1
        w = 1
    elif tid % 3 == 0:
        v = v + 2
        w = 2
    else:
        v = -v
    out[tid, 0] = v
    out[tid, 1] = w


@flyc.jit
def launch_divergent_if(out):
    divergent_if(out).launch(grid=1, block=8)


def test_divergent_if_elif_else_carries_values():
    out = np.zeros((8, 2), np.int32)
    text = traced(launch_divergent_if, out)
    assert count_ops(text, "scf.if") == 2  # if + the nested elif
    launch_divergent_if(out)
    t = np.arange(8)
    v = np.where(t % 2 == 0, t * 10 + 1, np.where(t % 3 == 0, t * 10 + 2, -t * 10))
    w = np.where(t % 2 == 0, 1, np.where(t % 3 == 0, 2, 0))
    assert out[:, 0].tolist() == v.tolist()
    assert out[:, 1].tolist() == w.tolist()


@flyc.kernel
def unchanged_not_yielded(out: Tensor):
    tid = fx.thread_idx.x
    a = tid + 1
    b = tid + 2
    if tid > 1:
        a = a * 3
        out[tid] = b  # b is read, not assigned: not carried
    out[tid] = a + b


@flyc.jit
def launch_unchanged(out):
    unchanged_not_yielded(out).launch(grid=1, block=4)


def test_only_changed_values_cross_the_if():
    out = np.zeros(4, np.int32)
    text = traced(launch_unchanged, out)
    assert "scf.if" in text and "-> (i32)" in text  # exactly one result: `a`
    launch_unchanged(out)
    t = np.arange(4)
    assert out.tolist() == (np.where(t > 1, (t + 1) * 3, t + 1) + t + 2).tolist()


@flyc.kernel
def list_carry(out: Tensor):
    tid = fx.thread_idx.x
    acc = [fx.Int32(0), fx.Int32(0)]
    d = {"x": fx.Int32(1)}
    if tid > 1:
        acc[0] = tid
        acc[1] = acc[1] + 5
        d["x"] = tid * 2
    out[tid, 0] = acc[0]
    out[tid, 1] = acc[1]
    out[tid, 2] = d["x"]


@flyc.jit
def launch_list_carry(out):
    list_carry(out).launch(grid=1, block=4)


def test_lists_and_dicts_mutated_in_a_branch_are_carried():
    out = np.zeros((4, 3), np.int32)
    launch_list_carry(out)
    t = np.arange(4)
    assert out[:, 0].tolist() == np.where(t > 1, t, 0).tolist()
    assert out[:, 1].tolist() == np.where(t > 1, 5, 0).tolist()
    assert out[:, 2].tolist() == np.where(t > 1, 2 * t, 1).tolist()


# -- loops --------------------------------------------------------------------------------------------


@flyc.kernel
def loops(out: Tensor, x: Tensor, n: fx.Int32):
    tid = fx.thread_idx.x
    acc = 0
    for i in range(n):
        acc = acc + x[i] * (tid + 1)
    odd = 0
    for i in range(1, 9, 2):
        odd = odd + i
    down = 0
    for i in range(10, 0, -3):
        down = down * 100 + i
    j = fx.Int32(0)
    s = fx.Int32(0)
    while j < tid:
        s = s + j
        j = j + 1
    unrolled = 0
    for i in fx.range_constexpr(3):
        unrolled = unrolled + i * tid
    out[tid, 0] = acc
    out[tid, 1] = odd
    out[tid, 2] = down
    out[tid, 3] = s
    out[tid, 4] = unrolled


@flyc.jit
def launch_loops(out, x, n: fx.Int32):
    loops(out, x, n).launch(grid=1, block=8)


def test_loops_for_while_and_unrolled():
    out = np.zeros((8, 5), np.int32)
    x = np.array([3, 1, 4, 1, 5], np.int32)
    text = traced(launch_loops, out, x, 5)
    assert count_ops(text, "scf.for") == 3  # range() is always a kernel loop, static bounds too
    assert count_ops(text, "scf.while") == 1
    launch_loops(out, x, 5)
    t = np.arange(8)
    assert out[:, 0].tolist() == (x.sum() * (t + 1)).tolist()
    assert out[:, 1].tolist() == [16] * 8
    assert out[:, 2].tolist() == [10070401] * 8  # 10, 7, 4, 1
    assert out[:, 3].tolist() == [sum(range(k)) for k in range(8)]
    assert out[:, 4].tolist() == (3 * t).tolist()


@flyc.kernel
def nested(out: Tensor):
    tid = fx.thread_idx.x
    total = fx.Int32(0)
    for i in range(4):
        for j in range(i):
            if (i + j + tid) % 2 == 0:
                total = total + i * j
            else:
                total = total - 1
    out[tid] = total


@flyc.jit
def launch_nested(out):
    nested(out).launch(grid=1, block=4)


def test_nested_loops_and_branches():
    out = np.zeros(4, np.int32)
    launch_nested(out)
    exp = []
    for t in range(4):
        total = 0
        for i in range(4):
            for j in range(i):
                total = total + i * j if (i + j + t) % 2 == 0 else total - 1
        exp.append(total)
    assert out.tolist() == exp


@flyc.kernel
def explicit_iter_args(out: Tensor, n: fx.Int32):
    for iv, state in range(0, n, 1, init=[fx.Int32(0), fx.Int32(1)]):
        s, p = state
        results = yield [s + iv.to(fx.Int32), p * 2]
    out[0] = results[0]
    out[1] = results[1]


@flyc.jit
def launch_explicit(out, n: fx.Int32):
    explicit_iter_args(out, n).launch(grid=1, block=1)


def test_explicit_init_and_yield_form():
    out = np.zeros(2, np.int32)
    text = traced(launch_explicit, out, 5)
    assert count_ops(text, "scf.for") == 1 and "index" in text  # FlyDSL: index-typed bounds
    launch_explicit(out, 5)
    assert out.tolist() == [10, 32]


# -- expressions ----------------------------------------------------------------------------------------


@flyc.kernel
def expressions(out: Tensor):
    tid = fx.thread_idx.x
    out[tid, 0] = 1 if 1 < tid <= 4 else 0
    out[tid, 1] = 1 if (tid == 0 or tid == 5) and not tid == 5 else 0
    out[tid, 2] = 1 if not (tid > 2) else 0
    out[tid, 3] = tid * 2 if tid % 2 == 0 else tid + 100


@flyc.jit
def launch_expressions(out):
    expressions(out).launch(grid=1, block=8)


def test_ternary_and_or_not_chained_comparisons():
    out = np.zeros((8, 4), np.int32)
    launch_expressions(out)
    t = np.arange(8)
    assert out[:, 0].tolist() == ((t > 1) & (t <= 4)).astype(int).tolist()
    assert out[:, 1].tolist() == (t == 0).astype(int).tolist()
    assert out[:, 2].tolist() == (t <= 2).astype(int).tolist()
    assert out[:, 3].tolist() == np.where(t % 2 == 0, 2 * t, t + 100).tolist()


@flyc.kernel
def short_circuit(out: Tensor, LIMIT: Constexpr[int]):
    tid = fx.thread_idx.x
    items = [1, 2]
    # a static left side short-circuits in Python: items[5] is never evaluated
    ok = LIMIT > 10 and items[5] == 0
    out[tid] = 1 if ok or tid > 1 else 0


@flyc.jit
def launch_short(out, LIMIT: Constexpr[int]):
    short_circuit(out, LIMIT).launch(grid=1, block=4)


def test_static_left_side_short_circuits():
    out = np.zeros(4, np.int32)
    launch_short(out, 3)
    assert out.tolist() == [0, 0, 1, 1]


# -- early return, const_expr, Python loops -------------------------------------------------------------


@flyc.kernel
def guarded(out: Tensor, n: fx.Int32):
    tid = fx.thread_idx.x
    if tid >= n:
        return
    out[tid] = tid + 1


@flyc.jit
def launch_guarded(out, n: fx.Int32):
    guarded(out, n).launch(grid=1, block=8)


def test_early_return_becomes_else_branch():
    out = np.full(8, -1, np.int32)
    launch_guarded(out, 5)
    assert out.tolist() == [1, 2, 3, 4, 5, -1, -1, -1]


@flyc.kernel
def python_loops(out: Tensor, N: Constexpr[int]):
    tid = fx.thread_idx.x
    vals = [tid * k for k in range(3)]
    total = 0
    for k, v in enumerate(vals):  # not range(): stays Python, break allowed
        if fx.const_expr(k == N):
            break
        total = total + v
    out[tid] = total


@flyc.jit
def launch_python_loops(out, N: Constexpr[int]):
    python_loops(out, N).launch(grid=1, block=4)


def test_python_loops_and_const_expr_stay_python():
    out = np.zeros(4, np.int32)
    text = traced(launch_python_loops, out, 2)
    assert count_ops(text, "scf.for") == 0 and count_ops(text, "scf.if") == 0
    launch_python_loops(out, 2)
    assert out.tolist() == [t * 1 for t in range(4)]


def helper_max(a, b):
    return a if a > b else b  # a plain helper is not rewritten: fine on static values


@flyc.kernel
def helper_user(out: Tensor, A: Constexpr[int]):
    out[0] = helper_max(A, 3)


@flyc.jit
def launch_helper(out, A: Constexpr[int]):
    helper_user(out, A).launch(grid=1, block=1)


def test_helpers_run_as_python_on_static_values():
    out = np.zeros(1, np.int32)
    launch_helper(out, 9)
    assert out[0] == 9


# -- the rewritten function keeps the user's file and lines ----------------------------------------------


def test_locations_point_at_user_lines():
    import inspect

    from flydsl.ir import print_op

    out = np.zeros((8, 2), np.int32)
    text = print_op(launch_divergent_if.trace(out), locs=True)
    first = inspect.getsourcelines(divergent_if.fn)[1]
    assert f'loc("{__file__}":{first + 5}:' in text  # the `if tid % 2 == 0:` line


def test_functions_without_source_warn_and_run_as_python():
    ns = {"flyc": flyc, "fx": fx, "Tensor": Tensor}
    exec(
        "@flyc.kernel\n"
        "def k(out: Tensor):\n"
        "    for i in fx.range_constexpr(2):\n"
        "        out[i] = i + 1\n"
        "@flyc.jit\n"
        "def launch(out):\n"
        "    k(out).launch(grid=1, block=1)\n",
        ns,
    )
    out = np.zeros(2, np.int32)
    with pytest.warns(UserWarning, match="cannot read the source of k"):
        ns["launch"](out)
    assert out.tolist() == [1, 2]


@flyc.kernel
def store_loop(out: Tensor, n: fx.Int32):
    acc = [fx.Int32(0)]
    for i in range(n):
        out[i] = i * 2  # a store: `out` is not a loop value
        acc[0] = acc[0] + i  # a list element: carried
    out[n] = acc[0]


@flyc.jit
def launch_store_loop(out, n: fx.Int32):
    store_loop(out, n).launch(grid=1, block=1)


def test_stored_tensors_are_not_loop_values_lists_are():
    out = np.zeros(6, np.int32)
    text = traced(launch_store_loop, out, 5)
    assert "iter_args(%arg4 = %0) -> (i32)" in text and text.count("iter_args") == 1
    launch_store_loop(out, 5)
    assert out.tolist() == [0, 2, 4, 6, 8, 10]


@flyc.kernel
def registers(out: Tensor, n: fx.Int32):
    tid = fx.thread_idx.x
    acc = fx.make_rmem_tensor(2, fx.Int32)  # register tensors are values changed in place
    acc.fill(0)
    for i in range(n):
        acc[0] = acc[0] + i
    if tid > 1:
        acc[1] = tid
    out[tid, 0] = acc[0]
    out[tid, 1] = acc[1]


@flyc.jit
def launch_registers(out, n: fx.Int32):
    registers(out, n).launch(grid=1, block=4)


def test_register_tensors_mutated_in_place_are_carried():
    out = np.zeros((4, 2), np.int32)
    launch_registers(out, 5)
    assert out[:, 0].tolist() == [10] * 4
    assert out[:, 1].tolist() == [0, 0, 2, 3]
