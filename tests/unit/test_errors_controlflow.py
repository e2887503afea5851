"""Every control-flow mistake is an error at the user's line with the catalogue's exact text.

Each kernel marks the line the error must point at with a ``# @tag`` comment; the expected text is the
full rendered message (file:line:col, the source line, the caret, the fix)."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import Constexpr, Tensor, cpu_device, flyc, fx  # noqa: F401

from flydsl.compiler import ControlFlowError, DSLNameError, DSLTypeError, FlyDSLError, TraceLimitError

pytestmark = pytest.mark.usefixtures("cpu_device")

with open(__file__) as _f:
    _LINES = _f.read().splitlines()


def line_of(tag: str) -> int:
    """The line carrying ``# @tag`` in this file."""
    return next(i + 1 for i, text in enumerate(_LINES) if text.rstrip().endswith(f"# @{tag}"))


def expect(exc: BaseException, tag: str, col: int, head: str, fix: str | None):
    """``exc`` renders exactly as ``file:line:col: error[...]: ...`` + source + caret + fix."""
    line = line_of(tag)
    src = _LINES[line - 1].rstrip()
    indent = len(src) - len(src.lstrip())
    want = [f"{__file__}:{line}:{col}: {head}", "    " + src.strip(), "    " + " " * (col - 1 - indent) + "^"]
    if fix:
        want.append(f"fix: {fix}")
    assert str(exc) == "\n".join(want)


def run(kfn, block=4):
    @flyc.jit
    def launcher(out):
        kfn(out).launch(grid=1, block=block)

    out = np.zeros(8, np.int32)
    launcher(out)
    return out


@flyc.kernel
def k_branch_types(out: Tensor):
    tid = fx.thread_idx.x
    if tid > 1:  # @branch_types
        x = tid
    else:
        x = fx.Float32(2.5)
    out[tid] = x


def test_branch_type_mismatch():
    with pytest.raises(DSLTypeError) as ei:
        run(k_branch_types)
    expect(
        ei.value,
        "branch_types",
        5,
        "error[FLY101]: variable 'x' is Int32 in one branch and Float32 in the other branch of this run-time `if` "
        "(what one branch yields does not match the region entry)",
        "give 'x' the same type in every branch, e.g. write the value as `fx.Float32(...)` or convert it with "
        "`.to(fx.Float32)`",
    )
    assert isinstance(ei.value, TypeError) and isinstance(ei.value, FlyDSLError)


@flyc.kernel
def k_one_branch(out: Tensor):
    tid = fx.thread_idx.x
    if tid > 1:
        y = tid + 1
    out[tid] = y  # @one_branch


def test_variable_defined_in_one_branch_fails_where_used():
    with pytest.raises(DSLNameError) as ei:
        run(k_one_branch)
    if_line = line_of("one_branch") - 2
    expect(
        ei.value,
        "one_branch",
        5,
        f"error[FLY102]: variable 'y' is used here, but it is assigned only in one branch of the run-time `if` at "
        f"line {if_line} (assigned at line {if_line + 1})",
        "assign 'y' before the `if` (with the type it will hold) or in every branch",
    )


@flyc.kernel
def k_one_branch_unused(out: Tensor):
    tid = fx.thread_idx.x
    if tid > 1:
        y = tid + 1
        out[tid] = y
    out[0] = 7


def test_variable_defined_in_one_branch_but_unused_is_fine():
    assert run(k_one_branch_unused)[0] == 7


@flyc.kernel
def k_loop_local(out: Tensor):
    tid = fx.thread_idx.x
    for i in range(tid):
        z = i * 2
    out[tid] = z  # @loop_local


def test_variable_first_defined_in_a_loop_fails_after_it():
    with pytest.raises(DSLNameError) as ei:
        run(k_loop_local)
    loop = line_of("loop_local") - 2
    expect(
        ei.value,
        "loop_local",
        5,
        f"error[FLY103]: variable 'z' is used here, but it is first assigned inside the run-time `for` loop at line "
        f"{loop} (assigned at line {loop + 1}); a value leaves a kernel loop only through a variable that exists "
        "before it",
        "assign 'z' before the loop (with the type it will hold)",
    )


@flyc.kernel
def k_loop_type(out: Tensor):
    acc = 0
    for i in range(4):  # noqa: B007  # @loop_type
        acc = acc + 0.5
    out[0] = acc


def test_loop_carried_type_change():
    with pytest.raises(DSLTypeError) as ei:
        run(k_loop_type)
    expect(
        ei.value,
        "loop_type",
        5,
        f"error[FLY104]: variable 'acc' enters the run-time `for` loop at line {line_of('loop_type')} as Int32 but "
        "is Float32 at the end of the body (the value yielded does not match the region entry)",
        "start 'acc' with the type it holds in the loop, e.g. `acc = fx.Float32(...)` before the loop",
    )


@flyc.kernel
def k_structure(out: Tensor):
    tid = fx.thread_idx.x
    vals = [tid]
    if tid > 0:  # @structure
        vals.append(tid)
    out[0] = vals[0]


