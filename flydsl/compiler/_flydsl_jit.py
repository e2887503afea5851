"""FlyDSL's attribute names on ``@flyc.jit`` functions, for code and tests that reach into them.

:class:`FlyDSLJitNames` is a base of :class:`~flydsl.compiler.jit.JitFunction`: ``func`` (the decorated
Python function), ``_mem_cache`` (the in-memory specializations as ``{key: artifact}``, with
``clear()``), ``_last_compiled`` (``(key, artifact)`` of the last compilation) and
``_effective_compile_hints()`` (the function's hints under the ambient
``CompilationContext.compile_hints``). Artifacts expose ``source_ir`` and ``ir``.
"""

from __future__ import annotations

from ..expr.typing import Stream
from ..runtime.args import ArgError
from ..utils.env import JIT_KEY_VARS, env, snapshot
from .backends import get_backend
from .cache import DiskCache
from .deps import freeze
from .drift import drift_error, find_change
from .kernel_function import _tls, ambient_hints, merge_compile_hints

__all__ = ["FlyDSLJitNames"]


class _View:
    """A read-only ``{key: value}`` view over a jit function's specializations (``_d()``: the dict now)."""

    def __init__(self, jf):
        self._jf = jf

    def _d(self) -> dict:
        raise NotImplementedError

    def get(self, key, default=None):
        return self._d().get(key, default)

    def keys(self):
        return list(self._d())

    def values(self):
        return list(self._d().values())

    def items(self):
        return list(self._d().items())

    def __len__(self) -> int:
        return len(self._d())

    def __bool__(self) -> bool:
        return bool(self._d())

    def __iter__(self):
        return iter(self._d())

    def __contains__(self, k) -> bool:
        return k in self._d()

    def __getitem__(self, k):
        return self._d()[k]


class _MemCacheView(_View):
    """``{key: artifact}`` over a jit function's in-memory cache (``clear()`` clears it)."""

    def _d(self) -> dict:
        return {k: e.artifact for k, e in list(self._jf._mem.items())}

    def clear(self) -> None:
        self._jf._mem.clear()
        self._jf._last = None
        self._jf._drop_launch_states()  # the fast path's entries launch these specializations too


class _CallStateView(_View):
    """``{key: launcher}``: the launch state built at a specialization's first launch (FlyDSL's ``CallState``:
    the device's launcher, with what the fast path registered for it); ``clear()`` drops them (rebuilt at
    the next launch)."""

    def _d(self) -> dict:
        return {k: e.launcher for k, e in list(self._jf._mem.items()) if e.launcher is not None}

    def clear(self) -> None:
        self._jf._drop_launch_states()


