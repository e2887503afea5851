"""The CPU device: kernels run on the IR interpreter (:mod:`flydsl.interp`).

Each call registers the memory of every tensor argument with a fresh interpreter
:class:`~flydsl.interp.Memory` (zero-copy: the interpreter reads and writes the caller's memory in
place, through a numpy view over the bytes the tensor spans — non-contiguous views included), runs
the host function, and runs each launched kernel over its grid. The interpreter's address of a tensor
has the same alignment modulo 16 as the real one, so a kernel specialized for an aligned pointer
sees an aligned pointer. Interpreter faults (out-of-bounds, misaligned, …) propagate as
:class:`~flydsl.interp.InterpError`, naming the kernel, the argument and the index.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from ..interp import Memory, compile_host, run_kernel
from ..utils.env import env
from .args import DEFAULT_STREAM, ArgError, TensorRef
from .graph import recording_graph
from .launch_plan import check_launch_dims, launch_plan
from .raw_pointer import RawAddress, owning_region

__all__ = ["CpuLauncher", "register_tensor"]


def _extent(ref: TensorRef) -> tuple[int, int]:
    """Byte offsets [lo, hi) of the memory the tensor spans, relative to its data pointer."""
    isz = ref.dtype.itemsize
    lo = hi = 0
    for n, s in zip(ref.shape, ref.strides):
        if n == 0:
            return 0, 0
        step = (n - 1) * s * isz
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi + isz


def register_tensor(ref: TensorRef, mem: Memory) -> int:
    """The interpreter address of ``ref``'s element 0 (its memory registered with ``mem``)."""
    if ref.is_cuda:
        raise ArgError(
            "DEVICE_MISMATCH",
            got="a CUDA tensor",
            device="cpu",
            fix="pass a CPU tensor (`t.cpu()`), or run on the GPU (unset FLYDSL_RUNTIME_KIND=cpu)",
        )
    dt = ref.dtype
    obj = ref.obj
    if isinstance(obj, np.ndarray) and obj.flags.c_contiguous and ref.ptr % 16 == 0 and obj.size:
        return mem.register(obj, ref.name)
    lo, hi = _extent(ref)
    if hi <= lo:
        return mem.register(np.zeros(1, dt), ref.name)
    start = (ref.ptr + lo) & ~15
    nbytes = ref.ptr + hi - start
    raw = (ctypes.c_char * nbytes).from_address(start)
    isz = dt.itemsize
    view = np.frombuffer(raw, dtype=dt if nbytes % isz == 0 and start % isz == 0 else np.uint8)
    return mem.register(view, ref.name) + (ref.ptr - start)


def register_raw(address: int, mem: Memory, name: str) -> int:
    """The interpreter address of a raw pointer (``flyc.from_c_void_p``): the live CPU tensor or array whose
    memory contains it is registered whole, so accesses are checked against that allocation.

    Raises:
        ArgError: no live CPU tensor/array holds the address (FLY401).
    """
    region = owning_region(int(address))
    if region is None:
        raise ArgError(
            "DEVICE_MISMATCH",
            name=name,
            got=f"a raw pointer 0x{int(address):x} (flyc.from_c_void_p) into no live CPU tensor or array",
            device="cpu",
            fix="keep the tensor the address comes from alive and on the CPU, or pass the tensor itself",
        )
    start, nbytes, _owner = region
    raw = (ctypes.c_char * nbytes).from_address(start)
    return mem.register(np.frombuffer(raw, dtype=np.uint8), name) + (int(address) - start)


class CpuLauncher:
    """Launches one compiled specialization on the interpreter: ``launcher(abi_values)`` (recorded
    instead while a :class:`~flydsl.runtime.graph.CpuGraph` captures on this thread)."""

    __slots__ = ("host", "kernels", "arg_names", "warp_size", "param_names")

    def __init__(self, artifact, warp_size: int):
        self.host = launch_plan(artifact.host_op()) or compile_host(artifact.host_op())
        self.kernels = {name: artifact.kernel_op(name) for name in artifact.kernels}
        self.arg_names = {name: info.arg_names for name, info in artifact.kernels.items()}
        self.param_names = artifact.param_names
        self.warp_size = warp_size

    def __call__(self, vals: list) -> None:
        graph = recording_graph()
        if graph is not None:  # a CpuGraph is capturing: record the launch, run it on replay
            graph.record(self._run, vals)
            return
        self._run(vals)

    def _run(self, vals: list) -> None:
        mem = Memory()  # per call: threads may launch the same specialization at once
        args = list(vals)
        for i, v in enumerate(args):
            if type(v) is TensorRef:
                v.name = self.param_names[i] if i < len(self.param_names) else f"arg{i}"
                args[i] = register_tensor(v, mem)
            elif v is DEFAULT_STREAM:
                args[i] = 0
            elif type(v) is RawAddress:
                args[i] = register_raw(v, mem, self.param_names[i] if i < len(self.param_names) else f"arg{i}")
        self.host(args, functools.partial(self._launch, mem))

    def _launch(self, mem, kernel, grid, block, smem, stream, kargs) -> None:
        check_launch_dims(grid, block)
        name = str(kernel)
        run_kernel(
            self.kernels[name],
            grid=grid,
            block=block,
            args=kargs,
            memory=mem,
            smem_bytes=int(smem),
            warp_size=self.warp_size,
            arg_names=self.arg_names.get(name),
            max_lanes=env.interp_max_lanes,
        )
