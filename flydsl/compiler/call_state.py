"""FlyDSL's ``CallState``: a compiled host function called through its C ABI, with the argument storage
made once per thread and filled in place on every call.

``CallState(slot_specs, func_exe)``: ``slot_specs`` is a list of ``(arg_index, ctype, fill)``, one per
C parameter of the host function, in order — what each argument's ``__c_abi_spec__()`` gives
(:func:`flydsl.compiler.protocol.c_abi_spec`), with the index of the argument it comes from; a slot with
``fill`` None stays NULL (FlyDSL's implicit-stream slot: the default stream). ``cs(args)`` writes every
slot from ``args[arg_index]`` through its ``fill`` into a ctypes storage and calls ``func_exe(packed)``,
``packed`` being the ``void*[]`` of the storages' addresses (the C interface of a compiled function).

The dispatch is generated per slot list as straight-line code (no loop over slots, no allocation per
call); storages and the pointer array belong to the calling thread, so threads never share a buffer.
:func:`call_state` builds one for a flydsl specialization: its slots are the host function's parameters
and its ``func_exe`` reads them back as the launcher's raw values and runs the same launch plan a cached
call runs — a view of the cached call through FlyDSL's C ABI (the cached call itself passes the values
as Python ints and stays as fast as it was).
"""

from __future__ import annotations

import ctypes
import struct
import threading

from ..ir import PointerType
from ..runtime.args import DEFAULT_STREAM, TensorRef, tensor_abi_slots
from ..runtime.device import get_device
from .abi import param_types

__all__ = ["CallState", "call_state"]


def _storage(ctype):
    try:
        return ctype(0)
    except TypeError:  # arrays and structures take no initializer
        return ctype()


def _dispatch_factory(slot_specs):
    """``make(packed, storages, func_exe) -> dispatch(args)``: the fills of every slot, unrolled."""
    fills, lines, binds = [], [], []
    for i, (arg, _ctype, fill) in enumerate(slot_specs):
        if fill is None:
            continue  # a NULL slot: its storage keeps zero
        binds.append(f"    f{i}, s{i} = fills[{len(fills)}], storages[{i}]")
        lines.append(f"        f{i}(a[{int(arg)}], s{i})")
        fills.append(fill)
    src = "def make(packed, storages, func_exe, fills):\n" + "".join(b + "\n" for b in binds)
    src += "    def dispatch(a):\n" + "".join(ln + "\n" for ln in lines) + "        return func_exe(packed)\n"
    src += "    return dispatch\n"
    ns: dict = {}
    exec(compile(src, "<flydsl call state>", "exec"), ns)
    make, fills = ns["make"], tuple(fills)
    return lambda packed, storages, func_exe: make(packed, storages, func_exe, fills)


class CallState:
    """See the module docstring."""

    __slots__ = ("_func_exe", "_spec", "_tls", "_factory")

    def __init__(self, slot_specs, func_exe):
        self._spec = [(int(a), c, f) for a, c, f in slot_specs]
        self._func_exe = func_exe
        self._tls = threading.local()
        self._factory = _dispatch_factory(self._spec)

    @property
    def slot_specs(self) -> list:
        """The ``(arg_index, ctype, fill)`` slots, in the C parameter order."""
        return list(self._spec)

    def _new_dispatch(self):
        storages = [_storage(c) for _a, c, _f in self._spec]
        packed = (ctypes.c_void_p * max(1, len(storages)))(*[ctypes.addressof(s) for s in storages])
        self._tls.keep = (storages, packed)  # the dispatch closure holds them too; this names them for debugging
        return self._factory(packed, storages, self._func_exe)

    def __call__(self, args_tuple):
        dispatch = getattr(self._tls, "dispatch", None)
        if dispatch is None:
            dispatch = self._tls.dispatch = self._new_dispatch()
        return dispatch(args_tuple)


_IR_CTYPES = {"i1": ctypes.c_bool, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
              "i64": ctypes.c_int64, "f32": ctypes.c_float, "f64": ctypes.c_double, "f16": ctypes.c_uint16,
              "bf16": ctypes.c_uint16}  # fmt: skip


