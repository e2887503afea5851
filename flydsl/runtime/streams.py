"""Stream handles: torch's current stream as a raw ``CUstream`` int, resolved cheaply per call.

``torch.cuda.current_stream()`` builds a Python ``Stream`` object (and checks lazy initialization) on every
call; torch's private ``_cuda_getCurrentRawStream(device)`` returns the handle directly. The function is
chosen once (the public call where torch lacks the private one) and cached.
"""

from __future__ import annotations

__all__ = ["current_torch_stream", "torch_stream_getter", "stream_handle"]


def torch_stream_getter(device: int):
    """A callable returning the raw handle of torch's current stream on ``device``: torch's C function
    bound to the device (one C call, no Python frame) where torch has it."""
    import functools

    import torch

    get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if get is not None:
        return functools.partial(get, device)
    return lambda: torch.cuda.current_stream(device).cuda_stream


def _choose():
    import torch

    c = torch._C
    if hasattr(c, "_cuda_getCurrentRawStream") and hasattr(c, "_cuda_getDevice"):
        get, dev = c._cuda_getCurrentRawStream, c._cuda_getDevice
        return lambda: get(dev())
    return lambda: torch.cuda.current_stream().cuda_stream


_FN: list = []


def current_torch_stream() -> int:
    """The raw handle of torch's current stream on the current device."""
    if not _FN:
        _FN.append(_choose())
    return _FN[0]()


def stream_handle(value) -> int:
    """The raw handle of ``None`` (0), an int, an object with ``.cuda_stream`` (torch) or ``.handle``, or
    one with ``__cuda_stream__`` (cuda.core)."""
    if value is None:
        return 0
    if type(value) is int:
        return value
    h = getattr(value, "cuda_stream", None)
    if h is None:
        h = getattr(value, "handle", None)
    if isinstance(h, int) and not isinstance(h, bool):
        return h
    proto = getattr(value, "__cuda_stream__", None)
    if proto is not None:
        return int(proto()[1])
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    raise TypeError(f"cannot use {type(value).__name__} as a stream; pass None, an int handle or a torch stream")
