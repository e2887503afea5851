"""``fx.nvvm.st_async``: a store into another block's shared memory that completes its bytes on that block's
mbarrier (PTX ``st.async...mbarrier::complete_tx::bytes``) — lowering and ptxas, the checks of its operands and
target, and the interpreter's semantics (the data lands, the receiver's mbarrier phase completes only when the
bytes it expects arrived, a phase left short is a deadlock report), in kernels that run warp by warp over whole
clusters. tests/gpu/test_cluster_gpu.py runs the exchange on the H200 against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from test_cluster import HAVE_PTXAS, _cpu  # noqa: F401 - the CPU runtime for every test (autouse fixture)

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.codegen import CodegenError, Target, compile_module, emit_llvm, run_ptxas
from flydsl.dialects import arith, ptr
from flydsl.dialects import nvvm_sm90 as nv
from flydsl.expr import nvvm
from flydsl.interp import InterpError
from flydsl.ir import PointerType, VectorType
from flydsl.ir import types as T
from flydsl.testing import build_kernel


def _st_async_ops(value_type, value):
    def body(g):
        sm = ptr.shared_alloc(count=16, align=16, result_types=[PointerType(T.f32, "shared")])
        bar = ptr.shared_alloc(count=1, align=8, result_types=[PointerType(T.i64, "shared")])
        dst = nv.mapa(ptr.cast(sm, result_types=[PointerType(value_type, "shared")]), arith.const(1, T.i32))
        nv.st_async(value(), dst, nv.mapa(bar, arith.const(1, T.i32)))

    return body


VALUES = {
    "f32": (T.f32, lambda: arith.const(1.5, T.f32), "bytes.b32"),
    "v2f32": (T.f32, lambda: arith.const(np.array([1.0, 2.0], np.float32), VectorType((2,), T.f32)), "bytes.v2.b32"),
    "v4i32": (T.i32, lambda: arith.const(np.arange(4, dtype=np.int32), VectorType((4,), T.i32)), "bytes.v4.b32"),
    "i64": (T.i64, lambda: arith.const(7, T.i64), "bytes.b64"),
}


@pytest.mark.parametrize("kind", list(VALUES))
def test_st_async_lowers_to_ptx_that_ptxas_accepts(kind):
    ty, value, suffix = VALUES[kind]
    mod = build_kernel([PointerType(T.i32, "global")], _st_async_ops(ty, value), cluster_dims=[2, 1, 1])
    ptx = compile_module(mod, Target("sm_90a")).ptx
    assert f"st.async.shared::cluster.mbarrier::complete_tx::{suffix}" in ptx, ptx
    assert ".version 8.1" in ptx or ".version 8.2" in ptx or ".version 8.3" in ptx  # st.async needs PTX 8.1
    if HAVE_PTXAS:
        run_ptxas(ptx, "sm_90a")


def test_st_async_needs_ptx_81():
    mod = build_kernel([PointerType(T.i32, "global")], _st_async_ops(*VALUES["f32"][:2]), cluster_dims=[2, 1, 1])
    with pytest.raises(CodegenError, match=r"PTX ISA 8\.0 is too old for .*st\.async.*needs 8\.1"):
        compile_module(mod, Target("sm_90a", ptx_version=80))
    with pytest.raises(CodegenError, match="needs sm_90 or newer"):
        emit_llvm(mod, Target("sm_80"))


def test_st_async_verifies_its_operands():
    def three(g):
        v = arith.const(np.zeros(3, np.float32), VectorType((3,), T.f32))
        sm = ptr.shared_alloc(count=16, align=16, result_types=[PointerType(T.f32, "shared")])
        bar = ptr.shared_alloc(count=1, align=8, result_types=[PointerType(T.i64, "shared")])
        nv.st_async(v, nv.mapa(sm, arith.const(0, T.i32)), nv.mapa(bar, arith.const(0, T.i32)))

    with pytest.raises(Exception, match="st_async stores 1, 2 or 4 values of 32 bits"):
        build_kernel([PointerType(T.i32, "global")], three, cluster_dims=[2, 1, 1])

    def local(g):
        sm = ptr.shared_alloc(count=16, align=16, result_types=[PointerType(T.f32, "shared")])
        bar = ptr.shared_alloc(count=1, align=8, result_types=[PointerType(T.i64, "shared")])
        nv.st_async(arith.const(1.0, T.f32), sm, nv.mapa(bar, arith.const(0, T.i32)))

    with pytest.raises(Exception, match="the destination must be a shared_cluster pointer"):
        build_kernel([PointerType(T.i32, "global")], local, cluster_dims=[2, 1, 1])


def test_st_async_takes_cluster_pointers():
    @flyc.kernel
    def k(out: fx.Tensor):
        sm = fx.alloc_shared(fx.Float32, 4)
        bar = fx.alloc_shared(fx.Int64, 1, align=8)
        nvvm.st_async(sm, fx.Float32(1.0), nvvm.map_shared(bar, 0))

    @flyc.jit
    def launch(out: fx.Tensor):
        k(out).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    with pytest.raises(Exception, match=r"st_async: the destination must be a pointer into a block of the cluster"):
        launch(np.zeros(4, np.int32))


def _exchange(cluster: int, rounds: int, block: int = 64, short: bool = False):
    """Every block pushes ``(rank, round)`` to every block of its cluster each round (thread ``j`` to block ``j``,
    two slot sets and two mbarriers alternating by round, as the persistent norm plans do); each block sums what
    it received. ``short``: each block expects one more partial than is sent (a phase that never completes)."""

    @flyc.kernel
    def k(out: fx.Tensor):
        tid, rank = fx.thread_idx.x, nvvm.cluster_ctarank()
        bars = fx.alloc_shared(fx.Int64, 2, align=8)
        slots = fx.alloc_shared(fx.Float32, 2 * cluster * 2, align=16)
        if tid == 0:
            nvvm.mbarrier_init(bars, 1)
            nvvm.mbarrier_init(bars + 1, 1)
            nvvm.fence_mbarrier_init()
        nvvm.cluster_sync()
        acc = fx.Float32(0.0)
        parity, phase = fx.Int32(0), fx.Int32(0)
        for r in range(rounds):
            base = slots + parity * (cluster * 2)
            if tid < cluster:
                v = fx.Vector.from_elements([fx.Float32(rank), fx.Float32(r)], dtype=fx.Float32)
                nvvm.st_async(nvvm.map_shared(base + rank * 2, tid), v, nvvm.map_shared(bars + parity, tid))
            if tid == 0:
                nvvm.mbarrier_arrive_expect_tx(bars + parity, (cluster + (1 if short else 0)) * 8)
            nvvm.mbarrier_wait(bars + parity, phase)
            for j in range(cluster):
                acc = acc + base[j * 2] * 10.0 + base[j * 2 + 1]
            fx.barrier()  # every thread has read this set before a later round's pushes refill it
            phase = phase ^ parity
            parity = 1 - parity
        out.iterator[fx.block_idx.x * block + tid] = fx.Int32(acc)

    @flyc.jit
    def launch(out: fx.Tensor):
        k(out).launch(grid=(2 * cluster, 1, 1), block=(block, 1, 1), cluster=(cluster, 1, 1))

    return launch


def _want(cluster: int, rounds: int, block: int = 64) -> np.ndarray:
    per_round = sum(10 * j for j in range(cluster))
    total = sum(per_round + cluster * r for r in range(rounds))
    return np.full(2 * cluster * block, total, np.int32)


@pytest.mark.parametrize("cluster, rounds", [(2, 1), (4, 5), (8, 3)])
def test_st_async_delivers_every_blocks_partial_round_after_round(cluster, rounds):
    out = np.zeros(2 * cluster * 64, np.int32)
    _exchange(cluster, rounds)(out)
    np.testing.assert_array_equal(out, _want(cluster, rounds))


def test_a_phase_that_expects_more_bytes_than_arrive_is_a_deadlock_report():
    with pytest.raises(InterpError, match=r"deadlock(.|\n)*8 transaction byte\(s\) still expected"):
        _exchange(2, 1, short=True)(np.zeros(256, np.int32))
