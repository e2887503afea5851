"""``T``: IR types by short name (``T.f32``, ``T.i32x4``, ``T.vec(8, T.f16)``), FlyDSL's ``Types``.

Every property returns the interned ``ir.Type``; an IR type called with no arguments returns itself,
so FlyDSL's ``T.f32()`` spelling works too. ``T.f8`` (and ``T.f8x2`` … ``T.f8x16``) is the target's
default 8-bit float: ``f8E4M3FNUZ`` where the target uses the FNUZ encoding (gfx942), else ``f8E4M3FN``.
"""

from __future__ import annotations

from .. import ir
from ._sem.context import current_target

__all__ = ["Types", "T", "default_f8_type"]

# scalar name -> IR type
_SCALARS = {
    "bool": ir.i1, "i1": ir.i1, "i8": ir.i8, "i16": ir.i16, "i32": ir.i32, "i64": ir.i64,
    "i128": ir.IntegerType(128), "index": ir.index,
    "f16": ir.f16, "bf16": ir.bf16, "f32": ir.f32, "f64": ir.f64,
    "f8E4M3FN": ir.f8E4M3FN, "f8E5M2": ir.f8E5M2, "f8E4M3FNUZ": ir.f8E4M3FNUZ, "f8E5M2FNUZ": ir.f8E5M2FNUZ,
}  # fmt: skip
# scalar name -> lane counts of the vector shorthands (``T.f16x8``)
_VECTORS = {
    "i8": (2, 4, 8, 16), "i16": (2, 4, 8), "i32": (2, 4, 8), "i64": (2, 4),
    "f16": (2, 4, 8), "bf16": (2, 4, 8), "f32": (2, 4, 8), "f64": (2,),
}  # fmt: skip
_F8_LANES = (2, 4, 8, 16)


def default_f8_type() -> ir.Type:
    """The target's default 8-bit float: ``f8E4M3FNUZ`` on FNUZ targets (gfx942), else ``f8E4M3FN``."""
    return ir.f8E4M3FNUZ if current_target().has("fp8_fnuz") else ir.f8E4M3FN


class Types:
    """IR type constructors by name. Use the shared instance ``T``.

    Scalars: ``bool i1 i8 i16 i32 i64 i128 index f16 bf16 f32 f64 f8E4M3FN f8E5M2 f8E4M3FNUZ f8E5M2FNUZ``
    and ``f8`` (target default). Vectors: ``i8x2…i8x16, i16x2…i16x8, i32x2…i32x8, i64x2, i64x4,
    f16x2…f16x8, bf16x2…bf16x8, f32x2…f32x8, f64x2, f8x2…f8x16``; any other with :meth:`vec`.
    """

    __slots__ = ()

    @staticmethod
    def vec(n: int, elem: ir.Type) -> ir.VectorType:
        """``vector<n x elem>``.

        Raises:
            ValueError: ``n`` not a positive int, or ``elem`` not a scalar integer/float type.
        """
        return ir.VectorType(int(n), elem)

    @property
    def f8(self) -> ir.Type:
        """The target's default 8-bit float (see :func:`default_f8_type`)."""
        return default_f8_type()


def _scalar_prop(t):
    return property(lambda self: t, doc=f"``{t}``")


def _vector_prop(n, t):
    vt = ir.VectorType(n, t)
    return property(lambda self: vt, doc=f"``{vt}``")


def _f8_vector_prop(n):
    return property(lambda self: ir.VectorType(n, default_f8_type()), doc=f"``vector<{n}x f8>`` (target default)")


for _name, _t in _SCALARS.items():
    setattr(Types, _name, _scalar_prop(_t))
for _name, _lanes in _VECTORS.items():
    for _n in _lanes:
        setattr(Types, f"{_name}x{_n}", _vector_prop(_n, _SCALARS[_name]))
for _n in _F8_LANES:
    setattr(Types, f"f8x{_n}", _f8_vector_prop(_n))

T = Types()
