"""``@flyc.jit``: a host launcher traced into ``func.func`` (+ its kernels), compiled, cached, launched.

A call converts the arguments (:mod:`flydsl.runtime.args`) into a key and ABI values, looks the key up
in the in-memory cache, and on a hit launches at once (the *hot path*: conversion, one dict lookup,
packing, launch). On a miss it consults the disk cache (:mod:`.cache`), else traces the AST-rewritten
body into a new module — host function arguments built from the key (:mod:`.abi`), kernels traced as
they are launched (:mod:`.kernel`) — runs the pipeline (:mod:`.pipeline`) and stores the result.

Called while another trace is running, a jit function just calls its (rewritten) body: it composes
as a helper. ``COMPILE_ONLY=1`` does everything but launch and returns None.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections import namedtuple

from ..dialects import func as dfunc
from ..dialects import gpu
from ..expr._fastmath import compile_default, default_from_hints
from ..expr.numeric import Numeric
from ..expr.typing import Constexpr, Stream
from ..ir import InsertionPoint, i64, new_module
from ..runtime.args import CONVERTERS, DEFAULT_STREAM, ArgError, convert_arg
from ..utils.env import CODEGEN_AFFECTING, env, snapshot
from . import errors as E
from .abi import make_param, param_arg_names, param_types
from .artifact import Artifact
from .cache import DiskCache, deps_digest, disk_key
from .deps import collect, compile_time_value, freeze
from .diagnostics import FlyDSLError, wrap_exception
from .errors import error
from .frames import frame_location, traceback_location, user_frame
from .frontend import rewrite_function
from .kernel import resolve_signature
from .pipeline import codegen, compile_module
from .trace import TraceContext, current, select_target, tracing

__all__ = ["JitFunction", "CompiledFunction", "CacheInfo", "jit", "compile", "user_error", "dsl_error"]

CacheInfo = namedtuple("CacheInfo", ["hits", "misses", "currsize", "disk_size"])

# COMPILE_ONLY first (not part of the key), then what selects code and device
_ENV_KEY = ("COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH", "FLYDSL_RUNTIME_KIND", *CODEGEN_AFFECTING)
_TRUE = frozenset(("1", "true", "yes", "on"))


def _caller_loc():
    f = user_frame(sys._getframe(2))
    return frame_location(f) if f is not None else None


# ---------------------------------------------------------------------------------------------------
# parameters and their converters
# ---------------------------------------------------------------------------------------------------


def _const_key(v):
    """The key of a compile-time value: the value itself, or a capture-free function's code."""
    if callable(v) and hasattr(v, "__code__") and not isinstance(v, type):
        code = v.__code__
        if code.co_freevars:
            raise ArgError("UNSUPPORTED_ARG", got="a function that captures variables (use a plain lambda)")
        return ("fn", code.co_code, code.co_consts, code.co_names, v.__defaults__)
    hash(v)
    return v


def _constexpr_conv(ann):
    def conv(a, key, vals):
        if not ann.accepts(a):
            t = ann.value_type
            want = t if isinstance(t, str) else t.__name__
            raise ArgError("CONSTEXPR_TYPE", want=want, got=f"{type(a).__name__} {a!r}")
        key.append(("const", _const_key(a)))

    return conv


def _numeric_conv(cls):
    lo, hi = (-(1 << (cls.width - 1)), (1 << (cls.width - 1)) - 1) if cls.is_integer and cls.signed else (1, 0)

    def conv(a, key, vals):
        if type(a) is int and lo <= a <= hi:  # the common case, without building a Numeric
            key.append(cls)
            vals.append(a)
            return
        try:
            x = a if type(a) is cls else cls(a)
        except (TypeError, ValueError):
            raise ArgError("UNSUPPORTED_ARG", got=f"{type(a).__name__} {a!r} (declared {cls.__name__})") from None
        if not x.is_static():
            raise ArgError("UNSUPPORTED_ARG", got=f"a run-time {cls.__name__} (outside of a trace)")
        key.append(cls)
        vals.append(x._v)

    return conv


def _stream_conv(a, key, vals):
    CONVERTERS[Stream](a if isinstance(a, Stream) else Stream(a), key, vals)


def _value_conv(a, key, vals):
    fn = CONVERTERS.get(type(a))
    if fn is not None:
        fn(a, key, vals)
    elif isinstance(a, (str, tuple, type)) or (compile_time_value(a) and not isinstance(a, Numeric)):
        key.append(("const", _const_key(a)))  # str, tuple, enum, DSL type: compile-time by nature
    else:
        convert_arg(a, key, vals)


