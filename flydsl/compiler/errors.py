"""The catalogue of user errors: one entry per mistake, in the user's words, with a fix.

Each :class:`Diag` has a stable id (``FLY1xx`` control flow, ``FLY2xx`` kernels/jit and arguments,
``FLY3xx`` tracing limits, ``FLY4xx`` devices and caches, ``FLY5xx`` target capabilities: tensor cores
and async copies, AMD-only instructions and the ``flydsl._mlir`` facade), the exception class it raises,
a message template and a fix template (``str.format`` fields). Raise with :func:`error`::

    raise error(BRANCH_TYPE_MISMATCH, loc, name="x", a="Int32", b="Float32")

docs/errors.md lists this catalogue; tests/unit/test_errors_*.py check every message verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dialects.capabilities import MESSAGE as CAPABILITY_MESSAGE
from .diagnostics import (
    CompileError,
    ControlFlowError,
    DSLNameError,
    DSLTypeError,
    DSLValueError,
    FlyDSLError,
    GlobalChangedError,
    LaunchError,
    TraceLimitError,
)

__all__ = ["Diag", "CATALOGUE", "error"]


@dataclass(frozen=True)
class Diag:
    id: str
    cls: type
    message: str
    fix: str = ""


CATALOGUE: dict[str, Diag] = {}


def _d(id: str, cls: type, message: str, fix: str = "") -> Diag:
    d = Diag(id, cls, message, fix)
    CATALOGUE[id] = d
    return d


def error(diag: Diag, loc=None, **fields) -> FlyDSLError:
    """An exception instance for ``diag`` with its templates filled from ``fields``."""
    msg = diag.message.format(**fields)
    fix = diag.fix.format(**fields) if diag.fix else None
    return diag.cls(msg, loc, fix, diag.id)


# -- control flow (FLY1xx) -------------------------------------------------------------------------

BRANCH_TYPE_MISMATCH = _d(
    "FLY101",
    DSLTypeError,
    "variable '{name}' is {a} in one branch and {b} in the other branch of this run-time `if` (what one branch "
    "yields does not match the region entry)",
    "give '{name}' the same type in every branch, e.g. write the value as `{want}(...)` or convert it with "
    "`.to({want})`",
)
DEFINED_IN_ONE_BRANCH = _d(
    "FLY102",
    DSLNameError,
    "variable '{name}' is used here, but it is assigned only in one branch of the run-time `if` at line {site_line} "
    "(assigned at line {def_line})",
    "assign '{name}' before the `if` (with the type it will hold) or in every branch",
)
DEFINED_IN_LOOP = _d(
    "FLY103",
    DSLNameError,
    "variable '{name}' is used here, but it is first assigned inside the run-time `{kind}` loop at line {site_line} "
    "(assigned at line {def_line}); a value leaves a kernel loop only through a variable that exists before it",
    "assign '{name}' before the loop (with the type it will hold)",
)
LOOP_TYPE_CHANGE = _d(
    "FLY104",
    DSLTypeError,
    "variable '{name}' enters the run-time `{kind}` loop at line {site_line} as {a} but is {b} at the end of the body "
    "(the value yielded does not match the region entry)",
    "start '{name}' with the type it holds in the loop, e.g. `{name} = fx.{b}(...)` before the loop",
)
STRUCTURE_CHANGE = _d(
    "FLY105",
    DSLTypeError,
    "variable '{name}' changes shape across the run-time `{kind}` at line {site_line}: {a} versus {b} (the "
    "structure yielded does not match the region entry)",
    "keep the same structure (list length, dict keys, tuple size) on every path; "
    "build lists of values before the `{kind}` and assign their elements inside it",
)
CARRIED_NONE = _d(
    "FLY106",
    DSLTypeError,
    "variable '{name}' is None before the run-time `{kind}` at line {site_line} and is assigned {b} inside it",
    "initialize '{name}' with a value of the type it will hold, e.g. `{name} = fx.{b}(0)`",
)
PYTHON_VALUE_DIFFERS = _d(
    "FLY107",
    DSLTypeError,
    "variable '{name}' holds a Python {a} whose value depends on the run-time `{kind}` at line {site_line} "
    "({b}); only DSL values (fx.Int32, fx.Float32, Vector, Tensor ...) can change at run time",
    "if the condition is known at compile time write `if const_expr(...)` / use `range_constexpr`; "
    "otherwise make '{name}' a DSL value",
)
JUMP_IN_RUNTIME_LOOP = _d(
    "FLY108",
    ControlFlowError,
    "`{stmt}` inside a run-time `{kind}` loop (a kernel loop) is not supported",
    "unroll a loop of known length with `range_constexpr(...)`, or loop with `while cond:` and a flag variable",
)
JUMP_IN_RUNTIME_IF = _d(
    "FLY109",
    ControlFlowError,
    "`{stmt}` inside an `if` on a run-time value is not supported",
    "assign the result to a variable in every branch and {after} after the `if`; "
    "if the condition is known at compile time, write `if const_expr(cond):`",
)
LOOP_TARGET = _d(
    "FLY110",
    ControlFlowError,
    "a kernel loop `for ... in range(...)` needs a single variable name as its target, got `{target}`",
    "write `for i in range(...)` and unpack inside the body, or use `range_constexpr` for a Python loop",
)
RANGE_BOUND_TYPE = _d(
    "FLY111",
    DSLTypeError,
    "range() {what} must be an integer, got {got}",
    "convert it with `fx.Int32(...)` / `.to(fx.Int32)`",
)
RANGE_STEP_ZERO = _d("FLY112", DSLValueError, "range() step must not be zero", "")
WHILE_TURNED_DYNAMIC = _d(
    "FLY113",
    DSLTypeError,
    "the condition of this `while` loop was a compile-time value but became a run-time value after {n} "
    "iteration(s) (a variable it reads was assigned a run-time value in the body)",
    "make the loop run-time from the start (initialize the variables with DSL values, e.g. `fx.Int32(0)`), "
    "or keep the condition static",
)
LOOP_ELSE = _d(
    "FLY114",
    ControlFlowError,
    "`{kind} ... else` is not supported on a run-time loop",
    "move the `else` body after the loop",
)
EXPLICIT_YIELD = _d(
    "FLY115",
    ControlFlowError,
    "a loop with `init=` must end its body with `yield [...]` (or `results = yield [...]`) giving the next values",
    "add `yield [new values...]` as the last statement of the loop body",
)
EXPLICIT_YIELD_ARITY = _d(
    "FLY116",
    DSLTypeError,
    "the loop at line {site_line} carries {a} value(s) (`init=`) but its body yields {b}",
    "yield exactly one new value per `init` value, in the same order",
)
UNDEFINED_STATIC = _d(
    "FLY117",
    DSLNameError,
    "variable '{name}' is not defined: it is assigned only in a branch that was not taken (line {def_line})",
    "assign '{name}' before the `if` or in every branch",
)
LOOP_VAR_AFTER_LOOP = _d(
    "FLY118",
    DSLNameError,
    "the induction variable '{name}' of the kernel loop at line {site_line} is not defined after the loop",
    "keep the value you need in a variable assigned inside the loop that exists before it",
)
COND_NOT_SCALAR = _d(
    "FLY119",
    DSLTypeError,
    "the condition of a run-time `{kind}` must be a scalar, got {got}",
    'reduce it to one value first (e.g. `v.reduce("max") > 0`), or use `v.select(a, b)` for a per-lane choice',
)
STATIC_LOOP_LIMIT = _d(
    "FLY120",
    TraceLimitError,
    "this `while` loop on compile-time values ran {n} iterations while tracing and did not stop",
    "check the loop condition; raise the limit with FLYDSL_TRACE_MAX_OPS if the loop is meant to be this long",
)
RAISE_IN_RUNTIME_IF = _d(
    "FLY121",
    ControlFlowError,
    "`raise` inside an `if` on a run-time value: `raise` runs while the kernel is traced (compile time), so it "
    "would raise whether or not the condition holds when the kernel runs",
    "check the condition in Python before launching (on compile-time values: `if const_expr(cond): raise ...`); "
    "a kernel cannot raise at run time — write an error flag to an output tensor instead",
)
RUNTIME_DICT_KEY = _d(
    "FLY122",
    DSLTypeError,
    "a run-time {type} cannot be a key of a Python dict or a member of a set: the lookup runs while tracing, "
    "when the value is not known yet",
    "index an `fx.Vector` or a tensor with it instead (a table of constants becomes a Vector or a tensor "
    "argument), or pick between values with `cond.select(a, b)`",
)
RUNTIME_FORMAT = _d(
    "FLY123",
    DSLTypeError,
    "a run-time {type} cannot be formatted with a format spec (such as `:04d` in an f-string, or "
    "`format(x, spec)`): its value is known only when the kernel runs",
    'print it with `fx.printf("{{}}", x)`, which formats on the device',
)

# -- kernels, jit functions, arguments (FLY2xx) ---------------------------------------------------

KERNEL_OUTSIDE_JIT = _d(
    "FLY201",
    DSLTypeError,
    "@flyc.kernel '{name}' can only be called inside a @flyc.jit function",
    "write a @flyc.jit launcher that calls `{name}(...).launch(grid=..., block=...)`",
)
CONSTEXPR_TYPE = _d(
    "FLY202",
    DSLTypeError,
    "argument '{name}' is declared fx.Constexpr[{want}] but got {got}",
    "pass a Python {want}",
)
CONSTEXPR_RUNTIME = _d(
    "FLY203",
    DSLTypeError,
    "argument '{name}' is a compile-time constant (fx.Constexpr) but got {got}",
    "pass a Python value, or drop the fx.Constexpr annotation to make it a run-time argument",
)
UNSUPPORTED_ARG = _d(
    "FLY204",
    DSLTypeError,
    "argument '{name}': cannot pass {got} to a {where}",
    "pass a tensor (torch, numpy, DLPack), a Python int/float/bool, an fx number, or declare the parameter "
    "`fx.Constexpr[...]` for a compile-time value",
)
TENSOR_NO_UNIT_STRIDE = _d(
    "FLY205",
    DSLValueError,
    "argument '{name}': the tensor (shape {shape}, strides {strides}) has no dimension of stride 1",
    "pass `t.contiguous()`, or `flyc.from_torch_tensor(t)` for a fully static layout",
)
TENSOR_TOO_LARGE = _d(
    "FLY206",
    DSLValueError,
    "argument '{name}': {what} {value} does not fit the kernel's 32-bit {what}",
    "split the tensor into smaller views",
)
DIVISIBILITY = _d(
    "FLY207",
    DSLValueError,
    "argument '{name}': dynamic {what} {value} is not divisible by {div} (declared with divisibility={div})",
    "pass a tensor whose {what} is a multiple of {div}, or lower the divisibility",
)
LAUNCH_DIMS = _d(
    "FLY208",
    DSLValueError,
    "launch {what} must be 1 to 3 integers, got {got}",
    "write e.g. `grid=(n_blocks, 1, 1)`, `block=256`",
)
KNOWN_BLOCK_SIZE = _d(
    "FLY209",
    DSLValueError,
    "kernel '{name}': the launch block={block} differs from known_block_size={kbs} (declared on the kernel)",
    "launch with the declared block size or drop known_block_size",
)
KERNEL_RETURNS = _d(
    "FLY210",
    DSLTypeError,
    "a @flyc.kernel returns nothing, but '{name}' returned {got}",
    "write results to a tensor argument (`out[i] = value`)",
)
JIT_RETURNS = _d(
    "FLY211",
    DSLTypeError,
    "a @flyc.jit launcher returns nothing when called from Python, but '{name}' returned {got}",
    "write results to a tensor argument",
)
ARG_BINDING = _d("FLY212", DSLTypeError, "{name}(): {detail}", "check the arguments against the function's signature")
KERNEL_IN_KERNEL = _d(
    "FLY213",
    DSLTypeError,
    "@flyc.kernel '{name}' cannot be launched from inside another kernel",
    "call a plain Python helper function from the kernel instead",
)
KERNEL_ARG_STATIC = _d(
    "FLY214",
    DSLTypeError,
    "kernel argument '{name}': cannot pass {got} to a kernel parameter",
    "pass DSL values (tensors, fx numbers) or declare the parameter `fx.Constexpr[...]`",
)
SMEM_SIZE = _d(
    "FLY216",
    DSLValueError,
    "kernel '{name}' needs {need} bytes of shared memory, but {target} allows at most {cap} per block",
    "use less shared memory per block (smaller tiles)",
)

SMEM_TOO_SMALL = _d(
    "FLY217",
    DSLValueError,
    "kernel '{name}' allocates {need} bytes of dynamic shared memory, but the launch gives only smem={smem}",
    "pass smem={need} or more to .launch(), or leave smem out to use what the kernel allocates",
)

BAD_ANNOTATION = _d(
    "FLY218",
    DSLNameError,
    "parameter '{name}' of '{fn}': its annotation `{ann}` does not evaluate ({why})",
    "import what the annotation names (e.g. `import flydsl.expr as fx` for `fx.Constexpr[int]`), or remove it; "
    "an annotation that cannot be read would silently make the parameter a run-time value",
)
TRACKED_VALUE_TOO_LARGE = _d(
    "FLY219",
    DSLValueError,
    "'{name}' is read by '{fn}' as a compile-time constant, but it is a mutable {what} of more than {limit} "
    "elements: too large to check for changes on every call (the compiled code depends on its value)",
    "make it immutable (a tuple) so that its value is hashed once, or pass it to the launcher as an argument "
    "(a tensor for data, `fx.Constexpr[...]` for a compile-time value)",
)
TENSOR_EXPECTED = _d(
    "FLY220",
    DSLTypeError,
    "argument '{name}' is declared fx.Tensor but got {got}",
    "pass a tensor (a torch tensor, a numpy array or a DLPack object); for an optional tensor drop the "
    "annotation and test `if const_expr({name} is None):` in the body",
)
ARG_NOT_EXACT = _d(
    "FLY221",
    DSLValueError,
    "argument '{name}': {got} does not fit the parameter's type {type} ({why}); it would be changed silently",
    "pass a value that {type} holds, declare the parameter with a type that holds it (e.g. `fx.Int64`), or "
    "convert it yourself with `fx.{type}(value)` if wrapping or truncating is what you mean",
)
LAUNCH_DIMS_RUNTIME = _d(
    "FLY222",
    DSLValueError,
    "the launch {what}, computed at run time, is {got}: every dimension must be at least 1",
    "skip the call when there is no work (test the size in Python before calling the launcher), or make the "
    "{what} at least 1, e.g. `fx.max(blocks, 1)`",
)
TENSOR_OUTSIDE_STORAGE = _d(
    "FLY223",
    DSLValueError,
    "argument '{name}': the tensor view (shape {shape}, strides {strides}) spans bytes {lo} to {hi} of the memory "
    "it lives in, which has only {size} bytes: a kernel would read or write other memory",
    "check the shape, strides and offset given to `as_strided` (or the storage it views); pass `t.contiguous()` "
    "for a copy",
)
COMPILE_HINT = _d(
    "FLY224",
    DSLValueError,
    "compile hint '{hint}' cannot be honoured: {why}",
    "fix or remove the hint (flydsl's compile hints: {known}; docs/compiler.md says what each does)",
)
KNOWN_BLOCK_SIZE_TYPE = _d(
    "FLY225",
    DSLTypeError,
    "kernel '{name}': {problem}",
    "declare three positive ints, e.g. `@flyc.kernel(known_block_size=[256, 1, 1])`, or leave it out: a launch "
    "with constant block dimensions makes the block size known",
)
KNOWN_BLOCK_SIZE_VALUE = _d(
    "FLY226",
    DSLValueError,
    "kernel '{name}': {problem}",
    "declare three positive ints, e.g. `@flyc.kernel(known_block_size=[256, 1, 1])`, or leave it out: a launch "
    "with constant block dimensions makes the block size known",
)
GLOBAL_CHANGED = _d(
    "FLY229",
    GlobalChangedError,
    "{where} is read by @flyc.jit '{fn}' as a compile-time constant and has changed since '{fn}' was compiled "
    "with it: {old} -> {new}",
    "pass '{name}' to the launcher as an argument (`fx.Constexpr[...]` for a compile-time value: it is then part "
    "of the cache key), or after changing it on purpose call `{fn}.clear_cache()`; "
    "FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE=1 recompiles whenever such a value changes",
)


# -- tracing limits (FLY3xx) -----------------------------------------------------------------------

TRACE_BUDGET = _d(
    "FLY301",
    TraceLimitError,
    "tracing stopped after {count} ops (FLYDSL_TRACE_MAX_OPS={limit}); the last op came from this line. "
    "A Python loop (range_constexpr, list comprehension, recursion) is probably unrolling far more than intended",
    "check the loop bounds; if the kernel is really this large, raise the limit: FLYDSL_TRACE_MAX_OPS={suggest}",
)
TRACE_RECURSION = _d(
    "FLY302",
    TraceLimitError,
    "tracing recursed too deeply ({detail}); the recursion goes through this line",
    "give the recursion a compile-time stop condition (`if const_expr(depth == 0): ...`), "
    "or raise Python's limit with FLYDSL_TRACE_MAX_DEPTH",
)
TRACE_TIME = _d(
    "FLY303",
    TraceLimitError,
    "tracing stopped after {seconds} s (FLYDSL_TRACE_MAX_SECONDS={seconds}) and {count} ops; it was running "
    "this line. A Python loop (range_constexpr, a compile-time `while`, recursion) probably runs far longer "
    "than intended",
    "check the loop bounds and conditions; if the kernel really takes this long to trace, raise the limit: "
    "FLYDSL_TRACE_MAX_SECONDS={suggest} (0 turns it off)",
)

# -- devices and caches (FLY4xx) -------------------------------------------------------------------

DEVICE_MISMATCH = _d(
    "FLY401",
    DSLValueError,
    "argument '{name}': {got} cannot be used by a kernel running on the {device} device",
    "{fix}",
)
NO_DEVICE = _d(
    "FLY402",
    LaunchError,
    "FLYDSL_RUNTIME_KIND={kind!r} but {why}",
    "unset FLYDSL_RUNTIME_KIND, or set it to 'cpu' to run on the CPU interpreter",
)
ENV_INVALID = _d(
    "FLY403",
    DSLValueError,
    "environment variable {var}={value!r} is not valid: {why}",
    "set {var} to {expected}, or unset it to use the default (the README lists every variable)",
)

# -- target capabilities (FLY5xx): AMD-only instructions and the MLIR facade ------------------------

AMD_ONLY_OP = _d(
    "FLY501",
    CompileError,
    "`{op}` ({what}) is an AMD-only instruction; the target {target} has no equivalent",
    "use the portable fx API instead ({alt}), or run this kernel with ROCm FlyDSL on an AMD GPU",
)
MLIR_UNSUPPORTED = _d(
    "FLY502",
    CompileError,
    "`{op}` is not available in flydsl's IR: {why}",
    "use the fx API for this (docs/compatibility.md lists what flydsl._mlir provides)",
)

# -- tensor cores and asynchronous copies (FLY5xx) -------------------------------------------------

# an op the kernel's target lacks (flydsl/dialects/capabilities.py: one table and one message, checked while
# tracing and again by codegen)
TARGET_FEATURE = _d("FLY520", DSLValueError, CAPABILITY_MESSAGE, "{fix}")


def catalogue_markdown() -> str:
    """docs/errors.md's table, generated from the catalogue (``python -m flydsl.compiler.errors``)."""
    rows = ["| id | raises | message | fix |", "|---|---|---|---|"]
    for d in CATALOGUE.values():
        bases = [b.__name__ for b in d.cls.__mro__[1:] if b.__module__ == "builtins" and b is not object]
        kind = d.cls.__name__ + (f" ({bases[0]})" if bases and bases[0] != "Exception" else "")
        rows.append(f"| {d.id} | {kind} | {_md(d.message)} | {_md(d.fix)} |")
    return "\n".join(rows) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


if __name__ == "__main__":
    print(catalogue_markdown(), end="")