def test_structure_change_in_a_branch():
    with pytest.raises(DSLTypeError) as ei:
        run(k_structure)
    expect(
        ei.value,
        "structure",
        5,
        f"error[FLY105]: variable 'vals' changes shape across the run-time `if` at line {line_of('structure')}: "
        "a list of 2 versus a list of 1 (the structure yielded does not match the region entry)",
        "keep the same structure (list length, dict keys, tuple size) on every path; build lists of values "
        "before the `if` and assign their elements inside it",
    )


@flyc.kernel
def k_none(out: Tensor):
    tid = fx.thread_idx.x
    best = None
    for i in range(4):  # noqa: B007  # @none
        best = tid
    out[0] = best


def test_carried_none():
    with pytest.raises(DSLTypeError) as ei:
        run(k_none)
    expect(
        ei.value,
        "none",
        5,
        f"error[FLY106]: variable 'best' is None before the run-time `for` at line {line_of('none')} and is "
        "assigned Int32 inside it",
        "initialize 'best' with a value of the type it will hold, e.g. `best = fx.Int32(0)`",
    )


@flyc.kernel
def k_python_value(out: Tensor):
    tid = fx.thread_idx.x
    mode = "fast"
    if tid > 0:  # @python_value
        mode = "slow"  # noqa: F841
    out[0] = 1


def test_python_value_depending_on_a_runtime_branch():
    with pytest.raises(DSLTypeError) as ei:
        run(k_python_value)
    expect(
        ei.value,
        "python_value",
        5,
        f"error[FLY107]: variable 'mode' holds a Python str whose value depends on the run-time `if` at line "
        f"{line_of('python_value')} ('slow' on one path, 'fast' on the other); only DSL values (fx.Int32, "
        "fx.Float32, Vector, Tensor ...) can change at run time",
        "if the condition is known at compile time write `if const_expr(...)` / use `range_constexpr`; otherwise "
        "make 'mode' a DSL value",
    )


@flyc.kernel
def k_break(out: Tensor):
    tid = fx.thread_idx.x
    for i in range(8):
        if i == tid:
            break  # @break
    out[0] = 1


def test_break_in_a_kernel_loop():
    with pytest.raises(ControlFlowError) as ei:
        run(k_break)
    expect(
        ei.value,
        "break",
        13,
        "error[FLY108]: `break` inside a run-time `for` loop (a kernel loop) is not supported",
        "unroll a loop of known length with `range_constexpr(...)`, or loop with `while cond:` and a flag variable",
    )


@flyc.kernel
def k_continue_while(out: Tensor):
    tid = fx.thread_idx.x
    k = fx.Int32(0)
    while k < tid:
        k = k + 1
        continue  # @continue
    out[0] = k


def test_continue_in_a_runtime_while():
    with pytest.raises(ControlFlowError) as ei:
        run(k_continue_while)
    expect(
        ei.value,
        "continue",
        9,
        "error[FLY108]: `continue` inside a run-time `while` loop (a kernel loop) is not supported",
        "unroll a loop of known length with `range_constexpr(...)`, or loop with `while cond:` and a flag variable",
    )


@flyc.kernel
def k_return_in_if(out: Tensor):
    tid = fx.thread_idx.x
    for i in fx.range_constexpr(2):
        if tid > i:
            return  # @return
    out[0] = 1


def test_return_inside_a_runtime_if():
    with pytest.raises(ControlFlowError) as ei:
        run(k_return_in_if)
    expect(
        ei.value,
        "return",
        13,
        "error[FLY109]: `return` inside an `if` on a run-time value is not supported",
        "assign the result to a variable in every branch and return it after the `if`; if the condition is known "
        "at compile time, write `if const_expr(cond):`",
    )


@flyc.kernel
def k_tuple_target(out: Tensor):
    for a, b in range(4):  # noqa: B007  # @tuple_target
        out[0] = a
    out[1] = 0


def test_kernel_loop_needs_one_name():
    with pytest.raises(ControlFlowError) as ei:
        run(k_tuple_target)
    expect(
        ei.value,
        "tuple_target",
        5,
        "error[FLY110]: a kernel loop `for ... in range(...)` needs a single variable name as its target, got `a, b`",
        "write `for i in range(...)` and unpack inside the body, or use `range_constexpr` for a Python loop",
    )


@flyc.kernel
def k_float_bound(out: Tensor):
    for i in range(fx.Float32(3.0)):  # @float_bound
        out[0] = i


def test_range_bound_must_be_an_integer():
    with pytest.raises(DSLTypeError) as ei:
        run(k_float_bound)
    expect(
        ei.value,
        "float_bound",
        5,
        "error[FLY111]: range() stop must be an integer, got Float32",
        "convert it with `fx.Int32(...)` / `.to(fx.Int32)`",
    )


