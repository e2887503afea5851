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

from ._cuda_params import _kind_of, pointer_of

__all__ = ["make_launch", "raw_params", "CONFIG_FORMAT", "LaunchLayout"]

# CUlaunchConfig: gridDimX..Z, blockDimX..Z, sharedMemBytes (7 x u32), pad, hStream, attrs (pointers),
# numAttrs (u32), pad: 56 bytes.
CONFIG_FORMAT = "7I4xQQI4x"
CONFIG_SIZE = struct.calcsize("<" + CONFIG_FORMAT)

# kind -> (struct code, size, the Python expression that turns the raw value ``{}`` into what it packs)
_KINDS = {
    "ptr": ("Q", 8, "{}"),
    "i1": ("?", 1, "{}"),
    "i8": ("B", 1, "({}) & 0xFF"),
    "i16": ("H", 2, "({}) & 0xFFFF"),
    "i32": ("I", 4, "({}) & 0xFFFFFFFF"),
    "i64": ("Q", 8, "({}) & 0xFFFFFFFFFFFFFFFF"),
    "f16": ("e", 2, "{}"),
    "bf16": ("H", 2, "BF16({})"),
    "f32": ("f", 4, "{}"),
    "f64": ("d", 8, "{}"),
    "rsrc": ("QQ", 16, "*RSRC({})"),
    "tmap": ("128s", 128, "TMAP({})"),  # a TMA descriptor: the driver's CUtensorMap, by value (runtime/tma.py)
}
_ALIGN = {"rsrc": 8, "tmap": 64}


def _bf16_bits(x) -> int:
    import ml_dtypes
    import numpy as np

    return int(np.array(x, dtype=ml_dtypes.bfloat16).view(np.uint16))


def _tmap(x) -> bytes:
    from .tma import encoded

    return encoded(x)


def _rsrc(x) -> tuple[int, int]:
    base, nbytes = x
    return pointer_of(base), int(nbytes)


class LaunchLayout:
    """The byte layout of one kernel's launch buffer: the config at 0, each parameter at its natural
    alignment after it (``offsets``), and the ``struct`` format that writes them all (``fmt``)."""

    def __init__(self, kinds):
        self.kinds = [_kind_of(k) for k in kinds]
        for k in self.kinds:
            if k not in _KINDS:
                raise ValueError(f"unsupported kernel parameter kind {k!r}; known: {', '.join(_KINDS)}")
        fmt, pos, offsets = ["<", CONFIG_FORMAT], CONFIG_SIZE, []
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


def make_launch(name: str, func_handle: int, kinds, driver_call, on_error, smem_limit: list):
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

    The function's ``inline(prefix, exprs)`` gives the same launch as source lines (and their globals) for
    a launch plan to paste in place of a call (one Python call and 8 + n argument passes fewer).
    """
    lay = LaunchLayout(kinds)
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
    }

    def inline(prefix: str, exprs: list[str]) -> tuple[list[str], dict]:
        """Source lines (4-space indent) launching with ``exprs`` = gx, gy, gz, bx, by, bz, smem, stream,
        *params (names or literals, each evaluated more than once), and the globals they use."""
        n = {k: f"{prefix}{k}" for k in consts}
        ns = {n[k]: v for k, v in consts.items()}
        ns.update(BF16=_bf16_bits, RSRC=_rsrc, TMAP=_tmap)
        grid, block, smem, stream, ps = exprs[0:3], exprs[3:6], exprs[6], exprs[7], exprs[8:]
        packed = [_KINDS[k][2].format(p) for k, p in zip(lay.kinds, ps)]
        where = f"({', '.join(grid)}), ({', '.join(block)}), {smem}, {stream}, ({''.join(p + ', ' for p in ps)})"
        lines = []
        if not (smem.isdigit() and int(smem) <= smem_limit[0]):  # a constant under the limit needs no check
            lines += [f"    if {smem} > {n['LIMIT']}[0]:", f"        {n['FAIL']}(None, {where})"]
        lines += [
            f"    {n['ACQ']}()",
            "    try:",
            f"        {n['PACK']}({n['BUF']}, {shift}, {', '.join([*grid, *block, smem, stream, '0', '0', *packed])})",
            f"        err = {n['CALL']}({n['CFG']}, {n['FN']}, {n['PARAMS']}, None)",
            "    finally:",
            f"        {n['REL']}()",
            "    if err:",
            f"        {n['FAIL']}(err, {where})",
        ]
        return lines, ns

    ps = [f"p{i}" for i in range(len(lay.kinds))]
    head = ["gx", "gy", "gz", "bx", "by", "bz", "smem", "stream", *ps]
    lines, ns = inline("", head)
    src = f"def launch({', '.join(head)}):\n" + "\n".join(lines) + "\n    return None\n"
    exec(compile(src, f"<launch {name}>", "exec"), ns)
    launch = ns["launch"]
    launch.source = src
    launch.layout = lay
    launch.inline = inline
    launch.keepalive = (buf, params)  # the addresses baked into the function stay valid
    return launch


_RAW = {"ptr": pointer_of}


def raw_params(kinds, args) -> list:
    """The public API's parameter values as raw ones: pointers from tensors and device buffers."""
    return [_RAW[k](a) if k in _RAW and type(a) is not int else a for k, a in zip(kinds, args)]