def _value_fill(conv, k: int):
    """The fill of the ``k``-th ABI value of an argument converted by ``conv`` (pointers as ints)."""

    def fill(a, s):
        vals: list = []
        conv(a, [], vals)
        v = vals[k]
        s.value = v.ptr if type(v) is TensorRef else (None if v is DEFAULT_STREAM else v)

    return fill


def _slots_of(part, conv, a) -> list:
    """The C slots ``[(ctype, fill, struct format or None)]`` of one argument whose key part is ``part``:
    a tensor as its pointer and layout buffer (as ``__c_abi_spec__``), any other value one slot per host
    parameter (:func:`flydsl.compiler.abi.param_types`)."""
    if type(part) is tuple and part[0] == "dyn_tensor":  # a raw tensor: every dim, every stride but the unit one
        n, u = part[2], part[3]
        dims, strides = tuple(range(n)), tuple(i for i in range(n) if i != u)
        bits = 64 if len(part) > 7 else 32
        fmt = "<" + "i" * len(dims) + ("q" if bits == 64 else "i") * len(strides)
        return [(c, f, None if i == 0 else fmt) for i, (c, f) in enumerate(tensor_abi_slots(dims, strides, bits))]
    if type(part) is tuple and part[0] == "tensor":
        tps = param_types(part)
        fmt = "<" + "".join("q" if str(t) == "i64" else "i" for t in tps[1:])
        return [(c, f, None if i == 0 else fmt) for i, (c, f) in enumerate(a.__c_abi_spec__())]
    out = []
    for k, t in enumerate(param_types(part)):
        ctype = ctypes.c_void_p if isinstance(t, PointerType) else _IR_CTYPES.get(str(t))
        if ctype is None:
            raise TypeError(f"no C type for a host parameter of type {t}")
        out.append((ctype, _value_fill(conv, k), None))
    return out


def call_state(jf, *args) -> CallState:
    """A :class:`CallState` that launches the specialization of ``jf`` (a ``@flyc.jit`` function) for
    ``args`` — compiled first if needed — through its C ABI: its slots are the host function's parameters
    (tensors as pointer + layout buffer, as ``__c_abi_spec__``; the default-stream slot NULL when ``jf``
    takes no stream), and its ``func_exe`` reads them back as raw values and runs the specialization's
    launcher (the launch plan a cached call runs). Call it with argument tuples of the same
    specialization; another shape of arguments needs another call state.

    Raises:
        RuntimeError: not on the CUDA device (the interpreter's launcher takes tensors, not addresses).
    """
    entry, vals, compile_only = jf._prepare(args, {})
    if compile_only:
        raise RuntimeError("call_state under COMPILE_ONLY=1: nothing can be launched")
    launcher = entry.launcher
    if launcher is None:
        launcher = entry.launcher = get_device().launcher(entry.artifact, entry.target)
    run = getattr(launcher, "run", None)
    if run is None:
        raise RuntimeError("a CallState launches raw addresses: it needs the CUDA device, not the CPU interpreter")
    slots = []  # (arg index, ctype, fill, struct format of a layout buffer or "stream")
    for i, (p, a) in enumerate(zip(jf._params, jf._bind(args, {}))):
        key: list = []
        p.conv(a, key, [])
        for part in key:
            stream = "stream" if part == "stream" else None
            slots += [(i, c, f, fmt or stream) for c, f, fmt in _slots_of(part, p.conv, a)]
    if jf._implicit_stream:
        slots.append((-1, ctypes.c_void_p, None, "stream"))
    torch_tensors = any(type(a).__module__.startswith("torch") for a in args)
    default_stream = launcher.default_stream(torch_tensors)
    # per slot: (layout buffer unpacker or None, ctype, a stream slot: NULL means the default stream)
    readers = [
        (struct.Struct(fmt).unpack_from if fmt and fmt != "stream" else None, c, fmt == "stream")
        for _i, c, _f, fmt in slots
    ]

    def func_exe(packed):
        raw = []
        for k, (unpack, ctype, stream) in enumerate(readers):
            if unpack is not None:
                raw.extend(unpack(ctype.from_address(packed[k])))
                continue
            v = ctype.from_address(packed[k]).value
            raw.append((default_stream() if stream else 0) if v is None else v)
        return run(*raw)

    return CallState([(i, c, f) for i, c, f, _fmt in slots], func_exe)
