"""``fx.gpu``: thread/block indices, barriers and fences, warp shuffles and votes, device printf, and
shared memory.

``thread_idx``/``block_idx``/``block_dim``/``grid_dim`` have ``.x .y .z`` (run-time ``Int32``) and unpack
(``bx, by, _ = fx.block_idx``). When the compiler knows the kernel's block size
(:func:`set_known_block_size`), ``block_dim.x`` folds to a compile-time Int32 and ``thread_idx`` of a
dimension of size 1 folds to 0.

Static shared memory is counted per kernel trace: :func:`alloc_shared` checks the running total against
the target's ``smem_static_max``. The known block size and the count live in the trace context
(:mod:`flydsl.expr._sem.context`); the compiler sets both when a kernel trace starts.
"""

from __future__ import annotations

import contextlib

from ..dialects import fly as _fly
from ..dialects import gpu as _g
from ..dialects import ptr as _p
from ..ir import AddressSpace, PointerType
from ._sem.context import context, current_kernel, current_target
from ._sem.numeric import Boolean, Int32, Numeric, resolve_dtype, shuffle_i32
from ._sem.pointer import Pointer
from ._sem.vector import Vector, as_vector_operand

__all__ = [
    "thread_idx", "block_idx", "block_dim", "grid_dim", "thread_id", "block_id", "lane_id", "barrier",
    "fence", "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down", "shuffle_idx", "vote_any", "vote_all",
    "vote_ballot", "warp_size", "num_warp_threads", "printf", "alloc_shared", "get_dyn_shared",
    "shared_usage", "reset_shared_usage", "SharedMemoryError", "known_block_size", "set_known_block_size",
    "known_block_size_scope",
]  # fmt: skip

_DIM_INDEX = {"x": 0, "y": 1, "z": 2}


def known_block_size():
    """The block size ``(x, y, z)`` of the kernel being traced: its declared ``known_block_size`` or the
    block of a launch with constant dimensions (also seen from jit helpers the kernel calls).

    Raises:
        RuntimeError: no compile-time block size — outside a kernel, or a kernel launched with a block
            computed at run time and no declared size (FlyDSL raises the same).
    """
    size = context().known_block
    if size is None:
        where = (
            "the kernel is launched with a block size computed at run time"
            if current_kernel() is not None
            else "not inside a kernel being traced"
        )
        raise RuntimeError(
            f"fx.known_block_size(): no compile-time block size ({where}); declare one with "
            "@flyc.kernel(known_block_size=[x, y, z]) or launch with constant block dimensions"
        )
    return size


def set_known_block_size(size):
    """Install the static block size of the kernel being traced (None: unknown); returns the previous.

    Raises:
        ValueError: not three positive ints.
    """
    if size is not None:
        size = tuple(int(s) for s in size)
        if len(size) != 3 or any(s <= 0 for s in size):
            raise ValueError(f"a known block size is three positive ints, got {size}")
    ctx = context()
    prev = ctx.known_block
    ctx.known_block = size
    return prev


@contextlib.contextmanager
def known_block_size_scope(size):
    """``with known_block_size_scope((256, 1, 1)):`` — :func:`set_known_block_size` for a block of code."""
    prev = set_known_block_size(size)
    try:
        yield
    finally:
        context().known_block = prev


def _check_dim(dim: str) -> str:
    if dim not in _DIM_INDEX:
        raise ValueError(f"dimension must be 'x', 'y' or 'z', got {dim!r}")
    return dim


class _Dim3:
    """``.x .y .z`` of one special register family; iterable, so ``x, y, z = fx.thread_idx`` works."""

    __slots__ = ("_op", "_name")

    def __init__(self, op, name: str):
        self._op, self._name = op, name

    def _get(self, dim: str) -> Int32:
        known = context().known_block
        if known is not None:
            n = known[_DIM_INDEX[dim]]
            if self._name == "block_dim":
                return Int32(n)
            if self._name == "thread_idx" and n == 1:
                return Int32(0)
        return Int32._make(self._op(dimension=dim))

    @property
    def x(self) -> Int32:
        """Dimension x (run-time Int32)."""
        return self._get("x")

    @property
    def y(self) -> Int32:
        """Dimension y (run-time Int32)."""
        return self._get("y")

    @property
    def z(self) -> Int32:
        """Dimension z (run-time Int32)."""
        return self._get("z")

    def __iter__(self):
        return iter((self.x, self.y, self.z))

    def __len__(self) -> int:
        return 3

    def __getitem__(self, i: int) -> Int32:
        if not isinstance(i, int) or not -3 <= i < 3:
            raise IndexError(f"{self._name} has 3 dimensions (x, y, z), got index {i!r}")
        return self._get("xyz"[i])

    def __repr__(self) -> str:
        return f"fx.{self._name}"


