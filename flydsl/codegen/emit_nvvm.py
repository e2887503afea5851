"""LLVM lowering of the ``nvvm`` dialect (warp MMA, ldmatrix/stmatrix, cp.async) to NVVM intrinsics.

=====================================  ========================================================================
IR                                     LLVM 22 intrinsic
=====================================  ========================================================================
mma_sync m16n8k16 bf16 -> f32          ``llvm.nvvm.mma.m16n8k16.row.col.bf16`` (A 4, B 2 ``i32``; C 4 ``float``)
mma_sync m16n8k16 f16 -> f32 / f16     ``....row.col.f32.f32`` / ``....row.col.f16.f16`` (``<2 x half>`` words)
mma_sync m16n8k32 e4m3/e5m2 -> f32/16  ``llvm.nvvm.mma.m16n8k32.row.col.{f32,f16}.{a}.{b}.{f32,f16}`` (sm_89,
                                       PTX 8.4)
mma_sync m16n8k32 s8/u8 -> s32         ``llvm.nvvm.mma.m16n8k32.row.col.{s8,u8,s8.u8,u8.s8}``
ldmatrix / stmatrix (sm_90)            ``llvm.nvvm.{ld,st}matrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16``
cp_async                               ``llvm.nvvm.cp.async.{ca,cg}.shared.global.{4,8,16}[.s]`` (``.s``: src-size)
cp_async_commit_group / wait_group n   ``llvm.nvvm.cp.async.commit.group`` / ``wait.group(i32 n)`` / ``wait.all``
syncwarp                               ``llvm.nvvm.bar.warp.sync(i32 -1)``
=====================================  ========================================================================

Register fragments are IR vectors; they are packed into (or unpacked from) the 32-bit registers the
intrinsics take with ``bitcast`` and ``extractelement``/``insertelement``. What each op needs from the
target is declared with the op (``requires``, :mod:`flydsl.dialects.capabilities`) and checked by the
dispatcher before these emitters run (and by the front end while tracing).
"""

from __future__ import annotations

from ..dialects.nvvm import mma_kind
from ..ir import Op, VectorType
from .llvm_emitter import FunctionEmitter, emitter
from .llvm_types import llvm_type

_FP8 = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}


def _words(fe: FunctionEmitter, value: str, llty: str, n: int, wty: str = "i32") -> list[str]:
    """``value`` (an LLVM vector holding ``n`` 32-bit words) as ``n`` registers of type ``wty``
    (``i32``, ``float`` or ``<2 x half>``)."""
    base = "float" if wty == "float" else "i32"
    vec = fe.cast("bitcast", value, llty, f"<{n} x {base}>")
    words = [fe.assign(f"extractelement <{n} x {base}> {vec}, i64 {i}") for i in range(n)]
    return words if wty == base else [fe.cast("bitcast", w, base, wty) for w in words]


def _pack(fe: FunctionEmitter, agg: str, aty: str, n: int, wty: str, llty: str) -> str:
    """The ``n`` fields of struct ``agg`` (each of type ``wty``; ``agg`` itself when ``n == 1``) as ``llty``."""
    base = "float" if wty == "float" else "i32"
    fields = [agg] if n == 1 else [fe.assign(f"extractvalue {aty} {agg}, {i}") for i in range(n)]
    acc = "poison"
    for i, x in enumerate(fields):
        acc = fe.assign(f"insertelement <{n} x {base}> {acc}, {base} {fe.cast('bitcast', x, wty, base)}, i64 {i}")
    return fe.cast("bitcast", acc, f"<{n} x {base}>", llty)


def _struct(wty: str, n: int) -> str:
    return "{ " + ", ".join([wty] * n) + " }"


