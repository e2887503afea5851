"""The per-kernel launch function: one ``struct.pack_into`` and one ctypes call per launch.

``cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)`` takes
four pointer arguments; its ``CUlaunchConfig`` (grid, block, shared memory, stream) and the kernel's
parameter values live in one buffer built once per kernel, and ``kernelParams`` is a ``void*[]`` into that
buffer, also built once. A launch writes grid, block, smem, stream and the parameter values with one
``Struct.pack_into`` and calls the driver through one cached ctypes entry:

================================  =======================================================================
where the time goes (µs, 2-core   11-argument ``cuLaunchKernel`` through ctypes 1.5; 4-argument
CI machine, a no-op C stub)       ``cuLaunchKernelEx`` 0.4; ``pack_into`` of config + 7 params 0.35;
                                  7 ctypes slot writes 0.36; the per-kernel lock 0.1
================================  =======================================================================

(``benchmarks/launch_overhead.py`` measures the whole path.) The buffer is shared by every launch of the
kernel, so packing and the driver call run under the kernel's lock: the driver copies the parameter values
before ``cuLaunchKernelEx`` returns.

:func:`make_launch` generates ``launch(gx, gy, gz, bx, by, bz, smem, stream, *params)`` for one kernel;
parameter values must already be raw (pointers as ints, integers, floats); :func:`raw_params` turns the
public API's values (torch tensors, ``__cuda_array_interface__`` objects, ...) into raw ones.
"""

from __future__ import annotations

import ctypes
import struct
import threading

from ._cuda_params import _kind_of, bf16_bits, pointer_of

__all__ = ["make_launch", "raw_params", "CONFIG_FORMAT", "PDL_CONFIG_FORMAT", "LaunchLayout"]

# CUlaunchConfig: gridDimX..Z, blockDimX..Z, sharedMemBytes (7 x u32), pad, hStream, attrs (a pointer),
# numAttrs (u32), pad: 56 bytes. No attributes: attrs and numAttrs are the zero bytes of a 16-byte pad
# (``pack_into`` writes pads as zeros), two values fewer to pack per launch.
CONFIG_FORMAT = "7I4xQ16x"
CONFIG_SIZE = struct.calcsize("<" + CONFIG_FORMAT)
# the same with attrs and numAttrs written: a kernel launched with programmatic dependent launch (one
# attribute, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6 allowed: its 72-byte CUlaunchAttribute
# is id (u32) at 0, the value union at 8). Such a kernel may start before the previous kernel of the stream
# ends; it calls griddepcontrol.wait before it touches what that kernel writes.
PDL_CONFIG_FORMAT = "7I4xQQI4x"
PDL_ATTRIBUTE = (ctypes.c_uint8 * 72).from_buffer_copy(struct.pack("<I4xi60x", 6, 1))
assert struct.calcsize("<" + PDL_CONFIG_FORMAT) == CONFIG_SIZE

# kind -> (struct code, size, the Python expression that turns the raw value ``{}`` into what it packs; ``{P}``:
# the prefix of the generated function's names)
_KINDS = {
    "ptr": ("Q", 8, "{}"),
    "i1": ("?", 1, "{}"),
    "i8": ("B", 1, "({}) & 0xFF"),
    "i16": ("H", 2, "({}) & 0xFFFF"),
    "i32": ("I", 4, "({}) & 0xFFFFFFFF"),
    "i64": ("Q", 8, "({}) & 0xFFFFFFFFFFFFFFFF"),
    "f16": ("e", 2, "{}"),
    "bf16": ("H", 2, "{P}BF16({})"),
    "f32": ("f", 4, "{}"),
    "f64": ("d", 8, "{}"),
    "rsrc": ("QQ", 16, "*{P}RSRC({})"),
    "tmap": ("128s", 128, "{P}TMAP({})"),  # a TMA descriptor: the driver's CUtensorMap, by value (runtime/tma.py)
}
_ALIGN = {"rsrc": 8, "tmap": 64}
_UNSIGNED_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}  # kinds packed unsigned after a mask


def _tmap(x) -> bytes:
    from .tma import encoded

    return encoded(x)


def _rsrc(x) -> tuple[int, int]:
    base, nbytes = x
    return pointer_of(base), int(nbytes)


class LaunchLayout:
    """The byte layout of one kernel's launch buffer: the config at 0, each parameter at its natural
    alignment after it (``offsets``), and the ``struct`` format that writes them all (``fmt``)."""

    def __init__(self, kinds, pdl: bool = False):
        self.kinds = [_kind_of(k) for k in kinds]
        for k in self.kinds:
            if k not in _KINDS:
                raise ValueError(f"unsupported kernel parameter kind {k!r}; known: {', '.join(_KINDS)}")
        fmt, pos, offsets = ["<", PDL_CONFIG_FORMAT if pdl else CONFIG_FORMAT], CONFIG_SIZE, []
        for k in self.kinds:
            code, size, _ = _KINDS[k]
            align = _ALIGN.get(k, size)
            pad = -pos % align
            if pad:
                fmt.append(f"{pad}x")
            pos += pad
            offsets.append(pos)
            fmt.append(code)
            pos += size
        self.fmt = "".join(fmt)
        self.offsets = offsets
        self.size = max(pos, CONFIG_SIZE)
        assert struct.calcsize(self.fmt) == pos


