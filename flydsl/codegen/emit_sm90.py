"""LLVM lowering of the Hopper ``nvvm`` ops (flydsl/dialects/nvvm_sm90.py): LLVM 22's NVVM intrinsics,
and inline PTX for ``wgmma.mma_async`` (LLVM has no intrinsic for it).

| IR | LLVM 22 (``llvm.nvvm.`` prefix omitted) | PTX |
|---|---|---|
| mbarrier_init | ``mbarrier.init.shared`` | ``mbarrier.init.shared.b64`` |
| mbarrier_arrive(_expect_tx) | ``mbarrier.arrive(.expect.tx).scope.cta.space.cta`` | ``mbarrier.arrive(.expect_tx)`` |
| mbarrier_arrive_cluster | ``mbarrier.arrive.scope.cta.space.cluster`` | ``mbarrier.arrive.shared::cluster`` |
| mbarrier_expect_tx | ``mbarrier.expect.tx.scope.cta.space.cta`` | ``mbarrier.expect_tx.relaxed.cta`` |
| mbarrier_try_wait, wait | ``mbarrier.try.wait.parity.scope.cta.space.cta`` (a loop) | ``try_wait.parity`` |
| fence_proxy_async | ``fence.proxy.async(.shared_cta, .global)`` | ``fence.proxy.async.shared::cta`` |
| fence_mbarrier_init | ``fence.mbarrier_init.release.cluster`` | ``fence.mbarrier_init.release.cluster`` |
| elect_sync | ``elect.sync(-1)`` | ``elect.sync`` |
| setmaxnreg | ``setmaxnreg.{inc,dec}.sync.aligned.u32`` | ``setmaxnreg.inc.sync.aligned.u32 232`` |
| barrier_sync / arrive | ``barrier.cta.{sync,arrive}.aligned.count`` | ``bar.sync 1, 256`` |
| cluster ids | ``read.ptx.sreg.cluster.{ctarank,ctaid,nctaid}``, ``clusterid`` | ``%cluster_ctarank`` … |
| mapa | ``mapa.shared.cluster`` (then ``ptr addrspace(7)`` loads) | ``mapa…``, ``ld.shared::cluster`` |
| cluster_arrive / wait | ``barrier.cluster.{arrive[.relaxed],wait}[.aligned]`` | ``barrier.cluster.arrive.aligned`` … |
| tma_load | ``cp.async.bulk.tensor.g2s.tile.Nd`` | ``cp.async.bulk.tensor.Nd.shared::cluster.global.tile…`` |
| tma_store | ``cp.async.bulk.tensor.s2g.tile.Nd`` | ``cp.async.bulk.tensor.Nd.global.shared::cta…`` |
| bulk_load / bulk_store | ``cp.async.bulk.global.to.shared.cluster`` / ``.shared.cta.to.global`` | ``cp.async.bulk…`` |
| tma_load_multicast | ``cp.async.bulk.tensor.g2s.tile.Nd`` (mask, flag set) | ``….multicast::cluster`` |
| bulk_load_multicast | ``cp.async.bulk.global.to.shared.cluster`` (mask, flag set) | ``….multicast::cluster`` |
| bulk_commit / bulk_wait | ``cp.async.bulk.{commit.group,wait.group(.read)}`` | ``cp.async.bulk.wait_group.read 0`` |
| wgmma_fence / commit | ``wgmma.{fence,commit_group}.sync.aligned`` | ``wgmma.fence.sync.aligned`` |
| wgmma | inline asm, accumulators tied in/out | ``wgmma.mma_async.sync.aligned.m64n256k16…`` |
| wgmma_wait | inline asm taking and returning the accumulators | ``wgmma.wait_group.sync.aligned 0`` |

A ``!fly.tma_desc`` kernel parameter is ``ptr byval([128 x i8]) align 64 "nvvm.grid_constant"``: the
value is the parameter's address (PTX ``cvta.param``), read in place by the TMA unit.

Every op declares what it needs from the target (``requires``: sm_90 for mbarriers, TMA, proxy fences,
elect and cluster ids; the architecture-specific sm_90a for wgmma and setmaxnreg) and the dispatcher
checks it before these emitters run (:mod:`flydsl.dialects.capabilities`), so LLVM is never asked to
select what it cannot — that would abort the process.
"""

