"""Every op of the dialects runs on the interpreter, with uniform, per-lane and mixed operands.

For each case the kernel computes ``op(uniform operands)``, ``op(per-lane operands)`` (every lane
holding the same values) and ``op(first operand uniform, the rest per lane)``; the three results
must agree bit for bit, and ``check=True`` verifies every result's dtype and shape against its IR
type. This catches broadcasting bugs of ``evaluate`` functions between ``()``/``(1,)``/``(T,)``
scalars and ``(1, N)``/``(T, N)`` vectors.
"""

from __future__ import annotations

import numpy as np
import pytest

from flydsl.dialects import arith, math, ptr, vector
from flydsl.interp import IMPLS
from flydsl.interp.host import HOST_IMPLS
from flydsl.interp.machine import value_dtype
from flydsl.ir import OPS, PointerType, VectorType, bf16, f8E4M3FN, f16, f32, i1, i8, i16, i32, index
from flydsl.testing import KernelBuilder, launch

V4I32, V4F32, V4F16, V4I8, V4I1 = (VectorType(4, t) for t in (i32, f32, f16, i8, i1))

INT_BIN = [
    "addi", "subi", "muli", "divsi", "divui", "floordivsi", "ceildivsi", "ceildivui", "remsi", "remui", "andi",
    "ori", "xori", "shli", "shrui", "shrsi", "maxsi", "minsi", "maxui", "minui", "mulhisi", "mulhiui",
]  # fmt: skip
FLOAT_BIN = ["addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf", "maxnumf", "minnumf"]


def _cases():
    c = []
    for n in INT_BIN:
        for t in (i32, V4I32, i16):
            c.append((f"arith.{n}:{t}", getattr(arith, n), [t, t], {}, None))
    for n in ("addi", "andi", "xori", "ori"):
        c.append((f"arith.{n}:i1", getattr(arith, n), [i1, i1], {}, None))
    for n in FLOAT_BIN:
        for t in (f32, V4F32, bf16, f16):
            c.append((f"arith.{n}:{t}", getattr(arith, n), [t, t], {}, None))
    for n in ("powf", "atan2", "copysign"):
        c.append((f"math.{n}", getattr(math, n), [f32, f32], {}, None))
    for n in sorted(math.UNARY_FLOAT):
        for t in (f32, V4F16):
            c.append((f"math.{n}:{t}", getattr(math, n), [t], {}, None))
    c.append(("arith.negf", arith.negf, [V4F32], {}, None))
    for n in ("absi", "ctpop", "ctlz", "cttz"):
        for t in (i32, V4I8):
            c.append((f"math.{n}:{t}", getattr(math, n), [t], {}, None))
    for n in ("isnan", "isinf", "isfinite"):
        c.append((f"math.{n}", getattr(math, n), [V4F32], {}, None))
    c.append(("math.fma", math.fma, [f32, f32, f32], {}, None))
    c.append(("math.fma:vec", math.fma, [V4F32, V4F32, V4F32], {}, None))
    for p in arith.CMPI_PREDICATES:
        c.append((f"arith.cmpi:{p}", arith.cmpi, [V4I32, V4I32], {"predicate": p}, None))
    for p in arith.CMPF_PREDICATES:
        c.append((f"arith.cmpf:{p}", arith.cmpf, [f32, f32], {"predicate": p}, None))
    c.append(("arith.select:scalar", arith.select, [i1, i32, i32], {}, None))
    c.append(("arith.select:lanes", arith.select, [V4I1, V4F32, V4F32], {}, None))
    c.append(("arith.select:i1-vec", arith.select, [i1, V4F32, V4F32], {}, None))
    casts = [
        ("extsi", i8, i32), ("extui", i8, i32), ("trunci", i32, i8), ("sitofp", i32, f32), ("uitofp", i32, f16),
        ("fptosi", f32, i16), ("fptoui", f32, i32), ("extf", f16, f32), ("truncf", f32, bf16),
        ("truncf", f32, f8E4M3FN), ("bitcast", f32, i32), ("bitcast", V4I8, i32), ("bitcast", i32, V4I8),
        ("bitcast", V4I1, VectorType(4, i1)), ("index_cast", i32, index), ("index_castui", i32, index),
        ("index_cast", index, i32), ("sitofp", V4I32, V4F32), ("extsi", i1, i32), ("extui", i1, i8),
    ]  # fmt: skip
    for n, s, d in casts:
        c.append((f"arith.{n}:{s}->{d}", getattr(arith, n), [s], {}, [d]))
    c.append(("vector.broadcast", vector.broadcast, [f32], {}, [V4F32]))
    c.append(("vector.extract", vector.extract, [V4I32], {"position": 2}, None))
    c.append(("vector.insert", vector.insert, [i32, V4I32], {"position": 1}, None))
    c.append(("vector.shuffle", vector.shuffle, [V4I32, V4I32], {"mask": [7, 0, 5, 2, 2]}, None))
    c.append(("vector.bitcast", vector.bitcast, [V4I32], {}, [VectorType(8, i16)]))
    c.append(("vector.from_elements", vector.from_elements, [f32, f32, f32], {}, None))
    for k in vector.REDUCTION_KINDS:
        t = V4F32 if k.endswith("f") else V4I32
        c.append((f"vector.reduction:{k}", vector.reduction, [t], {"kind": k}, None))
    c.append(("vector.reduction:acc", vector.reduction, [V4F32, f32], {"kind": "add"}, None))
    return c


