"""``flydsl.autotune``: pick the fastest of several configurations of a ``@flyc.jit`` launcher per input
signature (FlyDSL's ``@autotune``), on the GPU and on the CPU interpreter.

::

    @autotune(configs=[Config(BLOCK=128), Config(BLOCK=256, num_warps=8)], key=["x", "n"])
    @flyc.jit
    def launch(x, y, n: fx.Int32, BLOCK: fx.Constexpr[int], num_warps: fx.Constexpr[int] = 4): ...

    launch(x, y, n)   # BLOCK / num_warps come from the chosen config

A call picks its :class:`Config` in this order: the searched winner for its key (in memory, and on disk
under ``FLYDSL_AUTOTUNE_CACHE_DIR``), an offline artifact (``FLYDSL_AUTOTUNE_CONFIG_DIR`` +
``artifact_name``), ``default`` (a Config, or a function of the arguments returning one), and only then
a search. ``FLYDSL_AUTOTUNE=1`` always searches and, with ``artifact_name`` and a config folder, writes
the artifact. The key is the values of the ``key`` arguments (tensors by shape, dtype and stride
pattern), the device architecture, the toolchain (flydsl's compiler sources, llvmlite), the
codegen-affecting environment and the function's compile hints.

A search runs every config (``configs`` may be a function of the arguments; ``prune_configs_by`` filters
them) through ``do_bench`` — median milliseconds of ``rep`` runs after ``warmup`` runs: CUDA events on
the GPU, ``time.perf_counter`` on the CPU interpreter. Before every run ``restore_value`` tensors get
their values from before the search back and ``reset_to_zero`` tensors are zeroed; a config that fails
(compile error, bad launch) is skipped. A config's ``waves_per_eu``/``maxnreg`` become compile hints of
its runs; its other fields are keyword arguments of the launcher.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import re
import statistics
import time
import warnings
from pathlib import Path

from .utils.env import CODEGEN_AFFECTING, env
from .utils.file import atomic_write

__all__ = ["autotune", "Autotuner", "Config", "do_bench"]

_COMPILER_OPTS = ("waves_per_eu", "maxnreg")
_ARTIFACT_VERSION = 1


class Config:
    """One configuration: keyword arguments of the launcher plus compiler options.

    Args:
        num_warps: passed to the launcher as ``num_warps=`` (when set).
        waves_per_eu, maxnreg: compile hints of the runs with this config.
        pre_hook: called with the launcher's keyword arguments before each run with this config.
        **kwargs: keyword arguments of the launcher (``BLOCK=128``).
    """

    def __init__(self, *, num_warps=None, waves_per_eu=None, maxnreg=None, pre_hook=None, **kwargs):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.waves_per_eu = waves_per_eu
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict:
        """The launcher's keyword arguments of this config (``num_warps`` included when set)."""
        out = dict(self.kwargs)
        if self.num_warps is not None:
            out["num_warps"] = self.num_warps
        return out

    def compiler_opts(self) -> dict:
        """The compile hints of this config (``waves_per_eu``, ``maxnreg`` when set)."""
        return {k: getattr(self, k) for k in _COMPILER_OPTS if getattr(self, k) is not None}

    def to_dict(self) -> dict:
        d = dict(self.kwargs)
        for k in ("num_warps", *_COMPILER_OPTS):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Config:
        return cls(**d)

    def __eq__(self, other) -> bool:
        return isinstance(other, Config) and self.to_dict() == other.to_dict() and self.pre_hook is other.pre_hook

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_dict(), sort_keys=True, default=repr))

    def __repr__(self) -> str:
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"


# -- timing ------------------------------------------------------------------------------------------


def _on_gpu() -> bool:
    from .runtime.device import get_device

    try:
        return get_device().kind == "cuda"
    except Exception:
        return False


def do_bench(fn, warmup: int = 5, rep: int = 25) -> float:
    """Median milliseconds of ``rep`` calls of ``fn`` after ``warmup`` calls (CUDA events on the GPU,
    ``time.perf_counter`` on the CPU interpreter)."""
    for _ in range(warmup):
        fn()
    times = []
    if _on_gpu():
        import torch

        for _ in range(max(1, rep)):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(max(1, rep)):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


# -- key axes ----------------------------------------------------------------------------------------