from __future__ import annotations

from ..ir import Op, VectorType
from .errors import CodegenError
from .intrinsics import constant_int
from .llvm_emitter import FunctionEmitter, emitter
from .llvm_types import llvm_type

__all__ = ["wgmma_asm"]

_BAR = "ptr addrspace(3)"


def _i32(fe: FunctionEmitter, v) -> tuple[str, str]:
    return ("i32", fe.val(v))


# -- mbarriers --------------------------------------------------------------------------------------


@emitter("nvvm.mbarrier_init")
def emit_mbarrier_init(fe: FunctionEmitter, op: Op) -> None:
    bar, count = op.operands
    fe.call("llvm.nvvm.mbarrier.init.shared", "void", [(_BAR, fe.val(bar)), _i32(fe, count)])


@emitter("nvvm.mbarrier_arrive")
def emit_mbarrier_arrive(fe: FunctionEmitter, op: Op) -> None:
    bar = op.operands[0]
    count = fe.val(op.operands[1]) if len(op.operands) > 1 else "1"
    fe.call("llvm.nvvm.mbarrier.arrive.scope.cta.space.cta", "i64", [(_BAR, fe.val(bar)), ("i32", count)])


@emitter("nvvm.mbarrier_arrive_cluster")
def emit_mbarrier_arrive_cluster(fe: FunctionEmitter, op: Op) -> None:
    """``mbarrier.arrive.release.cta.shared::cluster.b64 _, [addr], 1``: release at block scope, as CUTLASS's
    remote ``ClusterBarrier::arrive`` (the cluster-scope release makes ptxas wait for the thread's outstanding
    global stores first, ``MEMBAR.ALL.GPU``)."""
    fe.call("llvm.nvvm.mbarrier.arrive.scope.cta.space.cluster", "void",
            [("ptr addrspace(7)", fe.val(op.operands[0])), ("i32", "1")])  # fmt: skip


@emitter("nvvm.mbarrier_arrive_expect_tx")
def emit_mbarrier_arrive_expect_tx(fe: FunctionEmitter, op: Op) -> None:
    bar, nbytes = op.operands
    fe.call("llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta", "i64", [(_BAR, fe.val(bar)), _i32(fe, nbytes)])


@emitter("nvvm.mbarrier_expect_tx")
def emit_mbarrier_expect_tx(fe: FunctionEmitter, op: Op) -> None:
    bar, nbytes = op.operands
    fe.call("llvm.nvvm.mbarrier.expect.tx.scope.cta.space.cta", "void", [(_BAR, fe.val(bar)), _i32(fe, nbytes)])


_TRY_WAIT = "llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta"


@emitter("nvvm.mbarrier_try_wait")
def emit_mbarrier_try_wait(fe: FunctionEmitter, op: Op) -> None:
    bar, parity = op.operands
    fe.define(op.results[0], fe.call(_TRY_WAIT, "i1", [(_BAR, fe.val(bar)), _i32(fe, parity)]))


@emitter("nvvm.mbarrier_wait")
def emit_mbarrier_wait(fe: FunctionEmitter, op: Op) -> None:
    """``try_wait.parity`` in a loop (the instruction itself suspends the thread for a while)."""
    bar, parity = op.operands
    spin, done = fe.label("mbar_wait"), fe.label("mbar_done")
    fe.br(spin)
    fe.start(spin)
    ok = fe.call(_TRY_WAIT, "i1", [(_BAR, fe.val(bar)), _i32(fe, parity)])
    fe.cbr(ok, done, spin)
    fe.start(done)


# -- fences, elect, registers, named barriers, cluster ids ------------------------------------------

_PROXY = {"shared_cta": "llvm.nvvm.fence.proxy.async.shared_cta", "global": "llvm.nvvm.fence.proxy.async.global",
          "all": "llvm.nvvm.fence.proxy.async"}  # fmt: skip


@emitter("nvvm.fence_proxy_async")
def emit_fence_proxy_async(fe: FunctionEmitter, op: Op) -> None:
    fe.call(_PROXY[op.attrs["space"]], "void", [])


