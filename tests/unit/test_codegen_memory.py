"""Codegen of the ptr dialect: vector and cached loads, masked accesses, shared/local memory,
atomics and AMD-semantics buffer operations."""

from __future__ import annotations

import re

import pytest

from flydsl.codegen import CodegenError, Target, compile_module, emit_llvm, find_ptxas, run_ptxas
from flydsl.dialects import arith, gpu, ptr
from flydsl.ir import PointerType, VectorType
from flydsl.ir import types as T
from flydsl.testing import build_kernel

HAVE_PTXAS = find_ptxas() is not None
F32G = PointerType(T.f32, "global")
V4 = VectorType(4, T.f32)


def ptx_of(mod, arch="sm_90a", expect=(), forbid=()):
    ck = compile_module(mod, Target(arch=arch))
    for e in expect:
        assert e in ck.ptx, f"{e!r} not in PTX:\n{ck.ptx}"
    for e in forbid:
        assert e not in ck.ptx, f"{e!r} unexpectedly in PTX"
    if HAVE_PTXAS:
        run_ptxas(ck.ptx, arch)
    return ck


def _tid_i32():
    return gpu.thread_id(dimension="x")


def test_vector_load_store_become_single_v4_instructions():
    def body(a, b):
        i = arith.muli(_tid_i32(), arith.const(4, T.i32))
        v = ptr.load(ptr.add(a, i), result_types=[V4], align=16)
        ptr.store(v, ptr.add(b, i), align=16)

    for arch in ("sm_90a", "sm_80"):
        ptx_of(build_kernel([F32G, F32G], body), arch, expect=("ld.global.v4.b32", "st.global.v4.b32"))


def test_nc_cache_modifier_gives_ld_global_nc():
    def body(a, b):
        ptr.store(ptr.load(a, result_types=[V4], align=16, cache="nc"), b, align=16)

    mod = build_kernel([F32G, F32G], body)
    assert "!invariant.load" in emit_llvm(mod, Target())
    ptx_of(mod, expect=("ld.global.nc.v4.b32",))


@pytest.mark.parametrize("cache", ["cg", "cs", "lu", "cv", "ca"])
def test_load_cache_hints_use_inline_ptx(cache):
    def body(a, b):
        ptr.store(ptr.load(a, result_types=[V4], align=16, cache=cache), b, align=16, cache="cs")
        h = PointerType(T.f16, "global")
        x = ptr.load(ptr.cast(a, result_types=[h]), result_types=[T.f16], cache=cache)
        ptr.store(x, ptr.cast(b, result_types=[h]), cache="wt")

    ptx_of(build_kernel([F32G, F32G], body), expect=(f"ld.global.{cache}.v4.b32", "st.global.cs.v4.b32",
                                                     f"ld.global.{cache}.b16", "st.global.wt.b16"))  # fmt: skip


def test_unaligned_cache_hint_falls_back_to_a_plain_load():
    def body(a, b):
        ptr.store(ptr.load(a, result_types=[V4], align=4, cache="cg"), b)

    ptx_of(build_kernel([F32G, F32G], body), forbid=("ld.global.cg",))


def test_masked_load_store_scalar_mask_branches():
    def body(a, b, n):
        t = _tid_i32()
        m = arith.cmpi(t, n, predicate="slt")
        x = ptr.masked_load(ptr.add(a, t), m, arith.const(-1.0, T.f32))
        ptr.masked_store(x, ptr.add(b, t), m)

    mod = build_kernel([F32G, F32G, T.i32], body)
    text = emit_llvm(mod, Target())
    assert "mload" in text and "phi float" in text
    ptx_of(mod, expect=("ld.global.b32", "st.global.b32"))


def test_masked_load_store_vector_mask_uses_llvm_masked_intrinsics():
    M = VectorType(4, T.i1)

    def body(a, b, n):
        t = _tid_i32()
        nv = VectorType(4, T.i32)
        lanes = arith.addi(gpu_broadcast(t, nv), arith.constant(value=__import__("numpy").arange(4), result_types=[nv]))
        m = arith.cmpi(lanes, gpu_broadcast(n, nv), predicate="slt")
        assert m.type is M
        x = ptr.masked_load(a, m, arith.const(0.0, V4), align=16)
        ptr.masked_store(x, b, m, align=16)

    mod = build_kernel([F32G, F32G, T.i32], body)
    text = emit_llvm(mod, Target())
    assert "@llvm.masked.load.v4f32.p1" in text and "@llvm.masked.store.v4f32.p1" in text
    ptx_of(mod)


def gpu_broadcast(x, vt):
    from flydsl.dialects import vector

    return vector.broadcast(x, result_types=[vt])