@flyc.kernel
def k_while_dynamic(out: Tensor):
    tid = fx.thread_idx.x
    k = 0
    while k < 3:  # @while_dynamic
        k = k + tid
    out[0] = k


def test_static_while_turning_dynamic():
    with pytest.raises(DSLTypeError) as ei:
        run(k_while_dynamic)
    expect(
        ei.value,
        "while_dynamic",
        5,
        "error[FLY113]: the condition of this `while` loop was a compile-time value but became a run-time value "
        "after 1 iteration(s) (a variable it reads was assigned a run-time value in the body)",
        "make the loop run-time from the start (initialize the variables with DSL values, e.g. `fx.Int32(0)`), or "
        "keep the condition static",
    )


@flyc.kernel
def k_for_else(out: Tensor):
    for i in range(2):  # @for_else
        out[i] = 1
    else:
        out[3] = 1


def test_for_else_on_a_kernel_loop():
    with pytest.raises(ControlFlowError) as ei:
        run(k_for_else)
    expect(
        ei.value,
        "for_else",
        5,
        "error[FLY114]: `for ... else` is not supported on a run-time loop",
        "move the `else` body after the loop",
    )


@flyc.kernel
def k_static_undefined(out: Tensor, MODE: Constexpr[int]):
    if MODE == 1:
        v = 5
    out[0] = v  # @static_undefined


def test_static_branch_not_taken_leaves_a_name_undefined():
    @flyc.jit
    def launcher(out, MODE: Constexpr[int]):
        k_static_undefined(out, MODE).launch(grid=1, block=1)

    out = np.zeros(1, np.int32)
    launcher(out, 1)
    assert out[0] == 5
    with pytest.raises(DSLNameError) as ei:
        launcher(out, 2)
    expect(
        ei.value,
        "static_undefined",
        5,
        f"error[FLY117]: variable 'v' is not defined: it is assigned only in a branch that was not taken (line "
        f"{line_of('static_undefined') - 1})",
        "assign 'v' before the `if` or in every branch",
    )


@flyc.kernel
def k_loop_var(out: Tensor):
    for i in range(3):
        out[i] = 1
    out[3] = i  # @loop_var


def test_induction_variable_after_the_loop():
    with pytest.raises(DSLNameError) as ei:
        run(k_loop_var)
    expect(
        ei.value,
        "loop_var",
        5,
        f"error[FLY118]: the induction variable 'i' of the kernel loop at line {line_of('loop_var') - 2} is not "
        "defined after the loop",
        "keep the value you need in a variable assigned inside the loop that exists before it",
    )


@flyc.kernel
def k_static_limit(out: Tensor):
    k = 0
    while k >= 0:  # @static_limit
        k = k + 1
    out[0] = k


def test_endless_static_while_stops(monkeypatch):
    monkeypatch.setenv("FLYDSL_TRACE_MAX_OPS", "1000")
    with pytest.raises(TraceLimitError) as ei:
        run(k_static_limit)
    expect(
        ei.value,
        "static_limit",
        5,
        "error[FLY120]: this `while` loop on compile-time values ran 1001 iterations while tracing and did not stop",
        "check the loop condition; raise the limit with FLYDSL_TRACE_MAX_OPS if the loop is meant to be this long",
    )


# -- run-time values where Python needs concrete ones -----------------------------------------------------


@flyc.kernel
def k_bool(out: Tensor):
    tid = fx.thread_idx.x
    out[0] = 1 if bool(tid) else 0  # @bool


@flyc.kernel
def k_list_index(out: Tensor):
    tid = fx.thread_idx.x
    table = [1, 2, 3, 4]
    out[0] = table[tid]  # @list_index


@flyc.kernel
def k_python_range(out: Tensor):
    tid = fx.thread_idx.x
    out[0] = len(list(range(tid)))  # @python_range


@pytest.mark.parametrize(
    "kfn,tag,col,what",
    [
        (k_bool, "bool", 19, "a Python bool"),
        (k_list_index, "list_index", 14, "a Python index"),
        (k_python_range, "python_range", 23, "a Python index"),
    ],
)
def test_runtime_value_in_a_python_protocol(kfn, tag, col, what):
    with pytest.raises(TypeError) as ei:
        run(kfn)
    e = ei.value
    assert isinstance(e, FlyDSLError)
    text = str(e)
    line = line_of(tag)
    assert text.startswith(f"{__file__}:{line}:{col}: error: cannot use a run-time Int32 as {what}")
    assert text.splitlines()[1].strip() == _LINES[line - 1].strip()
    assert "range_constexpr" in text or "const_expr" in text or "select" in text


def test_unrewritten_error_keeps_the_original_exception_class():
    @flyc.kernel
    def k(out: Tensor):
        out[0] = {"a": 1}["b"]  # @keyerror

    with pytest.raises(KeyError) as ei:
        run(k)
    assert isinstance(ei.value, FlyDSLError)
    assert str(ei.value).startswith(f"{__file__}:{line_of('keyerror')}:18: error: KeyError: 'b'")
