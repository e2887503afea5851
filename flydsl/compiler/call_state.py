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
:func:`launcher_entry` is such a ``func_exe`` for one of flydsl's compiled specializations: it reads the
slots back as the launcher's ABI values and launches, so a ``CallState`` built from the arguments'
``__c_abi_spec__`` runs the same launch the cached call does.
"""

from __future__ import annotations

import ctypes
import struct
import threading

__all__ = ["CallState", "build_call_state", "launcher_entry"]


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


def launcher_entry(run, slot_specs, layouts: dict):
    """A ``func_exe`` running flydsl's launcher ``run(*abi_values)`` (a specialization's raw launch: data
    pointers and the stream as ints) from the ``packed`` slots of ``slot_specs``. ``layouts`` maps a slot
    index to the ``struct`` format of its layout buffer (the dims and strides it carries). A NULL slot
    (``fill`` None) is the default stream, given as 0."""
    readers = []
    for i, (_a, ctype, fill) in enumerate(slot_specs):
        if i in layouts:
            readers.append((1, struct.Struct(layouts[i]).unpack_from, ctype))
        else:
            readers.append((0, None, ctype))

    def func_exe(packed):
        vals = []
        for i, (kind, unpack, ctype) in enumerate(readers):
            if kind:
                vals.extend(unpack((ctype).from_address(packed[i])))
            else:
                v = ctype.from_address(packed[i]).value
                vals.append(0 if v is None else v)
        return run(*vals)

    return func_exe


def build_call_state(args, func_exe, *, implicit_stream: bool = True) -> CallState:
    """A :class:`CallState` for host arguments ``args`` (each with ``__c_abi_spec__``, or a Python number:
    its run-time Numeric's), plus the NULL default-stream slot when the function takes no stream."""
    from .protocol import c_abi_spec

    specs = []
    for i, a in enumerate(args):
        for ctype, fill in c_abi_spec(a):
            specs.append((i, ctype, fill))
    if implicit_stream:
        specs.append((-1, ctypes.c_void_p, None))
    return CallState(specs, func_exe)
