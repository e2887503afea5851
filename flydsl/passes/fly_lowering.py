"""``fly-layout-lowering``: fold FlyDSL's ``fly`` dialect (flydsl/dialects/fly.py) out of a module.

Layout values are computed at trace time; their ``fly`` ops are a record. This pass turns the few that
produce ordinary values into ordinary ops and erases the rest:

* ``fly.get_scalar`` of a static leaf (``!fly.int_tuple<10>``) becomes ``arith.constant 10``; of a run-time
  leaf, the integer its constructor was built from (``fly.make_int_tuple(%m) : (i32) -> !fly.int_tuple<?>``).
* ``fly.print`` becomes ``gpu.printf`` in a kernel and ``vector.print`` in host code (see :func:`_print`),
  with FlyDSL's meaning of a bare ``{}`` and a newline at the end.
* Every other ``fly`` op is erased; the verifier afterwards reports a ``!fly`` value that a non-``fly`` op
  still uses.

A module without ``fly`` ops is left as it is (one walk over the ops' names).
"""

from __future__ import annotations

from ..dialects import arith, fly, gpu, vector
from ..ir import FloatType, FlyType, IndexType, IRError, Op, Value, VectorType
from .registry import register_pass
from .rewrite import PatternSet, Rewriter, apply_patterns

__all__ = ["fly_layout_lowering", "LOWER_FLY"]

LOWER_FLY = PatternSet("fly-layout-lowering")


def _leaf_int(body: str) -> int | None:
    try:
        return int(body)
    except ValueError:
        return None


def _cast(v, t):
    if v.type is t:
        return v
    if isinstance(t, IndexType) or isinstance(v.type, IndexType):
        return arith.index_cast(v, result_types=[t])
    if v.type.bitwidth < t.bitwidth:
        return arith.extsi(v, result_types=[t])
    return arith.trunci(v, result_types=[t])


@LOWER_FLY.pattern("fly.get_scalar")
def _get_scalar(op: Op, rw: Rewriter) -> bool:
    src = op.operands[0]
    t = op.results[0].type
    leaf = fly.leaf_body(src.type) or ""
    n = _leaf_int(leaf)
    with rw.building():
        if n is not None:
            v = arith.const(n, t)
        else:
            d = src.defining_op
            if d is None or not d.defn.name.startswith("fly.make_") or len(d.operands) != 1 or leaf != "?":
                raise IRError(
                    f"fly.get_scalar of {src.type}: a run-time leaf is read only from the fly.make_int_tuple "
                    "(make_shape, make_stride, make_coord) that built it; compute with fx on the layout instead"
                )
            v = _cast(rw.lookup(d.operands[0]), t)
    return rw.replace(op, [v])


def flydsl_format(fmt: str, types) -> str:
    """``fmt`` with FlyDSL's meaning of a bare ``{}``: a float prints with two decimals (``{:.2f}``)."""
    lits, specs = gpu.parse_printf_format(fmt)
    out = [_escape(lits[0])]
    for spec, t, lit in zip(specs, types, lits[1:]):
        e = t.elem if isinstance(t, VectorType) else t
        out.append("{:.2f}" if not spec and isinstance(e, FloatType) else "{:" + spec + "}" if spec else "{}")
        out.append(_escape(lit))
    return "".join(out)


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _in_kernel(op: Op) -> bool:
    p = op.parent_op
    while p is not None and p.defn.name not in ("gpu.func", "func.func"):
        p = p.parent_op
    return p is not None and p.defn.name == "gpu.func"


@LOWER_FLY.pattern("fly.print")
def _print(op: Op, rw: Rewriter) -> bool:
    """In a kernel: ``gpu.printf``. In host code, a format of bare ``{}`` over scalars: MLIR's ``vector.print``,
    one per piece (as FlyDSL); with format specs or vectors, ``gpu.printf`` (the host executor runs it too)."""
    types = [v.type for v in op.operands]
    for t in types:
        if isinstance(t, FlyType):
            raise IRError(f"fly.print of a {t} value: print its static form (str(layout)) instead")
    fmt = op.attrs["format"]
    lits, specs = gpu.parse_printf_format(fmt)
    with rw.building():
        if _in_kernel(op) or any(specs) or any(isinstance(t, VectorType) for t in types):
            text = flydsl_format(fmt, types)
            gpu.printf(*op.operands, format=text if text.endswith("\n") else text + "\n")
        else:
            # the line's text, then value and text pieces; a newline ends the last piece
            texts = [*lits[:-1], lits[-1][:-1] if lits[-1].endswith("\n") else lits[-1]]
            pieces: list[Value | str] = [texts[0]]
            for v, lit in zip(op.operands, texts[1:]):
                pieces += [v, lit]
            pieces = [p for p in pieces if p != ""] or [""]
            for i, x in enumerate(pieces):
                punct = "newline" if i == len(pieces) - 1 else "no_punctuation"
                if isinstance(x, str):
                    vector.print_(punctuation=punct, string=x)
                else:
                    vector.print_(x, punctuation=punct)
    return rw.erase(op)


def _erase(op: Op, rw: Rewriter) -> bool:
    return rw.erase(op)


_FLY_DEFS = frozenset(fly.ALL)


def _has_fly(module: Op) -> bool:
    stack = [b for r in module.regions for b in r.blocks]
    defs = _FLY_DEFS
    while stack:
        for op in stack.pop().ops:
            if op.defn in defs:
                return True
            if op.regions:
                stack.extend(b for r in op.regions for b in r.blocks)
    return False


@register_pass("fly-layout-lowering")
def fly_layout_lowering(module: Op) -> None:
    if not _has_fly(module):
        return
    apply_patterns(module, LOWER_FLY, max_sweeps=1)


for _d in (*fly.CONSTRUCTORS.values(), *fly.TRANSFORMS.values(), fly.static):
    LOWER_FLY.add(_erase, _d.name)