@emitter("nvvm.fence_mbarrier_init")
def emit_fence_mbarrier_init(fe: FunctionEmitter, op: Op) -> None:
    fe.call("llvm.nvvm.fence.mbarrier_init.release.cluster", "void", [])


@emitter("nvvm.griddep_wait")
def emit_griddep_wait(fe: FunctionEmitter, op: Op) -> None:
    fe.call("llvm.nvvm.griddepcontrol.wait", "void", [])


@emitter("nvvm.griddep_launch_dependents")
def emit_griddep_launch_dependents(fe: FunctionEmitter, op: Op) -> None:
    fe.call("llvm.nvvm.griddepcontrol.launch.dependents", "void", [])


@emitter("nvvm.elect_sync")
def emit_elect_sync(fe: FunctionEmitter, op: Op) -> None:
    r = fe.call("llvm.nvvm.elect.sync", "{i32, i1}", [("i32", "-1")])
    fe.define(op.results[0], fe.assign(f"extractvalue {{i32, i1}} {r}, 1"))


@emitter("nvvm.setmaxnreg")
def emit_setmaxnreg(fe: FunctionEmitter, op: Op) -> None:
    fe.call(f"llvm.nvvm.setmaxnreg.{op.attrs['action']}.sync.aligned.u32", "void", [("i32", str(op.attrs["count"]))])


@emitter("nvvm.barrier_sync", "nvvm.barrier_arrive")
def emit_named_barrier(fe: FunctionEmitter, op: Op) -> None:
    kind = "sync" if op.defn.name == "nvvm.barrier_sync" else "arrive"
    bid, count = op.operands
    c = constant_int(count)
    if c is not None and (c <= 0 or c % 32):
        raise CodegenError(
            f"a named barrier counts whole warps: {c} threads is not a positive multiple of 32",
            op=op,
            fix="pass the number of threads of the participating warps (e.g. 256 for two warpgroups)",
        )
    b = constant_int(bid)
    if b is not None and not 0 <= b < 16:
        raise CodegenError(f"named barrier ids are 0-15, got {b}", op=op, fix="use an id in [0, 16)")
    fe.call(f"llvm.nvvm.barrier.cta.{kind}.aligned.count", "void", [_i32(fe, bid), _i32(fe, count)])


_CLUSTER_SREG = {"nvvm.cluster_id": "clusterid", "nvvm.cluster_ctaid": "cluster.ctaid",
                 "nvvm.cluster_dim": "cluster.nctaid"}  # fmt: skip


@emitter("nvvm.cluster_ctarank", *_CLUSTER_SREG)
def emit_cluster_sreg(fe: FunctionEmitter, op: Op) -> None:
    name = op.defn.name
    reg = "cluster.ctarank" if name == "nvvm.cluster_ctarank" else f"{_CLUSTER_SREG[name]}.{op.attrs['dimension']}"
    fe.define(op.results[0], fe.call(f"llvm.nvvm.read.ptx.sreg.{reg}", "i32", []))


@emitter("nvvm.mapa")
def emit_mapa(fe: FunctionEmitter, op: Op) -> None:
    p, rank = op.operands
    args = [("ptr addrspace(3)", fe.val(p)), _i32(fe, rank)]
    fe.define(op.results[0], fe.call("llvm.nvvm.mapa.shared.cluster", "ptr addrspace(7)", args))


@emitter("nvvm.st_async")
def emit_st_async(fe: FunctionEmitter, op: Op) -> None:
    """``st.async.shared::cluster.mbarrier::complete_tx::bytes[.v2|.v4].{b32|b64}`` (inline asm: LLVM 22 has no
    intrinsic for it); values are passed as integers of their width (the bits are stored as they are)."""
    v, dst, bar = op.operands
    t = v.type
    elem, n = (t.elem, t.numel) if isinstance(t, VectorType) else (t, 1)
    bits = elem.bitwidth
    ity = f"i{bits}"
    vals = _unpack(fe, fe.val(v), n, llvm_type(elem)) if n > 1 else [fe.val(v)]
    if not elem.is_int_like:
        vals = [fe.assign(f"bitcast {llvm_type(elem)} {x} to {ity}") for x in vals]
    shape = "" if n == 1 else f".v{n}"
    regs = ", ".join(f"${i + 1}" for i in range(n))
    text = f"st.async.shared::cluster.mbarrier::complete_tx::bytes{shape}.b{bits} [$0], {{{regs}}}, [${n + 1}];"
    if n == 1:
        text = text.replace("{$1}", "$1")
    cons = ",".join(["l"] + ["l" if bits == 64 else "r"] * n + ["l", "~{memory}"])
    addr = [fe.assign(f"ptrtoint ptr addrspace(7) {fe.val(p)} to i64") for p in (dst, bar)]
    args = ", ".join([f"i64 {addr[0]}"] + [f"{ity} {x}" for x in vals] + [f"i64 {addr[1]}"])
    fe.emit(f'call void asm sideeffect "{text}", "{cons}"({args})')


