"""The torch tensor reader: ``_torch_args.cpp`` built against the installed torch, in the background.

A cached ``@flyc.jit`` call reads six attributes of each torch tensor argument through torch's Python
getters (~0.5 µs per tensor, most of the call's host time); the reader gets the same facts from the C++
tensor in one call (~0.1 µs). It is an optimization only: the generated entries use it where it is loaded
and read through Python otherwise (``FLYDSL_RUNTIME_TORCH_READER=0`` or ``FLYDSL_RUNTIME_NATIVE_LAUNCH=0``,
no C++ compiler, no torch headers, a failed build, or before the build is done).

The build (``c++`` with torch's headers and libraries, 10-20 s) runs once per machine, torch and Python
version, on a background thread started by the first call that wants the reader (:func:`reader_type`),
under a file lock so concurrent processes build it once; the shared object lives in
``$FLYDSL_RUNTIME_CACHE_DIR/native/`` next to the launch helper's. Functions registered with
:func:`when_ready` are called once it is loaded (the jit re-inlines the entries built before).
``python -m flydsl.runtime.torch_args`` builds it ahead of time and prints :func:`status`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
import threading
from pathlib import Path

from ..utils.env import env
from .native import _compiler, load_extension

__all__ = ["reader_type", "status", "wait", "when_ready"]

_SOURCE = Path(__file__).with_name("_torch_args.cpp")
_NAME = "_flydsl_torch_args"
_LOCK = threading.Lock()
_STATE: dict = {}  # "type", "status", "thread", "callbacks"
_DONE = threading.Event()


def reader_type():
    """The ``TensorReader`` type, or None (not built yet, unavailable, or off). The first call starts the
    background build where it is needed."""
    t = _STATE.get("type")
    if t is not None or "status" in _STATE:
        return t
    _start()
    return _STATE.get("type")


def status() -> str:
    """Whether tensor arguments are read in C++, and why not."""
    reader_type()
    if "status" in _STATE:
        return _STATE["status"]
    return "building" if "thread" in _STATE else "not started (torch is not imported)"


def wait(timeout: float | None = None):
    """Start the build if needed and wait for it (benchmarks, tests); the type or None."""
    reader_type()
    _DONE.wait(timeout)
    return _STATE.get("type")


def when_ready(fn) -> None:
    """Call ``fn()`` once the reader is loaded (at once if it is; never if it cannot be)."""
    with _LOCK:
        if _STATE.get("type") is None:
            if "status" not in _STATE:
                _STATE.setdefault("callbacks", []).append(fn)
            return
    fn()


def _start() -> None:
    with _LOCK:
        if "thread" in _STATE or "status" in _STATE:
            return
        if not env.runtime_native_launch or not env.runtime_torch_reader:
            off = "FLYDSL_RUNTIME_TORCH_READER=0" if env.runtime_native_launch else "FLYDSL_RUNTIME_NATIVE_LAUNCH=0"
            _finish(None, f"off ({off})")
            return
        if "torch" not in sys.modules:  # nothing to read yet; never import torch for it (asked again later)
            return
        th = threading.Thread(target=_build_and_load, name="flydsl-torch-args-build", daemon=True)
        _STATE["thread"] = th
    th.start()


def _finish(t, why: str) -> None:
    """Record the result (with ``_LOCK`` held); returns the callbacks to run."""
    _STATE["type"], _STATE["status"] = t, why
    _DONE.set()
    return _STATE.pop("callbacks", [])


def _build_and_load() -> None:
    try:
        t, why = _load()
    except Exception as e:  # noqa: BLE001 - any failure: the Python reads
        t, why = None, f"off ({type(e).__name__}: {e})"
    with _LOCK:
        callbacks = _finish(t, why)
    if t is not None:
        for fn in callbacks:
            try:
                fn()
            except Exception:  # noqa: BLE001, S110 - an upgrade that fails leaves the Python reads in place
                pass


def _load():
    import torch

    root = Path(torch.__file__).parent
    include, lib = root / "include", root / "lib"
    if not (include / "torch" / "csrc" / "autograd" / "python_variable.h").exists():
        return None, f"off (no torch C++ headers in {include})"
    abi = int(torch.compiled_with_cxx11_abi())
    src = _SOURCE.read_bytes()
    facts = [src, sys.version.encode(), sysconfig.get_platform().encode(), torch.__version__.encode(), bytes(root)]
    tag = hashlib.sha256(b"\0".join(facts)).hexdigest()[:16]
    cflags = ["-w", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", f"-I{include}",
              f"-I{include / 'torch' / 'csrc' / 'api' / 'include'}"]  # fmt: skip
    ldflags = [f"-L{lib}", "-ltorch_python", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{lib}"]
    folder = Path(env.runtime_cache_dir) / "native"
    folder.mkdir(parents=True, exist_ok=True)
    cxx = _compiler(("c++", "g++", "clang++"))
    with open(folder / f"{_NAME}.lock", "w") as lock:  # one builder per machine; the others wait, then load
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except (ImportError, OSError):
            pass
        for std in ("c++20", "c++17"):  # recent torch headers want C++20; an older compiler may not have it
            mod, where = load_extension(_NAME, tag, _SOURCE, cxx, [f"-std={std}", *cflags], ldflags,
                                        "no C++ compiler (c++, g++ or clang++) on PATH")  # fmt: skip
            if mod is not None or cxx is None:
                break
    if mod is None:
        return None, f"off ({where})"
    return mod.TensorReader, f"on ({where})"


if __name__ == "__main__":
    import torch  # noqa: F401 - the reader is for torch tensors

    wait()
    print(status(), flush=True)
    os._exit(0 if _STATE.get("type") is not None else 1)
