"""Launching a kernel on the interpreter: :func:`run_kernel`.

Input: a ``gpu.func`` kernel op, the launch geometry, one value per kernel parameter and the
:class:`~flydsl.interp.memory.Memory` the pointers point into. Output: the side effects on the
registered buffers (and printf output through ``printer``), or an
:class:`~flydsl.interp.errors.InterpError`.

The grid runs in batches of whole blocks (at most ``max_lanes`` lanes per batch); inside a batch all
lanes advance op by op, so ``gpu.barrier`` is satisfied by construction. Blocks are independent, so
batching is invisible to a correct kernel; global memory and atomics are shared across batches. A kernel
whose blocks reach into their cluster (``CLUSTER_OPS``) runs whole clusters per batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..dialects.arith import float_round
from ..dialects.nvvm_sm90 import CLUSTER_OPS, TASK_OPS, tma_desc_decode
from ..ir import BufferRsrcType, FloatType, Op, PointerType, TmaDescType, VectorType
from . import atomics, impl_gpu, impl_nvvm, impl_ptr, impl_pure, impl_scf, impl_sm90  # noqa: F401 - register the op impls
from .access import cluster_dims
from .errors import InterpError
from .impl_gpu import default_printer
from .impl_ptr import elem_size
from .machine import Compiler, FunctionCode, Lanes, cached_code, lookup_symbol, run_region, value_dtype
from .memory import Arena, Memory
from .tasks import run_block_tasks

__all__ = ["run_kernel", "Program", "compile_kernel", "bind_arg"]

_DEFAULT_MAX_LANES = 1 << 15


def _align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


class Program:
    """A compiled kernel: its functions, shared-memory layout and local-memory layout."""

    def __init__(self, kernel: Op):
        self.kernel = kernel
        self.name = str(kernel.attrs.get("sym_name", "?"))
        self.functions: dict[int, FunctionCode] = {}
        self.shared_allocs: list[tuple] = []  # (name, offset, nbytes, loc)
        self.local_allocs: list[tuple] = []
        self._shared_off: dict[int, int] = {}
        self._local_off: dict[int, int] = {}
        self.needs_tasks = False
        self.cluster_op: Op | None = None  # the first op that reaches across the blocks of a cluster
        self._records: dict[int, tuple] = {}  # id(allocating op) -> (space, its allocation record)
        self._regions: dict[int, tuple | None] = {}  # id(accessing op) -> region()
        self._layout()
        self.main = self.function(kernel)

    def function(self, fop: Op) -> FunctionCode:
        """The compiled code of ``fop`` (compiled once; recursion finds the entry first)."""
        fc = self.functions.get(id(fop))
        if fc is None:
            fc = self.functions[id(fop)] = FunctionCode(fop)
            Compiler(self, fop).function(fc)
        return fc

    def _layout(self) -> None:
        """Lay out every static ``shared_alloc`` / ``alloca`` of the kernel and its callees, in program order."""
        seen, order, todo = set(), [], [self.kernel]
        while todo:
            f = todo.pop(0)
            if id(f) in seen:
                continue
            seen.add(id(f))
            order.append(f)
            for o in f.walk():
                if o.defn.name == "func.call":
                    todo.append(lookup_symbol(o, o.attrs["callee"]))
        shared = local = 0
        for f in order:
            for o in f.walk():
                name = o.defn.name
                if name in TASK_OPS:
                    self.needs_tasks = True  # warps wait on each other: run warp by warp (tasks.py)
                if name in CLUSTER_OPS:
                    self.cluster_op = self.cluster_op or o  # blocks of a cluster must run in one batch
                if name not in ("ptr.shared_alloc", "ptr.alloca"):
                    continue
                t = PointerType.of(o.results[0])
                nbytes = int(o.attrs["count"]) * elem_size(t.elem)
                align = int(o.attrs.get("align", 16))
                if name == "ptr.shared_alloc":
                    shared = _align_up(shared, align)
                    label = o.attrs.get("name") or f"shared allocation #{len(self.shared_allocs)}"
                    self._shared_off[id(o)] = shared
                    self.shared_allocs.append((label, shared, nbytes, o.loc))
                    self._records[id(o)] = ("shared", self.shared_allocs[-1])
                    shared += nbytes
                else:
                    local = _align_up(local, align)
                    label = o.attrs.get("name") or f"local allocation #{len(self.local_allocs)}"
                    self._local_off[id(o)] = local
                    self.local_allocs.append((label, local, nbytes, o.loc))
                    self._records[id(o)] = ("local", self.local_allocs[-1])
                    local += nbytes
        self.static_shared = shared
        self.dyn_offset = _align_up(shared, 16)
        self.local_bytes = _align_up(local, 16)

    def region(self, op: Op) -> tuple | None:
        """The allocation an access op's pointer is derived from (through ``ptr.add``/``ptr.cast``):
        ``("shared" | "local", (name, offset, nbytes, loc))``, ``("dynamic", None)`` for the dynamic shared
        memory, or None when the pointer does not lead back to one (a block argument, an integer cast to
        a pointer …).

        An access must stay inside that allocation: overflowing one shared array into its neighbour is a
        fault, where on a GPU it silently corrupts the neighbour (docs/interpreter.md)."""
        key = id(op)
        if key in self._regions:
            return self._regions[key]
        v = op.operands[1] if op.defn.name == "ptr.store" else op.operands[0]
        root = v.defining_op
        while root is not None and root.defn.name in ("ptr.add", "ptr.cast", "nvvm.mapa"):
            root = root.operands[0].defining_op
        r = None
        if root is not None:
            r = ("dynamic", None) if root.defn.name == "ptr.dynamic_shared" else self._records.get(id(root))
        self._regions[key] = r
        return r

    def shared_offset(self, op: Op) -> int:
        return self._shared_off[id(op)]

    def local_offset(self, op: Op) -> int:
        return self._local_off[id(op)]


def compile_kernel(kernel: Op) -> Program:
    """The (cached) compiled program of a ``gpu.func`` kernel."""
    if kernel.defn.name not in ("gpu.func", "func.func"):
        raise TypeError(f"run_kernel takes a gpu.func op, got {kernel.defn.name}")
    return cached_code("kernel", kernel, Program)


def _dims(x, what: str) -> tuple:
    if isinstance(x, (int, np.integer)):
        x = (int(x),)
    t = tuple(int(v) for v in x)
    if not 1 <= len(t) <= 3 or any(v < 1 for v in t):
        raise ValueError(f"{what} must be 1 to 3 positive ints, got {x!r}")
    return t + (1,) * (3 - len(t))


# launch limits every target here shares (CUDA compute capability >= 7, AMD CDNA)
_MAX_THREADS = 1024
_MAX_BLOCK = (1024, 1024, 64)
_MAX_GRID = (2**31 - 1, 65535, 65535)


def _check_limits(name: str, g: tuple, b: tuple) -> None:
    """A launch the GPU would refuse is an error here too."""
    if b[0] * b[1] * b[2] > _MAX_THREADS:
        raise InterpError(f"block {b} has {b[0] * b[1] * b[2]} threads; at most {_MAX_THREADS} per block", kernel=name)
    for what, dims, lim in (("block", b, _MAX_BLOCK), ("grid", g, _MAX_GRID)):
        if any(d > m for d, m in zip(dims, lim)):
            raise InterpError(f"{what} {dims} exceeds the limit {lim}", kernel=name)


def bind_arg(t, v, i: int, name: str | None, kernel: str | None = None):
    """The runtime value of kernel argument ``v`` for a parameter of type ``t``.

    Integers wrap to the type's width; floats round to the type (fp8 saturates); pointers are int
    byte addresses; a buffer resource is ``(base, num_records)``; a vector is a sequence of N values.
    """
    what = f"argument {i}" + (f" '{name}'" if name else "")
    try:
        if isinstance(t, PointerType):
            return np.asarray(int(_index(v)), np.int64)
        if isinstance(t, BufferRsrcType):
            base, nrec = v
            return np.array([[int(_index(base)), int(_index(nrec))]], np.int64)
        if isinstance(t, TmaDescType):  # the canonical 128-byte record (dialects/nvvm_sm90.py)
            a = np.ascontiguousarray(np.asarray(v)).reshape(-1).view(np.int64)
            if a.shape[0] != 16 or tma_desc_decode(a) is None:
                raise ValueError("expected a TMA descriptor made by nvvm.tma_make_desc (128 bytes)")
            return a.reshape(1, 16)
        if isinstance(t, VectorType):
            a = np.asarray(v).reshape(-1)
            if a.shape[0] != t.numel:
                raise ValueError(f"expected {t.numel} values for {t}, got {a.shape[0]}")
            return _scalar(t.elem, a).reshape(1, t.numel)
        return _scalar(t, np.asarray(v)).reshape(())
    except (TypeError, ValueError, OverflowError) as e:
        raise InterpError(f"{what} of type {t}: cannot use {v!r}: {e}", kernel=kernel) from None


def _index(v):
    if isinstance(v, (float, np.floating)):
        raise TypeError("a pointer must be an int byte address")
    return int(v)


def _scalar(t, a: np.ndarray) -> np.ndarray:
    if isinstance(t, FloatType):
        return float_round(a.astype(np.float64), t)
    dt = value_dtype(t)
    if dt == np.bool_:
        return a.astype(np.bool_)
    if a.dtype.kind == "f":
        raise TypeError(f"a float for an integer parameter of type {t}")
    w = dt.itemsize * 8
    u = np.asarray([int(x) & ((1 << w) - 1) for x in a.reshape(-1).tolist()], dtype=f"u{w // 8}")
    return u.view(dt).reshape(a.shape)


def run_kernel(
    kernel: Op,
    *,
    grid,
    block,
    args: Sequence,
    memory: Memory,
    smem_bytes: int = 0,
    warp_size: int = 32,
    arg_names: Sequence[str] | None = None,
    printer: Callable[[str], None] | None = None,
    max_lanes: int = _DEFAULT_MAX_LANES,
    check: bool = False,
    poison: int = 0xFF,
) -> None:
    """Run ``kernel`` over the whole grid.

    Args:
        kernel: a ``gpu.func`` op (its ``known_block_size`` attribute, if any, must match ``block``).
        grid, block: 1 to 3 positive ints (or an int).
        args: one per kernel parameter: int (pointers: byte address from ``memory.register``), float,
            numpy scalar, ``(base, num_records)`` for a buffer resource, a sequence for a vector.
        memory: the address space the pointers point into.
        smem_bytes: dynamic shared memory per block (after the static allocations).
        warp_size: lanes per warp (32 NVIDIA, 64 AMD CDNA).
        arg_names: parameter names for error messages.
        printer: receives each lane's ``gpu.printf`` text (default: written to stdout).
        max_lanes: lanes per batch (whole blocks; at least one block).
        check: verify every op's result dtype and shape against its IR type (slow; for tests).
        poison: byte value that fills shared and local memory at launch (0xFF: NaN floats, -1 ints).
    Raises:
        InterpError: a run-time fault (out-of-bounds or misaligned access, divergent barrier, …).
    """
    prog = compile_kernel(kernel)
    g = _dims(grid, "grid")
    b = _dims(block, "block")
    kbs = kernel.attrs.get("known_block_size")
    if kbs is not None and tuple(kbs) != b:
        raise InterpError(
            f"launched with block {b}, but the kernel was compiled for known_block_size {tuple(kbs)}",
            kernel=prog.name,
        )
    if warp_size < 1 or warp_size & (warp_size - 1):
        raise ValueError(f"warp_size must be a power of two, got {warp_size}")
    types = prog.main.arg_types
    if len(args) != len(types):
        raise InterpError(f"takes {len(types)} arguments, got {len(args)}", kernel=prog.name)
    names = list(arg_names) if arg_names is not None else [None] * len(types)
    vals = [
        bind_arg(t, v, i, names[i] if i < len(names) else None, prog.name) for i, (t, v) in enumerate(zip(types, args))
    ]
    _check_limits(prog.name, g, b)
    tpb = b[0] * b[1] * b[2]
    nblocks = g[0] * g[1] * g[2]
    per = 1 if prog.needs_tasks else max(1, min(nblocks, max_lanes // tpb))
    period = _cluster_period(prog, g)
    if period > 1:
        per = -(-per // period) * period  # whole clusters in every batch (batches start at multiples of it)
    S = _align_up(prog.dyn_offset + int(smem_bytes), 16) if (prog.static_shared or smem_bytes) else 0
    L = prog.local_bytes
    main = prog.main
    with np.errstate(all="ignore"):
        for first in range(0, nblocks, per):
            nb = min(per, nblocks - first)
            lanes = Lanes(
                prog,
                nb=nb,
                first=first,
                block=b,
                grid=g,
                warp_size=warp_size,
                memory=memory,
                args=vals,
                arg_names=names,
                printer=printer or default_printer,
                check=check,
            )
            lanes.S = S
            lanes.L = L
            if S:
                lanes.shared = Arena(np.full(nb * S, poison, np.uint8))
            if L:
                lanes.local = Arena(np.full(lanes.T * L, poison, np.uint8))
            assert main.body is not None  # compiled with the function
            if prog.needs_tasks:
                run_block_tasks(lanes, lambda tl: run_region(main.body, _entry_env(main, vals), tl))
            else:
                run_region(main.body, _entry_env(main, vals), lanes)


def _cluster_period(prog: Program, g: tuple) -> int:
    """Blocks per batch step that keep every cluster in one batch (1: no op reaches across blocks).

    Clusters are ``cx x cy x cz`` boxes of the grid; in linear block order a cluster of ``cx x 1 x 1`` is ``cx``
    consecutive blocks, one with ``cy > 1`` spans ``cy`` grid rows, one with ``cz > 1`` ``cz`` grid planes."""
    cd = cluster_dims(prog)
    if any(gd % c for gd, c in zip(g, cd)):
        raise InterpError(
            f"grid {g} is not a whole number of clusters {cd} (the GPU refuses the launch)", kernel=prog.name
        )
    if prog.cluster_op is None or cd == (1, 1, 1):
        return 1
    cx, cy, cz = cd
    if cz > 1:
        return g[0] * g[1] * cz
    return g[0] * cy if cy > 1 else cx


def _entry_env(main: FunctionCode, vals: list) -> list:
    env = list(main.proto)
    for s, v in zip(main.arg_slots, vals):
        env[s] = v
    return env
