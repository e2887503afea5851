"""One small program per user-facing error of the catalogue (flydsl/compiler/errors.py).

tests/lit/test_golden.py runs every ``case_*`` function in file order and compares the rendered errors
with tests/lit/golden/errors.txt (this file's path normalized to ``errors.py``).
"""

# ruff: noqa: B007, F841  (deliberately wrong programs)

from __future__ import annotations

import contextlib
import os

import numpy as np

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Constexpr, Tensor

OUT = np.zeros(8, np.int32)


@contextlib.contextmanager
def env(**values):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(kfn, *args, block=4):
    @flyc.jit
    def launcher(out):
        kfn(out, *args).launch(grid=1, block=block)

    launcher(OUT)


# -- control flow ---------------------------------------------------------------------------------


@flyc.kernel
def k101(out: Tensor):
    tid = fx.thread_idx.x
    if tid > 1:
        x = tid
    else:
        x = fx.Float32(1.0)
    out[tid] = x


def case_branch_types():
    run(k101)


@flyc.kernel
def k102(out: Tensor):
    tid = fx.thread_idx.x
    if tid > 1:
        y = tid
    out[tid] = y


def case_one_branch():
    run(k102)


@flyc.kernel
def k103(out: Tensor):
    for i in range(4):
        z = i
    out[0] = z


def case_defined_in_loop():
    run(k103)


@flyc.kernel
def k104(out: Tensor):
    acc = 0
    for i in range(4):
        acc = acc * 0.5 + i
    out[0] = acc


def case_loop_type():
    run(k104)


@flyc.kernel
def k105(out: Tensor):
    tid = fx.thread_idx.x
    d = {"a": tid}
    if tid > 2:
        d["b"] = tid
    out[0] = d["a"]


def case_structure():
    run(k105)


@flyc.kernel
def k106(out: Tensor):
    tid = fx.thread_idx.x
    best = None
    if tid > 2:
        best = tid
    out[0] = 1


def case_carried_none():
    run(k106)


@flyc.kernel
def k107(out: Tensor):
    tid = fx.thread_idx.x
    op = max
    for i in range(tid):
        op = min
    out[0] = 1


def case_python_value():
    run(k107)


@flyc.kernel
def k108(out: Tensor):
    for i in range(4):
        if i > 2:
            continue
        out[i] = 1


def case_jump_in_loop():
    run(k108)


@flyc.kernel
def k109(out: Tensor):
    tid = fx.thread_idx.x
    while fx.const_expr(True):
        if tid > 1:
            break
        break
    out[0] = 1


def case_jump_in_if():
    run(k109)


@flyc.kernel
def k110(out: Tensor):
    for i, j in range(4):
        out[0] = 1


def case_loop_target():
    run(k110)


@flyc.kernel
def k111(out: Tensor):
    for i in range(0, 4, 1.5):
        out[0] = 1


def case_range_bound():
    run(k111)


@flyc.kernel
def k112(out: Tensor):
    for i in range(0, 4, 0):
        out[0] = 1


def case_range_step_zero():
    run(k112)


@flyc.kernel
def k113(out: Tensor):
    tid = fx.thread_idx.x
    n = 0
    while n < 10:
        n = n + tid
    out[0] = n


def case_while_turned_dynamic():
    run(k113)


@flyc.kernel
def k114(out: Tensor):
    tid = fx.thread_idx.x
    while tid < 4:
        tid = tid + 1
    else:
        out[0] = 1


def case_loop_else():
    run(k114)


@flyc.kernel
def k115(out: Tensor):
    for i, st in range(0, 4, 1, init=[fx.Int32(0)]):
        out[0] = st[0]


def case_explicit_yield():
    run(k115)


@flyc.kernel
def k116(out: Tensor):
    for i, st in range(0, 4, 1, init=[fx.Int32(0)]):
        res = yield [st[0], st[0]]
    out[0] = res[0]


def case_explicit_yield_arity():
    run(k116)


@flyc.kernel
def k117(out: Tensor, FLAG: Constexpr[bool]):
    if FLAG:
        v = 1
    out[0] = v


def case_undefined_static():
    run(k117, False)


@flyc.kernel
def k118(out: Tensor):
    for i in range(4):
        out[i] = 1
    out[4] = i


def case_loop_var_after_loop():
    run(k118)


@flyc.kernel
def k119(out: Tensor):
    v = fx.full(4, 1.0, fx.Float32)
    if v:
        out[0] = 1


