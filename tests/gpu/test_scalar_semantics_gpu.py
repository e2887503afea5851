"""The GPU computes every integer op exactly as its scalar hook says (the semantics the host executor, the
compile-time folder and — through ``evaluate``, held equal by tests/unit/test_scalar_semantics.py — the
interpreter use): all binary ops, shifts by amounts past the width, comparisons and the unary ops, on
i8/i16/i32/i64, with inputs drawn by hypothesis. Division by zero and ``MIN / -1`` are undefined on GPUs
and left out of the divisors."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flydsl import ir
from flydsl.codegen import Target, compile_module
from flydsl.dialects import arith, gpu, ptr
from flydsl.dialects import math as dmath
from flydsl.expr._sem.fold import _FoldOp
from flydsl.ir import IntegerType, PointerType
from flydsl.runtime import cuda
from flydsl.testing import build_kernel

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA device")]

N = 256
SHIFTS = ("arith.shli", "arith.shrui", "arith.shrsi")
DIVS = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi",
        "arith.ceildivui")  # fmt: skip
OTHERS = [n for n in arith.INT_SCALAR_EXPR if n not in SHIFTS + DIVS]
_NP = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def _ops(t):
    """(name, defn, operand roles, attrs) of every op checked, in kernel output order."""
    out = [(n, ir.OPS[n], "ab", {}) for n in OTHERS]
    out += [(n, ir.OPS[n], "ad", {}) for n in DIVS]
    out += [(n, ir.OPS[n], "as", {}) for n in SHIFTS]
    out += [(f"cmpi {p}", arith.cmpi, "ab", {"predicate": p}) for p in arith.CMPI_PREDICATES]
    out += [(n, ir.OPS[n], "a", {}) for n in dmath.INT_SCALAR_EXPR]
    return out


def _module(w: int):
    """The kernel: every checked op of ``w`` bits on lane ``i`` of the inputs a, b, d (divisors), s (shifts)."""
    t = IntegerType(w)
    ops = _ops(t)
    pin = PointerType(t, "global")
    pout = [PointerType(ir.i8 if d is arith.cmpi else t, "global") for _, d, _, _ in ops]

    def body(a_p, b_p, d_p, s_p, *outs):
        bid, bdim = gpu.block_id(dimension="x"), gpu.block_dim(dimension="x")
        i = arith.addi(arith.muli(bid, bdim), gpu.thread_id(dimension="x"))
        vals = {r: ptr.load(ptr.add(p, i), result_types=[t]) for r, p in zip("abds", (a_p, b_p, d_p, s_p))}
        for (_, defn, roles, attrs), o in zip(ops, outs):
            r = defn(*[vals[x] for x in roles], **attrs)
            if defn is arith.cmpi:
                r = arith.extui(r, result_types=[ir.i8])
            ptr.store(r, ptr.add(o, i))

    return build_kernel([pin] * 4 + pout, body), ops


@functools.cache
def _kernel(w: int):
    mod, ops = _module(w)
    ck = compile_module(mod, Target(arch=cuda.device_arch()))
    return cuda.CudaKernel.from_compiled(ck, "k"), ops


def _ints(w):
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    return st.one_of(st.sampled_from([0, 1, -1, lo, hi, w - 1, w, w + 1]), st.integers(lo, hi))


# N values per operand in one launch: a large smallest example is the point (one launch checks N cases)
@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.large_base_example, HealthCheck.data_too_large]
)
@given(data=st.data(), w=st.sampled_from([8, 16, 32, 64]))
def test_gpu_equals_the_scalar_hooks(data, w):
    a = data.draw(st.lists(_ints(w), min_size=N, max_size=N), label="a")
    b = data.draw(st.lists(_ints(w), min_size=N, max_size=N), label="b")
    d = [x if x not in (0, -1) else 7 for x in data.draw(st.lists(_ints(w), min_size=N, max_size=N), label="d")]
    s = data.draw(st.lists(st.one_of(st.integers(0, 2 * w + 3), _ints(w)), min_size=N, max_size=N), label="s")
    _check(w, a, b, d, s)


def test_i64_shift_amounts_past_2_32():
    """Regression (H200, 2026-12-01): LLVM folded select(amount < 64, shl(a, amount), 0) into one PTX shl.b64,
    whose amount is a u32 — shifts by 2^63 or 2^32 returned `a`; the IR says 0 (shrsi: the sign fill)."""
    amounts = [-(1 << 63), 1 << 32, (1 << 32) + 1, (1 << 62) + 3, 64, 65, 63, -1]
    s = [amounts[j % len(amounts)] for j in range(N)]
    a = [(1 << 63) - 1 if j % 2 else -(1 << 62) - 5 for j in range(N)]
    _check(64, a, list(range(N)), [7] * N, s)


def _check(w, a, b, d, s):
    k, ops = _kernel(w)
    t = IntegerType(w)
    host = {"a": a, "b": b, "d": d, "s": s}
    dev_in = [torch.from_numpy(np.asarray(host[r], dtype=_NP[w])).cuda() for r in "abds"]
    dev_out = [torch.zeros(N, dtype=torch.int8 if defn is arith.cmpi else getattr(torch, f"int{w}"), device="cuda")
               for _, defn, _, _ in ops]  # fmt: skip
    k.launch(N // 128, 128, 0, None, (*dev_in, *dev_out))
    torch.cuda.synchronize()
    bad = []
    for (name, defn, roles, attrs), out in zip(ops, dev_out):
        rt = ir.i1 if defn is arith.cmpi else t
        f = defn.scalar(_FoldOp(attrs, [t] * len(roles), rt))
        got = out.cpu().numpy().tolist()
        for j in range(N):
            args = [host[r][j] for r in roles]
            want = int(f(*args))
            if got[j] != want:
                bad.append(f"{name} i{w}{args}: gpu {got[j]} hook {want}")
                break
    assert not bad, "\n".join(bad)
