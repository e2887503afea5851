"""The disk cache: compiled specializations stored by a canonical key, written atomically, checked on read.

Key (:func:`disk_key`): sha256 of the canonical JSON (:func:`canonical`) of

* the compiler's own source (every ``.py`` under ``flydsl/``, hashed once per process) and version,
* the function's dependencies (:mod:`.deps`: its source, the kernels/helpers it reaches, user
  modules, compile-time global/closure values),
* the specialization (the in-memory key: argument key parts, Constexpr values, the environment
  variables that change code — ``env.CODEGEN_AFFECTING`` and the target/device selectors),
* the target and the compile hints,
* the content of the ``.py`` files under ``FLYDSL_EXTRA_SOURCE_DIRS`` (code the walk cannot see).

Never ``hash()``, ``id()``, reprs with addresses, mtimes or pickles: two processes computing the key of
the same program agree. An entry is one JSON file (module IR text in generic form, host function name,
kernel names and parameter names, PTX, metadata) with a sha256 checksum of its content; it is written
to a temporary file and ``os.replace``-d, so readers see either nothing or a whole entry. A file that
does not parse or whose checksum does not match is deleted and the specialization rebuilt.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import tempfile
import types

import flydsl

from ..ir import Type
from ..layout import VALUE_TYPES as LAYOUT_VALUE_TYPES
from ..utils.env import env
from .frames import FLYDSL_DIR, warn_at_user

__all__ = ["canonical", "compiler_hash", "disk_key", "DiskCache", "FORMAT", "warn_unusable"]

FORMAT = 1


def canonical(x):
    """A JSON-compatible, process-independent form of a key (raises ``TypeError`` for anything else)."""
    t = type(x)
    if x is None or t is str:
        return x
    if t is bool:
        return ["bool", x]
    if t is int:
        return ["int", str(x)]
    if t is float:
        return ["float", x.hex()]
    if t is bytes:
        return ["bytes", x.hex()]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return ["namedtuple", f"{t.__module__}.{t.__qualname__}", [canonical(v) for v in x]]
    if t in (tuple, list):
        return ["seq", [canonical(v) for v in x]]
    if t is dict:
        return ["dict", sorted([canonical(k), canonical(v)] for k, v in x.items())]
    if isinstance(x, enum.Enum):
        return ["enum", f"{t.__module__}.{t.__qualname__}", x.name]
    if isinstance(x, Type):
        return ["irtype", str(x)]
    if isinstance(x, type):
        return ["type", f"{x.__module__}.{x.__qualname__}"]
    if isinstance(x, types.CodeType):
        return ["code", x.co_code.hex(), canonical(tuple(_code_const(c) for c in x.co_consts)), list(x.co_names)]
    if isinstance(x, types.FunctionType):
        return ["function", canonical(x.__code__), canonical(x.__defaults__)]
    if getattr(x, "_is_numeric", False) and x.is_static():
        return ["numeric", canonical(type(x)), canonical(x.value)]
    if t in LAYOUT_VALUE_TYPES and x.is_static:  # a static layout, tile, swizzle …: its repr is its value
        return ["layout", f"{t.__module__}.{t.__qualname__}", repr(x)]
    raise TypeError(f"no canonical form for {t.__qualname__} in a cache key")


def _code_const(c):
    return c if isinstance(c, (types.CodeType, str, bytes, int, float, bool, type(None), tuple)) else repr(type(c))


def digest(obj) -> str:
    text = json.dumps(canonical(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


_COMPILER_HASH: list[str] = []


def compiler_hash() -> str:
    """sha256 over every ``.py`` file of the flydsl package (relative path + content), once per process."""
    if not _COMPILER_HASH:
        h = hashlib.sha256(f"flydsl {flydsl.__version__}\n".encode())
        files = []
        for root, dirs, names in os.walk(FLYDSL_DIR):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            files.extend(os.path.join(root, n) for n in names if n.endswith(".py"))
        for path in sorted(files):
            rel = os.path.relpath(path, FLYDSL_DIR).replace(os.sep, "/")
            with open(path, "rb") as f:
                h.update(f"{rel}\0{hashlib.sha256(f.read()).hexdigest()}\n".encode())
        _COMPILER_HASH.append(h.hexdigest())
    return _COMPILER_HASH[0]


def deps_digest(deps) -> str:
    """The digest of a function's dependencies (:class:`flydsl.compiler.deps.Deps`)."""
    return digest((tuple(deps.sources), tuple(deps.modules), tuple((label, canonical(v)) for label, v in deps.values)))