def case_condition_not_scalar():
    run(k119)


@flyc.kernel
def k120(out: Tensor):
    n = 1
    while n > 0:
        n = n + 1
    out[0] = n


def case_static_loop_limit():
    with env(FLYDSL_TRACE_MAX_OPS="100"):
        run(k120)


# -- kernels, launchers, arguments -----------------------------------------------------------------


def case_kernel_outside_jit():
    k101(OUT)


@flyc.kernel
def k202(out: Tensor, n: Constexpr[int]):
    out[0] = n


def case_constexpr_type():
    run(k202, 2.0)


@flyc.kernel
def k203(out: Tensor, n: Constexpr[int]):
    out[0] = n


@flyc.jit
def launch203(out, n: fx.Int32):
    k203(out, n).launch(grid=1, block=1)


def case_constexpr_runtime():
    launch203(OUT, 3)


@flyc.jit
def launch_any(out, x):
    k101(out).launch(grid=1, block=1)


def case_unsupported_arg():
    launch_any(OUT, object())


def case_no_unit_stride():
    launch_any(np.zeros((4, 4), np.int32)[:, 1], 0)


def case_tensor_too_large():
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.int32), shape=(2**31, 1), strides=(0, 4))
    launch_any(OUT, big)


def case_divisibility():
    launch_any(OUT, flyc.from_dlpack(np.zeros(6, np.float32)).mark_layout_dynamic(divisibility=4))


@flyc.jit
def launch208(out):
    k101(out).launch(grid=(1, 2, 3, 4), block=4)


def case_launch_dims():
    launch208(OUT)


@flyc.kernel(known_block_size=(64, 1, 1))
def k209(out: Tensor):
    out[0] = 1


def case_known_block_size():
    run(k209, block=32)


def case_known_block_size_type():
    @flyc.kernel(known_block_size=[64.0, 1, 1])
    def k225(out: Tensor):
        out[0] = 1


def case_known_block_size_value():
    @flyc.kernel(known_block_size=[256, 1])
    def k226(out: Tensor):
        out[0] = 1


@flyc.kernel
def k210(out: Tensor):
    return out


def case_kernel_returns():
    run(k210)


@flyc.jit
def launch211(out):
    return out.shape[0] + 1


def case_jit_returns():
    launch211(OUT)


def case_arg_binding():
    launch_any(OUT, 1, 2)


@flyc.kernel
def k213(out: Tensor):
    k101(out).launch(grid=1, block=1)


def case_kernel_in_kernel():
    run(k213)


@flyc.kernel
def k214(out: Tensor, option):
    out[0] = 1


def case_kernel_arg_static():
    run(k214, {1, 2})


def case_smem_size():
    @flyc.jit
    def launcher(out):
        k217(out).launch(grid=1, block=4, smem=1 << 30)

    launcher(OUT)


@flyc.kernel
def k217(out: Tensor):
    alloc = fx.SharedAllocator(static=False)
    buf = alloc.allocate(fx.Array[fx.Float32, 64, 16]).peek()
    buf[fx.thread_idx.x] = 1.0
    out[fx.thread_idx.x] = buf[fx.thread_idx.x]


def case_smem_too_small():
    @flyc.jit
    def launcher(out):
        k217(out).launch(grid=1, block=4, smem=64)

    launcher(OUT)


def case_bad_annotation():
    @flyc.kernel
    def k218(out: Tensor, width: fx.Constexpr[intt]):  # noqa: F821 - the typo is the test
        out[0] = width

    @flyc.jit
    def launcher(out):
        k218(out, 4).launch(grid=1, block=1)

    launcher(OUT)


# -- tracing limits, devices ------------------------------------------------------------------------


@flyc.kernel
def k301(out: Tensor):
    for i in fx.range_constexpr(100000):
        out[i % 8] = i


def case_trace_budget():
    with env(FLYDSL_TRACE_MAX_OPS="500"):
        run(k301)


def forever(x):
    return forever(x + 1)


@flyc.kernel
def k302(out: Tensor):
    out[0] = forever(fx.thread_idx.x)


def case_trace_recursion():
    run(k302)


def case_device_mismatch():
    from flydsl.compiler.jit import user_error
    from flydsl.runtime.args import ArgError, TensorRef
    from flydsl.runtime.cpu import register_tensor

    try:
        register_tensor(TensorRef(None, np.dtype(np.float32), 4096, (4,), (1,), True), None)
    except ArgError as e:
        raise user_error(ArgError(e.diag, name="x", **e.fields)) from None


