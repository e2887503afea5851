"""Finding and linking NVIDIA's libdevice (``libdevice.10.bc``) for accurate math on NVPTX.

libdevice is LLVM bitcode with ``__nv_expf``, ``__nv_erff``, ``__nv_exp`` … (the CUDA math library).
It is searched, in order, at an explicit path, through ``cuda.pathfinder`` (pip wheels and the CUDA
toolkit it knows about), in triton's wheel (``triton/backends/nvidia/lib``), in ``nvidia-*`` wheels
on ``sys.path`` and under ``/usr/local/cuda``. When found, modules that call ``__nv_*`` functions
get it linked in; its functions are made internal so the optimizer drops the unused ones.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import sys

from .errors import CodegenError

__all__ = ["find_libdevice", "link_libdevice", "LIBDEVICE_NAME"]

LIBDEVICE_NAME = "libdevice.10.bc"
_FOUND: dict[str | None, str | None] = {}
_BYTES: dict[str, bytes] = {}


def _candidates(explicit: str | None):
    if explicit:
        yield explicit
        return
    try:
        import cuda.pathfinder as pf  # optional dependency (cuda-bindings' locator)

        finder = getattr(pf, "find_bitcode_lib", None)
        if finder is not None:
            yield finder("device")
    except Exception:  # noqa: BLE001 - pathfinder raises its own error types when nothing is found
        pass
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            yield os.path.join(root, "backends", "nvidia", "lib", LIBDEVICE_NAME)
    for entry in sys.path:
        yield from sorted(glob.glob(os.path.join(entry, "nvidia", "*", "nvvm", "libdevice", LIBDEVICE_NAME)))
        yield os.path.join(entry, "nvidia", "nvvm", "libdevice", LIBDEVICE_NAME)
    yield f"/usr/local/cuda/nvvm/libdevice/{LIBDEVICE_NAME}"
    yield from sorted(glob.glob(f"/usr/local/cuda-*/nvvm/libdevice/{LIBDEVICE_NAME}"), reverse=True)


def find_libdevice(explicit: str | None = None) -> str | None:
    """Path of libdevice.10.bc, or None when it is not installed (cached per explicit path)."""
    if explicit in _FOUND:
        return _FOUND[explicit]
    found = None
    for path in _candidates(explicit):
        if path and os.path.isfile(path):
            found = path
            break
    _FOUND[explicit] = found
    return found


def link_libdevice(module, path: str) -> None:
    """Link libdevice into an llvmlite module and internalize its functions."""
    import llvmlite.binding as llvm  # lazy: loading LLVM takes ~50 ms, and only compiling needs it

    data = _BYTES.get(path)
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
        _BYTES[path] = data
    own = {f.name for f in module.functions if not f.is_declaration}
    own_globals = {g.name for g in module.global_variables}
    try:
        lib = llvm.parse_bitcode(data)
    except RuntimeError as e:  # a corrupt or truncated file: never a silent fallback to approximations
        raise CodegenError(
            f"libdevice at {path} is not valid LLVM bitcode ({str(e).strip().splitlines()[0]})",
            fix="point FLYDSL_LIBDEVICE at an intact libdevice.10.bc (from the CUDA toolkit or the nvidia-cuda-nvcc "
            "wheel), or unset it to search the usual places",
        ) from None
    lib.triple = module.triple
    lib.data_layout = module.data_layout
    module.link_in(lib)
    for f in module.functions:
        if not f.is_declaration and f.name not in own:
            f.linkage = llvm.Linkage.internal
    for g in module.global_variables:
        if not g.is_declaration and g.name not in own_globals:
            g.linkage = llvm.Linkage.internal