@emitter("nvvm.cluster_arrive", "nvvm.cluster_wait")
def emit_cluster_barrier(fe: FunctionEmitter, op: Op) -> None:
    kind = "wait" if op.defn.name == "nvvm.cluster_wait" else "arrive"
    name = f"llvm.nvvm.barrier.cluster.{kind}"
    if op.attrs.get("relaxed"):
        name += ".relaxed"
    if op.attrs.get("aligned"):
        name += ".aligned"
    fe.call(name, "void", [])


# -- TMA and bulk copies ----------------------------------------------------------------------------


def _to_cluster(fe: FunctionEmitter, v) -> str:
    """A shared::cta address as the shared::cluster address the async copies take."""
    return fe.assign(f"addrspacecast ptr addrspace(3) {fe.val(v)} to ptr addrspace(7)")


@emitter("nvvm.tma_load")
def emit_tma_load(fe: FunctionEmitter, op: Op) -> None:
    desc, dst, bar, *coords = op.operands
    rank = len(coords)
    args = [("ptr addrspace(7)", _to_cluster(fe, dst)), (_BAR, fe.val(bar)), ("ptr", fe.val(desc))]
    args += [_i32(fe, c) for c in coords]
    args += [("i16", "0"), ("i64", "0"), ("i1", "false"), ("i1", "false"), ("i32", "0")]
    fe.call(f"llvm.nvvm.cp.async.bulk.tensor.g2s.tile.{rank}d", "void", args)


@emitter("nvvm.tma_load_multicast")
def emit_tma_load_multicast(fe: FunctionEmitter, op: Op) -> None:
    """The same intrinsic as ``tma_load`` with its multicast flag set: the i16 block mask selects the cluster's
    blocks whose shared memory (at ``dst``'s offset) and mbarrier (at ``bar``'s offset) receive the box."""
    desc, dst, bar, mask, *coords = op.operands
    m16 = fe.assign(f"trunc i32 {fe.val(mask)} to i16")
    args = [("ptr addrspace(7)", _to_cluster(fe, dst)), (_BAR, fe.val(bar)), ("ptr", fe.val(desc))]
    args += [_i32(fe, c) for c in coords]
    args += [("i16", m16), ("i64", "0"), ("i1", "true"), ("i1", "false"), ("i32", "0")]
    fe.call(f"llvm.nvvm.cp.async.bulk.tensor.g2s.tile.{len(coords)}d", "void", args)


@emitter("nvvm.tma_store")
def emit_tma_store(fe: FunctionEmitter, op: Op) -> None:
    desc, src, *coords = op.operands
    args = [("ptr addrspace(3)", fe.val(src)), ("ptr", fe.val(desc))] + [_i32(fe, c) for c in coords]
    args += [("i64", "0"), ("i1", "false")]
    fe.call(f"llvm.nvvm.cp.async.bulk.tensor.s2g.tile.{len(coords)}d", "void", args)


@emitter("nvvm.tma_prefetch_desc")
def emit_tma_prefetch_desc(fe: FunctionEmitter, op: Op) -> None:
    fe.call("llvm.nvvm.prefetch.tensormap.p0", "void", [("ptr", fe.val(op.operands[0]))])


@emitter("nvvm.bulk_load")
def emit_bulk_load(fe: FunctionEmitter, op: Op) -> None:
    dst, src, nbytes, bar = op.operands
    args = [("ptr addrspace(7)", _to_cluster(fe, dst)), (_BAR, fe.val(bar)), ("ptr addrspace(1)", fe.val(src))]
    args += [_i32(fe, nbytes), ("i16", "0"), ("i64", "0"), ("i1", "false"), ("i1", "false")]
    fe.call("llvm.nvvm.cp.async.bulk.global.to.shared.cluster", "void", args)


