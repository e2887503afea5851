"""``@flyc.jit``: a host launcher traced into ``func.func`` (+ its kernels), compiled, cached, launched.

A cached call runs the dispatcher of its argument pattern (:mod:`.fastpath`: cheap attributes → fast key,
one dict lookup, the launch plan, the driver). Otherwise the full path converts the arguments
(:mod:`.specialize`) into a key and ABI values, looks the key up in the in-memory cache and launches.
On a miss it consults the disk cache (:mod:`.cache`), else traces the AST-rewritten body into a new
module — host function arguments built from the key (:mod:`.abi`), kernels traced as they are launched
(:mod:`.kernel`) — runs the pipeline (:mod:`.pipeline`) and stores the result.

Called while another trace is running, a jit function just calls its (rewritten) body: it composes
as a helper. ``COMPILE_ONLY=1`` does everything but launch and returns None.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import weakref
from collections import namedtuple

from ..codegen import KernelInfo, has_code_generator
from ..codegen.compile import ptx_to_cubin
from ..dialects import func as dfunc
from ..dialects import gpu
from ..expr._sem.fastmath import default_from_hints
from ..ir import InsertionPoint, i64, new_module
from ..runtime import torch_args
from ..runtime.args import DEFAULT_STREAM, ArgError, TensorRef
from ..runtime.device import get_device
from ..utils.env import JIT_KEY_VARS, env, snapshot, snapshot_reader
from . import errors as E
from ._flydsl_jit import FlyDSLJitNames
from .abi import make_param, param_arg_names, param_types
from .artifact import Artifact
from .boundary import dsl_error, user_error
from .cache import DiskCache, deps_digest, disk_key
from .deps import collect, freeze
from .diagnostics import FlyDSLError
from .drift import snapshot_refs
from .errors import error
from .fastpath import MISSING, NOFAST, OTHER_PATTERN, make_binder, make_dispatcher, pattern_of
from .frames import frame_location, user_frame
from .frontend import rewrite_function
from .hints import check_hints
from .kernel import resolve_signature
from .kernel_function import _tls as _tls_hints
from .pipeline import CompileResult, codegen, compile_traced
from .specialize import Param
from .trace import ANY_TRACE as _ANY_TRACE
from .trace import TraceContext, TraceTimeout, current, run_traced, select_target, timeout_error, tracing

__all__ = ["JitFunction", "CompiledFunction", "CacheInfo", "jit", "compile", "user_error", "dsl_error"]

CacheInfo = namedtuple("CacheInfo", ["hits", "misses", "currsize", "disk_size"])

# COMPILE_ONLY first (not part of the key), then what selects code and device
_ENV_KEY = JIT_KEY_VARS
_ENV_FAST = snapshot_reader(_ENV_KEY) or (lambda: snapshot(_ENV_KEY))
_TRUE = frozenset(("1", "true", "yes", "on"))
_MAX_PATTERNS = 16  # argument patterns with a dispatcher per jit function
_FALSE = frozenset(("0", "false", "no", "off"))


def _compile_only(raw: str) -> bool:
    v = raw.strip().lower()
    if v in _TRUE:
        return True
    if v and v not in _FALSE:
        env.var("COMPILE_ONLY").read()  # raises FLY403 naming the variable
    return False


def _caller_loc():
    f = user_frame(sys._getframe(2))
    return frame_location(f) if f is not None else None


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
            launcher = self.launcher = get_device().launcher(self.artifact, self.target)
        launcher(vals)


class _CallState:
    """What every cached call reads or writes besides its arguments: the dependency watch and the hit
    counter. Slots, so the generated entries reach them with the interpreter's fastest attribute access
    (a jit function's own attributes live in a large per-instance dict)."""

    __slots__ = ("watch", "hits")

    def __init__(self, watch):
        self.watch = watch
        self.hits = 0


class JitFunction(FlyDSLJitNames):
    """A function decorated with ``@flyc.jit``."""

    def __init__(self, fn):
        # its own class: the current dispatcher's entry becomes its __call__ (see the calls below)
        self.__class__ = type("JitFunction", (JitFunction,), {"__module__": JitFunction.__module__})
        self._call_classes = weakref.WeakSet([self.__class__])
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.compile_hints: dict = {}
        self._cs = _CallState(_unknown)  # hits and the dependency watch (``hits``, ``_watch``)
        self.misses = 0
        self.compiles = 0  # misses that traced and compiled (the others were found on disk)
        self._body = None
        self._params: list[Param] | None = None
        self._convs: tuple = ()
        self._sig = None
        self._implicit_stream = True
        self._nargs = -1  # the parameter count, once known (a call with another count is bound first)
        self._binder = None
        self._mem: dict = {}
        self._deps = None  # what the watch covers: the function's dependencies with every owner class seen
        self._owners: tuple = ()  # classes of ``self`` a method launcher was called with
        self._owner_deps: dict = {}  # owner class (None: a plain launcher) -> the dependencies with it
        self._manager_keys: dict = {}  # owner -> the digest of its dependencies (the disk cache's folder)
        self._global_refs_cache: dict = {}  # owner -> [(name, module, holder)]: the values the drift check reads
        self._used_global_vals: dict = {}  # owner -> their snapshot that later calls are checked against
        self._manager_owner_cls = None  # the owner of ``manager_key`` / ``cache_manager`` (FlyDSL's names)
        self.cache_manager = None  # the disk cache folder (None with the disk cache off)
        self._has_self_param = False
        self._names: tuple = ()
        self._dispatch = _first_call
        self._dispatchers: dict = {}  # argument pattern -> dispatcher (see fastpath)
        self._last: tuple | None = None
        self._lock = threading.Lock()  # parameter set-up, counters and the per-key gates
        self._gates: dict = {}  # key -> the lock its compile holds

    @property
    def __fly_function__(self):
        return self.fn

    @property
    def hits(self) -> int:
        """Calls that found their specialization compiled (the fast path's and the full path's)."""
        return self._cs.hits

    @hits.setter
    def hits(self, value: int) -> None:
        self._cs.hits = value

    @property
    def _watch(self):
        """True while every compile-time global and closure cell is what it was (``Deps.watcher``)."""
        return self._cs.watch

    @_watch.setter
    def _watch(self, fn) -> None:
        self._cs.watch = fn

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
        return functools.partial(_call_current, self, obj)  # the entry current at the call

    def __repr__(self) -> str:
        return f"<flyc.jit {self.fn.__qualname__}>"

    # -- calls -------------------------------------------------------------------------------------
    # A call runs the current dispatcher's *entry* (fastpath.make_dispatcher), installed as ``__call__`` of
    # this function's own class (and of its flyc.compile wrappers' classes), so a cached call runs one
    # generated function. This ``__call__`` is the one before any dispatcher exists (and the general one).
    def __call__(self, *args, **kwargs):
        if current() is not None:  # called while this thread traces: a helper
            return self.body()(*args, **kwargs)
        if _tls_hints.hints is not None and not self._hinted_copy:  # CompilationContext.compile_hints
            return self._under_hints(_tls_hints.hints)(*args, **kwargs)
        return self._call(args, kwargs, OTHER_PATTERN)

    def _slow(self, vals: tuple, rest: tuple, kwargs, r):
        """An entry's way out: ``vals`` the arguments it bound (:data:`MISSING` where none was given),
        ``rest`` extra positional ones, ``kwargs`` unknown keywords (or None), ``r`` its answer. (Entries
        come here while any thread traces: only this thread's own trace makes the call a helper.)"""
        tracing_here = _ANY_TRACE and current() is not None
        if rest or kwargs or tracing_here or any(v is MISSING for v in vals):
            # the call as made: positional arguments up to the first missing one (Python fills them from
            # the left), the later parameters' values (given by keyword, or defaults) as keywords
            cut = next((i for i, v in enumerate(vals) if v is MISSING), len(vals))
            kw = {p.name: v for p, v in zip(self._params[cut:], vals[cut:]) if v is not MISSING}
            kw.update(kwargs or {})
            args = vals[:cut] + rest
            if tracing_here:
                return self.body()(*args, **kw)
            return self._call(args, kw, OTHER_PATTERN)
        return self._call(vals, {}, r)

    def _call(self, args, kwargs, r):
        """Everything but a fast hit: bind, find the pattern's dispatcher, the full path, register the
        fast key. ``r`` is what the current dispatcher answered for ``args`` (a fast key, NOFAST or
        OTHER_PATTERN)."""
        try:
            if kwargs or len(args) != self._nargs:
                args = self._bind(args, kwargs)
                r = OTHER_PATTERN  # keywords or defaults: the dispatcher has not seen these arguments
            if r is OTHER_PATTERN:
                try:
                    r = self._switch_pattern(args)
                except ArgError:  # the full path raises it with the parameter's name
                    r = NOFAST
                if r is None:  # launched through the fast path
                    return None
            entry, vals, compile_only = self._prepare(args, {}, bound=True)
            if compile_only:
                return None
            entry.run(vals)
            if type(r) is tuple:
                self._register(args, r, entry, vals)
        except Exception as e:
            raise dsl_error(e)  # noqa: B904 (dsl_error sets or hides the cause)
        return None

    def _switch_pattern(self, args):
        """(dispatcher, result) of ``args``' pattern's dispatcher run on them (made on first sight; at most
        ``_MAX_PATTERNS`` kept)."""
        if self._params is None:
            self._init_params()
        pat = pattern_of(args, self._params)
        d = self._dispatchers.get(pat)
        if d is None:
            with self._lock:
                d = self._dispatchers.get(pat)
                if d is None:
                    if len(self._dispatchers) >= _MAX_PATTERNS:
                        return NOFAST
                    d = make_dispatcher(self, self._params, pat, self._implicit_stream, _ENV_FAST, {})
                    self._dispatchers[pat] = d
                self._install(d)
        else:
            self._install(d)
        r = d(*args)
        return NOFAST if r is OTHER_PATTERN else r

    def _install(self, d) -> None:
        """Make ``d`` the current dispatcher (None: none) and its entry the ``__call__`` of this function
        and of its flyc.compile wrappers."""
        self._dispatch = d if d is not None else _first_call
        for cls in list(self._call_classes):
            if d is None:
                if "__call__" in cls.__dict__:
                    delattr(cls, "__call__")  # the base class's general __call__ again
            else:
                cls.__call__ = d.entry

    def _register(self, args, fkey: tuple, entry, vals: list) -> None:
        """After a launch through the full path: the fast path's entry for the same fast key, in the
        dispatcher of ``args``' pattern (another thread may have installed another one meanwhile). The
        first entry of a dispatcher is also inlined into it (a new dispatcher that checks it first)."""
        launcher = entry.launcher
        default_stream = getattr(launcher, "default_stream", None)
        if default_stream is None:  # a device without a raw-value launch (the interpreter)
            return
        torch_tensors = any(type(v) is TensorRef and type(v.obj).__module__.startswith("torch") for v in vals)
        run, dflt = launcher.run, default_stream(torch_tensors)
        pat = pattern_of(args, self._params)
        with self._lock:
            d = self._dispatchers.get(pat)
            if d is None:  # forgotten meanwhile (a global changed)
                return
            d.fast[fkey] = (run, dflt)
            if d.inlined or len(d.fast) != 1:
                return
            nd = make_dispatcher(self, self._params, pat, self._implicit_stream, _ENV_FAST, d.fast,
                                 inline=(fkey, run, dflt))  # fmt: skip
            self._dispatchers[pat] = nd
            self._install(nd)
        if nd.wants_readers:  # the C++ tensor reader is being built: inline again once it is loaded
            ref = weakref.ref(self)  # (outside the lock: when_ready calls at once if it loaded meanwhile)
            torch_args.when_ready(lambda: (jf := ref()) is not None and jf._reinline(pat))

    def _reinline(self, pat) -> None:
        """Make the dispatcher of pattern ``pat`` again, its inlined specialization now read through the C++
        tensor reader (called from the reader's build thread)."""
        with self._lock:
            d = self._dispatchers.get(pat)
            if d is None or not d.inlined or d.readers:
                return
            nd = make_dispatcher(self, self._params, pat, self._implicit_stream, _ENV_FAST, d.fast,
                                 inline=d.inline_args)  # fmt: skip
            self._dispatchers[pat] = nd
            if self._dispatch is d:
                self._install(nd)

    def _prepare(self, args, kwargs, bound: bool = False):
        """(entry, ABI values, COMPILE_ONLY) for one call: the full path up to the launch."""
        if _tls_hints.hints is not None and not self._hinted_copy:  # CompilationContext.compile_hints
            return self._under_hints(_tls_hints.hints)._prepare(args, kwargs, bound)
        if self._params is None:
            self._init_params()
        if not bound and (kwargs or len(args) != self._nargs):
            args = self._bind(args, kwargs)
        key, vals = [], []
        i = 0
        try:
            for conv, a in zip(self._convs, args):
                conv(a, key, vals)
                i += 1
        except ArgError as e:
            raise self._arg_error(e, i) from None
        if self._implicit_stream:
            vals.append(DEFAULT_STREAM)
        snap = snapshot(_ENV_KEY)
        if not self._watch():
            self._revalidate()
        owner = type(args[0]) if self._has_self_param else None
        if owner not in self._used_global_vals:
            self._add_owner(owner)
        k = self._key(key, snap, owner)
        entry = self._mem.get(k)
        if entry is None:
            entry = self._miss_once(k, args, key, snap, owner)
        else:
            with self._lock:  # (the fast path's entries count without it: a statistic, not worth a lock there)
                self.hits += 1
        return entry, vals, snap[0] is not None and _compile_only(snap[0])

    def _init_params(self) -> None:
        with self._lock:  # threads making first calls at once: one builds, the others see it built
            if self._params is not None:
                return
            sig = self._sig = resolve_signature(self.fn)
            ps = list(sig.parameters.values())
            params = [Param(p, i == 0) for i, p in enumerate(ps)]
            self._convs = tuple(p.conv for p in params)
            self._implicit_stream = not any(p.is_stream for p in params)
            self._binder = make_binder(params)
            self._nargs = len(ps)
            self._names = tuple(p.name for p in ps)
            self._has_self_param = bool(ps) and ps[0].name == "self"
            self._reset_owners()
            self._params = params  # last: the others test it without the lock

    def _key(self, key: list, snap: tuple, owner) -> tuple:
        """The in-memory (and, canonical, disk) key of a specialization, in FlyDSL's form: ``("_self_type_",
        cls)`` for a method launcher, ``(parameter, key part)`` per parameter, the environment, the hints."""
        h = self.compile_hints
        parts = (*zip(self._names, key), ("_env_", snap[1:]), ("_hints_", freeze(h) if h else None))
        return parts if owner is None else (("_self_type_", owner), *parts)

    def _reset_owners(self) -> None:
        """Forget the owners, their dependencies and snapshots; collect the function's own (under the lock)."""
        self._owners = ()
        self._owner_deps.clear()
        self._manager_keys.clear()
        self._global_refs_cache.clear()
        self._used_global_vals.clear()
        self._deps = collect(self.fn)
        self._watch = self._deps.watcher()

    def _add_owner(self, owner) -> None:
        """First call for ``owner`` (the class of ``self``, or None): its dependencies (a method launcher's
        reach through ``self``: the class's kernels and helpers), and the snapshot of the compile-time values
        they read, which later calls are checked against (:mod:`.drift`)."""
        with self._lock:
            if owner in self._used_global_vals:
                return
            d = self._deps if owner is None else collect(self.fn, (owner,))
            self._owner_deps[owner] = d
            self._global_refs_cache[owner] = d.refs
            self._used_global_vals[owner] = snapshot_refs(d.refs, d.watch_names)
            if owner is not None:
                self._owners += (owner,)
                self._deps = d if len(self._owners) == 1 else collect(self.fn, self._owners)
                self._watch = self._deps.watcher()

    def _revalidate(self) -> None:
        """The dependency watch saw a binding that is not the object it was: compare the values. Changed: FLY229
        (FlyDSL's rule), or with ``FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE=1`` forget what was compiled. Rebound
        to equal values: watch the new objects."""
        retrace = env.jit_retrace_on_global_change
        for owner in list(self._used_global_vals):
            if owner not in self._global_refs_cache:  # forgotten meanwhile by another thread's re-trace
                continue
            if self._check_globals_drift(owner, retrace=retrace):
                self._on_drift()
                return
        with self._lock:
            self._watch = self._deps.watcher()

    def _bind(self, args, kwargs) -> tuple:
        """Every argument in parameter order, defaults filled (Python's own binding: :func:`make_binder`)."""
        if self._params is None:
            self._init_params()
        try:
            return self._binder(*args, **kwargs)
        except TypeError:
            try:  # the message of inspect's binding: it names the parameter the same way on every Python
                self._sig.bind(*args, **kwargs)
                detail = "invalid arguments"
            except TypeError as e:
                detail = str(e)
            raise error(E.ARG_BINDING, _caller_loc(), name=self.fn.__name__, detail=detail) from None

    def _arg_error(self, e: ArgError, index: int) -> FlyDSLError:
        fields = dict(e.fields)
        fields.setdefault("name", self._params[index].name if index < len(self._params) else "?")
        fields.setdefault("where", "@flyc.jit function")
        return error(getattr(E, e.diag), _caller_loc(), **fields)

    def _on_drift(self) -> None:
        """Forget what was compiled and the snapshots of the values it read (re-trace mode after a change, and
        ``clear_cache()``)."""
        self._forget()
        with self._lock:
            self._reset_owners()

    def _forget(self) -> None:
        with self._lock:
            self._mem.clear()
            for d in self._dispatchers.values():
                d.fast.clear()
            self._dispatchers.clear()  # their inlined entries too
            self._install(None)

    def deps_hex(self, owner=None) -> str:
        """The digest of the function's dependencies (source, helpers, compile-time values) — with those of
        ``owner``, the class of ``self`` for a method launcher: FlyDSL's ``manager_key``."""
        if self._params is None:
            self._init_params()
        if not self._watch():
            self._revalidate()
        if owner not in self._used_global_vals:
            self._add_owner(owner)
        hx = self._manager_keys.get(owner)
        if hx is None:
            hx = self._manager_keys[owner] = deps_digest(self._owner_deps[owner])
        return hx

    # -- compile -----------------------------------------------------------------------------------
    def _miss_once(self, k, args, key_parts, snap, owner) -> _Entry:
        """:meth:`_miss` once per key however many threads miss it at once: the first compiles, the
        others wait on the key's lock and find the entry (different keys compile concurrently)."""
        with self._lock:
            gate = self._gates.get(k)
            if gate is None:
                gate = self._gates[k] = threading.RLock()  # re-entrant: a trace may compile itself
        with gate:
            entry = self._mem.get(k)
            if entry is not None:
                with self._lock:
                    self.hits += 1
                return entry
            return self._miss(k, args, key_parts, snap, owner)

    def _miss(self, k, args, key_parts, snap, owner) -> _Entry:
        with self._lock:
            self.misses += 1
        env.validate()  # every FLYDSL_* variable, before anything is compiled with a bad one (FLY403)
        target = select_target()
        check_hints(self.compile_hints, target.arch)  # honoured or FLY224, never dropped
        compile_only = snap[0] is not None and _compile_only(snap[0])
        # COMPILE_ONLY for an arch without a code generator (ARCH=gfx942): trace and optimize only — the
        # artifact has the IR and no device code (FlyDSL's frontend-only compiles for AMD targets)
        want_ptx = (compile_only and has_code_generator(target.arch)) or (not compile_only and _device_kind() == "cuda")
        disk, dk, art = None, None, None
        if env.runtime_enable_cache:
            disk = self._ensure_cache_manager(owner)
            dk = disk_key(disk.manager_key, k, target.arch, self.compile_hints)
            if not env.dump_ir:
                art = _load(disk, dk, lazy=want_ptx)  # the GPU (or nothing) runs it: kernels parsed on demand
        if art is None:
            art = self._compile(args, key_parts, target, want_ptx)
            if art.ptx and art.cubin is None and _device_kind() == "cuda":
                # assembled once here (nvJitLink, when installed): every later process loads the cubin
                # instead of having the driver compile the PTX again at module load (a cached start)
                art.cubin = _cubin(art.ptx, target.arch)
            if disk is not None:
                disk.store(dk, art.to_body())
        elif want_ptx and not art.ptx:
            r = codegen(CompileResult(art.module), target.arch, None, self.compile_hints)
            art.set_device_code(r.ptx, r.cubin, r.kernel_info)
            disk.store(dk, art.to_body())
        entry = _Entry(art, target)
        self._mem[k] = entry
        self._last = (k, entry)
        with self._lock:  # after tracing, which may itself edit a container it reads
            d = self._owner_deps.get(owner)
            if d is not None:  # (None: forgotten meanwhile by a re-trace; the next call snapshots again)
                self._used_global_vals[owner] = snapshot_refs(d.refs, d.watch_names)
            self._watch = self._deps.watcher()
        return entry

    def _compile(self, args, key_parts, target, want_ptx: bool) -> Artifact:
        with self._lock:
            self.compiles += 1
        module, ctx, names = self._trace_module(args, key_parts, target)
        name = self.fn.__name__
        result = compile_traced(module, name, target.arch, want_ptx=want_ptx, hints=self.compile_hints)
        kernels = {k: KernelInfo(k, arg_names=v) for k, v in ctx.kernel_arg_names.items()}
        art = Artifact(name, module, name, kernels, names, target.arch)
        art.traced_ir = result.source_ir
        art.set_device_code(result.ptx, result.cubin, result.kernel_info)
        return art

    def _trace_module(self, args, key_parts, target):
        """Trace one specialization: (module before any pass, trace context, host parameter names).

        On a thread with a deep C stack when ``FLYDSL_TRACE_MAX_DEPTH`` raises the recursion limit."""
        return run_traced(self._trace_here, args, key_parts, target)

    def _trace_here(self, args, key_parts, target):
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
        ctx = TraceContext(target, name, module=module, host=host, gpu_module=gmod)
        ctx.fastmath_default = default_from_hints(self.compile_hints) if self.compile_hints else None
        entry = host.regions[0].blocks[0]
        try:
            with tracing(ctx), InsertionPoint(entry):
                dsl_args, pos = [], 0
                for part, a in zip(key_parts, args):
                    n = len(param_types(part))
                    dsl_args.append(make_param(part, entry.args[pos : pos + n], a))
                    pos += n
                ctx.stream = entry.args[-1] if self._implicit_stream else None
                ret = self.body()(*dsl_args)
                if ret is not None and not _own_arguments(ret, dsl_args):
                    raise error(E.JIT_RETURNS, host.loc, name=name, got=type(ret).__name__)
                dfunc.return_(loc=host.loc)
        except TraceTimeout as e:  # FLYDSL_TRACE_MAX_SECONDS passed: FLY303 where the trace was
            raise timeout_error(e, ctx) from None
        return module, ctx, names

    def trace(self, *args, **kwargs):
        """The IR module of the specialization for these arguments, as traced (before any pass).

        Nothing is compiled, cached or launched; for inspection and tests (like ``jax.make_jaxpr``).
        """
        try:
            if kwargs or len(args) != self._nargs:
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
            if kwargs or len(args) != self._nargs:
                args = self._bind(args, kwargs)
            key = []
            for conv, a in zip(self._convs, args):
                conv(a, key, [])
            owner = type(args[0]) if self._has_self_param else None
            k = self._key(key, snapshot(_ENV_KEY), owner)
            return disk_key(self.deps_hex(owner), k, select_target().arch, self.compile_hints)
        except Exception as e:
            raise dsl_error(e)  # noqa: B904 (dsl_error sets or hides the cause)

    def cache_info(self) -> CacheInfo:
        """``CacheInfo(hits, misses, currsize, disk_size)``; ``disk_size`` is None with the disk cache off."""
        owner = self._manager_owner_cls  # a method launcher: the class of its last compile's ``self``
        disk = DiskCache(self.fn.__name__, self.deps_hex(owner)).size() if env.runtime_enable_cache else None
        return CacheInfo(self.hits, self.misses, len(self._mem), disk)

    def clear_cache(self) -> None:
        """Forget the in-memory specializations and the snapshot of the compile-time values they were compiled
        with (the next call compiles with the current values); the disk cache is left alone."""
        self._on_drift()


def _own_arguments(ret, dsl_args: list) -> bool:
    """``ret`` is the launcher's own arguments (one, or a tuple): dropping it loses nothing the call computed, as
    FlyDSL drops it (its launchers often end with ``return A``). Anything else returned is FLY211."""
    items = ret if type(ret) is tuple else (ret,)
    return all(any(x is a for a in dsl_args) for x in items)


def _device_kind() -> str:
    return get_device().kind


def _cubin(ptx: str, arch: str) -> bytes | None:
    """The PTX assembled by nvJitLink, or None (not installed, or it refused: the driver compiles the PTX)."""
    try:
        return ptx_to_cubin(ptx, arch)
    except Exception:  # noqa: BLE001 - an optimization only: the PTX stays the device code
        return None


def _load(disk: DiskCache, key: str, lazy: bool = False) -> Artifact | None:
    """The entry's artifact, or None (missing, damaged: removed). ``lazy`` (the GPU runs it from its device
    code): the kernels' IR is parsed only if something asks for it."""
    body = disk.load(key)
    if body is None:
        return None
    try:
        return Artifact.from_body(body, lazy=lazy and bool(body.get("ptx")))
    except Exception:  # a valid checksum over text we cannot read (older format): rebuild
        try:
            os.remove(disk.path(key))
        except OSError:
            pass
        return None


# ---------------------------------------------------------------------------------------------------
# flyc.compile
# ---------------------------------------------------------------------------------------------------


class CompiledFunction:
    """A compiled specialization (``flyc.compile``): call it like the jit function.

    A call takes the jit function's path (its fast path when the arguments have the types, dtypes and
    alignment they had): arguments that need another specialization (other dtypes, alignment, Constexpr
    values) get it, compiled or found in the cache, instead of running this one on values it was not
    compiled for. Like the jit function it has its own class, whose ``__call__`` is the jit function's
    current dispatcher entry: a cached call costs what the jit function's does.
    """

    __slots__ = ("jit_function", "_entry")

    def __init__(self, jf: JitFunction, entry: _Entry):
        self.__class__ = type("CompiledFunction", (CompiledFunction,), {"__slots__": (), "__module__": __name__})
        self.jit_function = jf
        self._entry = entry
        jf._call_classes.add(self.__class__)
        if jf._dispatch is not _first_call:
            self.__class__.__call__ = jf._dispatch.entry

    def __call__(self, *args, **kwargs):
        return self.jit_function(*args, **kwargs)

    @property
    def _keepalive(self):
        """FlyDSL's name of the compiled artifact (``.source_ir``, ``.ir``, ``.ptx``)."""
        return self._entry.artifact

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
    """``flyc.compile(fn, *args)``, ``flyc.compile[hints](fn, *args)``, ``flyc.compile[hints](fn)``.

    With arguments: compiles the specialization, runs it once with them (as FlyDSL does) and returns the
    :class:`CompiledFunction`; under ``COMPILE_ONLY`` nothing runs and the result is None.
    """

    def __init__(self, hints: dict | None = None):
        self.hints = hints or {}

    @property
    def _compile_hints(self) -> dict:
        """The hints of ``flyc.compile[hints]`` (FlyDSL's attribute name)."""
        return self.hints

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
            entry, vals, compile_only = jf._prepare(bound + args, kwargs)
            if compile_only:
                return None
            # NOTE: FlyDSL's compile runs the function once with these arguments, and FlyDSL's kernel
            # helpers rely on it (their first call's output is this run's)
            entry.run(vals)
        except Exception as e:
            raise dsl_error(e)  # noqa: B904 (dsl_error sets or hides the cause)
        return CompiledFunction(jf, entry)


compile = _Compile()  # noqa: A001  (FlyDSL's name)


def jit(fn=None):
    """``@flyc.jit``: decorate a host launcher."""
    if fn is None:
        return jit
    return JitFunction(fn)


def _unknown() -> bool:
    """The dependency watch before the dependencies are collected: nothing is known to be unchanged."""
    return False


def _call_current(jf, *args, **kwargs):
    return jf(*args, **kwargs)


def _first_call(*args):
    """The dispatcher before the first call: every pattern is another pattern."""
    return OTHER_PATTERN