def test_static_shared_memory_and_sizes():
    def body(a):
        s1 = ptr.shared_alloc(count=256, result_types=[PointerType(T.f32, "shared")])
        s2 = ptr.shared_alloc(count=100, align=16, result_types=[PointerType(T.f16, "shared")])
        t = _tid_i32()
        ptr.store(ptr.load(ptr.add(a, t), result_types=[T.f32]), ptr.add(s1, t))
        gpu.barrier()
        x = ptr.load(ptr.add(s1, arith.xori(t, arith.const(1, T.i32))), result_types=[T.f32])
        ptr.store(arith.truncf(x, result_types=[T.f16]), ptr.add(s2, t))
        ptr.store(x, ptr.add(a, t))

    ck = ptx_of(build_kernel([F32G], body), expect=(".shared .align 16 .b8", "st.shared.b32", "bar.sync"))
    assert ck.kernels["k"].static_smem == 1024 + 200  # the second array starts at 1024 (16-aligned)


def test_dynamic_shared_memory():
    def body(a):
        base = ptr.dynamic_shared()
        f = ptr.cast(base, result_types=[PointerType(T.f32, "shared")])
        t = _tid_i32()
        ptr.store(ptr.load(ptr.add(a, t), result_types=[T.f32]), ptr.add(f, t))
        gpu.barrier()
        ptr.store(ptr.load(ptr.add(f, arith.const(3, T.i32)), result_types=[T.f32]), ptr.add(a, t))

    ck = ptx_of(build_kernel([F32G], body), expect=(".extern .shared .align 16 .b8 __fly_dynamic_smem[]",))
    assert ck.kernels["k"].uses_dynamic_smem and ck.kernels["k"].static_smem == 0


def test_alloca_is_promoted_to_registers():
    def body(a):
        loc = ptr.alloca(count=4, result_types=[PointerType(T.f32, "local")])
        t = _tid_i32()
        for i in range(4):
            ptr.store(ptr.load(ptr.add(a, arith.addi(t, arith.const(i, T.i32))), result_types=[T.f32]),
                      ptr.add(loc, arith.const(i, T.i32)))  # fmt: skip
        s = ptr.load(loc, result_types=[V4], align=16)
        ptr.store(s, a, align=16)

    text = emit_llvm(build_kernel([F32G], body), Target())
    assert text.index("alloca") < text.index("sreg.tid")  # hoisted to the entry block
    ptx_of(build_kernel([F32G], body), forbid=("local_depot", "st.local"))


def test_generic_cast_and_int_roundtrip():
    def body(a):
        g = ptr.cast(a, result_types=[PointerType(T.f32, "generic")])
        addr = ptr.to_int(g)
        back = ptr.from_int(addr, result_types=[F32G])
        ptr.store(arith.const(1.0, T.f32), back)

    text = emit_llvm(build_kernel([F32G], body), Target())
    assert "addrspacecast ptr addrspace(1)" in text and "ptrtoint ptr" in text and "inttoptr i64" in text
    ptx_of(build_kernel([F32G], body))


ATOMICS = [(k, T.i32) for k in ("add", "max", "min", "umax", "umin", "and", "or", "xor", "xchg")]
ATOMICS += [("add", T.f32), ("max", T.f32), ("min", T.f32), ("xchg", T.f32), ("add", T.f64), ("add", T.f16)]
ATOMICS += [("add", T.bf16), ("add", T.i64), ("max", T.i8), ("add", T.i16)]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_atomics(arch):
    types = sorted({t for _, t in ATOMICS}, key=str)

    def body(*args):
        ps = dict(zip(types, args[: len(types)]))
        vs = dict(zip(types, args[len(types) :]))
        for kind, t in ATOMICS:
            old = ptr.atomic_rmw(ps[t], vs[t], kind=kind)
            ptr.store(old, ptr.add(ps[t], arith.const(1, T.i32)))

    mod = build_kernel([PointerType(t, "global") for t in types] + types, body)
    ck = ptx_of(mod, arch, expect=("atom.global.add.f32", "atom.global.add.f64", "atom.global.add.noftz.f16"))
    assert ck.ptx.count("atom.") >= len(ATOMICS)


def test_atomic_scopes_and_float_max_cas_loop():
    def body(p, v):
        ptr.atomic_rmw(p, v, kind="add", scope="sys")
        ptr.atomic_rmw(p, v, kind="max", scope="gpu")
        ptr.atomic_rmw(p, v, kind="add", scope="cta")

    mod = build_kernel([F32G, T.f32], body)
    text = emit_llvm(mod, Target())
    assert 'syncscope("device")' in text and 'syncscope("block")' in text
    ptx_of(mod, expect=("atom.global.add.f32", "atom.relaxed.gpu.global.cas.b32"))