def _self_conv(a, key, vals):
    """``self`` of a method launcher: its type and its compile-time attributes (read while tracing)."""
    d = getattr(a, "__dict__", None)
    attrs = tuple(sorted((k, v) for k, v in d.items() if compile_time_value(v))) if d else ()
    key.append(("self", type(a), attrs))


class _Param:
    __slots__ = ("name", "conv", "default", "is_stream")

    def __init__(self, p: inspect.Parameter, first: bool):
        ann = p.annotation
        self.name = p.name
        self.default = p.default
        self.is_stream = ann is Stream
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"@flyc.jit does not support *{p.name} / **{p.name} parameters")
        if Constexpr.is_constexpr_annotation(ann):
            self.conv = _constexpr_conv(ann)
        elif self.is_stream:
            self.conv = _stream_conv
        elif isinstance(ann, type) and issubclass(ann, Numeric) and ann.width:
            self.conv = _numeric_conv(ann)
        elif first and p.name == "self":
            self.conv = _self_conv
        else:
            self.conv = _value_conv


# ---------------------------------------------------------------------------------------------------
# the jit function
# ---------------------------------------------------------------------------------------------------


class _Entry:
    """One specialization: its artifact and (once launched) the device launcher."""

    __slots__ = ("artifact", "target", "launcher")

    def __init__(self, artifact: Artifact, target):
        self.artifact = artifact
        self.target = target
        self.launcher = None

    def run(self, vals: list) -> None:
        launcher = self.launcher
        if launcher is None:
            from ..runtime.device import get_device

            launcher = self.launcher = get_device().launcher(self.artifact, self.target)
        launcher(vals)


