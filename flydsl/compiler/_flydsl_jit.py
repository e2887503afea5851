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
from ..utils.env import JIT_KEY_VARS, snapshot
from .backends import get_backend
from .deps import freeze
from .kernel_function import _tls, ambient_hints, merge_compile_hints

__all__ = ["FlyDSLJitNames"]


class _MemCacheView:
    """``{key: artifact}`` over a jit function's in-memory cache (``clear()`` clears it)."""

    def __init__(self, jf):
        self._jf = jf

    def _m(self) -> dict:
        return self._jf._mem

    def values(self):
        return [e.artifact for e in self._m().values()]

    def keys(self):
        return list(self._m().keys())

    def items(self):
        return [(k, e.artifact) for k, e in self._m().items()]

    def clear(self) -> None:
        self._m().clear()
        self._jf._last = None

    def __len__(self) -> int:
        return len(self._m())

    def __bool__(self) -> bool:
        return bool(self._m())

    def __iter__(self):
        return iter(self._m())

    def __contains__(self, k) -> bool:
        return k in self._m()

    def __getitem__(self, k):
        return self._m()[k].artifact


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
