"""The native launch helper: ``_native_launch.c`` built on first use, or None.

A launch through ctypes costs about a microsecond of Python per call (``struct.pack_into`` of the config
and the parameters, a per-kernel lock around the shared buffer, the ctypes call); the helper's ``Launch``
object packs on the C stack and calls the driver in one C call (~0.15 µs). It is an optimization only:
every launch has the pure-Python path (:func:`flydsl.runtime._cuda_launch.make_launch`), taken when the
helper cannot be built (no C compiler or no Python headers), when ``FLYDSL_RUNTIME_NATIVE_LAUNCH=0``, or
for parameter kinds it does not pack (buffer resources, TMA descriptors).

The shared object is built once per machine (``cc -O2 -shared``, under a second) into
``$FLYDSL_RUNTIME_CACHE_DIR/native/``, named by a digest of the C source, the Python version and the
platform, written atomically (concurrent processes may build it at the same time), then loaded.
:func:`status` says which path launches and why.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

from ..utils.env import env

__all__ = ["launch_type", "same_items", "status", "CODES"]

_SOURCE = Path(__file__).with_name("_native_launch.c")
_NAME = "_flydsl_launch"
_LOCK = threading.Lock()
_STATE: dict = {}

# kernel parameter kind -> the helper's code for it (the struct-module code of the Python path; "q": a
# 64-bit integer masked to 64 bits)
CODES = {"ptr": "Q", "i64": "q", "i32": "I", "i16": "H", "i8": "B", "i1": "?", "f32": "f", "f64": "d", "f16": "e",
         "bf16": "b"}  # fmt: skip


def status() -> str:
    """Which launch path kernels use in this process, and why (for benchmarks and bug reports)."""
    launch_type()
    return _STATE.get("status", "not loaded")


def launch_type():
    """The helper's ``Launch`` type, or None (the ctypes path launches). Built and loaded once."""
    if "type" in _STATE:
        return _STATE["type"]
    with _LOCK:
        if "type" not in _STATE:
            t, why = (None, "off (FLYDSL_RUNTIME_NATIVE_LAUNCH=0)")
            if env.runtime_native_launch:
                try:
                    t, why = _load()
                except Exception as e:  # noqa: BLE001 - any failure: the Python path
                    t, why = None, f"off ({type(e).__name__}: {e})"
            _STATE["type"], _STATE["status"] = t, why
    return _STATE["type"]


def same_items():
    """The helper's ``same_items(d, keys, values)`` (``d.get(k) == v`` for every pair, in one C call), or
    None without the helper."""
    launch_type()
    return _STATE.get("same_items")


def _compiler(names=("cc", "gcc", "clang")) -> str | None:
    for cc in names:
        path = shutil.which(cc)
        if path:
            return path
    return None


def _load():
    src = _SOURCE.read_bytes()
    tag = hashlib.sha256(src + sys.version.encode() + sysconfig.get_platform().encode()).hexdigest()[:16]
    mod, where = load_extension(_NAME, tag, _SOURCE, _compiler(), [], [], "no C compiler (cc, gcc or clang) on PATH")
    if mod is None:
        return None, f"off ({where})"
    _STATE["same_items"] = mod.same_items
    return mod.Launch, f"on ({where})"


def load_extension(name: str, tag: str, source: Path, cc: str | None, cflags: list, ldflags: list, no_cc: str):
    """``(module, where)``: the extension module ``name`` compiled from ``source`` with ``cc`` (``cflags``
    before the source, ``ldflags`` after it), built once into ``$FLYDSL_RUNTIME_CACHE_DIR/native/`` as
    ``<name>-<tag><suffix>`` and loaded; or ``(None, why not)`` (``no_cc`` when ``cc`` is None)."""
    folder = Path(env.runtime_cache_dir) / "native"
    path = folder / f"{name}-{tag}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    built = ""
    if not path.exists():
        why = no_cc if cc is None else _build(folder, path, [cc, *cflags, str(source)], ldflags)
        if why:
            return None, why
        built = ", built now"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, f"{path}{built}"


def _build(folder: Path, path: Path, compile_cmd: list, ldflags: list) -> str:
    """Build the shared object ``path`` with ``compile_cmd`` (the compiler, its flags, the source) and
    ``ldflags``; an empty string on success, else why not."""
    include = sysconfig.get_paths().get("include")
    if not include or not os.path.exists(os.path.join(include, "Python.h")):
        return f"no Python headers (Python.h) in {include}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot create {folder}: {e}"
    fd, tmp = tempfile.mkstemp(suffix=path.suffix, dir=folder)
    os.close(fd)
    cc = compile_cmd[0]
    cmd = [cc, "-O2", "-shared", "-fPIC", f"-I{include}", *compile_cmd[1:], "-o", tmp, *ldflags]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            return f"{os.path.basename(cc)} failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}"
        os.replace(tmp, path)  # atomic: a concurrent builder's file is the same bytes
        return ""
    except (OSError, subprocess.SubprocessError) as e:
        return f"{os.path.basename(cc)} failed: {e}"
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