def _is_tensor(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and (hasattr(x, "stride") or hasattr(x, "strides"))


def _strides(t) -> tuple:
    s = t.stride() if callable(getattr(t, "stride", None)) else getattr(t, "strides", ())
    if hasattr(t, "itemsize") and not callable(getattr(t, "stride", None)):  # numpy strides are bytes
        s = tuple(x // t.itemsize for x in s)
    return tuple(s)


def _normalize_strides(t) -> tuple:
    """The stride pattern of a tensor: 1 and 0 kept, any other stride ``"s"`` (one compile serves many)."""
    return tuple(s if s in (0, 1) else "s" for s in _strides(t))


def _key_value(x):
    if _is_tensor(x):
        return ("tensor", tuple(int(d) for d in x.shape), str(x.dtype), _normalize_strides(x))
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    if getattr(x, "_is_numeric", False) and x.is_static():
        return (type(x).__name__, x.value)
    if isinstance(x, (tuple, list)):
        return tuple(_key_value(v) for v in x)
    return type(x).__qualname__


def _device_descriptor(device=None):
    """The architecture the kernels run on (None when it cannot be determined)."""
    try:
        from .runtime.arch import get_rocm_arch
        from .runtime.device import get_device

        return f"{get_device().kind}:{get_rocm_arch()}"
    except Exception:
        return None


def _device_fingerprint() -> str:
    return _device_descriptor() or "unknown"


def _toolchain_fingerprint() -> str:
    import llvmlite

    from . import __version__
    from .compiler.cache import compiler_hash

    return f"flydsl-{__version__}+{compiler_hash()[:16]}/llvmlite-{llvmlite.__version__}"


def _env_fingerprint() -> tuple:
    return tuple((n, env.raw(n)) for n in CODEGEN_AFFECTING)


def _hints_of(fn) -> dict:
    eff = getattr(fn, "_effective_compile_hints", None)
    if callable(eff):
        return dict(eff())
    return dict(getattr(fn, "compile_hints", None) or {})


def _accepts(ann, value) -> bool:
    """Whether a parameter annotated ``ann`` takes ``value`` (fx.Constexpr[T], a coercing type, a class)."""
    if ann is inspect.Parameter.empty or isinstance(ann, str):
        return True
    accepts = getattr(ann, "accepts", None)
    if callable(accepts):
        return bool(accepts(value))
    coerce = getattr(ann, "__coerce__", None)
    if callable(coerce):
        try:
            coerce(value)
        except (TypeError, ValueError):
            return False
        return True
    if isinstance(ann, type) and ann in (int, float, str, bool, tuple):
        return type(value) is ann
    return True


def _zero(t) -> None:
    """Zero a tensor in place (torch ``zero_()``, numpy by assignment)."""
    if hasattr(t, "zero_"):
        t.zero_()
    else:
        t[...] = 0


def _clone(t):
    return t.clone() if hasattr(t, "clone") else t.copy()


def _copy_into(dst, src) -> None:
    if hasattr(dst, "copy_"):
        dst.copy_(src)
    else:
        dst[...] = src


def _canon(x) -> str:
    return json.dumps(x, sort_keys=True, default=repr)


# -- the tuner ---------------------------------------------------------------------------------------


class Autotuner:
    """A launcher wrapped by :func:`autotune` (see the module docstring)."""

    def __init__(
        self,
        fn,
        configs,
        key=None,
        warmup: int = 5,
        rep: int = 25,
        prune_configs_by=None,
        reset_to_zero=None,
        restore_value=None,
        pre_hook=None,
        post_hook=None,
        do_bench_fn=None,
        default=None,
        artifact_name=None,
    ):
        self.fn = fn
        self.configs = configs
        self.warmup, self.rep = warmup, rep
        self.prune_configs_by = prune_configs_by
        self.reset_to_zero = list(reset_to_zero) if reset_to_zero else []
        self.restore_value = list(restore_value) if restore_value else []
        self.pre_hook, self.post_hook = pre_hook, post_hook
        self.do_bench = do_bench_fn or (lambda call, warmup, rep: do_bench(call, warmup, rep))
        self.default = default
        self._sig = inspect.signature(getattr(fn, "fn", fn))
        self.arg_names = list(self._sig.parameters)
        self.key = list(key) if key is not None else None
        if artifact_name is not None:
            if not isinstance(artifact_name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", artifact_name):
                raise ValueError(
                    f"artifact_name must be a plain file name (letters, digits, _ . -), got {artifact_name!r}"
                )
            if self.key is not None and any(k not in self.arg_names for k in self.key):
                raise ValueError(f"artifact keys {self.key} must name parameters of {self.arg_names}")
        self.artifact_name = artifact_name
        name = getattr(getattr(fn, "fn", fn), "__qualname__", "fn").replace("<", "").replace(">", "")
        self._cache_file = Path(env.autotune_cache_dir) / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.json"
        self.cache: dict = self._load_cache()

    # -- arguments ---------------------------------------------------------------------------------
    def _bind(self, args, kwargs, defaults: bool = False) -> dict:
        b = self._sig.bind_partial(*args, **kwargs)
        if defaults:
            b.apply_defaults()
        return dict(b.arguments)

    def _key_args(self, bound: dict) -> dict:
        names = self.key if self.key is not None else list(bound)
        return {n: bound[n] for n in names if n in bound}

    def _make_key(self, args, kwargs) -> str:
        """The cache key of a call (a canonical string; see the module docstring for its axes)."""
        bound = self._bind(args, kwargs)
        parts = [
            ("_args_", sorted((n, _key_value(v)) for n, v in self._key_args(bound).items())),
            ("_device_", _device_fingerprint()),
            ("_toolchain_", _toolchain_fingerprint()),
            ("_env_", _env_fingerprint()),
            ("_hints_", sorted(_hints_of(self.fn).items())),
            ("_artifact_", self.artifact_name),  # a new artifact schema does not reuse old winners
        ]
        return _canon(parts)

    # -- the disk cache of searched winners ----------------------------------------------------------
    def _load_cache(self) -> dict:
        try:
            data = json.loads(self._cache_file.read_text())
            return {k: Config.from_dict(v) for k, v in data.items()}
        except (OSError, ValueError, TypeError):
            return {}

    def _save_cache(self) -> None:
        data = {k: c.to_dict() for k, c in self.cache.items()}
        with atomic_write(self._cache_file) as f:
            f.write(json.dumps(data, sort_keys=True, indent=1))

    # -- offline artifacts -----------------------------------------------------------------------------
    def _artifact_ref(self, args, kwargs, required: bool = False):
        """(path, identity) of the artifact for this call, or None without a name/folder/device."""
        folder = env.autotune_config_dir
        if not self.artifact_name or not folder:
            return None
        device = _device_descriptor()
        if device is None:
            if required:
                raise ValueError("cannot generate offline config identity: the device is unknown")
            return None
        bound = self._bind(args, kwargs, defaults=True)
        identity = {"key": {n: _key_value(v) for n, v in self._key_args(bound).items()}, "device": device}
        digest = hashlib.sha256(_canon(identity).encode()).hexdigest()[:16]
        return Path(folder) / f"{self.artifact_name}-{digest}.json", json.loads(_canon(identity))

    def _load_artifact(self, ref, args, kwargs):
        """The artifact's Config when it is valid for this call (else None, with a warning; None for no ref)."""
        if ref is None:
            return None
        path, identity = ref
        if not path.exists():
            return None
        try:
            payload = json.loads(path.read_text())
            ok = payload.get("version") == _ARTIFACT_VERSION and payload.get("identity") == identity
            cfg = Config.from_dict(payload["config"]) if ok and isinstance(payload.get("config"), dict) else None
        except (OSError, ValueError, TypeError, KeyError):
            cfg = None
        why = "unreadable, other version or other identity" if cfg is None else self._config_problem(cfg, args, kwargs)
        if why:
            warnings.warn(f"ignoring autotune artifact {path}: {why}", UserWarning, stacklevel=3)
            return None
        return cfg

    def _config_problem(self, cfg: Config, args, kwargs) -> str | None:
        """Why ``cfg`` cannot be used for this call (None when it can): each of its keyword arguments must
        be a parameter the caller did not pass, with a value its annotation accepts."""
        passed = self._bind(args, kwargs)
        params = self._sig.parameters
        for name, value in cfg.all_kwargs().items():
            p = params.get(name)
            if p is None and not any(q.kind is q.VAR_KEYWORD for q in params.values()):
                return f"{name!r} is not a parameter of the function"
            if name in passed:
                return f"{name!r} is given by the caller"
            ann = p.annotation if p is not None else inspect.Parameter.empty
            if not _accepts(ann, value):
                return f"{name}={value!r} does not fit its annotation {ann!r}"
        return None

    def _emit_artifact(self, cfg: Config, ref, args, kwargs) -> None:
        """Write ``cfg`` as the offline artifact ``ref`` for calls like this one."""
        path, identity = ref
        if cfg.pre_hook is not None:
            raise ValueError("a config with a pre_hook cannot be saved as an offline artifact")
        d = cfg.to_dict()
        if json.loads(json.dumps(d)) != d:
            raise ValueError(f"config {cfg} does not preserve their types through JSON; use ints, floats, strings")
        body = {"version": _ARTIFACT_VERSION, "identity": identity, "config": d}
        with atomic_write(path) as f:
            f.write(json.dumps(body, sort_keys=True, indent=1))

    # -- search ------------------------------------------------------------------------------------
    def _configs(self, args, kwargs) -> list:
        cs = self.configs(*args, **kwargs) if callable(self.configs) else self.configs
        return list(cs)

    def _prune(self, configs, args, kwargs) -> list:
        if self.prune_configs_by is None:
            return list(configs)
        return list(self.prune_configs_by(list(configs), self._bind(args, kwargs)))

    def _default(self, args, kwargs):
        d = self.default
        return d(*args, **kwargs) if callable(d) and not isinstance(d, Config) else d

    def _run(self, cfg: Config, args, kwargs):
        """One run of the launcher with ``cfg`` (hooks and reset_to_zero applied)."""
        from .compiler.kernel_function import CompilationContext

        bound = self._bind(args, kwargs)
        for n in self.reset_to_zero:
            if n in bound:
                _zero(bound[n])
        call_kw = {**cfg.all_kwargs(), **kwargs}
        if cfg.pre_hook is not None:
            cfg.pre_hook(call_kw)
        if self.pre_hook is not None:
            self.pre_hook(call_kw)
        with CompilationContext.compile_hints(cfg.compiler_opts()):
            out = self.fn(*args, **call_kw)
        if self.post_hook is not None:
            self.post_hook(call_kw)
        return out

    def _search(self, args, kwargs) -> Config:
        configs = self._prune(self._configs(args, kwargs), args, kwargs)
        if not configs:
            raise ValueError("autotune: no config left to try (configs empty or all pruned)")
        bound = self._bind(args, kwargs)
        saved = {n: _clone(bound[n]) for n in self.restore_value if n in bound}

        def restore():
            for n, snap in saved.items():
                _copy_into(bound[n], snap)

        best, best_t, errors = None, math.inf, []
        for cfg in configs:

            def call(cfg=cfg):
                restore()
                return self._run(cfg, args, kwargs)

            try:
                t = self.do_bench(call, self.warmup, self.rep)
            except Exception as e:  # a config that does not compile or launch is skipped
                errors.append(f"{cfg}: {type(e).__name__}: {e}")
                continue
            if t < best_t:
                best, best_t = cfg, t
        restore()
        if best is None:
            raise RuntimeError("autotune: every config failed:\n  " + "\n  ".join(errors))
        return best

    # -- call --------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        key = self._make_key(args, kwargs)
        force = env.autotune
        cfg = None if force else self.cache.get(key)
        if cfg is None and not force:
            ref = self._artifact_ref(args, kwargs)
            if ref is not None:
                cfg = self._load_artifact(ref, args, kwargs)
            if cfg is None and self.default is not None:
                cfg = self._default(args, kwargs)
        if cfg is None:
            cfg = self._search(args, kwargs)
            if force and self.artifact_name and env.autotune_config_dir:
                self._emit_artifact(cfg, self._artifact_ref(args, kwargs, required=True), args, kwargs)
            self.cache[key] = cfg
            self._save_cache()
        return self._run(cfg, args, kwargs)

    def best_config(self, *args, **kwargs):
        """The config a call with these arguments would use now (None if it would search)."""
        return self.cache.get(self._make_key(args, kwargs))


def autotune(
    configs,
    key=None,
    warmup: int = 5,
    rep: int = 25,
    prune_configs_by=None,
    reset_to_zero=None,
    restore_value=None,
    pre_hook=None,
    post_hook=None,
    do_bench=None,
    default=None,
    artifact_name=None,
):
    """Decorate a ``@flyc.jit`` launcher with a config search (see the module docstring)."""

    def wrap(fn) -> Autotuner:
        return Autotuner(
            fn,
            configs,
            key=key,
            warmup=warmup,
            rep=rep,
            prune_configs_by=prune_configs_by,
            reset_to_zero=reset_to_zero,
            restore_value=restore_value,
            pre_hook=pre_hook,
            post_hook=post_hook,
            do_bench_fn=do_bench,
            default=default,
            artifact_name=artifact_name,
        )

    return wrap
