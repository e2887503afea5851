"""The one registry of environment variables. Nothing else in flydsl reads ``os.environ``.

Each variable is a typed entry with a default and a docstring; ``env.<attr>`` reads the current value
(variables are read at access time, so tests can monkeypatch the environment). ``describe()`` lists
them all (the README's table is generated from it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["env", "EnvVar", "EnvError", "describe", "CODEGEN_AFFECTING", "JIT_KEY_VARS", "snapshot", "snapshot_reader"]

_TRUE = frozenset(("1", "true", "yes", "on"))
_FALSE = frozenset(("0", "false", "no", "off"))
_LIBDEVICE_MAGIC = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")  # LLVM bitcode, raw or in its wrapper


class EnvError(ValueError):
    """A variable set to a value it cannot take (catalogued as FLY403: ``diag`` and ``fields``)."""

    diag = "ENV_INVALID"

    def __init__(self, var: EnvVar, raw: str, why: str):
        self.fields = {"var": var.name, "value": raw, "why": why, "expected": var.expected()}
        super().__init__(f"environment variable {var.name}={raw!r} is not valid: {why}")


def _bitcode_file(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        return f"cannot read it ({e.strerror or e})"
    if head not in _LIBDEVICE_MAGIC:
        return "it is not an LLVM bitcode file (libdevice.10.bc)"
    return None


@dataclass(frozen=True)
class EnvVar:
    """One variable: ``kind`` is ``bool``, ``int`` (within ``lo``..``hi``), ``str`` (one of ``choices`` when
    given, case-insensitive), ``path`` (a folder or file to create) or ``file`` (an existing file, checked
    by ``check``). Every read validates: a value outside the variable's domain raises :class:`EnvError`,
    never falls back to the default silently."""

    name: str
    kind: str
    default: Any
    doc: str
    choices: tuple = ()
    lo: int | None = None
    hi: int | None = None
    check: Callable[[str], str | None] | None = None

    def expected(self) -> str:
        if self.kind == "bool":
            return "1/0 (or true/false, yes/no, on/off)"
        if self.kind == "int":
            if self.lo is not None and self.hi is not None:
                return f"an integer from {self.lo} to {self.hi}"
            return "an integer" + ("" if self.lo is None else f" >= {self.lo}")
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "file":
            return "the path of an existing file"
        return "a path" if self.kind == "path" else "a string"

    def read(self) -> Any:
        raw = os.environ.get(self.name)
        if raw is None or raw == "":
            return self.default
        if self.kind == "bool":
            v = raw.strip().lower()
            if v in _TRUE or v in _FALSE:
                return v in _TRUE
            raise EnvError(self, raw, "not a boolean")
        if self.kind == "int":
            try:
                n = int(raw.strip())
            except ValueError:
                raise EnvError(self, raw, "not an integer") from None
            if (self.lo is not None and n < self.lo) or (self.hi is not None and n > self.hi):
                raise EnvError(self, raw, "out of range")
            return n
        if self.kind in ("path", "file"):
            path = os.path.expanduser(raw)
            if self.kind == "file":
                if not os.path.isfile(path):
                    raise EnvError(self, raw, "no such file")
                why = self.check(path) if self.check is not None else None
                if why is not None:
                    raise EnvError(self, raw, why)
            return path
        if self.choices:
            for c in self.choices:
                if raw.strip().lower() == c.lower():
                    return c
            raise EnvError(self, raw, "not a known value")
        return raw


_VARS = [
    EnvVar("FLYDSL_DUMP_IR", "bool", False, "write every compile stage to FLYDSL_DUMP_DIR/<kernel>/"),
    EnvVar("FLYDSL_DUMP_DIR", "path", os.path.expanduser("~/.flydsl/debug"), "root folder of IR dumps"),
    EnvVar("COMPILE_ONLY", "bool", False, "compile (and cache) without running; the jit call returns None"),
    EnvVar("ARCH", "str", "", "target architecture override (e.g. sm_90a, sm_80, gfx942)"),
    EnvVar("FLYDSL_GPU_ARCH", "str", "", "target architecture (ARCH takes precedence)"),
    EnvVar("FLYDSL_RUNTIME_KIND", "str", "", "force the device: 'cuda' or 'cpu' (default: cuda if present)"),
    EnvVar("FLYDSL_RUNTIME_CACHE_DIR", "path", os.path.expanduser("~/.flydsl/cache"), "disk cache folder"),
    EnvVar("FLYDSL_RUNTIME_ENABLE_CACHE", "bool", True, "use the disk cache (the in-memory cache is always on)"),
    EnvVar(
        "FLYDSL_RUNTIME_NATIVE_LAUNCH",
        "bool",
        True,
        "launch kernels through a small C helper built on first use (cc + Python headers; 0: the ctypes path)",
    ),
    EnvVar(
        "FLYDSL_RUNTIME_TORCH_READER",
        "bool",
        True,
        "cached calls read torch tensor arguments through a C++ helper built in the background on first use "
        "(c++ + torch's headers; 0, or FLYDSL_RUNTIME_NATIVE_LAUNCH=0: through torch's Python attributes)",
    ),
    EnvVar(
        "FLYDSL_COMPILE_OPT_LEVEL",
        "int",
        None,
        "LLVM middle-end optimization level 0-3 (default: chosen by kernel size, see docs/codegen.md)",
        lo=0,
        hi=3,
    ),  # fmt: skip
    EnvVar("FLYDSL_DEBUG_ENABLE_DEBUG_INFO", "bool", False, "emit line tables in the generated code"),
    EnvVar("FLYDSL_DEBUG_ENABLE_VERIFIER", "bool", True, "verify the IR after tracing and after each pass"),
    EnvVar("FLYDSL_DEBUG_SHOW_STACKTRACE", "bool", False, "show the full Python traceback of DSL errors"),
    EnvVar("FLYDSL_DEBUG_PRINT_ORIGIN_IR", "bool", False, "print the traced IR before the passes"),
    EnvVar("FLYDSL_DEBUG_PRINT_AFTER_ALL", "bool", False, "print the IR after every pass"),
    EnvVar(
        "FLYDSL_DEBUG_LOG_LEVEL",
        "str",
        "WARNING",
        "level of the `flydsl` Python logger (FlyDSL's name; flydsl logs nothing yet)",
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
    ),  # fmt: skip
    EnvVar(
        "FLYDSL_TRACE_MAX_OPS",
        "int",
        250_000,
        "stop tracing with an error after this many ops (or compile-time `while` iterations)",
        lo=1,
    ),  # fmt: skip
    EnvVar(
        "FLYDSL_TRACE_MAX_SECONDS", "int", 30, "stop tracing with an error after this many seconds (0: no limit)", lo=0
    ),
    EnvVar(
        "FLYDSL_TRACE_MAX_DEPTH",
        "int",
        0,
        "Python recursion limit while tracing (0: the interpreter's; above it the trace runs on a thread with a "
        "stack to match)",
        lo=0,
        hi=100_000,
    ),  # fmt: skip
    EnvVar(
        "FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE",
        "bool",
        False,
        "a compile-time global or closure value a jit function read changed: recompile with the new value "
        "(default: FLY229, as FlyDSL raises)",
    ),
    EnvVar("FLYDSL_EXTRA_SOURCE_DIRS", "str", "", "':'-separated folders whose .py files enter the cache key"),
    EnvVar("FLYDSL_INTERP_MAX_LANES", "int", 1 << 15, "CPU interpreter: threads executed together per batch", lo=1),
    EnvVar(
        "FLYDSL_INTERP_MAX_WHILE_ITERATIONS",
        "int",
        1_000_000,
        "CPU interpreter: an scf.while running longer is reported as a probable infinite loop",
        lo=1,
    ),  # fmt: skip
    EnvVar(
        "FLYDSL_LIBDEVICE",
        "file",
        "",
        "path to libdevice.10.bc (NVIDIA math library), if not found",
        check=_bitcode_file,
    ),  # fmt: skip
    EnvVar("FLYDSL_AUTOTUNE", "bool", False, "@autotune: search the configs even when a cached/offline choice exists"),
    EnvVar(
        "FLYDSL_AUTOTUNE_CACHE_DIR",
        "path",
        os.path.expanduser("~/.flydsl/autotune"),
        "@autotune: folder of the searched winners (one JSON file per tuned function)",
    ),
    EnvVar("FLYDSL_AUTOTUNE_CONFIG_DIR", "path", "", "@autotune: folder of offline config artifacts (empty: none)"),
]

# variables whose value changes generated code: part of every cache key
CODEGEN_AFFECTING = (
    "FLYDSL_COMPILE_OPT_LEVEL",
    "FLYDSL_DEBUG_ENABLE_DEBUG_INFO",
    "FLYDSL_EXTRA_SOURCE_DIRS",
    "FLYDSL_LIBDEVICE",
)

# what a jit specialization's key reads from the environment: the target choice and CODEGEN_AFFECTING
JIT_KEY_VARS = ("COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH", "FLYDSL_RUNTIME_KIND", *CODEGEN_AFFECTING)

_BY_ATTR = {v.name.lower().removeprefix("flydsl_"): v for v in _VARS}


class _Env:
    """Attribute access: ``env.dump_ir`` reads FLYDSL_DUMP_IR, ``env.compile_only`` reads COMPILE_ONLY."""

    def __getattr__(self, attr: str) -> Any:
        v = _BY_ATTR.get(attr)
        if v is None:
            raise AttributeError(f"no environment variable registered for '{attr}'")
        return v.read()

    def var(self, name: str) -> EnvVar:
        for v in _VARS:
            if v.name == name:
                return v
        raise KeyError(name)

    def get(self, name: str) -> Any:
        return self.var(name).read()

    def validate(self) -> None:
        """Read every variable: the first one set to a value outside its domain raises :class:`EnvError`."""
        for v in _VARS:
            v.read()

    def raw(self, name: str) -> str | None:
        """The raw text of a registered variable (for cache keys)."""
        self.var(name)
        return os.environ.get(name)


env = _Env()


# os.environ keeps its live mapping in ``_data`` keyed by OS-encoded names; reading it with pre-encoded
# keys skips the per-call encoding of os.environ.get (the jit's cache-hit path reads a few variables on
# every call). Falls back to the public API where that layout is absent.
try:
    _DATA = os.environ._data if isinstance(os.environ._data, dict) else None
except AttributeError:  # pragma: no cover
    _DATA = None
_ENCODED: dict[tuple, tuple] = {}


def snapshot(names: tuple) -> tuple:
    """The raw text (or None) of each registered variable in ``names``, cheaply (for cache keys)."""
    enc = _ENCODED.get(names)
    if enc is None:
        for n in names:
            env.var(n)
        enc = _ENCODED[names] = tuple(os.fsencode(n) for n in names)
    if _DATA is not None:
        d = _DATA
        return tuple([os.fsdecode(d[b]) if b in d else None for b in enc])
    return tuple(os.environ.get(n) for n in names)


def snapshot_reader(names: tuple):
    """``(get, keys)`` such that ``tuple(get(k) for k in keys)`` changes whenever any of ``names`` changes
    value (the raw OS-encoded values of the live environment dict), for fast cache keys that inline the
    reads; None where ``os.environ`` has no such dict (then use :func:`snapshot`)."""
    snapshot(names)  # registered names only
    if _DATA is None:
        return None
    return _DATA.get, _ENCODED[names]


def describe() -> str:
    """A markdown table of every variable."""
    rows = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    for v in _VARS:
        d = v.default
        if isinstance(d, str) and d.startswith(os.path.expanduser("~")):
            d = "~" + d[len(os.path.expanduser("~")) :]
        rows.append(f"| `{v.name}` | {v.kind} | `{d}` | {v.doc} |")
    return "\n".join(rows)
