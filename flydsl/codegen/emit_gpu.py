"""LLVM lowering of the ``gpu`` dialect's device ops: each one asks the target hooks, which know the
back end's intrinsics (``llvm.nvvm.*`` on NVIDIA)."""

from __future__ import annotations

from ..ir import Op
from .llvm_emitter import FunctionEmitter, emitter

_SREGS = {
    "gpu.thread_id": "thread_id",
    "gpu.block_id": "block_id",
    "gpu.block_dim": "block_dim",
    "gpu.grid_dim": "grid_dim",
}


@emitter(*_SREGS)
def emit_special_register(fe: FunctionEmitter, op: Op) -> None:
    fe.define(op.results[0], fe.hooks.special_register(fe, op, _SREGS[op.defn.name], op.attrs["dimension"]))


@emitter("gpu.lane_id")
def emit_lane_id(fe: FunctionEmitter, op: Op) -> None:
    fe.define(op.results[0], fe.hooks.special_register(fe, op, "lane_id", "x"))


@emitter("gpu.barrier")
def emit_barrier(fe: FunctionEmitter, op: Op) -> None:
    fe.hooks.barrier(fe, op)


@emitter("gpu.fence")
def emit_fence(fe: FunctionEmitter, op: Op) -> None:
    fe.hooks.fence(fe, op, op.attrs["scope"])


@emitter("gpu.shuffle")
def emit_shuffle(fe: FunctionEmitter, op: Op) -> None:
    fe.hooks.shuffle(fe, op)


@emitter("gpu.vote")
def emit_vote(fe: FunctionEmitter, op: Op) -> None:
    fe.hooks.vote(fe, op)


@emitter("gpu.printf")
def emit_printf(fe: FunctionEmitter, op: Op) -> None:
    fe.hooks.printf(fe, op)
