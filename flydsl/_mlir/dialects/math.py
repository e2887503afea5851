"""``flydsl._mlir.dialects.math``: one builder per ``math`` op (``math.exp(x)``, ``math.fma(a, b, c)``),
``fastmath=`` as an attribute; results are fx values."""

from __future__ import annotations

from ... import ir as _ir
from ...dialects import math as _math  # noqa: F401  (registers the math ops)
from .. import ir
from ._ods import build

__all__ = []


def _builder(defn):
    def fn(*operands, fastmath=None, loc=None, ip=None):
        attrs = {"fastmath": str(fastmath)} if fastmath is not None else None
        op = build(defn, list(operands), None, attrs, loc=loc, ip=ip)
        if len(op.results) != 1:  # math.sincos: the results in order
            return tuple(ir.wrap(r) for r in op.results)
        return ir.wrap(op.results[0])

    fn.__name__ = defn.name.split(".", 1)[1]
    fn.__doc__ = f"build ``{defn.name}``"
    return fn


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_")) + "Op"


for _name, _defn in sorted(_ir.OPS.items()):
    if _name.startswith("math."):
        _short = _name.split(".", 1)[1]
        globals()[_short] = _builder(_defn)
        globals()[_camel(_short)] = globals()[_short]
        __all__ += [_short, _camel(_short)]
