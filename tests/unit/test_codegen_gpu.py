"""Codegen of the gpu dialect: special registers, barriers, fences, shuffles of every width, votes,
printf, and kernel attributes/parameters."""

from __future__ import annotations

import pytest

from flydsl.codegen import CodegenError, Target, compile_module, emit_llvm, find_ptxas, run_ptxas
from flydsl.codegen.printf_format import translate_format
from flydsl.dialects import arith, gpu, ptr
from flydsl.ir import BufferRsrcType, PointerType, VectorType
from flydsl.ir import types as T
from flydsl.testing import build_kernel

HAVE_PTXAS = find_ptxas() is not None
I32G = PointerType(T.i32, "global")


def check(mod, archs=("sm_90a", "sm_80"), expect=()):
    out = {}
    for arch in archs:
        ck = compile_module(mod, Target(arch=arch))
        for e in expect:
            assert e in ck.ptx, f"{e!r} not in PTX for {arch}"
        if HAVE_PTXAS:
            run_ptxas(ck.ptx, arch)
        out[arch] = ck
    return out


def test_special_registers_and_reqntid():
    def body(a):
        vals = [op(dimension=d) for op in (gpu.thread_id, gpu.block_id, gpu.block_dim, gpu.grid_dim) for d in "xyz"]
        vals.append(gpu.lane_id())
        for i, v in enumerate(vals):
            ptr.store(v, ptr.add(a, arith.const(i, T.i32)))

    mod = build_kernel([I32G], body, known_block_size=[64, 2, 1])
    cks = check(mod, expect=(".reqntid 64, 2, 1", "%tid.z", "%ctaid.y", "%nctaid.x", "%laneid"))
    text = emit_llvm(mod, Target())
    assert '"nvvm.reqntid"="64,2,1"' in text and "sreg.ntid" not in text  # block_dim folded
    assert cks["sm_90a"].kernels["k"].block_size == (64, 2, 1)


def test_block_dim_without_known_size_reads_ntid():
    mod = build_kernel([I32G], lambda a: ptr.store(gpu.block_dim(dimension="x"), a))
    check(mod, archs=("sm_90a",), expect=("%ntid.x",))


def test_kernel_tuning_attributes():
    mod = build_kernel([I32G], lambda a: ptr.store(gpu.thread_id(dimension="x"), a), max_registers=64,
                       min_blocks_per_sm=2, cluster_dims=[2, 1, 1])  # fmt: skip
    check(mod, archs=("sm_90a",), expect=(".maxnreg 64", ".minnctapersm 2", ".reqnctapercluster 2, 1, 1"))
    with pytest.raises(CodegenError, match="cluster"):
        compile_module(mod, Target(arch="sm_80"))


def test_barrier_and_fences():
    def body(a):
        gpu.barrier()
        for s in ("cta", "gpu", "sys"):
            gpu.fence(scope=s)
        ptr.store(arith.const(1, T.i32), a)

    check(build_kernel([I32G], body), expect=("bar.sync 	0", "fence.sc.cta", "fence.sc.gpu", "fence.sc.sys"))


SHUFFLE_TYPES = [T.i32, T.f32, T.i64, T.f64, T.f16, T.bf16, T.i8, T.i1, T.i16, T.index, VectorType(2, T.f16),
                 VectorType(4, T.i8), VectorType(2, T.f32), PointerType(T.f32, "global")]  # fmt: skip


@pytest.mark.parametrize("t", SHUFFLE_TYPES, ids=str)
def test_shuffles(t):
    modes = ["xor", "up", "down", "idx"]

    def body(a, x):
        for i, mode in enumerate(modes):
            r = gpu.shuffle(x, arith.const(1 + i, T.i32), arith.const(16, T.i32), mode=mode)
            ptr.store(r, ptr.add(a, arith.const(i, T.i32)))

    P = PointerType(t, "global")
    expect = tuple(f"shfl.sync.{m}.b32" for m in ("bfly", "up", "down", "idx"))
    ptx = check(build_kernel([P, t], body), archs=("sm_90a",), expect=expect)["sm_90a"].ptx
    assert ptx.count("shfl.sync") == 4 * (2 if t.bitwidth == 64 else 1)
    # c = ((32 - width) << 8) | clamp, clamp 0 for `up`
    flat = ptx.replace(" ", "").replace("\t", "")
    assert "4096,-1;" in flat and "4127,-1;" in flat


def test_shuffle_with_runtime_width():
    def body(a, x, w):
        ptr.store(gpu.shuffle(x, arith.const(1, T.i32), w, mode="down"), a)

    text = emit_llvm(build_kernel([PointerType(T.f32, "global"), T.f32, T.i32], body), Target())
    assert "sub i32 32, %a2" in text and "shl i32" in text and "or i32" in text


