"""``gpu``: kernels, thread/block ids, barriers, fences, warp shuffles and votes, printf, launches."""

from __future__ import annotations

from ..ir import Op, OpDef, SymbolRef, Trait, i1, i32, i64
from .func import func_verify, return_verify

T, P, ISO, SYM = Trait.TERMINATOR, Trait.PURE, Trait.ISOLATED, Trait.SYMBOL

# ---------------------------------------------------------------------------------------------

module = OpDef(
    "gpu.module",
    operands=0,
    results=0,
    regions=1,
    traits=(ISO, SYM),
    attrs=("sym_name",),
    fmt="module",
    doc="device code: gpu.func kernels and device functions",
)


def _kernel_verify(op: Op):
    msg = func_verify(op)
    if msg:
        return msg
    kbs = op.attrs.get("known_block_size")
    if kbs is not None and (len(kbs) != 3 or any(not isinstance(x, int) or x <= 0 for x in kbs)):
        return f"known_block_size must be three positive ints, got {kbs}"
    if op.attrs.get("kernel") and op.attrs["function_type"].results:
        return "a kernel returns nothing"
    return None


func = OpDef(
    "gpu.func",
    operands=0,
    results=0,
    regions=1,
    traits=(ISO, SYM),
    attrs=("sym_name", "function_type"),
    verify=_kernel_verify,
    fmt="func",
    doc="a kernel (attribute kernel = true) or device function; known_block_size = [x, y, z]",
)
return_ = OpDef("gpu.return", operands=-1, results=0, traits=(T,), verify=return_verify, fmt="return")

DIMS = ("x", "y", "z")


def _dim_verify(op: Op):
    if op.attrs.get("dimension") not in DIMS:
        return f"dimension must be one of x, y, z, got {op.attrs.get('dimension')!r}"
    return None


def _sreg(name, doc):
    return OpDef(
        name,
        operands=0,
        traits=(P,),
        attrs=("dimension",),
        infer=lambda types, attrs: [i32],
        verify=_dim_verify,
        doc=doc,
    )


thread_id = _sreg("gpu.thread_id", "thread index within the block (i32)")
block_id = _sreg("gpu.block_id", "block index within the grid (i32)")
block_dim = _sreg("gpu.block_dim", "threads per block (i32)")
grid_dim = _sreg("gpu.grid_dim", "blocks per grid (i32)")
lane_id = OpDef("gpu.lane_id", operands=0, traits=(P,), infer=lambda t, a: [i32], doc="lane within the warp")

barrier = OpDef("gpu.barrier", operands=0, results=0, doc="block-wide barrier (all threads, memory ordered)")

FENCE_SCOPES = ("cta", "gpu", "sys")
fence = OpDef(
    "gpu.fence",
    operands=0,
    results=0,
    attrs=("scope",),
    verify=lambda op: None if op.attrs["scope"] in FENCE_SCOPES else f"scope must be one of {FENCE_SCOPES}",
    doc="memory fence at the given scope",
)

SHUFFLE_MODES = ("xor", "up", "down", "idx")


def _shuffle_verify(op: Op):
    v, off, width = op.operands
    if op.attrs.get("mode") not in SHUFFLE_MODES:
        return f"mode must be one of {', '.join(SHUFFLE_MODES)}"
    if off.type is not i32 or width.type is not i32:
        return "offset and width must be i32"
    if v.type.bitwidth > 64 or v.type.is_vector and v.type.bitwidth > 64:
        return f"shuffle moves values of at most 64 bits, got {v.type}"
    return None


shuffle = OpDef(
    "gpu.shuffle",
    operands=3,
    attrs=("mode",),
    infer=lambda types, attrs: [types[0]],
    verify=_shuffle_verify,
    doc="warp shuffle (value, offset, width): read `value` of another lane of the same warp segment",
)

VOTE_MODES = ("all", "any", "ballot")
vote = OpDef(
    "gpu.vote",
    operands=1,
    attrs=("mode",),
    infer=lambda types, attrs: [i32 if attrs["mode"] == "ballot" else i1],
    verify=lambda op: None if op.attrs["mode"] in VOTE_MODES else f"mode must be one of {VOTE_MODES}",
    doc="warp vote over an i1 predicate (ballot returns the i32 lane mask)",
)

printf = OpDef("gpu.printf", operands=-1, results=0, attrs=("format",), doc="device printf ({} placeholders)")


def _launch_verify(op: Op):
    if len(op.operands) < 8:
        return "launch_func takes grid(3), block(3), smem, stream, then kernel arguments"
    for v in op.operands[:7]:
        if v.type is not i32:
            return "grid, block and smem sizes must be i32"
    if op.operands[7].type is not i64:
        return "the stream must be an i64 handle"
    if not isinstance(op.attrs.get("kernel"), SymbolRef):
        return "kernel must be a symbol reference"
    return None


launch_func = OpDef(
    "gpu.launch_func",
    operands=-1,
    results=0,
    attrs=("kernel",),
    verify=_launch_verify,
    doc="host side: launch `kernel` with (gx, gy, gz, bx, by, bz, smem, stream, args...)",
)


def build_gpu_module(name: str = "kernels") -> Op:
    op = Op(module, [], [], {"sym_name": name}, 1)
    op.regions[0].add_block()
    return op


__all__ = [
    "module", "func", "return_", "thread_id", "block_id", "block_dim", "grid_dim", "lane_id", "barrier", "fence",
    "shuffle", "vote", "printf", "launch_func", "build_gpu_module", "DIMS", "SHUFFLE_MODES", "VOTE_MODES",
    "FENCE_SCOPES",
]  # fmt: skip