class FlyDSLJitNames:
    """See the module docstring."""

    _hinted_copy = False  # a copy made for ambient hints (it does not look for them again)
    _params = None  # set by JitFunction._init_params
    _hint_copies: dict | None = None
    _own_hints: dict | None = None
    _backend_target = None  # the GPUTarget resolved by _ensure_sig (FlyDSL's attribute)

    @property
    def compile_hints(self) -> dict:
        """The function's compile hints (a mutable dict). Inside ``CompilationContext.compile_hints`` blocks
        this reads as a merged copy, so cached fast-path keys (which compare it) miss and the call goes to
        the copy compiled under those hints."""
        own = self._own_hints
        if own is None:
            own = self._own_hints = {}
        amb = _tls.hints
        if amb is None or self._hinted_copy:
            return own
        return merge_compile_hints(own, amb)

    @compile_hints.setter
    def compile_hints(self, value: dict) -> None:
        self._own_hints = value

    @property
    def func(self):
        return self.fn

    @property
    def _sig(self):
        """The ``inspect.Signature`` (None until the first call). Assigning None makes the next call resolve
        the signature and parameters again (FlyDSL's reset)."""
        return self.__dict__.get("_signature")

    @_sig.setter
    def _sig(self, value) -> None:
        if value is None and self._params is not None:
            with self._lock:
                self._params = None
                self._nargs = -1
                self._dispatchers.clear()
                self._install(None)
        self.__dict__["_signature"] = value

    @property
    def _call_state_cache(self) -> _CallStateView:
        return _CallStateView(self)

    def _drop_launch_states(self) -> None:
        """Forget every specialization's launcher and the fast path's entries (rebuilt at the next launch)."""
        with self._lock:
            for e in self._mem.values():
                e.launcher = None
            for d in self._dispatchers.values():
                d.fast.clear()
            self._dispatchers.clear()
            self._install(None)

    # -- the cache manager and the drift check (FlyDSL's names over :mod:`.jit`'s structures) -------
    @property
    def manager_key(self) -> str | None:
        """The digest of the function's dependencies for ``_manager_owner_cls`` (None until computed):
        the disk cache's folder. Assigning None forgets every owner's (recomputed when needed)."""
        return self._manager_keys.get(self._manager_owner_cls)

    @manager_key.setter
    def manager_key(self, value) -> None:
        if value is not None:
            raise AttributeError("manager_key is computed; assign None to forget it")
        self._manager_keys.clear()

    def _ensure_cache_manager(self, owner_cls=None):
        """Compute ``manager_key`` for ``owner_cls`` and open its disk cache folder (``cache_manager``, None
        with ``FLYDSL_RUNTIME_ENABLE_CACHE=0``); returns the folder."""
        key = self.deps_hex(owner_cls)
        self._manager_owner_cls = owner_cls
        if not env.runtime_enable_cache:
            self.cache_manager = None
        elif self.cache_manager is None or self.cache_manager.manager_key != key:
            self.cache_manager = DiskCache(self.fn.__name__, key)
        return self.cache_manager

    def _get_global_refs(self, owner_cls=None) -> list:
        """``[(name, module name, holder)]``: the compile-time values the function (with ``owner_cls``) reads."""
        if owner_cls not in self._global_refs_cache:
            self.deps_hex(owner_cls)
        return self._global_refs_cache[owner_cls]

    def _check_globals_drift(self, owner_cls=None, retrace: bool = False) -> bool:
        """Compare the values of ``_get_global_refs(owner_cls)`` with their snapshot ``_used_global_vals[owner_cls]``
        (taken when the function was compiled): changed, FLY229 (``GlobalChangedError``, a ``RuntimeError``)
        at the line that reads it — or, with ``retrace``, True. Unchanged: False."""
        d = self._owner_deps.get(owner_cls)
        names = d.watch_names if d is not None and self._global_refs_cache.get(owner_cls) is d.refs else None
        change = find_change(self._global_refs_cache[owner_cls], self._used_global_vals[owner_cls], names)
        if change is None:
            return False
        if retrace:
            return True
        site = d.sites.get(change[:2]) if d is not None else None
        raise drift_error(self.fn.__name__, change, site)

    @property
    def _mem_cache(self) -> _MemCacheView:
        return _MemCacheView(self)

    @property
    def _last_compiled(self):
        last = self._last
        return None if last is None else (last[0], last[1].artifact)

    @_last_compiled.setter
    def _last_compiled(self, value) -> None:
        if value is None:
            self._last = None
        else:
            raise AttributeError("_last_compiled is set by compiling; assign None to forget it")

    def _effective_compile_hints(self) -> dict:
        return merge_compile_hints(self._own_hints or {}, ambient_hints())

    def _under_hints(self, ambient: dict):
        """The copy of this function compiled under ``ambient`` hints (one per distinct hint set)."""
        k = freeze(ambient)
        copies = self._hint_copies
        if copies is None:
            copies = self._hint_copies = {}
        jf = copies.get(k)
        if jf is None:
            jf = copies[k] = self.with_hints(ambient)  # own hints merged with the ambient ones
            jf._hinted_copy = True
        return jf

    # -- FlyDSL's cache-key internals (its tests compute keys without calling) ----------------------
    def _ensure_sig(self) -> None:
        """Resolve the signature (``self._sig``, an ``inspect.Signature``) and the parameters once, and the
        backend target of now (``self._backend_target``; the keys below take the target of each call)."""
        if self._params is None:
            self._init_params()
        if self._backend_target is None:
            self._backend_target = get_backend().target

    def _resolve_and_make_cache_key(self, arguments) -> tuple:
        """FlyDSL's in-memory key for bound ``arguments`` (``{name: value}``, defaults applied): one
        ``(name, signature)`` pair per parameter — ``(fx.Int32,)`` for a run-time scalar, ``(fx.Stream,)``
        for a stream whatever its run-time form, the value for a Constexpr, the layout facts of a tensor
        — then ``("_env_", …)`` (the code-affecting environment), ``("_hints_", …)`` (the effective
        compile hints) and ``("_target_", GPUTarget)`` (arch only: one entry serves every same-arch
        device). Equal keys exactly when a call would reuse the same compiled code."""
        self._ensure_sig()
        parts = []
        for p in self._params:
            a = arguments[p.name]
            if p.is_stream:
                parts.append((p.name, (Stream,)))
                continue
            key: list = []
            try:
                p.conv(a, key, [])
            except ArgError as e:
                raise TypeError(f"argument {p.name!r}: {e}") from None
            parts.append((p.name, tuple(key)))
        hints = self.compile_hints
        parts.append(("_env_", snapshot(JIT_KEY_VARS)[1:]))
        parts.append(("_hints_", freeze(hints) if hints else None))
        parts.append(("_target_", get_backend().target))
        return tuple(parts)

    def _build_full_cache_key(self, arguments) -> tuple:
        """The in-memory key plus ``("_deps_", digest)``: the function's dependencies (sources of the
        functions it calls, the values of the globals and closure variables it reads), as the disk
        cache keys them — two processes seeing different global values never share an entry."""
        return self._resolve_and_make_cache_key(arguments) + (("_deps_", self.deps_hex()),)