@emitter("nvvm.bulk_load_multicast")
def emit_bulk_load_multicast(fe: FunctionEmitter, op: Op) -> None:
    """The same intrinsic as ``bulk_load`` with its multicast flag set: the i16 block mask selects the cluster's
    blocks whose shared memory (at ``dst``'s offset) and mbarrier (at ``bar``'s offset) receive the bytes."""
    dst, src, nbytes, bar, mask = op.operands
    m16 = fe.assign(f"trunc i32 {fe.val(mask)} to i16")
    args = [("ptr addrspace(7)", _to_cluster(fe, dst)), (_BAR, fe.val(bar)), ("ptr addrspace(1)", fe.val(src))]
    args += [_i32(fe, nbytes), ("i16", m16), ("i64", "0"), ("i1", "true"), ("i1", "false")]
    fe.call("llvm.nvvm.cp.async.bulk.global.to.shared.cluster", "void", args)


@emitter("nvvm.bulk_store")
def emit_bulk_store(fe: FunctionEmitter, op: Op) -> None:
    dst, src, nbytes = op.operands
    args = [("ptr addrspace(1)", fe.val(dst)), ("ptr addrspace(3)", fe.val(src)), _i32(fe, nbytes)]
    fe.call("llvm.nvvm.cp.async.bulk.shared.cta.to.global", "void", args + [("i64", "0"), ("i1", "false")])


@emitter("nvvm.bulk_prefetch_l2")
def emit_bulk_prefetch_l2(fe: FunctionEmitter, op: Op) -> None:
    src, nbytes = op.operands
    args = [("ptr addrspace(1)", fe.val(src)), _i32(fe, nbytes), ("i64", "0"), ("i1", "false")]
    fe.call("llvm.nvvm.cp.async.bulk.prefetch.L2", "void", args)


@emitter("nvvm.bulk_commit")
def emit_bulk_commit(fe: FunctionEmitter, op: Op) -> None:
    fe.call("llvm.nvvm.cp.async.bulk.commit.group", "void", [])


@emitter("nvvm.bulk_wait")
def emit_bulk_wait(fe: FunctionEmitter, op: Op) -> None:
    name = "llvm.nvvm.cp.async.bulk.wait.group" + (".read" if op.attrs.get("read") else "")
    fe.call(name, "void", [("i32", str(op.attrs["pending"]))])


# -- warpgroup MMA ----------------------------------------------------------------------------------