class JitFunction:
    """A function decorated with ``@flyc.jit``."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.compile_hints: dict = {}
        self.hits = 0
        self.misses = 0
        self.compiles = 0  # misses that traced and compiled (the others were found on disk)
        self._body = None
        self._params: list[_Param] | None = None
        self._convs: tuple = ()
        self._sig = None
        self._implicit_stream = True
        self._min_pos: int | None = None
        self._tail_defaults: tuple = ()
        self._mem: dict = {}
        self._deps = None
        self._deps_hex: str | None = None
        self._dep_vals: tuple | None = None
        self._last: tuple | None = None

    @property
    def __fly_function__(self):
        return self.fn

    def with_hints(self, hints: dict) -> JitFunction:
        """A new jit function over the same body with ``hints`` merged into the compile hints (its own
        caches; the original is unchanged)."""
        jf = JitFunction(self.fn)
        jf.compile_hints = {**self.compile_hints, **hints}
        jf._body = self._body
        return jf

    def body(self):
        """The AST-rewritten function (built on first use)."""
        if self._body is None:
            self._body = rewrite_function(self.fn)
        return self._body

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __repr__(self) -> str:
        return f"<flyc.jit {self.fn.__qualname__}>"

    # -- calls -------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if current() is not None:
            return self.body()(*args, **kwargs)
        try:
            entry, vals, compile_only = self._prepare(args, kwargs)
            if compile_only:
                return None
            entry.run(vals)
        except Exception as e:
            raise dsl_error(e)  # noqa: B904 (dsl_error sets or hides the cause)
        return None

    def _prepare(self, args, kwargs):
        """(entry, ABI values, COMPILE_ONLY) for one call: the hot path up to the launch."""
        if self._params is None:
            self._init_params()
        if kwargs or len(args) != len(self._convs):
            lo = self._min_pos
            if not kwargs and lo is not None and lo <= len(args) < len(self._convs):
                args = args + self._tail_defaults[len(args) - lo :]  # trailing defaults without inspect.bind
            else:
                args = self._bind(args, kwargs)
        key, vals = [], []
        table = CONVERTERS
        i = 0
        try:
            for conv, a in zip(self._convs, args):
                if conv is _value_conv:
                    fn = table.get(type(a))
                    if fn is not None:
                        fn(a, key, vals)
                        i += 1
                        continue
                conv(a, key, vals)
                i += 1
        except ArgError as e:
            raise self._arg_error(e, i) from None
        if self._implicit_stream:
            vals.append(DEFAULT_STREAM)
        snap = snapshot(_ENV_KEY)
        if self._dep_vals is not None and self._deps.changed(self._dep_vals):
            self._on_drift()
        k = (tuple(key), snap[1:], freeze(self.compile_hints) if self.compile_hints else None)
        entry = self._mem.get(k)
        if entry is None:
            entry = self._miss(k, args, key, snap)
        else:
            self.hits += 1
        return entry, vals, snap[0] is not None and snap[0].strip().lower() in _TRUE

    def _init_params(self) -> None:
        sig = self._sig = resolve_signature(self.fn)
        ps = list(sig.parameters.values())
        self._params = [_Param(p, i == 0) for i, p in enumerate(ps)]
        self._convs = tuple(p.conv for p in self._params)
        self._implicit_stream = not any(p.is_stream for p in self._params)
        # the fast path for positional calls that leave trailing defaults out
        positional = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in ps)
        n_req = sum(1 for p in ps if p.default is p.empty)
        if positional and all(p.default is not p.empty for p in ps[n_req:]):
            self._min_pos, self._tail_defaults = n_req, tuple(p.default for p in ps[n_req:])
        else:
            self._min_pos, self._tail_defaults = None, ()
        self._deps = collect(self.fn)
        self._dep_vals = self._deps.current_values()

    def _bind(self, args, kwargs) -> tuple:
        try:
            b = self._sig.bind(*args, **kwargs)
        except TypeError as e:
            raise error(E.ARG_BINDING, _caller_loc(), name=self.fn.__name__, detail=str(e)) from None
        b.apply_defaults()
        return tuple(b.arguments.values())

    def _arg_error(self, e: ArgError, index: int) -> FlyDSLError:
        fields = dict(e.fields)
        fields.setdefault("name", self._params[index].name if index < len(self._params) else "?")
        fields.setdefault("where", "@flyc.jit function")
        return error(getattr(E, e.diag), _caller_loc(), **fields)

    def _on_drift(self) -> None:
        """A compile-time global/closure value was rebound: forget what was compiled with the old one."""
        self._mem.clear()
        self._deps = collect(self.fn)
        self._dep_vals = self._deps.current_values()
        self._deps_hex = None

    def deps_hex(self) -> str:
        """The digest of the function's dependencies (source, helpers, compile-time values)."""
        if self._deps is None:
            self._init_params()
        elif self._deps.changed(self._dep_vals):
            self._on_drift()
        if self._deps_hex is None:
            self._deps_hex = deps_digest(self._deps)
        return self._deps_hex

    # -- compile -----------------------------------------------------------------------------------
    def _miss(self, k, args, key_parts, snap) -> _Entry:
        self.misses += 1
        target = select_target()
        compile_only = snap[0] is not None and snap[0].strip().lower() in _TRUE
        want_ptx = compile_only or _device_kind() == "cuda"
        disk, dk, art = None, None, None
        if env.runtime_enable_cache:
            disk = DiskCache(self.fn.__name__, self.deps_hex())
            dk = disk_key(self.deps_hex(), k, target.arch, self.compile_hints)
            if not env.dump_ir:
                art = _load(disk, dk)
        if art is None:
            art = self._compile(args, key_parts, target, want_ptx)
            if disk is not None:
                disk.store(dk, art.to_body())
        elif want_ptx and not art.ptx:
            _set_device_code(art, codegen(_Result(art.module), target.arch, None, self.compile_hints))
            disk.store(dk, art.to_body())
        entry = _Entry(art, target)
        self._mem[k] = entry
        self._last = (k, entry)
        self._dep_vals = self._deps.current_values()  # after tracing, which may itself edit a container
        return entry

    def _compile(self, args, key_parts, target, want_ptx: bool) -> Artifact:
        self.compiles += 1
        module, ctx, names = self._trace_module(args, key_parts, target)
        name = self.fn.__name__
        result = compile_module(module, name, target.arch, want_ptx=want_ptx, hints=self.compile_hints)
        kernels = {k: {"arg_names": v} for k, v in ctx.kernel_arg_names.items()}
        art = Artifact(name, module, name, kernels, names, target.arch)
        _set_device_code(art, result)
        return art

    def _trace_module(self, args, key_parts, target):
        """Trace one specialization: (module before any pass, trace context, host parameter names)."""
        name = self.fn.__name__
        types, names = [], []
        for p, part in zip(self._params, key_parts):
            types.extend(param_types(part))
            names.extend(param_arg_names(p.name, part))
        if self._implicit_stream:
            types.append(i64)
            names.append("stream")
        module = new_module(**{"gpu.container_module": None})
        host = dfunc.build_func(dfunc.func, name, types, **{"llvm.emit_c_interface": None})
        host.loc = (self.fn.__code__.co_filename, self.fn.__code__.co_firstlineno, 1)
        gmod = gpu.build_gpu_module("kernels")
        module.regions[0].block.append(host)
        module.regions[0].block.append(gmod)
        ctx = TraceContext(name, module, host, gmod, target)
        entry = host.regions[0].blocks[0]
        fm_default = default_from_hints(self.compile_hints) if self.compile_hints else None
        with tracing(ctx), InsertionPoint(entry), compile_default(fm_default):
            dsl_args, pos = [], 0
            for part, a in zip(key_parts, args):
                n = len(param_types(part))
                dsl_args.append(make_param(part, entry.args[pos : pos + n], a))
                pos += n
            ctx.stream = entry.args[-1] if self._implicit_stream else None
            ret = self.body()(*dsl_args)
            if ret is not None:
                raise error(E.JIT_RETURNS, host.loc, name=name, got=type(ret).__name__)
            dfunc.return_(loc=host.loc)
        return module, ctx, names

    def trace(self, *args, **kwargs):
        """The IR module of the specialization for these arguments, as traced (before any pass).

        Nothing is compiled, cached or launched; for inspection and tests (like ``jax.make_jaxpr``).
        """
        try:
            if self._params is None:
                self._init_params()
            if kwargs or len(args) != len(self._convs):
                args = self._bind(args, kwargs)
            key = []
            try:
                for conv, a in zip(self._convs, args):
                    conv(a, key, [])
            except ArgError as e:
                raise self._arg_error(e, len(key)) from None
            return self._trace_module(args, key, select_target())[0]
        except Exception as e:
            raise dsl_error(e)  # noqa: B904 (dsl_error sets or hides the cause)

    def cache_key(self, *args, **kwargs) -> str:
        """The disk-cache key (hex) of the specialization for these arguments (nothing is compiled).

        Two calls, or two processes, get the same key exactly when the compiled code must be the same.
        """
        try:
            if self._params is None:
                self._init_params()
            if kwargs or len(args) != len(self._convs):
                args = self._bind(args, kwargs)
            key = []
            for conv, a in zip(self._convs, args):
                conv(a, key, [])
            hints = freeze(self.compile_hints) if self.compile_hints else None
            k = (tuple(key), snapshot(_ENV_KEY)[1:], hints)
            return disk_key(self.deps_hex(), k, select_target().arch, self.compile_hints)
        except Exception as e:
            raise dsl_error(e)  # noqa: B904 (dsl_error sets or hides the cause)

    def cache_info(self) -> CacheInfo:
        """``CacheInfo(hits, misses, currsize, disk_size)``; ``disk_size`` is None with the disk cache off."""
        disk = DiskCache(self.fn.__name__, self.deps_hex()).size() if env.runtime_enable_cache else None
        return CacheInfo(self.hits, self.misses, len(self._mem), disk)

    def clear_cache(self) -> None:
        """Forget the in-memory specializations (the disk cache is left alone)."""
        self._mem.clear()