def make_launch(name: str, func_handle: int, kinds, driver_call, on_error, smem_limit: list, native=None,
                native_entry=None, pdl: bool = False):  # fmt: skip
    """``launch(gx, gy, gz, bx, by, bz, smem, stream, *params)`` for one kernel.

    Args:
        name: the kernel's name (messages).
        func_handle: the ``CUfunction`` as an int.
        kinds: the parameter kinds (``"ptr"``, ``"i32"`` ...).
        driver_call: the ctypes ``cuLaunchKernelEx`` (four ``void*`` arguments, ``int`` result).
        on_error: ``on_error(err, grid, block, smem, stream, params)`` for a non-zero result (it retries
            after setting the context, or raises); also called with ``err=None`` when a launch asks for
            more dynamic shared memory than ``smem_limit[0]``, to raise the limit first.
        smem_limit: a one-item list: the dynamic shared memory the kernel may use now.
        native: launch through the native helper (:mod:`.native`): None where it is available and packs
            every parameter kind, True (required) or False (the Python path).
        native_entry: ``(address, flags)`` of the driver entry the native helper calls (flags as the
            helper's ``Launch``: 1 cuLaunchKernel's shape, 2 the GIL kept); default ``driver_call``'s
            address, released GIL.
        pdl: launch with programmatic stream serialization allowed (:data:`PDL_ATTRIBUTE` in the config).

    The function's ``inline(prefix, exprs)`` gives the same launch as source lines (and their globals) for
    a launch plan to paste in place of a call (one Python call and 8 + n argument passes fewer).
    """
    lay = LaunchLayout(kinds, pdl)
    if native is not False:
        helper = _native_launch(lay, func_handle, driver_call, native_entry, pdl)
        if helper is not None:
            return _native_function(name, lay, helper, driver_call, on_error, smem_limit)
        if native:
            other = sorted({k for k in lay.kinds if k not in _native_codes()})
            why = f"parameter kinds it does not pack: {', '.join(other)}" if other else _native_status()
            raise RuntimeError(f"kernel {name}: no native launch ({why})")
    # a u64 array: the buffer is 8-byte aligned, as the config's pointers and 8-byte parameters need; a TMA
    # descriptor parameter (64-byte aligned in the layout) gets a buffer whose start is 64-byte aligned too
    shift_room = 8 if "tmap" in lay.kinds else 0
    buf = (ctypes.c_uint64 * (-(-lay.size // 8) + shift_room))()
    shift = -ctypes.addressof(buf) % 64 if shift_room else 0
    base = ctypes.addressof(buf) + shift
    params = (ctypes.c_void_p * max(1, len(lay.kinds)))(*[base + off for off in lay.offsets])
    lock = threading.Lock()
    consts = {
        "PACK": struct.Struct(lay.fmt).pack_into,
        "BUF": buf,
        "CALL": driver_call,
        "CFG": ctypes.c_void_p(base),
        "FN": ctypes.c_void_p(func_handle),
        "PARAMS": ctypes.c_void_p(ctypes.addressof(params)),
        "LIMIT": smem_limit,
        "FAIL": on_error,
        "ACQ": lock.acquire,
        "REL": lock.release,
        "BF16": bf16_bits,
        "RSRC": _rsrc,
        "TMAP": _tmap,
        "ATTRS": ctypes.addressof(PDL_ATTRIBUTE),
    }

    def inline(prefix: str, exprs: list[str], ranges=None) -> tuple[list[str], dict]:
        """Source lines (4-space indent) launching with ``exprs`` = gx, gy, gz, bx, by, bz, smem, stream,
        *params (names or literals, each evaluated more than once), and the globals they use. ``ranges``
        (parallel to ``exprs``, None where unknown) lets an integer known to fit its slot unsigned be
        packed as it is."""
        n, ns = _names(prefix, consts)
        attrs = [n["ATTRS"], "1"] if pdl else []
        ps = exprs[8:]
        rs = list(ranges[8:]) if ranges is not None else [None] * len(ps)
        packed = [
            p if r is not None and k in _UNSIGNED_BITS and 0 <= r[0] and r[1] < (1 << _UNSIGNED_BITS[k])
            else _KINDS[k][2].replace("{P}", prefix).format(p)
            for k, p, r in zip(lay.kinds, ps, rs)
        ]  # fmt: skip
        call = [
            f"    {n['ACQ']}()",
            "    try:",
            f"        {n['PACK']}({n['BUF']}, {shift}, {', '.join([*exprs[:8], *attrs, *packed])})",
            f"        {prefix}err = {n['CALL']}({n['CFG']}, {n['FN']}, {n['PARAMS']}, None)",
            "    finally:",
            f"        {n['REL']}()",
        ]
        return _around(prefix, n, exprs, smem_limit, call), ns

    return _function(name, lay, inline, keepalive=(buf, params, PDL_ATTRIBUTE), native=False)


def _names(prefix: str, consts: dict) -> tuple[dict, dict]:
    """(constant -> its name under ``prefix``, the globals by those names)."""
    n = {k: f"{prefix}{k}" for k in consts}
    return n, {n[k]: v for k, v in consts.items()}


def _around(prefix: str, n: dict, exprs: list[str], smem_limit: list, call: list[str]) -> list[str]:
    """``call`` (lines setting ``<prefix>err``) between the shared-memory check and the error check."""
    smem, ps = exprs[6], exprs[8:]
    where = (
        f"({', '.join(exprs[0:3])}), ({', '.join(exprs[3:6])}), {smem}, {exprs[7]}, ({''.join(p + ', ' for p in ps)})"
    )
    lines = []
    if not (smem.isdigit() and int(smem) <= smem_limit[0]):  # a constant under the limit needs no check
        lines += [f"    if {smem} > {n['LIMIT']}[0]:", f"        {n['FAIL']}(None, {where})"]
    return lines + call + [f"    if {prefix}err:", f"        {n['FAIL']}({prefix}err, {where})"]


def _function(name: str, lay: LaunchLayout, inline, keepalive, native: bool):
    """The launch function of ``inline``'s lines, with ``source``, ``layout``, ``inline`` and ``native``."""
    head = ["gx", "gy", "gz", "bx", "by", "bz", "smem", "stream", *(f"p{i}" for i in range(len(lay.kinds)))]
    lines, ns = inline("", head)
    src = f"def launch({', '.join(head)}):\n" + "\n".join(lines) + "\n    return None\n"
    exec(compile(src, f"<flydsl launch {name}>", "exec"), ns)
    launch = ns["launch"]
    launch.source = src
    launch.layout = lay
    launch.inline = inline
    launch.native = native
    launch.keepalive = keepalive  # the addresses and entries baked into the function stay valid
    return launch


def _native_status() -> str:
    from .native import status

    return status()


def _native_codes() -> dict:
    from .native import CODES

    return CODES


def _native_launch(lay: LaunchLayout, func_handle: int, driver_call, native_entry=None, pdl: bool = False):
    """The helper's ``Launch`` for this kernel, or None (helper unavailable, a kind it does not pack, or a
    driver entry that is not a ctypes function); ``pdl``: its config carries :data:`PDL_ATTRIBUTE`."""
    from .native import CODES, launch_type

    if any(k not in CODES for k in lay.kinds):
        return None
    t = launch_type()
    if t is None:
        return None
    if native_entry is not None:
        addr, flags = native_entry
    else:
        try:
            addr, flags = ctypes.cast(driver_call, ctypes.c_void_p).value, 0
        except (TypeError, ctypes.ArgumentError):
            return None
    offsets = tuple(off - CONFIG_SIZE for off in lay.offsets)  # the helper's buffer holds the parameters only
    attrs = (ctypes.addressof(PDL_ATTRIBUTE), 1) if pdl else (0, 0)
    codes = "".join(CODES[k] for k in lay.kinds)
    return t(addr, func_handle, codes, offsets, lay.size - CONFIG_SIZE, *attrs, flags)


def _native_function(name: str, lay: LaunchLayout, helper, driver_call, on_error, smem_limit: list):
    """``launch(gx, gy, gz, bx, by, bz, smem, stream, *params)`` through the native helper (it packs on its
    own stack: no shared buffer, no lock), with the same ``inline`` as :func:`make_launch`'s."""
    consts = {"NL": helper, "LIMIT": smem_limit, "FAIL": on_error}

    def inline(prefix: str, exprs: list[str], ranges=None) -> tuple[list[str], dict]:
        n, ns = _names(prefix, consts)
        return _around(prefix, n, exprs, smem_limit, [f"    {prefix}err = {n['NL']}({', '.join(exprs)})"]), ns

    # the driver entry (a ctypes callback in tests) must outlive the helper that calls it
    return _function(name, lay, inline, keepalive=(helper, driver_call, PDL_ATTRIBUTE), native=True)


_RAW = {"ptr": pointer_of}


def raw_params(kinds, args) -> list:
    """The public API's parameter values as raw ones: pointers from tensors and device buffers."""
    return [_RAW[k](a) if k in _RAW and type(a) is not int else a for k, a in zip(kinds, args)]