thread_idx = _Dim3(_g.thread_id, "thread_idx")
block_idx = _Dim3(_g.block_id, "block_idx")
block_dim = _Dim3(_g.block_dim, "block_dim")
grid_dim = _Dim3(_g.grid_dim, "grid_dim")


def thread_id(dim: str = "x") -> Int32:
    """The thread's index in its block along ``dim`` (``"x"``, ``"y"``, ``"z"``)."""
    return thread_idx._get(_check_dim(dim))


def block_id(dim: str = "x") -> Int32:
    """The block's index in the grid along ``dim``."""
    return block_idx._get(_check_dim(dim))


def lane_id() -> Int32:
    """The thread's lane within its warp (run-time Int32)."""
    return Int32._make(_g.lane_id())


def warp_size() -> int:
    """Threads per warp of the target being compiled for (32 on NVIDIA, 64 on CDNA)."""
    return current_target().warp_size


num_warp_threads = warp_size


def barrier() -> None:
    """Block-wide barrier: every thread of the block waits here; shared memory writes before it are
    visible after it."""
    _g.barrier()


def fence(scope: str = "gpu") -> None:
    """Memory fence at ``scope`` (``"cta"``, ``"gpu"``, ``"sys"``).

    Raises:
        ValueError: an unknown scope.
    """
    if scope not in _g.FENCE_SCOPES:
        raise ValueError(f"fence scope must be one of {', '.join(_g.FENCE_SCOPES)}, got {scope!r}")
    _g.fence(scope=scope)


# -- warp shuffles and votes -----------------------------------------------------------------------


def shuffle(value, offset, width=None, mode: str = "xor"):
    """Read ``value`` from another lane of the warp (``gpu.shuffle``).

    Args:
        value: a scalar (any width: 8-bit and Boolean values travel as 32 bits) or a Vector (vectors of
            more than 64 bits are shuffled lane by lane).
        offset: the lane offset (xor mask, up/down distance, or source lane for ``"idx"``).
        width: lanes per shuffle segment (default: the target's warp size).
        mode: ``"xor"`` (lane ^ offset), ``"up"`` (lane - offset), ``"down"`` (lane + offset), ``"idx"``.

    Returns:
        A value of the same type (a plain Vector for Vectors). A compile-time scalar is the same in every
        lane, so it is returned as is.

    Raises:
        ValueError: an unknown mode.
    """
    if mode not in _g.SHUFFLE_MODES:
        raise ValueError(f"invalid shuffle mode {mode!r}; expected one of ({', '.join(_g.SHUFFLE_MODES)})")
    v = as_vector_operand(value)
    if v is None:
        raise TypeError(f"cannot shuffle {value!r}")
    w = warp_size() if width is None else width
    if isinstance(v, Numeric):
        return v.shuffle(offset, w, mode)
    if v.type.bitwidth in (16, 32, 64) and v.dtype is not Boolean:
        r = _g.shuffle(v.ir_value(), shuffle_i32(offset, "offset"), shuffle_i32(w, "width"), mode=mode)
        return Vector._make(r, v.shape, v.dtype)
    lanes = [x.shuffle(offset, w, mode) for x in v]
    return Vector.from_elements(lanes, v.dtype).reshape(v.shape)


def shuffle_xor(value, offset, width=None):
    """``shuffle`` in ``"xor"`` mode: lane ``k`` reads lane ``k ^ offset``."""
    return shuffle(value, offset, width, "xor")


def shuffle_up(value, offset, width=None):
    """``shuffle`` in ``"up"`` mode: lane ``k`` reads lane ``k - offset`` (its own value below 0)."""
    return shuffle(value, offset, width, "up")


def shuffle_down(value, offset, width=None):
    """``shuffle`` in ``"down"`` mode: lane ``k`` reads lane ``k + offset`` (its own value past the end)."""
    return shuffle(value, offset, width, "down")


def shuffle_idx(value, lane, width=None):
    """``shuffle`` in ``"idx"`` mode: every lane reads lane ``lane``."""
    return shuffle(value, lane, width, "idx")


def _pred(p) -> Boolean:
    v = as_vector_operand(p)
    if not isinstance(v, Numeric):
        raise TypeError(f"a vote predicate must be a scalar, got {p!r}")
    return v.to(Boolean)


def vote_any(pred) -> Boolean:
    """Whether ``pred`` holds in any active lane of the warp."""
    b = _pred(pred)
    return b if b.is_static() else Boolean._make(_g.vote(b.value, mode="any"))


def vote_all(pred) -> Boolean:
    """Whether ``pred`` holds in every active lane of the warp."""
    b = _pred(pred)
    return b if b.is_static() else Boolean._make(_g.vote(b.value, mode="all"))


def vote_ballot(pred) -> Int32:
    """The mask of active lanes where ``pred`` holds (bit ``k`` for lane ``k``; 32 lanes)."""
    b = _pred(pred)
    if b.is_static() and not b.value:
        return Int32(0)
    return Int32._make(_g.vote(b.ir_value(), mode="ballot"))