def extra_sources_digest() -> str:
    """sha256 over the ``.py`` files under the ``FLYDSL_EXTRA_SOURCE_DIRS`` folders (path + content), read at
    every compile: code the dependency walk cannot see (``importlib``, ``exec``) still keys the cache."""
    dirs = [d for d in (env.extra_source_dirs or "").split(os.pathsep) if d]
    if not dirs:
        return ""
    h = hashlib.sha256()
    for top in dirs:
        for root, subdirs, names in os.walk(os.path.abspath(os.path.expanduser(top))):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for n in sorted(names):
                if n.endswith(".py"):
                    path = os.path.join(root, n)
                    try:
                        with open(path, "rb") as f:
                            h.update(f"{path}\0{hashlib.sha256(f.read()).hexdigest()}\n".encode())
                    except OSError:
                        h.update(f"{path}\0<unreadable>\n".encode())
    return h.hexdigest()


def disk_key(deps_hex: str, spec_key, target: str, hints: dict) -> str:
    """The hex key of one specialization (see the module docstring)."""
    parts = (FORMAT, compiler_hash(), deps_hex, canonical(spec_key), target, canonical(hints), extra_sources_digest())
    return digest(parts)


class DiskCache:
    """One folder of entries: ``<FLYDSL_RUNTIME_CACHE_DIR>/<function name>_<deps digest prefix>/<key>.json``."""

    def __init__(self, name: str, deps_hex: str, root: str | None = None):
        root = root or env.runtime_cache_dir
        self.manager_key = deps_hex
        self.folder = os.path.join(root, f"{name}_{deps_hex[:16]}")

    def path(self, key: str) -> str:
        return os.path.join(self.folder, f"{key}.json")

    def load(self, key: str) -> dict | None:
        """The entry's content, or None (missing; corrupt or truncated entries are deleted)."""
        p = self.path(key)
        try:
            with open(p, "rb") as f:
                raw = f.read()
        except OSError:
            return None
        try:
            entry = json.loads(raw.decode("utf-8"))
            body, check = entry["body"], entry["checksum"]
            ok = entry.get("format") == FORMAT and check == _checksum(body)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            ok = False
        if not ok:
            _remove(p)
            return None
        return body

    def store(self, key: str, body: dict) -> str | None:
        """Write an entry atomically (temporary file + ``os.replace``). A folder that cannot be written (a
        file in the way, read-only, deleted meanwhile) warns once and the entry is not stored: the call
        runs uncached rather than failing."""
        text = json.dumps({"format": FORMAT, "checksum": _checksum(body), "body": body}, sort_keys=True)
        try:
            os.makedirs(self.folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.folder)
        except OSError as e:
            warn_unusable("disk cache", "FLYDSL_RUNTIME_CACHE_DIR", self.folder, e)
            return None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.path(key))
        except OSError as e:
            _remove(tmp)
            warn_unusable("disk cache", "FLYDSL_RUNTIME_CACHE_DIR", self.folder, e)
            return None
        except BaseException:
            _remove(tmp)
            raise
        return self.path(key)

    def size(self) -> int:
        try:
            return sum(1 for n in os.listdir(self.folder) if n.endswith(".json") and not n.startswith("."))
        except OSError:
            return 0


_WARNED: set = set()


def warn_unusable(what: str, var: str, folder: str, e: OSError) -> None:
    """Warn once per folder that ``what`` (the disk cache, the IR dumps) is skipped because ``folder`` cannot
    be written: an unusable folder never fails a call."""
    if (what, folder) in _WARNED:
        return
    _WARNED.add((what, folder))
    text = (
        f"flydsl: {folder} cannot be written ({e.strerror or e}); running without the {what} "
        f"(set {var} to a writable folder)"
    )
    warn_at_user(text)


def _checksum(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
