"""One capability check for every target-specific op (flydsl/dialects/capabilities.py): the table's answers,
every nvvm op declaring what it needs, and the trace-time FLY520 at the user's line — raised before the CPU
interpreter runs anything, for the warp-level tensor-core ops as for the Hopper ones. (The code generator's
second check, on IR built by hand, is tested in test_nvvm_codegen.py and test_hopper_codegen.py.)"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import flydsl.compiler as flyc
import flydsl.dialects  # noqa: F401  (registers every op)
import flydsl.expr as fx
from flydsl.dialects.capabilities import CAPABILITIES, capability_gap, requirements
from flydsl.expr.typing import Tensor
from flydsl.ir import OPS


@pytest.mark.parametrize(
    "feature,arch,need",
    [
        ("mma_sync", "sm_80", None),
        ("mma_fp8", "sm_80", "sm_89 or newer"),
        ("mma_fp8", "sm_89", None),
        ("mma_fp8", "sm_90a", None),
        ("stmatrix", "sm_89", "sm_90 or newer"),
        ("stmatrix", "sm_90", None),
        ("cp_async", "gfx942", "an NVIDIA GPU (sm_80 or newer)"),
        ("mbarrier", "sm_80", "sm_90 or newer"),
        ("setmaxnreg", "sm_90", "the architecture-specific target sm_90a"),
        ("setmaxnreg", "sm_100a", None),
        ("wgmma", "sm_80", "sm_90a"),
        ("wgmma", "sm_90", "the architecture-specific target sm_90a"),
        ("wgmma", "sm_90a", None),
        ("wgmma", "sm_100a", "sm_90a (later GPUs do not have it)"),
        ("wgmma", "gfx950", "an NVIDIA GPU (sm_90a)"),
    ],
)
def test_capability_gap(feature, arch, need):
    gap = capability_gap(feature, arch)
    assert (gap and gap.need) == need
    if gap is not None:
        assert gap.message == f"{CAPABILITIES[feature].what} needs {need}; this kernel is compiled for {arch}"


def test_every_nvvm_op_declares_what_it_needs():
    """Named barriers (bar.sync id, count: sm_70) are the only nvvm ops every supported target has."""
    everywhere = {"nvvm.barrier_sync", "nvvm.barrier_arrive"}
    for name, defn in OPS.items():
        if name.startswith("nvvm.") and name not in everywhere:
            assert defn.requires is not None, name
            if isinstance(defn.requires, str):
                assert defn.requires in CAPABILITIES, name


@flyc.kernel
def k_fp8_mma(out: Tensor):
    a = fx.Vector.filled(16, 0.0, fx.Float8E4M3FN)
    b = fx.Vector.filled(8, 0.0, fx.Float8E5M2)
    c = fx.Vector.filled(4, 0.0, fx.Float16)
    d = fx.nvvm.mma_sync(a, b, c, shape="m16n8k32")  # <- mma
    out[fx.thread_idx.x] = d[0].to(fx.Float32)


@flyc.kernel
def k_stmatrix(out: Tensor):
    sm = fx.alloc_shared(fx.Float16, 64, align=16)
    fx.nvvm.stmatrix(sm + fx.thread_idx.x % 8 * 8, fx.Vector.filled(2, 1.0, fx.Float16), num=1)  # <- stmatrix
    out[fx.thread_idx.x] = fx.Float32(1.0)


@flyc.kernel
def k_cp_async(out: Tensor):
    sm = fx.alloc_shared(fx.Float32, 128, align=16)
    fx.nvvm.cp_async(sm + fx.thread_idx.x * 4, out.iterator + fx.thread_idx.x * 4, 16)  # <- cp_async
    fx.nvvm.cp_async_wait_all()


@flyc.kernel
def k_wgmma_fence(out: Tensor):
    fx.nvvm.wgmma_fence()  # <- wgmma
    out[fx.thread_idx.x] = fx.Float32(1.0)


def _line(fn, marker: str) -> tuple[int, int, str]:
    """(line, column of the ``fx.nvvm`` call, the line's text) of the line tagged ``# <- marker`` in ``fn``."""
    lines, first = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if text.rstrip().endswith(f"# <- {marker}"):
            return first + i, text.index("fx.nvvm.") + 1, text.rstrip()
    raise AssertionError(marker)


CASES = [
    (k_fp8_mma, "mma", "sm_80", "an fp8 (e4m3/e5m2) warp-level MMA (mma.sync) needs sm_89 or newer",
     "compile for sm_89 or newer (e.g. sm_90a), or use bf16 operands"),
    (k_stmatrix, "stmatrix", "sm_89", "stmatrix needs sm_90 or newer",
     "compile for sm_90 or newer, or store the fragment with ordinary shared stores"),
    (k_cp_async, "cp_async", "gfx942", "cp.async (an asynchronous global -> shared copy) needs an NVIDIA GPU (sm_80 or newer)",
     "this is an NVIDIA instruction: run the kernel on an NVIDIA GPU"),
    (k_wgmma_fence, "wgmma", "sm_90", "a warpgroup MMA (wgmma) needs the architecture-specific target sm_90a",
     "compile for sm_90a (ARCH=sm_90a)"),
]  # fmt: skip


@pytest.mark.parametrize("kernel,marker,arch,message,fix", CASES, ids=[c[1] for c in CASES])
def test_trace_time_error_at_the_users_line(monkeypatch, kernel, marker, arch, message, fix):
    """The CPU interpreter would run these kernels; the trace stops first, at the call's line and column."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("ARCH", arch)

    @flyc.jit
    def launch(out: Tensor):
        kernel(out).launch(grid=1, block=32)

    out = np.full(32 * 4, -1.0, np.float32)
    with pytest.raises(flyc.FlyDSLError) as e:
        launch(out)
    line, col, src = _line(kernel, marker)
    assert isinstance(e.value, ValueError)
    assert str(e.value).splitlines() == [
        f"{__file__}:{line}:{col}: error[FLY520]: {message}; this kernel is compiled for {arch}",
        f"    {src.lstrip()}",
        "    " + " " * (col - 1 - (len(src) - len(src.lstrip()))) + "^",
        f"fix: {fix}",
    ]
    assert (out == -1.0).all()  # nothing ran


def test_requirements_follow_the_mma_operand_types():
    from flydsl.dialects import nvvm, ptr
    from flydsl.ir import FloatType, PointerType, VectorType
    from flydsl.ir import types as T
    from flydsl.testing import build_kernel

    f8 = FloatType("f8E4M3FN")
    kinds = [
        (T.bf16, T.f32, "m16n8k16", ("mma_sync",)),
        (T.i8, T.i32, "m16n8k32", ("mma_sync",)),
        (f8, T.f32, "m16n8k32", ("mma_fp8",)),
        (f8, T.f16, "m16n8k32", ("mma_fp8", "mma_fp8_f16")),
    ]
    for ab, c, shape, want in kinds:
        ops = []

        def body(p, q, ab=ab, c=c, shape=shape, ops=ops):
            na, nb = nvvm.operand_count(shape, "A", ab.bitwidth), nvvm.operand_count(shape, "B", ab.bitwidth)
            a = ptr.load(p, result_types=[VectorType(na, ab)])
            b = ptr.load(p, result_types=[VectorType(nb, ab)])
            cv = ptr.load(q, result_types=[VectorType(4, c)])
            ops.append(nvvm.mma_sync(a, b, cv, shape=shape).owner)

        build_kernel([PointerType(ab, "global"), PointerType(c, "global")], body)
        assert requirements(ops[0]) == want, (ab, c)