# -- printf ----------------------------------------------------------------------------------------


def printf(fmt="", *args, format_str: str | None = None) -> None:
    """Print with ``{}`` placeholders (FlyDSL's ``fly.print``): ``fx.printf("tid={} x={:.3f}", tid, x)``.

    Each placeholder takes one argument and may carry a Python format spec (``{:x}``, ``{:>8.3f}``); a bare
    ``{}`` prints an integer in decimal and a float with two decimals, as FlyDSL's. DSL values and Python
    numbers are printed when the code runs, as the C printf the spec maps to (a Vector as ``[a, b, …]``);
    strings and other Python objects are written into the text at trace time. ``{{`` and ``}}`` print braces.
    Each call prints one line: a newline is added unless the format ends with one. Without a format
    (``fx.printf(x, y)``, or FlyDSL's ``format_str=``) the values are printed separated by spaces. In a kernel
    it prints on the device (``gpu.printf``), in a ``@flyc.jit`` function on the host at every call
    (``vector.print``); ``fly-layout-lowering`` makes that choice (flydsl/passes/fly_lowering.py).

    Raises:
        ValueError: a placeholder count that differs from the argument count, a malformed field, or a spec
            with no C printf equivalent for its value (``flydsl.dialects.gpu.PrintfFormatError``).
    """
    if not isinstance(fmt, str):
        args = (fmt, *args)
        fmt = format_str if format_str is not None else " ".join(["{}"] * len(args))
    lits, specs = _g.parse_printf_format(fmt)
    if len(specs) != len(args):
        raise ValueError(f"printf format has {len(specs)} placeholders but {len(args)} arguments were given")
    out, operands = [_escape(lits[0])], []
    for a, spec, tail in zip(args, specs, lits[1:]):
        v = a.to_int() if isinstance(a, Pointer) else as_vector_operand(a)
        if v is None or isinstance(a, str):
            out.append(_escape(format(a, spec)))  # a Python value: written into the text now
        else:
            out.append("{:" + spec + "}" if spec else "{}")
            operands.append(v.ir_value())
        out.append(_escape(tail))
    text = "".join(out)
    _g.check_printf(text, [o.type for o in operands])  # the device prints it: say so here, at the user's line
    _fly.print_(*operands, format=text)


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


# -- shared memory ---------------------------------------------------------------------------------


class SharedMemoryError(ValueError):
    """A kernel's static shared memory exceeds the target's limit."""


def reset_shared_usage() -> None:
    """Start counting static shared memory from zero (the compiler does it per kernel trace)."""
    context().smem_used = 0


def shared_usage() -> int:
    """Bytes of static shared memory allocated in the current trace (alignment padding included)."""
    return context().smem_used


def alloc_shared(dtype, count, align: int = 16) -> Pointer:
    """Static shared memory for ``count`` elements of ``dtype`` (``ptr.shared_alloc``).

    Args:
        dtype: the element type. count: a compile-time element count. align: a power of two (bytes).

    Returns:
        A shared-memory Pointer to the first element.

    Raises:
        SharedMemoryError: the kernel's static total would exceed the target's ``smem_static_max``.
        ValueError: a non-positive count or a bad alignment. TypeError: a run-time count.
    """
    d = resolve_dtype(dtype)
    if isinstance(count, Numeric):
        count = count.value if count.is_static() else count.__index__()
    count = int(count)
    if count <= 0:
        raise ValueError(f"alloc_shared needs a positive element count, got {count}")
    if align <= 0 or align & (align - 1):
        raise ValueError(f"align must be a power of two, got {align}")
    nbytes = count * max(1, d.width // 8)
    ctx = context()
    used = ctx.smem_used
    start = (used + align - 1) // align * align
    end = start + nbytes
    tgt = ctx.target
    if end > tgt.smem_static_max:
        raise SharedMemoryError(
            f"static shared memory: alloc_shared({d.__name__}, {count}) needs {nbytes} bytes (align {align}); "
            f"with the {used} bytes this kernel already allocated that makes {end} bytes, over the "
            f"{tgt.smem_static_max}-byte static limit of {tgt.arch}. Allocate less, or use fx.get_dyn_shared() "
            "with a dynamic shared-memory size at launch (up to "
            f"{tgt.smem_dynamic_max} bytes)"
        )
    ctx.smem_used = end
    t = PointerType(d.ir_type, AddressSpace.SHARED)
    return Pointer._make(_p.shared_alloc(count=count, align=align, result_types=[t]), d)


def get_dyn_shared(dtype=None) -> Pointer:
    """The base of the dynamic shared memory sized at launch (``ptr.dynamic_shared``), as a pointer to
    ``dtype`` (default: bytes, Int8)."""
    p = Pointer(_p.dynamic_shared())
    return p if dtype is None else p.recast(dtype)
