"""Launcher arguments as the runtime sees them: tensors (torch, numpy, DLPack) read into :class:`TensorRef`
facts (data pointer, numpy element type, shape, strides in elements, device), and the static-layout
:class:`TensorAdaptor` of ``flyc.from_torch_tensor``.

What a value means to the compiled code — its specialization key part and its host-ABI values — is the
compiler's business (:mod:`flydsl.compiler.specialize`); this module knows no DSL type. A tensor's pointer
slot among the ABI values holds its :class:`TensorRef` until the device resolves it (a CUDA pointer, or an
interpreter address for the CPU device); :data:`DEFAULT_STREAM` stands for the stream the device chooses.
"""

from __future__ import annotations

from ctypes import addressof as _addressof
from ctypes import c_byte, c_void_p
from ctypes import c_char as _c_char
from struct import Struct

import numpy as np

from .extent import check_extent

__all__ = [
    "TensorRef",
    "TensorAdaptor",
    "from_torch_tensor",
    "from_dlpack",
    "torch_ref",
    "numpy_ref",
    "dlpack_ref",
    "ArgError",
    "NP_DTYPES",
    "torch_dtype_map",
    "DEFAULT_STREAM",
    "alignment_of",
    "unit_axis",
    "check_i32",
    "I32_MAX",
    "tensor_abi_slots",
]

I32_MAX = (1 << 31) - 1


class ArgError(Exception):
    """A conversion failure: ``diag`` names the catalogue entry, ``fields`` fill its templates."""

    def __init__(self, diag: str, **fields):
        self.diag = diag
        self.fields = fields
        super().__init__(f"{diag}: {fields}")


DEFAULT_STREAM = object()  # placeholder for the implicit stream, resolved by the device


def _np_dtypes() -> frozenset:
    import ml_dtypes

    names = ("float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
             "uint64", "bool")  # fmt: skip
    extra = (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz,
             ml_dtypes.float8_e5m2fnuz)  # fmt: skip
    return frozenset([np.dtype(n) for n in names] + [np.dtype(t) for t in extra])


NP_DTYPES: frozenset = _np_dtypes()
"""The numpy element types a tensor argument may have (ml_dtypes for bf16 and the fp8 formats)."""

_TORCH_DTYPES: dict | None = None