_PTX_TYPE = {"f16": "f16", "bf16": "bf16", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2", "i8": "s8"}


def wgmma_asm(attrs: dict, a_in_regs: bool, scale_const: int | None) -> tuple[str, str, int]:
    """``(asm text, constraints, number of accumulator registers)`` of one ``wgmma.mma_async``.

    Operands in order: the accumulators (outputs), A (one ``l`` descriptor or four ``r`` registers),
    the B descriptor, ``scale_d`` as a register unless it is a constant, then the accumulators again as
    inputs tied to the outputs.
    """
    n, k, at, bt = attrs["n"], attrs["k"], attrs["a_type"], attrs["b_type"]
    nacc = n // 2
    is_int = at == "i8"
    dty = "s32" if is_int else "f32"
    regs = ", ".join(f"${i}" for i in range(nacc))
    pos = nacc
    if a_in_regs:
        a = "{" + ", ".join(f"${pos + i}" for i in range(4)) + "}"
        pos += 4
    else:
        a = f"${pos}"
        pos += 1
    b = f"${pos}"
    pos += 1
    shape = f"m64n{n}k{k}.{dty}.{_PTX_TYPE[at]}.{_PTX_TYPE[bt]}"
    if scale_const is None:
        pred = "p"
        head = f"{{\\0A.reg .pred p;\\0Asetp.ne.b32 p, ${pos}, 0;\\0A"
        tail = "\\0A}"
    else:
        pred, head, tail = str(1 if scale_const else 0), "", ""
    tailargs = ""
    if not is_int:
        tailargs = f", {attrs.get('scale_a', 1)}, {attrs.get('scale_b', 1)}"
        if at in ("f16", "bf16"):
            tailargs += (
                f", {attrs.get('trans_b', 0)}"
                if a_in_regs
                else (f", {attrs.get('trans_a', 0)}, {attrs.get('trans_b', 0)}")
            )
    body = f"wgmma.mma_async.sync.aligned.{shape} {{{regs}}}, {a}, {b}, {pred}{tailargs};"
    cons = [("=r" if is_int else "=f")] * nacc
    cons += ["r"] * 4 if a_in_regs else ["l"]
    cons.append("l")
    if scale_const is None:
        cons.append("r")
    cons += [str(i) for i in range(nacc)] + ["~{memory}"]
    return head + body + tail, ",".join(cons), nacc


def _unpack(fe: FunctionEmitter, vec: str, n: int, ety: str) -> list[str]:
    return [fe.assign(f"extractelement <{n} x {ety}> {vec}, i64 {i}") for i in range(n)]


def _pack(fe: FunctionEmitter, struct: str, sty: str, n: int, ety: str, base: int = 0) -> str:
    acc = "poison"
    for i in range(n):
        x = fe.assign(f"extractvalue {sty} {struct}, {base + i}")
        acc = fe.assign(f"insertelement <{n} x {ety}> {acc}, {ety} {x}, i64 {i}")
    return acc


@emitter("nvvm.wgmma")
def emit_wgmma(fe: FunctionEmitter, op: Op) -> None:
    acc, a, b, scale_d = op.operands
    a_regs = a.type.is_vector
    sc = constant_int(scale_d)
    text, cons, nacc = wgmma_asm(op.attrs, a_regs, sc)
    ety = "i32" if op.attrs["a_type"] == "i8" else "float"
    if a_regs:
        ins = [("i32", x) for x in _unpack(fe, fe.val(a), 4, "i32")]
    else:
        ins = [("i64", fe.val(a))]
    ins.append(("i64", fe.val(b)))
    if sc is None:
        ins.append(("i32", fe.assign(f"zext i1 {fe.val(scale_d)} to i32")))
    ins += [(ety, x) for x in _unpack(fe, fe.val(acc), nacc, ety)]
    sty = "{" + ", ".join([ety] * nacc) + "}"
    args = ", ".join(f"{t} {v}" for t, v in ins)
    r = fe.assign(f'call {sty} asm sideeffect "{text}", "{cons}"({args})')
    fe.define(op.results[0], _pack(fe, r, sty, nacc, ety))


@emitter("nvvm.wgmma_fence", "nvvm.wgmma_commit")
def emit_wgmma_fence_commit(fe: FunctionEmitter, op: Op) -> None:
    what = "fence" if op.defn.name == "nvvm.wgmma_fence" else "commit_group"
    fe.call(f"llvm.nvvm.wgmma.{what}.sync.aligned", "void", [])


@emitter("nvvm.wgmma_wait")
def emit_wgmma_wait(fe: FunctionEmitter, op: Op) -> None:
    """``wgmma.wait_group N`` as inline asm whose register operands are the accumulators (tied in and out):
    a read of an accumulator is data-dependent on the wait and can never be scheduled above it."""
    n = op.attrs["pending"]
    ins: list[tuple[str, str]] = []
    tys: list = []
    for v in op.operands:
        t = VectorType.of(v)
        ety = "i32" if t.elem.is_integer else "float"
        k = t.numel
        ins.extend((ety, x) for x in _unpack(fe, fe.val(v), k, ety))
        tys.append((k, ety))
    total = len(ins)
    if total == 0:
        fe.call("llvm.nvvm.wgmma.wait_group.sync.aligned", "void", [("i64", str(n))])
        return
    cons = ",".join([("=r" if e == "i32" else "=f") for e, _ in ins] + [str(i) for i in range(total)] + ["~{memory}"])
    sty = "{" + ", ".join(e for e, _ in ins) + "}"
    args = ", ".join(f"{t} {v}" for t, v in ins)
    r = fe.assign(f'call {sty} asm sideeffect "wgmma.wait_group.sync.aligned {n};", "{cons}"({args})')
    base = 0
    for res, (k, ety) in zip(op.results, tys):
        fe.define(res, _pack(fe, r, sty, k, ety, base))
        base += k
