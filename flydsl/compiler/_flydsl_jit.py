"""FlyDSL's attribute names on ``@flyc.jit`` functions, for code and tests that reach into them.

:class:`FlyDSLJitNames` is a base of :class:`~flydsl.compiler.jit.JitFunction`: ``func`` (the decorated
Python function), ``_mem_cache`` (the in-memory specializations as ``{key: artifact}``, with
``clear()``), ``_last_compiled`` (``(key, artifact)`` of the last compilation) and
``_effective_compile_hints()`` (the function's hints under the ambient
``CompilationContext.compile_hints``). Artifacts expose ``source_ir`` and ``ir``.
"""

from __future__ import annotations

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
    _hint_copies: dict | None = None
    _own_hints: dict | None = None

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