def torch_dtype_map() -> dict:
    """torch dtype → numpy dtype (ml_dtypes for bf16/fp8; empty when torch is not installed)."""
    global _TORCH_DTYPES
    if _TORCH_DTYPES is None:
        try:
            import torch
        except ImportError:
            _TORCH_DTYPES = {}
            return _TORCH_DTYPES
        import ml_dtypes

        names = ("float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "bool")  # fmt: skip
        m = {getattr(torch, n): np.dtype(n) for n in names if hasattr(torch, n)}
        for n in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
            if hasattr(torch, n):
                m[getattr(torch, n)] = np.dtype(getattr(ml_dtypes, n))
        _TORCH_DTYPES = m
    return _TORCH_DTYPES


def alignment_of(ptr: int) -> int:
    """Largest power of two (capped at 16) dividing the address; 16 for a null pointer."""
    if ptr == 0:
        return 16
    return min(16, ptr & -ptr)


class TensorRef:
    """A tensor argument of one call: the object, its numpy element type, geometry (strides in elements)
    and where it lives."""

    __slots__ = ("obj", "dtype", "ptr", "shape", "strides", "is_cuda", "name")

    def __init__(self, obj, dtype: np.dtype, ptr: int, shape, strides, is_cuda: bool):
        self.obj = obj
        self.dtype = dtype
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.is_cuda = is_cuda
        self.name = ""

    def numpy_view(self) -> np.ndarray:
        """A zero-copy numpy view of a CPU tensor (ml_dtypes for bf16/fp8)."""
        o = self.obj
        if isinstance(o, np.ndarray):
            return o
        return _torch_numpy(o, self.dtype)


def _torch_numpy(t, dtype: np.dtype) -> np.ndarray:
    import torch

    t = t.detach()
    try:
        a = t.numpy()
        if a.dtype == dtype:
            return a
    except (TypeError, RuntimeError):
        pass
    carrier = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
    return t.view(carrier).numpy().view(dtype)


# ---------------------------------------------------------------------------------------------------
# tensors
# ---------------------------------------------------------------------------------------------------


def unit_axis(shape, strides) -> int:
    """The mode that stays unit-stride in a layout-dynamic tensor: the first of stride 1 and size > 1, else
    the first of stride 1 (size-1 modes: their stride never matters), else the first of size 0 or 1; -1 if
    none (FlyDSL picks the lowest-index unit-stride mode too)."""
    first = -1
    for i, st in enumerate(strides):
        if st == 1:
            if shape[i] > 1:
                return i
            if first < 0:
                first = i
    if first >= 0:
        return first
    for i, sz in enumerate(shape):
        if sz <= 1:
            return i
    return -1


def check_i32(shape, strides) -> None:
    """Raise ``TENSOR_TOO_LARGE`` for a dimension or stride outside 32 bits (the ABI passes them as i32)."""
    if shape and max(shape) > I32_MAX:
        raise ArgError("TENSOR_TOO_LARGE", what="dimension", value=max(shape))
    if strides and (max(strides) > I32_MAX or min(strides) < -I32_MAX):
        raise ArgError("TENSOR_TOO_LARGE", what="stride", value=max(strides))


def torch_ref(t) -> TensorRef:
    dt = (_TORCH_DTYPES or torch_dtype_map()).get(t.dtype)
    if dt is None:
        raise ArgError("UNSUPPORTED_ARG", got=f"a torch tensor of dtype {t.dtype}")
    ref = TensorRef(t, dt, t.data_ptr(), t.shape, t.stride(), t.is_cuda)
    return ref if t._base is None else _inside(ref)  # only a view can reach past its storage


def _inside(ref: TensorRef) -> TensorRef:
    """``ref`` if its view stays inside its allocation (FLY223 otherwise: never a read of other memory)."""
    bad = check_extent(ref)
    if bad is not None:
        lo, hi, start, end = bad
        raise ArgError(
            "TENSOR_OUTSIDE_STORAGE", shape=tuple(ref.shape), strides=tuple(ref.strides), lo=lo - start,
            hi=hi - start, size=end - start,
        )  # fmt: skip
    return ref


def numpy_ref(a: np.ndarray) -> TensorRef:
    dt = a.dtype
    if dt not in NP_DTYPES:
        raise ArgError("UNSUPPORTED_ARG", got=f"a numpy array of dtype {a.dtype}")
    isz = a.itemsize
    bs = a.strides
    if len(bs) == 1 and bs[0] == isz:
        strides = (1,)
    elif a.size == 0:  # no element is ever addressed: numpy reports any strides (often 0), torch row-major ones
        strides = _row_major(a.shape)
    else:
        strides = tuple([s // isz for s in bs])
        if any([s % isz for s in bs]):
            raise ArgError("UNSUPPORTED_ARG", got="a numpy array whose strides are not multiples of its item size")
    try:  # the cheapest way to the data pointer (writable, contiguous buffers)
        ptr = _addressof(_c_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):
        ptr = a.ctypes.data
    ref = TensorRef(a, dt, ptr, a.shape, strides, False)
    return ref if a.base is None else _inside(ref)


def _row_major(shape) -> tuple:
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= max(d, 1)
    return tuple(reversed(out))


def dlpack_ref(x) -> TensorRef:
    try:
        import torch

        return torch_ref(torch.from_dlpack(x))
    except ImportError:
        return numpy_ref(np.from_dlpack(x))


class TensorAdaptor:
    """``flyc.from_torch_tensor(t)`` / ``flyc.from_dlpack(t)``: a tensor argument with a static layout.

    Shapes and strides are compile-time constants (part of the cache key) until marked dynamic with
    :meth:`mark_layout_dynamic`, :meth:`mark_shape_dynamic` or :meth:`mark_stride_dynamic`. Each dynamic
    dimension or stride carries its own divisibility (a power of two the run-time value is a multiple of;
    checked at every call, FLY207): ``shape_div[i]`` / ``stride_div[i]`` is None for a static leaf.
    Dynamic dimensions are 32-bit; dynamic strides are 64-bit (FlyDSL's default: the kernel computes
    offsets with them in 64 bits) or, with ``use_32bit_stride=True``, 32-bit (a larger one is
    ``TENSOR_TOO_LARGE``). Raw tensor arguments (not adapted) pass 32-bit strides where they fit.
    """

    __slots__ = ("ref", "shape_div", "stride_div", "use_32bit_stride")

    def __init__(self, ref: TensorRef, use_32bit_stride: bool = False):
        self.ref = ref
        self.use_32bit_stride = bool(use_32bit_stride)
        n = len(ref.shape)
        self.shape_div: list = [None] * n
        self.stride_div: list = [None] * n

    def mark_layout_dynamic(self, leading_dim: int | None = None, divisibility: int = 1) -> TensorAdaptor:
        """Every dim and every stride dynamic (multiples of ``divisibility``), except the stride of
        ``leading_dim`` (default: the unit-stride mode, :func:`unit_axis`), which stays 1.

        Raises:
            ValueError: ``leading_dim``'s stride is not 1, or a divisibility that is not a power of two.
        """
        r = self.ref
        _check_div(divisibility)
        lead = unit_axis(r.shape, r.strides) if leading_dim is None else leading_dim % max(1, len(r.shape))
        if r.shape and r.strides[lead] != 1:
            raise ValueError(f"mark_layout_dynamic: dimension {lead} has stride {r.strides[lead]}, not 1")
        self.shape_div = [divisibility] * len(r.shape)
        self.stride_div = [None if i == lead else divisibility for i in range(len(r.shape))]
        return self

    def mark_shape_dynamic(self, dims=None, divisibility=1) -> TensorAdaptor:
        """Make dims ``dims`` (an int, a list, or None for all) dynamic; ``divisibility`` is one power of
        two for all, or a list with one per dim (the last entry wins for a repeated dim). Strides are
        untouched; marks accumulate."""
        for d, div in _marks(dims, divisibility, len(self.ref.shape), "mark_shape_dynamic"):
            self.shape_div[d] = div
        return self

    def mark_stride_dynamic(self, dims=None, divisibility=1) -> TensorAdaptor:
        """As :meth:`mark_shape_dynamic`, for strides."""
        for d, div in _marks(dims, divisibility, len(self.ref.shape), "mark_stride_dynamic"):
            self.stride_div[d] = div
        return self

    @property
    def shape_dyn_indices(self) -> tuple:
        """The dynamic dims, ascending."""
        return tuple(i for i, d in enumerate(self.shape_div) if d is not None)

    @property
    def stride_dyn_indices(self) -> tuple:
        """The dims whose stride is dynamic, ascending."""
        return tuple(i for i, d in enumerate(self.stride_div) if d is not None)

    @property
    def divisibility(self) -> int:
        """What every dynamic leaf is known to be a multiple of (the smallest declared; 1 when none)."""
        divs = [d for d in self.shape_div + self.stride_div if d is not None]
        return min(divs) if divs else 1

    def __cache_signature__(self) -> tuple:
        """What of this argument the compiled code depends on — element type, pointer alignment, device, the
        dynamic strides' width, then the shape and the strides with each dynamic leaf as ``-divisibility``
        — never the data."""
        r = self.ref
        shape = tuple(s if d is None else -d for s, d in zip(r.shape, self.shape_div))
        strides = tuple(s if d is None else -d for s, d in zip(r.strides, self.stride_div))
        return ("tensor", str(r.dtype), alignment_of(r.ptr), r.is_cuda, self.stride_bits, shape, strides)

    @property
    def stride_bits(self) -> int:
        """The width of a dynamic stride in the host ABI and the kernel: 32 or 64."""
        return 32 if self.use_32bit_stride else 64

    def __c_abi_spec__(self) -> list:
        """FlyDSL's C-ABI protocol: how the compiled host function receives this argument, as
        ``[(ctype, fill), ...]`` slots (``fill(arg, storage)`` writes a live argument — this adaptor,
        or a raw torch tensor or numpy array of the same layout — into a storage of ``ctype``):

        * the data pointer, a ``c_void_p``;
        * when any leaf is dynamic, the layout buffer: the dynamic dims (i32, ascending) then the dynamic
          strides (i64, or i32 with ``use_32bit_stride``), little-endian and unpadded — the host
          parameters that follow the pointer, in their order and widths (``flydsl.compiler.abi``).
        """
        return tensor_abi_slots(self.shape_dyn_indices, self.stride_dyn_indices, self.stride_bits)

    def __repr__(self) -> str:
        return f"TensorAdaptor({self.ref.dtype}, shape={self.ref.shape}, strides={self.ref.strides})"


def _live_ref(a) -> TensorRef:
    """The :class:`TensorRef` of a live tensor argument: an adaptor's own, else the object read now."""
    ref = getattr(a, "ref", None)
    if type(ref) is TensorRef:
        return ref
    if isinstance(a, np.ndarray):
        return numpy_ref(a)
    if type(a).__module__.startswith("torch"):
        return torch_ref(a)
    return dlpack_ref(a)


def _ptr_fill(a, s):
    s.value = _live_ref(a).ptr


def tensor_abi_slots(dims: tuple, strides: tuple, stride_bits: int) -> list:
    """The C-ABI slots of a tensor whose dims ``dims`` and strides ``strides`` are dynamic (see
    :meth:`TensorAdaptor.__c_abi_spec__`)."""
    if not dims and not strides:
        return [(c_void_p, _ptr_fill)]
    codec = Struct("<" + "i" * len(dims) + ("q" if stride_bits == 64 else "i") * len(strides))
    terms = [f"sh[{d}]" for d in dims] + [f"st[{d}]" for d in strides]
    src = f"def fill(a, s):\n    r = _ref(a)\n    sh, st = r.shape, r.strides\n    _pack(s, 0, {', '.join(terms)})\n"
    ns = {"_ref": _live_ref, "_pack": codec.pack_into}
    exec(compile(src, "<flydsl layout buffer fill>", "exec"), ns)  # one pack_into of the dynamic leaves
    return [(c_void_p, _ptr_fill), (c_byte * codec.size, ns["fill"])]


def _check_div(div) -> int:
    if type(div) is not int or div < 1 or div & (div - 1):
        raise ValueError(f"divisibility must be a power of two (1, 2, 4, ...), got {div!r}")
    return div


def _marks(dims, divisibility, n: int, what: str) -> list:
    """``[(dim, divisibility)]`` of a ``mark_*_dynamic`` call, checked (FlyDSL's rules)."""
    if dims is None:
        dims = list(range(n))
    if isinstance(dims, int):
        if not isinstance(divisibility, int):
            raise ValueError(f"{what}: for one dim the divisibility must be an int, got {divisibility!r}")
        dims = [dims]
    dims = list(dims)
    divs = list(divisibility) if isinstance(divisibility, (list, tuple)) else [divisibility] * len(dims)
    if len(divs) != len(dims):
        raise ValueError(f"{what}: dims and divisibility must have equal length, got {len(dims)} and {len(divs)}")
    out = []
    for d, div in zip(dims, divs):
        if type(d) is not int or not -n <= d < n:
            raise ValueError(f"{what}: dim {d!r} is out of range for a tensor of rank {n}")
        out.append((d % n, _check_div(div)))
    return out


def from_torch_tensor(t, *, use_32bit_stride: bool = False) -> TensorAdaptor:
    """A torch tensor as an argument with a static layout (FlyDSL's ``flyc.from_torch_tensor``)."""
    return TensorAdaptor(torch_ref(t), use_32bit_stride)


def from_dlpack(x, *, use_32bit_stride: bool = False) -> TensorAdaptor:
    """Any DLPack object (torch, numpy, cupy …) as an argument with a static layout."""
    if isinstance(x, np.ndarray):
        return TensorAdaptor(numpy_ref(x), use_32bit_stride)
    if type(x).__module__.startswith("torch"):
        return TensorAdaptor(torch_ref(x), use_32bit_stride)
    return TensorAdaptor(dlpack_ref(x), use_32bit_stride)
