"""Kernel metadata, from the code generator to the launchers: :class:`KernelInfo` (one per kernel) and
:class:`ParamSpec` (one per parameter), and :func:`param_kind`, the one mapping from a parameter's IR
type to the kind a launcher packs it as.

The code generator fills a KernelInfo for every kernel it compiles; the compiler adds the user's names of
the parameters (``arg_names``, for messages) and keeps it in the compiled artifact (on disk as
:meth:`KernelInfo.to_dict`); the CUDA launcher packs arguments by ``params``, the interpreter names them
by ``arg_names``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..ir import BufferRsrcType, FloatType, IndexType, IntegerType, PointerType, TmaDescType, Type, VectorType

__all__ = ["KernelInfo", "ParamSpec", "param_kind"]


@dataclass
class ParamSpec:
    """One kernel parameter as the launcher must pack it."""

    name: str
    ir_type: str  # printed IR type
    llvm_type: str
    kind: str  # "ptr", "i32", "f32", "bf16", "rsrc", "bytes" …
    size: int
    align: int


@dataclass
class KernelInfo:
    """What the runtime needs to launch one kernel."""

    name: str
    symbol: str = ""  # the PTX entry name (``name`` made a valid PTX identifier)
    params: list[ParamSpec] = field(default_factory=list)
    static_smem: int = 0
    uses_dynamic_smem: bool = False
    block_size: tuple | None = None
    arg_names: list[str] = field(default_factory=list)  # the user's name of each parameter
    # it calls griddepcontrol.wait (fx.nvvm.griddep_wait): launched with programmatic stream serialization
    pdl: bool = False

    @property
    def param_kinds(self) -> list[str]:
        """The packing kind of each parameter (empty before code generation)."""
        return [p.kind for p in self.params]

    def to_dict(self) -> dict:
        """A JSON-compatible form (:meth:`from_dict` inverts it)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> KernelInfo:
        d = dict(d)
        d["params"] = [ParamSpec(**p) for p in d.get("params", ())]
        if d.get("block_size") is not None:
            d["block_size"] = tuple(d["block_size"])
        return cls(**d)


def param_kind(t: Type) -> str:
    """The launcher's packing kind of a kernel parameter type (``ptr``, ``i32``, ``bf16``, ``rsrc`` …)."""
    if isinstance(t, PointerType):
        return "ptr"
    if isinstance(t, IndexType):
        return "i64"
    if isinstance(t, IntegerType):
        return f"i{t.width}" if t.width in (1, 8, 16, 32, 64) else "bytes"
    if isinstance(t, FloatType):
        return t.name if t.width != 8 else "i8"
    if isinstance(t, BufferRsrcType):
        return "rsrc"
    if isinstance(t, TmaDescType):
        return "tmap"
    if isinstance(t, VectorType):
        return "bytes"
    return "bytes"
