"""LLVM lowering of the ``vector`` dialect (flat ``<N x T>`` vectors).

Reductions use ``llvm.vector.reduce.*``; float add/mul reductions are the *ordered* forms (lane 0
first, no reassociation), matching the interpreter bit for bit — unless the op's ``fastmath`` allows
``reassoc``, which lets LLVM reduce as a tree (the result may then differ in rounding). An accumulator
operand is combined after the lanes are reduced: ``acc op reduce(v)``.
"""

from __future__ import annotations

from ..ir import Op, VectorType
from .errors import CodegenError
from .intrinsics import fastmath_flags, mangle, reject_fp8
from .llvm_emitter import FunctionEmitter, emitter
from .llvm_types import const_literal, is_fp8, llvm_type


@emitter("vector.broadcast")
def emit_broadcast(fe: FunctionEmitter, op: Op) -> None:
    (x,) = op.operands
    t = VectorType.of(op.results[0])
    vty = llvm_type(t)
    one = fe.assign(f"insertelement {vty} poison, {fe.typed(x)}, i64 0")
    fe.define(op.results[0], fe.assign(f"shufflevector {vty} {one}, {vty} poison, <{t.numel} x i32> zeroinitializer"))


@emitter("vector.extract")
def emit_extract(fe: FunctionEmitter, op: Op) -> None:
    (v,) = op.operands
    fe.define(op.results[0], fe.assign(f"extractelement {fe.typed(v)}, i64 {int(op.attrs['position'])}"))


@emitter("vector.insert")
def emit_insert(fe: FunctionEmitter, op: Op) -> None:
    x, v = op.operands
    p = int(op.attrs["position"])
    fe.define(op.results[0], fe.assign(f"insertelement {fe.typed(v)}, {fe.typed(x)}, i64 {p}"))


@emitter("vector.extractelement")
def emit_extractelement(fe: FunctionEmitter, op: Op) -> None:
    v, idx = op.operands
    fe.define(op.results[0], fe.assign(f"extractelement {fe.typed(v)}, {fe.typed(idx)}"))


@emitter("vector.insertelement")
def emit_insertelement(fe: FunctionEmitter, op: Op) -> None:
    x, v, idx = op.operands
    fe.define(op.results[0], fe.assign(f"insertelement {fe.typed(v)}, {fe.typed(x)}, {fe.typed(idx)}"))


def _widen(fe: FunctionEmitter, value: str, n: int, to: int, ety: str) -> str:
    """Pad a vector of ``n`` lanes to ``to`` lanes (extra lanes poison)."""
    mask = ", ".join([f"i32 {i}" for i in range(n)] + ["i32 poison"] * (to - n))
    return fe.assign(f"shufflevector <{n} x {ety}> {value}, <{n} x {ety}> poison, <{to} x i32> <{mask}>")


@emitter("vector.shuffle")
def emit_shuffle(fe: FunctionEmitter, op: Op) -> None:
    """``shufflevector``; operands of different lengths are padded to one length first."""
    a, b = op.operands
    na, nb = VectorType.of(a).numel, VectorType.of(b).numel
    ety = llvm_type(VectorType.of(a).elem)
    n = max(na, nb)
    va, vb = fe.val(a), fe.val(b)
    if na < n:
        va = _widen(fe, va, na, n, ety)
    if nb < n:
        vb = _widen(fe, vb, nb, n, ety)
    idx = [i if i < na else i - na + n for i in op.attrs["mask"]]
    abits = VectorType.of(a).elem.bitwidth
    words = _word_mask(idx, n, abits)
    if words is not None:  # whole 32-bit words move: shuffle i32 lanes (NVPTX splits narrow lanes otherwise)
        wt = f"<{n * abits // 32} x i32>"
        wa, wb = (fe.cast("bitcast", v, f"<{n} x {ety}>", wt) for v in (va, vb))
        wmask = ", ".join(f"i32 {w}" for w in words)
        r = fe.assign(f"shufflevector {wt} {wa}, {wt} {wb}, <{len(words)} x i32> <{wmask}>")
        fe.define(op.results[0], fe.cast("bitcast", r, f"<{len(words)} x i32>", llvm_type(op.results[0].type)))
        return
    mask = ", ".join(f"i32 {i}" for i in idx)
    vt = f"<{n} x {ety}>"
    fe.define(op.results[0], fe.assign(f"shufflevector {vt} {va}, {vt} {vb}, <{len(idx)} x i32> <{mask}>"))