class _Result:
    def __init__(self, module):
        self.module = module
        self.llvm_ir = self.ptx = self.cubin = None
        self.kernel_info = {}


def _set_device_code(art: Artifact, result) -> None:
    """Copy PTX/cubin and each kernel's entry symbol and parameter kinds into the artifact."""
    art.ptx, art.cubin = result.ptx, result.cubin
    for name, info in (result.kernel_info or {}).items():
        entry = art.kernels.setdefault(name, {"arg_names": []})
        entry["symbol"] = info.symbol or info.name
        entry["param_types"] = [p.kind for p in info.params]


def _device_kind() -> str:
    from ..runtime.device import get_device

    return get_device().kind


def _load(disk: DiskCache, key: str) -> Artifact | None:
    body = disk.load(key)
    if body is None:
        return None
    try:
        return Artifact.from_body(body)
    except Exception:  # a valid checksum over text we cannot read (older format): rebuild
        import os

        try:
            os.remove(disk.path(key))
        except OSError:
            pass
        return None


# ---------------------------------------------------------------------------------------------------
# errors at the boundary
# ---------------------------------------------------------------------------------------------------


def user_error(e: BaseException) -> FlyDSLError:
    """Any exception raised while tracing, compiling or launching, as a located DSL error."""
    from ..runtime.args import ArgError as _ArgError

    if isinstance(e, RecursionError) and not isinstance(e, FlyDSLError):
        return error(E.TRACE_RECURSION, traceback_location(e.__traceback__), detail=str(e))
    if isinstance(e, _ArgError):
        fields = dict(e.fields)
        fields.setdefault("name", "?")
        return error(getattr(E, e.diag), traceback_location(e.__traceback__), **fields)
    err = wrap_exception(e)
    loc = getattr(e, "loc", None)
    if not isinstance(e, FlyDSLError) and isinstance(loc, tuple) and len(loc) == 3:
        err.loc = loc  # interpreter / codegen faults: the op's own line
    return err