CASES = _cases()

_VALUES = {  # per element type: 8 sample values (vectors take 4 of them, rotated per operand)
    "i": [-7, 3, 0, 1, 100, -128, 127, 5],
    "f": [1.7, -0.3, 0.0, 2.5, -4.0, 0.5, 3.0, -1.25],
}


def _sample(t, k):
    e = t.elem if isinstance(t, VectorType) else t
    if e is i1:
        vals = [True, False, True, True, False, True, False, False]
    else:
        vals = _VALUES["f" if e.is_float else "i"]
    n = t.numel if isinstance(t, VectorType) else 1
    a = np.array([vals[(k * 3 + j) % 8] for j in range(n)])
    return a.astype(value_dtype(e)) if e is not i1 else a.astype(np.bool_)


def _mem_type(t):
    e = t.elem if isinstance(t, VectorType) else t
    return e


@pytest.mark.parametrize("name,opdef,types,attrs,rtypes", CASES, ids=[c[0] for c in CASES])
def test_op_uniform_per_lane_and_mixed_operands_agree(name, opdef, types, attrs, rtypes):
    T = 8
    samples = [_sample(t, k) for k, t in enumerate(types)]
    ptr_types = [PointerType(_mem_type(t)) for t in types]
    kw = dict(attrs)
    if rtypes is not None:
        kw["result_types"] = rtypes
    with KernelBuilder("op", ptr_types + [PointerType(i8)] * 3) as kb:
        ins, outs = kb.args[: len(types)], kb.args[len(types) :]
        tid = arith.index_cast(kb.global_id(), result_types=[index])
        uni, lane = [], []
        for t, p in zip(types, ins):
            n = t.numel if isinstance(t, VectorType) else 1
            uni.append(ptr.load(p, result_types=[t]))  # one address for every lane: uniform
            lane.append(ptr.load(ptr.add(p, arith.muli(tid, arith.const(n, index))), result_types=[t]))
        results = [opdef(*uni, **kw), opdef(*lane, **kw), opdef(uni[0], *lane[1:], **kw)]
        rt = results[0].type
        n = rt.numel if isinstance(rt, VectorType) else 1
        size = value_dtype(rt).itemsize * n
        for r, o in zip(results, outs):
            dst = ptr.cast(
                ptr.add(o, arith.muli(tid, arith.const(size, index))), result_types=[PointerType(_mem_type(rt))]
            )
            ptr.store(r, dst)
    arrays = [np.tile(s, T) for s in samples]
    nbytes = T * value_dtype(results[0].type).itemsize * n
    outs_np = [np.zeros(nbytes, np.uint8) for _ in range(3)]
    launch(kb.op, 1, T, *arrays, *outs_np, check=True)
    assert np.array_equal(outs_np[0], outs_np[1]), name
    assert np.array_equal(outs_np[0], outs_np[2]), name
    assert np.array_equal(outs_np[0].reshape(T, -1), np.broadcast_to(outs_np[0][: nbytes // T], (T, nbytes // T)))


STRUCTURAL = {"builtin.module", "gpu.module", "func.func", "gpu.func", "gpu.launch_func"}


def test_every_dialect_op_is_executable():
    """Each declared op has an interpreter impl, an ``evaluate``, or is a terminator/structural op."""
    missing = [
        n
        for n, d in OPS.items()
        if n not in IMPLS
        and d.evaluate is None
        and not d.is_terminator
        and n not in STRUCTURAL
        and d.dialect != "fly"  # layout records: fly-layout-lowering folds them before anything executes
    ]
    assert missing == [], f"ops without interpreter semantics: {missing}"
    host_missing = [
        n
        for n, d in OPS.items()
        if n not in HOST_IMPLS
        and d.evaluate is None
        and not d.is_terminator
        and (n.split(".")[0] in ("arith", "scf") or (n.startswith("ptr.") and d.is_pure))
    ]
    assert host_missing == [], host_missing
