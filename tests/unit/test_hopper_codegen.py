"""Codegen of the Hopper ops: every op lowers to the LLVM 22 intrinsic (or wgmma's inline asm) and ptxas
accepts the PTX; capability errors instead of LLVM aborts; the register bound setmaxnreg needs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from flydsl.codegen import CodegenError, Target, compile_module, emit_llvm, find_ptxas, run_ptxas
from flydsl.codegen.emit_sm90 import wgmma_asm
from flydsl.dialects import arith, ptr
from flydsl.dialects import nvvm_sm90 as nv
from flydsl.dialects.nvvm_sm90 import wgmma_valid_n
from flydsl.ir import PointerType, TmaDescType, VectorType
from flydsl.ir import types as T
from flydsl.testing import build_kernel

HAVE_PTXAS = find_ptxas() is not None
BAR = PointerType(T.i64, "shared")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def c32(x):
    return arith.const(x, T.i32)


def every_op(desc, g, x):
    sm = ptr.shared_alloc(count=8192, align=1024, result_types=[PointerType(T.bf16, "shared")])
    bar = ptr.shared_alloc(count=2, align=8, result_types=[BAR])
    ok = nv.elect_sync()
    nv.mbarrier_init(bar, c32(1))
    nv.fence_mbarrier_init()
    nv.griddep_launch_dependents()
    nv.griddep_wait()
    nv.mbarrier_arrive_expect_tx(bar, c32(16384))
    nv.tma_load(desc, sm, bar, x, c32(0))
    nv.bulk_load(sm, ptr.cast(g, result_types=[PointerType(T.bf16, "global")]), c32(256), bar)
    nv.mbarrier_wait(bar, c32(0))
    ok = arith.andi(ok, nv.mbarrier_try_wait(bar, c32(1)))
    nv.mbarrier_arrive(bar)
    nv.mbarrier_arrive(bar, c32(2))
    nv.mbarrier_expect_tx(bar, c32(16))
    for space in nv.PROXY_SPACES:
        nv.fence_proxy_async(space=space)
    nv.setmaxnreg(count=232, action="inc")
    nv.barrier_sync(c32(1), c32(256))
    nv.barrier_arrive(c32(2), c32(256))
    nv.tma_store(desc, sm, x, c32(0))
    nv.bulk_store(ptr.cast(g, result_types=[PointerType(T.bf16, "global")]), sm, c32(256))
    nv.bulk_prefetch_l2(ptr.cast(g, result_types=[PointerType(T.bf16, "global")]), c32(4096))
    nv.bulk_commit()
    nv.bulk_wait(pending=0, read=True)
    nv.bulk_wait(pending=1)
    nv.tma_prefetch_desc(desc)
    r = arith.addi(nv.cluster_ctarank(), nv.cluster_id(dimension="y"))
    r = arith.addi(r, arith.addi(nv.cluster_ctaid(dimension="x"), nv.cluster_dim(dimension="z")))
    acc = arith.const(0.0, VectorType((128,), T.f32))
    da = arith.extui(x, result_types=[T.i64])
    nv.wgmma_fence()
    acc = nv.wgmma(acc, da, da, ok, n=256, k=16, a_type="bf16", b_type="bf16", trans_a=0, trans_b=1)
    frag = arith.const(0, VectorType((4,), T.i32))
    acc = nv.wgmma(acc, frag, da, arith.const(True, T.i1), n=256, k=16, a_type="bf16", b_type="bf16", trans_b=1)
    nv.wgmma_commit()
    acc = nv.wgmma_wait(acc, pending=0)
    ptr.store(arith.addi(r, arith.fptosi(ptr_sum(acc), result_types=[T.i32])), g)


def ptr_sum(acc):
    from flydsl.dialects import vector

    return vector.reduction(acc, kind="add")


def mod_every_op():
    return build_kernel([TmaDescType(), PointerType(T.i32, "global"), T.i32], every_op, known_block_size=[384, 1, 1],
                        cluster_dims=[2, 1, 1])  # fmt: skip


def test_every_op_lowers_to_its_intrinsic_and_ptxas_accepts_it():
    ck = compile_module(mod_every_op(), Target("sm_90a"))
    ll, ptx = ck.llvm_ir, ck.ptx
    assert 'ptr byval([128 x i8]) align 64 "nvvm.grid_constant"' in ll
    for s in ("mbarrier.init.shared.b64", "mbarrier.arrive.expect_tx", "mbarrier.try_wait.parity", "elect.sync",
              "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
              "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "fence.proxy.async.shared::cta",
              "fence.mbarrier_init.release.cluster", "griddepcontrol.launch_dependents", "griddepcontrol.wait",
              "cp.async.bulk.prefetch.L2.global",
              "setmaxnreg.inc.sync.aligned.u32 	232", "bar.sync 	1, 256",
              "bar.arrive 	2, 256", "cp.async.bulk.wait_group.read 	0", "prefetch.param.tensormap",
              "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "wgmma.wait_group.sync.aligned 0",
              "%cluster_ctarank", ".reqnctapercluster 2, 1, 1", ".minnctapersm 1"):  # fmt: skip
        assert s in ptx, s
    assert ck.kernels["k"].params[0].kind == "tmap" and ck.kernels["k"].params[0].size == 128
    if HAVE_PTXAS:
        log = run_ptxas(ptx, "sm_90a")
        assert "C7508" not in log  # setmaxnreg took effect (the kernel got a register bound)


@pytest.mark.parametrize("ab", ["bf16", "f16", "f8E4M3FN", "f8E5M2", "i8"])
def test_wgmma_of_many_n_and_both_operand_sources_assembles(ab):
    k = 16 if ab in ("bf16", "f16") else 32
    ns = [n for n in (8, 16, 24, 40, 64, 136, 208, 256) if wgmma_valid_n(ab, n)]  # every N assembles: see docs
    acc_t = T.i32 if ab == "i8" else T.f32

    def body(g, x):
        da = arith.extui(x, result_types=[T.i64])
        sd = arith.cmpi(x, c32(0), predicate="ne")
        total = arith.const(0, T.i32)
        nv.wgmma_fence()
        for i, n in enumerate(ns):
            acc = arith.const(0, VectorType((n // 2,), acc_t))
            a = da if i % 2 else arith.const(0, VectorType((4,), T.i32))
            acc = nv.wgmma(acc, a, da, sd if i % 3 else arith.const(True, T.i1), n=n, k=k, a_type=ab, b_type=ab)
            (acc,) = [nv.wgmma_wait(acc, pending=0)]
            first = arith.bitcast(acc, result_types=[VectorType((n // 2,), T.i32)]) if ab != "i8" else acc
            from flydsl.dialects import vector

            total = arith.addi(total, vector.extract(first, position=0))
        ptr.store(total, g)

    ck = compile_module(build_kernel([PointerType(T.i32, "global"), T.i32], body), Target("sm_90a"))
    assert ck.ptx.count("wgmma.mma_async") == len(ns)
    if HAVE_PTXAS:
        run_ptxas(ck.ptx, "sm_90a")


def test_wgmma_asm_operands_are_numbered_after_the_outputs():
    text, cons, nacc = wgmma_asm(dict(n=16, k=16, a_type="bf16", b_type="bf16", trans_b=1), False, None)
    assert nacc == 8 and "{$0, $1, $2, $3, $4, $5, $6, $7}, $8, $9, p, 1, 1, 0, 1;" in text
    assert "setp.ne.b32 p, $10, 0" in text
    assert cons == ",".join(["=f"] * 8 + ["l", "l", "r"] + [str(i) for i in range(8)] + ["~{memory}"])
    text, cons, _ = wgmma_asm(dict(n=8, k=32, a_type="i8", b_type="i8"), True, 1)
    assert "m64n8k32.s32.s8.s8 {$0, $1, $2, $3}, {$4, $5, $6, $7}, $8, 1;" in text and cons.startswith("=r,=r")


@pytest.mark.parametrize(
    "arch, build, match",
    [
        ("sm_80", lambda: nv.mbarrier_init(ptr.shared_alloc(count=1, align=8, result_types=[BAR]), c32(1)),
         "needs sm_90 or newer; this kernel is compiled for sm_80"),
        ("sm_90", lambda: nv.setmaxnreg(count=240, action="inc"),
         "setmaxnreg needs the architecture-specific target sm_90a; this kernel is compiled for sm_90"),
        ("sm_90", lambda: nv.wgmma_fence(), r"a warpgroup MMA \(wgmma\) needs the architecture-specific target sm_90a"),
        ("sm_89", lambda: nv.elect_sync(), "elect.sync needs sm_90 or newer"),
        ("sm_80", lambda: nv.wgmma_commit(), r"a warpgroup MMA \(wgmma\) needs sm_90a; this kernel is compiled for sm_80"),
        ("sm_100a", lambda: nv.wgmma_fence(), r"needs sm_90a \(later GPUs do not have it\)"),  # LLVM would abort
    ],
)  # fmt: skip
def test_capability_errors_name_the_op_instead_of_aborting(arch, build, match):
    mod = build_kernel([PointerType(T.i32, "global")], lambda g: build())
    with pytest.raises(CodegenError, match=match):
        emit_llvm(mod, Target(arch))


def test_explicit_register_bounds_are_kept():
    mod = build_kernel([PointerType(T.i32, "global")], lambda g: nv.setmaxnreg(count=240, action="inc"),
                       max_registers=128)  # fmt: skip
    text = emit_llvm(mod, Target("sm_90a"))
    assert '"nvvm.maxnreg"="128"' in text and "minctasm" not in text


_PROGRAM = """
import numpy as np, ml_dtypes
import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr import nvvm
from flydsl.expr.typing import Tensor

@flyc.kernel
def k(out: Tensor):
    bars = fx.alloc_shared(fx.Int64, 1, align=8)
    nvvm.mbarrier_init(bars, 1)

@flyc.jit
def launch(out: Tensor):
    k(out).launch(grid=1, block=32)

launch(np.zeros(4, np.int32))
"""


def test_a_hopper_op_compiled_for_sm80_is_fly520_at_the_users_line(tmp_path):
    src = tmp_path / "prog.py"
    src.write_text(textwrap.dedent(_PROGRAM))
    env = dict(os.environ, PYTHONPATH=ROOT, ARCH="sm_80", FLYDSL_RUNTIME_KIND="cpu", FLYDSL_RUNTIME_ENABLE_CACHE="0")
    r = subprocess.run([sys.executable, str(src)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0
    err = r.stderr
    assert f"{src}:11:5: error[FLY520]: a Hopper mbarrier operation (transaction counts, try_wait.parity) needs " \
           "sm_90 or newer; this kernel is compiled for sm_80" in err  # fmt: skip
    assert "    nvvm.mbarrier_init(bars, 1)" in err and "fix: compile for sm_90a" in err