def dsl_error(e: BaseException) -> FlyDSLError:
    """``e`` as a located DSL error, ready to ``raise`` from the API entry point that caught it.

    Located at the caller of the entry point when nothing closer is known. The internal traceback is
    dropped (``FLYDSL_DEBUG_SHOW_STACKTRACE=1`` keeps it as the error's cause).
    """
    err = user_error(e)
    if err.loc is None:
        f = user_frame(sys._getframe(1))
        err.loc = frame_location(f) if f is not None else None
    if env.debug_show_stacktrace:
        if err is not e:
            err.__cause__ = e
        return err
    err.__cause__ = None
    err.__suppress_context__ = True
    return err.with_traceback(None)


# ---------------------------------------------------------------------------------------------------
# flyc.compile
# ---------------------------------------------------------------------------------------------------


class CompiledFunction:
    """A compiled specialization (``flyc.compile``): call it with the same positional arguments.

    The key lookup is skipped; Constexpr arguments are ignored (their values are baked in).
    """

    __slots__ = ("jit_function", "_entry", "_convs", "_implicit", "_defaults")

    def __init__(self, jf: JitFunction, entry: _Entry):
        self.jit_function = jf
        self._entry = entry
        self._convs = jf._convs
        self._implicit = jf._implicit_stream
        self._defaults = [p.default for p in jf._params]

    def __call__(self, *args):
        try:
            if len(args) < len(self._convs):
                args = args + tuple(self._defaults[len(args) :])
            key, vals = [], []
            for conv, a in zip(self._convs, args):
                conv(a, key, vals)
            if self._implicit:
                vals.append(DEFAULT_STREAM)
            self._entry.run(vals)
        except Exception as e:
            raise dsl_error(e)  # noqa: B904 (dsl_error sets or hides the cause)

    @property
    def ir(self) -> str:
        """The optimized module's MLIR text."""
        return self._entry.artifact.ir_text()

    @property
    def ptx(self) -> str | None:
        return self._entry.artifact.ptx


def _unwrap(fn):
    if isinstance(fn, JitFunction):
        return fn, ()
    if isinstance(fn, functools.partial) and isinstance(getattr(fn.func, "__self__", None), JitFunction):
        return fn.func.__self__, tuple(fn.args)
    raise TypeError(f"flyc.compile() expects a @flyc.jit function, got {type(fn).__name__}")


class _Compile:
    """``flyc.compile(fn, *args)``, ``flyc.compile[hints](fn, *args)``, ``flyc.compile[hints](fn)``."""

    def __init__(self, hints: dict | None = None):
        self.hints = hints or {}

    def __getitem__(self, hints: dict) -> _Compile:
        if not isinstance(hints, dict):
            raise TypeError(f"flyc.compile[...] expects a dict of compile hints, got {type(hints).__name__}")
        return _Compile({**self.hints, **hints})

    def __call__(self, fn, *args, **kwargs):
        jf, bound = _unwrap(fn)
        if self.hints:
            jf = jf.with_hints(self.hints)
            fn = functools.partial(jf.__call__, *bound) if bound else jf
        if not args and not kwargs:
            return fn
        try:
            entry, _, compile_only = jf._prepare(bound + args, kwargs)
        except Exception as e:
            raise dsl_error(e)  # noqa: B904 (dsl_error sets or hides the cause)
        if compile_only:
            return None
        return CompiledFunction(jf, entry)


compile = _Compile()  # noqa: A001  (FlyDSL's name)


def jit(fn=None):
    """``@flyc.jit``: decorate a host launcher."""
    if fn is None:
        return jit
    return JitFunction(fn)
