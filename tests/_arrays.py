"""Arrays for kernel tests on any machine.

Inputs and references are numpy arrays (bf16 through ml_dtypes), which the CPU interpreter takes as they
are, so the kernel tests run on a machine with nothing but the package's own dependencies. ``device="cuda"``
moves data into torch CUDA tensors; torch is optional and only the gpu-marked tests get there (they skip
first where there is no GPU).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

DTYPES = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}


def _torch():
    return pytest.importorskip("torch", reason="GPU tests move data through torch CUDA tensors")


def randn(shape, dtype: str, seed: int, scale: float = 1.0, offset: float = 0.0) -> np.ndarray:
    """Normal samples (float32, then rounded once to ``dtype``)."""
    x = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) * np.float32(scale)
    return (x + np.float32(offset)).astype(DTYPES[dtype])


def rand(shape, dtype: str, seed: int) -> np.ndarray:
    """Uniform samples in [0, 1) rounded to ``dtype``."""
    return np.random.default_rng(seed).random(shape, dtype=np.float32).astype(DTYPES[dtype])


def _torch_dtype(dtype: np.dtype):
    torch = _torch()
    if dtype == DTYPES["bf16"]:
        return torch.bfloat16
    return torch.from_numpy(np.empty(0, dtype)).dtype


def to_device(a: np.ndarray, device: str, offset: int = 0):
    """A copy of ``a`` on ``device`` ("cpu": a numpy array; "cuda": a torch CUDA tensor). With ``offset``,
    the copy starts that many elements into a larger buffer (a start that is not 16-byte aligned)."""
    out = full(a.shape, 0, a.dtype, device, offset=offset)
    if device == "cpu":
        out[...] = a
        return out
    torch = _torch()
    a = np.ascontiguousarray(a)
    if a.dtype == DTYPES["bf16"]:
        src = torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    else:
        src = torch.from_numpy(a.copy())
    out.copy_(src.reshape(out.shape))
    return out


def full(shape, value, dtype, device: str, offset: int = 0):
    """An array filled with ``value`` on ``device``; with ``offset``, it starts that many elements into a
    larger buffer (a start that is not 16-byte aligned)."""
    n = int(np.prod(shape))
    dtype = np.dtype(DTYPES.get(dtype, dtype))
    if device == "cpu":
        return np.full(n + offset, value, dtype=dtype)[offset:].reshape(shape)
    torch = _torch()
    return torch.full((n + offset,), value, dtype=_torch_dtype(dtype), device=device)[offset:].view(*shape)


def to_numpy(t) -> np.ndarray:
    """The values of a numpy array or a torch tensor (any device) as a numpy array of the same dtype."""
    if isinstance(t, np.ndarray):
        return t
    torch = _torch()
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(DTYPES["bf16"])
    return t.numpy()


def sync(device: str) -> None:
    if device == "cuda":
        _torch().cuda.synchronize()