def test_atomic_cas_on_floats_and_shared():
    def body(p, v):
        old = ptr.atomic_cas(p, v, arith.const(2.0, T.f32))
        s = ptr.shared_alloc(count=32, result_types=[PointerType(T.i32, "shared")])
        o2 = ptr.atomic_cas(s, arith.const(0, T.i32), arith.const(1, T.i32), scope="cta")
        ptr.store(arith.addf(old, arith.sitofp(o2, result_types=[T.f32])), p)

    ptx_of(build_kernel([F32G, T.f32], body), expect=("atom.relaxed.gpu.global.cas.b32", "atom.", "shared"))


def test_bad_atomic_scope():
    with pytest.raises(CodegenError, match="scope"):
        emit_llvm(build_kernel([F32G, T.f32], lambda p, v: ptr.atomic_rmw(p, v, kind="add", scope="warp")), Target())


# -- buffer ops (AMD bounds semantics) -------------------------------------------------------------


def buffer_kernel(t, masked=False, align=None):
    extra = {"align": align} if align else {}

    def body(a, b, nbytes, off, flag):
        ra = ptr.buffer_rsrc(a, nbytes)
        rb = ptr.buffer_rsrc(b, nbytes)
        args = [flag] if masked else []
        v = ptr.buffer_load(ra, off, *args, result_types=[t], **extra)
        ptr.buffer_store(v, rb, off, *args, **extra)

    return build_kernel([F32G, F32G, T.i64, T.i32, T.i1], body)


def test_buffer_load_fast_path_is_one_vector_instruction_behind_one_branch():
    mod = buffer_kernel(V4)
    ck = ptx_of(mod, expect=("ld.global.v4.b32", "st.global.v4.b32"))
    text = emit_llvm(mod, Target())
    assert text.count("bload.lane") == 4 * 3 and text.count("bstore.lane") == 4 * 2
    # the fast path: bounds + alignment test, then a single 16-byte access
    assert text.count("load <4 x float>") == 1 and text.count("store <4 x float>") == 1
    assert "and i64" in text and ", 15" in text
    assert ck.ptx.count("ld.global.v4.b32") == 1


def test_buffer_ops_with_known_alignment_skip_the_alignment_test():
    text = emit_llvm(buffer_kernel(V4, align=16), Target())
    assert "ptrtoint" not in text and "split" not in text


def test_a_misaligned_buffer_access_in_bounds_moves_pieces_of_its_proven_alignment():
    """A storage offset makes every access of a row misaligned but in bounds: it takes pieces of the
    proven alignment (here 8 bytes: two 2-lane accesses) without the per-lane bounds branches."""
    text = emit_llvm(buffer_kernel(V4, align=8), Target())
    split = re.search(r"^bload\.split\d*:\n(.*?)^\S", text, re.M | re.S).group(1)  # the block, to the next label
    assert split.count("load <2 x float>") == 2 and "br i1" not in split, split
    assert text.count("store <2 x float>") == 2
    ptx = ptx_of(buffer_kernel(V4, align=8), expect=("ld.global.v4.b32", "ld.global.v2.b32", "st.global.v2.b32")).ptx
    assert ptx.count("ld.global.v4.b32") == 1 and ptx.count("ld.global.v2.b32") == 2


# per type: the one access of the whole value (None: no such PTX access) and the per-lane access of the
# bounds-checked slow path (None: a scalar has no slow path: its one access is predicated)
BUFFER_ACCESS = {
    T.f32: ("b32", None),
    T.i8: ("b8", None),
    T.bf16: ("b16", None),
    VectorType(2, T.f16): ("b32", "b16"),
    VectorType(8, T.bf16): ("v4.b32", "b16"),
    VectorType(3, T.f32): (None, "b32"),  # 12 bytes: no single access, lanes only
    VectorType(4, T.f8E4M3FN): ("b32", "b8"),
}


@pytest.mark.parametrize("t", list(BUFFER_ACCESS), ids=str)
@pytest.mark.parametrize("masked", [False, True])
def test_buffer_ops_all_types(t, masked):
    ptx = ptx_of(buffer_kernel(t, masked)).ptx
    whole, lane = BUFFER_ACCESS[t]
    for w in (whole, lane):
        if w is not None:
            assert f"ld.global.{w} " in ptx and f"st.global.{w} " in ptx, (w, ptx)
    if whole is None:
        assert "ld.global.v" not in ptx and "st.global.v" not in ptx
    # AMD semantics: the byte offset is compared with num_records (an access past it reads 0, writes nothing)
    assert re.search(r"setp\.(gt|ge|lt|le)\.u64", ptx)
    if masked:  # the mask flag (an i1 parameter) is read and tested too
        assert "ld.param.b8" in ptx and re.search(r"setp\.ne\.b16", ptx)


def test_buffer_offsets_are_unsigned_and_bounds_in_bytes():
    text = emit_llvm(buffer_kernel(V4), Target())
    assert "zext i32 %a3 to i64" in text
    assert "add i64" in text and ", 16" in text and "icmp ule i64" in text