@emitter("nvvm.mma_sync")
def emit_mma_sync(fe: FunctionEmitter, op: Op) -> None:
    a, b, c = op.operands
    shape = op.attrs["shape"]
    ea, eb, ec = (VectorType.of(v).elem for v in (a, b, c))
    kind = mma_kind(shape, ea, eb, ec)
    base = f"llvm.nvvm.mma.{shape}.row.col"
    na, nb, nc_ = (getattr(t, "name", str(t)) for t in (ea, eb, ec))  # float types' names: "bf16", "f8E4M3FN"
    half_c = nc_ == "f16"
    if kind == "f16bf16" and na == "bf16":
        name, areg = f"{base}.bf16", "i32"
    elif kind == "f16bf16":
        name, areg = f"{base}.{nc_}.{nc_}", "<2 x half>"
    elif kind == "fp8":
        name, areg = f"{base}.{nc_}.{_FP8[na]}.{_FP8[nb]}.{nc_}", "i32"
    else:
        sa = "s8" if op.attrs.get("a_signed", True) else "u8"
        sb = "s8" if op.attrs.get("b_signed", True) else "u8"
        name, areg = f"{base}.{sa}" + (f".{sb}" if sb != sa else ""), "i32"
    if half_c:
        creg, nc = "<2 x half>", 2
    else:
        creg, nc = llvm_type(ec), 4
    args = [(areg, w) for w in _words(fe, fe.val(a), llvm_type(a.type), 4, areg)]
    args += [(areg, w) for w in _words(fe, fe.val(b), llvm_type(b.type), 2, areg)]
    args += [(creg, w) for w in _words(fe, fe.val(c), llvm_type(c.type), nc, creg)]
    sty = _struct(creg, nc)
    r = fe.call(name, sty, args)
    fe.define(op.results[0], _pack(fe, r, sty, nc, creg, llvm_type(c.type)))


def _matrix_name(op: Op, what: str) -> str:
    t = ".trans" if op.attrs.get("trans", False) else ""
    return f"llvm.nvvm.{what}.sync.aligned.m8n8.x{op.attrs['num']}{t}.b16"


@emitter("nvvm.ldmatrix")
def emit_ldmatrix(fe: FunctionEmitter, op: Op) -> None:
    num = op.attrs["num"]
    sty = "i32" if num == 1 else _struct("i32", num)
    p = op.operands[0]
    r = fe.call(_matrix_name(op, "ldmatrix"), sty, [(llvm_type(p.type), fe.val(p))])
    fe.define(op.results[0], _pack(fe, r, sty, num, "i32", llvm_type(op.results[0].type)))


@emitter("nvvm.stmatrix")
def emit_stmatrix(fe: FunctionEmitter, op: Op) -> None:
    p, v = op.operands
    words = _words(fe, fe.val(v), llvm_type(v.type), op.attrs["num"])
    fe.call(_matrix_name(op, "stmatrix"), "void", [(llvm_type(p.type), fe.val(p))] + [("i32", w) for w in words])


@emitter("nvvm.cp_async")
def emit_cp_async(fe: FunctionEmitter, op: Op) -> None:
    dst, src = op.operands[:2]
    name = f"llvm.nvvm.cp.async.{op.attrs.get('cache', 'ca')}.shared.global.{op.attrs['bytes']}"
    args = [(llvm_type(dst.type), fe.val(dst)), (llvm_type(src.type), fe.val(src))]
    if len(op.operands) == 3:
        name += ".s"
        args.append(("i32", fe.val(op.operands[2])))
    fe.call(name, "void", args)


@emitter("nvvm.cp_async_commit_group")
def emit_cp_async_commit(fe: FunctionEmitter, op: Op) -> None:
    fe.call("llvm.nvvm.cp.async.commit.group", "void", [])


@emitter("nvvm.cp_async_wait_group")
def emit_cp_async_wait(fe: FunctionEmitter, op: Op) -> None:
    fe.call("llvm.nvvm.cp.async.wait.group", "void", [("i32", str(int(op.attrs["n"])))])


@emitter("nvvm.cp_async_wait_all")
def emit_cp_async_wait_all(fe: FunctionEmitter, op: Op) -> None:
    fe.call("llvm.nvvm.cp.async.wait.all", "void", [])


@emitter("nvvm.syncwarp")
def emit_syncwarp(fe: FunctionEmitter, op: Op) -> None:
    fe.call("llvm.nvvm.bar.warp.sync", "void", [("i32", "-1")])