def case_no_device():
    with env(FLYDSL_RUNTIME_KIND="tpu"):
        run(k101)


# -- target capabilities and the MLIR facade ------------------------------------------------------


@flyc.kernel
def k501(out: Tensor):
    from flydsl._mlir.dialects import rocdl

    rocdl.mfma_f32_16x16x16f16(fx.T.f32x4, fx.thread_idx.x, fx.thread_idx.x, fx.thread_idx.x, 0, 0, 0)


def case_amd_only_op():
    run(k501)


def case_mlir_unsupported():
    from flydsl._mlir.passmanager import PassManager

    PassManager.parse("builtin.module(fly-rewrite-func-signature)")


# -- tensor cores and asynchronous copies ----------------------------------------------------------


@flyc.kernel
def k520(out: Tensor):
    a = fx.Vector.filled(16, 0.0, fx.Float8E4M3FN)
    b = fx.Vector.filled(8, 0.0, fx.Float8E4M3FN)
    c = fx.Vector.filled(4, 0.0, fx.Float32)
    d = fx.nvvm.mma_sync(a, b, c, shape="m16n8k32")


def case_target_feature():
    with env(ARCH="sm_80"):
        run(k520, block=32)


# -- stale state, inexact arguments, run-time launch dimensions ----------------------------------------

BIG_TABLE = list(range(5000))


@flyc.kernel
def k219(out: Tensor):
    out[0] = BIG_TABLE[1]


def case_tracked_value_too_large():
    run(k219)


def case_tensor_expected():
    @flyc.jit
    def launcher(out: Tensor):
        k101(out).launch(grid=1, block=4)

    launcher([1, 2, 3])


def case_arg_not_exact():
    @flyc.kernel
    def k221(out: Tensor, n: fx.Int32):
        out[0] = n

    @flyc.jit
    def launcher(out, n: fx.Int32):
        k221(out, n).launch(grid=1, block=1)

    launcher(OUT, 2**32 + 8)


def case_launch_dims_runtime():
    @flyc.kernel
    def k222(out: Tensor):
        out[0] = 1

    @flyc.jit
    def launcher(out, n: fx.Int32):
        k222(out).launch(grid=(n // 128, 1, 1), block=128)

    launcher(OUT, 100)


@flyc.kernel
def k121(out: Tensor):
    if fx.thread_idx.x > 4:
        raise ValueError("thread out of range")
    out[0] = 1


def case_raise_in_runtime_if():
    run(k121)


LOOKUP = {0: 1}


@flyc.kernel
def k122(out: Tensor):
    out[0] = LOOKUP[fx.thread_idx.x]


def case_runtime_dict_key():
    run(k122)


@flyc.kernel
def k123(out: Tensor):
    fx.printf(f"{fx.thread_idx.x:3d}")


def case_runtime_format():
    run(k123)


def spin():
    while True: pass  # noqa: E701  # fmt: skip


@flyc.kernel
def k303(out: Tensor):
    out[0] = spin()


def case_trace_time():
    with env(FLYDSL_TRACE_MAX_SECONDS="1"):
        run(k303)


def case_env_invalid():
    with env(FLYDSL_COMPILE_OPT_LEVEL="fast"):
        run(k101)


@flyc.kernel
def k223(a: Tensor, out: Tensor):
    out[0] = a[0]


def case_tensor_outside_storage():
    from numpy.lib.stride_tricks import as_strided

    @flyc.jit
    def launcher(a, out):
        k223(a, out).launch(grid=1, block=1)

    launcher(as_strided(np.zeros(4, np.int32), shape=(8,), strides=(4,)), OUT)


def case_compile_hint():
    @flyc.jit
    def launcher(out):
        k101(out).launch(grid=1, block=4)

    launcher.compile_hints["llvm_options"] = {"no-such-llvm-option": True}
    launcher(OUT)


GAIN229 = 2


@flyc.kernel
def k229(out: Tensor):
    out[0] = GAIN229


def case_global_changed():
    global GAIN229

    @flyc.jit
    def launcher(out):
        k229(out).launch(grid=1, block=1)

    launcher(OUT)
    GAIN229 = 3
    try:
        launcher(OUT)
    finally:
        GAIN229 = 2