def _word_mask(idx: list, n: int, bits: int) -> list | None:
    """The mask in 32-bit words when every run of ``32 / bits`` result lanes is one whole aligned word of the
    (padded, ``n``-lane) operands; None otherwise (or for lanes of 32 bits and more)."""
    if bits not in (8, 16) or (n * bits) % 32 or (len(idx) * bits) % 32:
        return None
    p = 32 // bits
    words = []
    for j in range(0, len(idx), p):
        first = idx[j]
        if first % p or idx[j : j + p] != list(range(first, first + p)):
            return None
        words.append(first // p)
    return words


@emitter("vector.bitcast")
def emit_vbitcast(fe: FunctionEmitter, op: Op) -> None:
    (v,) = op.operands
    r = op.results[0]
    fe.define(r, fe.cast("bitcast", fe.val(v), llvm_type(v.type), llvm_type(r.type)))


@emitter("vector.from_elements")
def emit_from_elements(fe: FunctionEmitter, op: Op) -> None:
    vty = llvm_type(op.results[0].type)
    acc = "poison"
    for i, x in enumerate(op.operands):
        acc = fe.assign(f"insertelement {vty} {acc}, {fe.typed(x)}, i64 {i}")
    fe.define(op.results[0], acc)


# kind -> (integer reduce intrinsic, float reduce intrinsic)
_REDUCE = {
    "add": ("add", "fadd"),
    "mul": ("mul", "fmul"),
    "and": ("and", None),
    "or": ("or", None),
    "xor": ("xor", None),
    "maxsi": ("smax", None),
    "minsi": ("smin", None),
    "maxui": ("umax", None),
    "minui": ("umin", None),
    "maxnumf": (None, "fmax"),
    "minnumf": (None, "fmin"),
    "maximumf": (None, "fmaximum"),
    "minimumf": (None, "fminimum"),
}
# how an accumulator joins the reduced value: instruction or intrinsic per reduce kind
_COMBINE = {
    "add": "add",
    "mul": "mul",
    "and": "and",
    "or": "or",
    "xor": "xor",
    "fadd": "fadd",
    "fmul": "fmul",
    "smax": "@llvm.smax",
    "smin": "@llvm.smin",
    "umax": "@llvm.umax",
    "umin": "@llvm.umin",
    "fmax": "@llvm.maxnum",
    "fmin": "@llvm.minnum",
    "fmaximum": "@llvm.maximum",
    "fminimum": "@llvm.minimum",
}


@emitter("vector.reduction")
def emit_reduction(fe: FunctionEmitter, op: Op) -> None:
    v = op.operands[0]
    kind = op.attrs["kind"]
    t = VectorType.of(v)
    reject_fp8(op, t, "a reduction")
    e = t.elem
    ety, vty = llvm_type(e), llvm_type(t)
    is_f = e.is_float and not is_fp8(e)
    ints, floats = _REDUCE[kind]
    red = floats if is_f else ints
    if red is None:
        raise CodegenError(f"reduction kind {kind!r} does not apply to {t}")
    if ety == "i1" and red in ("add", "mul"):
        red = "xor" if red == "add" else "and"
    name = f"llvm.vector.reduce.{red}.{mangle(vty)}"
    # float reductions carry the op's fast-math flags: with `reassoc` LLVM may use a tree, not a chain
    flags = fastmath_flags(op) if is_f else ""
    if red in ("fadd", "fmul"):
        start = const_literal(-0.0 if red == "fadd" else 1.0, e)
        r = fe.call(name, ety, [(ety, start), (vty, fe.val(v))], flags=flags)
    else:
        r = fe.call(name, ety, [(vty, fe.val(v))], flags=flags)
    if len(op.operands) == 2:
        acc = fe.val(op.operands[1])
        how = _COMBINE[red]
        if how.startswith("@"):
            r = fe.call(f"{how[1:]}.{mangle(ety)}", ety, [(ety, acc), (ety, r)])
        else:
            r = fe.assign(f"{how} {ety} {acc}, {r}")
    fe.define(op.results[0], r)