@pytest.mark.parametrize("mode", ["all", "any", "ballot"])
def test_votes(mode):
    def body(a, x):
        r = gpu.vote(arith.cmpi(x, arith.const(0, T.i32), predicate="sgt"), mode=mode)
        ptr.store(r if mode == "ballot" else arith.extui(r, result_types=[T.i32]), a)

    check(build_kernel([I32G, T.i32], body), expect=(f"vote.sync.{mode}",))


def test_printf_packs_arguments_for_vprintf():
    def body(a, x, f, h, q):
        gpu.printf(x, f, h, q, a, format="x={} f={:.3f} h={} q={:x} p={}")
        gpu.printf(format="plain 100%")
        v = ptr.load(ptr.cast(a, result_types=[PointerType(T.f32, "global")]), result_types=[VectorType(2, T.f32)])
        gpu.printf(v, format="v={}")

    mod = build_kernel([I32G, T.i32, T.f32, T.f16, T.i64], body)
    text = emit_llvm(mod, Target())
    assert "x=%d f=%.3f h=%f q=%llx p=%p" in text and "plain 100%%" in text and "v=[%f, %f]" in text
    assert "{ i32, double, double, i64, ptr }" in text and "@vprintf" in text
    check(mod, expect=("call.uni", "vprintf"))


@pytest.mark.parametrize(
    "fmt,types,want",
    [
        ("{}", [T.i32], "%d"),
        ("{} {}", [T.i64, T.index], "%lld %lld"),
        ("{:>8.2e}|{:<5d}|{:+d}", [T.f32, T.i32, T.i16], "%8.2e|%-5d|%+d"),
        ("{{literal}} {}", [T.i1], "{literal} %d"),
        ("{:08x}", [T.i32], "%08x"),
        ("{:f}", [T.i32], "%f"),
        ("{:g}", [T.bf16], "%g"),
    ],
)
def test_printf_format_translation(fmt, types, want):
    got, args = translate_format(fmt, types)
    assert got == want and len(args) == len(types)


@pytest.mark.parametrize(
    "fmt,types,match",
    [
        ("{} {}", [T.i32], "2 placeholders but 1 operands"),
        ("{}", [T.i32, T.i32], "1 placeholders but 2 operands"),
        ("{0}", [T.i32], "only '{}'"),
        ("{:d}", [T.f32], "integer format"),
        ("{:b}", [T.i32], "no C printf equivalent"),
        ("{", [], "unclosed"),
    ],
)
def test_printf_format_errors(fmt, types, match):
    with pytest.raises(CodegenError, match=match):
        translate_format(fmt, types)


def test_kernel_parameters_for_the_runtime():
    P = PointerType(T.f32, "global")

    def body(p, i, f, h, q, r, b):
        ptr.store(f, p)

    mod = build_kernel([P, T.i32, T.f32, T.bf16, T.i64, BufferRsrcType(), T.i1], body,
                       arg_attrs=[{"align": 16, "noalias": True}, None, None, None, None, None, None])  # fmt: skip
    ck = check(mod, archs=("sm_90a",), expect=(".align 16",))["sm_90a"]
    kinds = [p.kind for p in ck.kernels["k"].params]
    assert kinds == ["ptr", "i32", "f32", "bf16", "i64", "rsrc", "i1"]
    assert [p.size for p in ck.kernels["k"].params] == [8, 4, 4, 2, 8, 16, 1]
    assert "noalias align 16 %a0" in ck.llvm_ir


def test_several_kernels_and_names():
    from flydsl.dialects import func
    from flydsl.ir import InsertionPoint, verify
    from flydsl.testing import kernel_module

    mod, k1 = kernel_module("first", [I32G])
    gm = mod.regions[0].blocks[0].ops[0]
    k2 = func.build_func(gpu.func, "second.ker$nel-x", [I32G], kernel=True)
    gm.regions[0].blocks[0].append(k2)
    for k in (k1, k2):
        with InsertionPoint(k.regions[0].blocks[0]):
            ptr.store(gpu.thread_id(dimension="x"), k.regions[0].blocks[0].args[0])
            gpu.return_()
    verify(mod)
    ck = check(mod, archs=("sm_90a",), expect=(".entry first", ".entry second_ker$nel_x"))["sm_90a"]
    assert ck.kernel_names == ["first", "second.ker$nel-x"]
    assert ck.kernels["second.ker$nel-x"].symbol == "second_ker$nel_x"
