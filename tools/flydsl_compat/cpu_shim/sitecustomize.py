"""Run CUDA-written torch programs on a machine without a GPU: "cuda" device strings mean the CPU.

Loaded by Python at start-up (``sitecustomize``) when ``tools/flydsl_compat`` runs FlyDSL's programs
on the CPU interpreter (``--device cpu``): it puts this folder first on ``PYTHONPATH``. It is the
*mechanical device-string change* allowed for that run, done once here instead of editing FlyDSL's
files:

* every torch call that names a CUDA device (``device="cuda"``, ``torch.device("cuda", 0)``,
  ``t.cuda()``, ``t.to("cuda")``) gets the CPU instead (a ``TorchFunctionMode`` that stays active);
* ``torch.cuda``'s queries answer as for one device (``is_available()`` is True, so FlyDSL's
  "skip without a GPU" guards let the tests run), ``synchronize``/``empty_cache`` do nothing,
  streams are handle 0, events time with ``time.perf_counter`` and CUDA graphs record flydsl's
  launches for replay (:class:`flydsl.runtime.CpuGraph`).

Nothing of flydsl is touched: the kernels receive CPU tensors and flydsl runs them on its CPU
interpreter (``FLYDSL_RUNTIME_KIND=cpu``). Never loaded on a machine with a GPU.
"""

from __future__ import annotations

import os
import time


def _is_cuda_device(d) -> bool:
    import torch

    if isinstance(d, torch.device):
        return d.type == "cuda"
    if isinstance(d, str):
        return d == "cuda" or d.startswith("cuda:")
    return False


def _map(value):
    import torch

    if _is_cuda_device(value):  # a string stays a string (torch.device("cuda", 0) -> torch.device("cpu", 0))
        return "cpu" if isinstance(value, str) else torch.device("cpu")
    return value


def _install() -> None:
    try:
        import torch
        from torch.overrides import TorchFunctionMode
    except Exception:  # no torch: nothing to map
        return

    tensor_cuda = torch.Tensor.cuda

    class _CudaIsCpu(TorchFunctionMode):
        """Rewrites CUDA device arguments of every torch call to the CPU."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is tensor_cuda:
                return args[0]
            if func is torch.device and args and _is_cuda_device(args[0]):
                return torch.device("cpu")  # the CPU has one device: no index, so it equals tensor.device
            if "device" in kwargs:
                kwargs["device"] = _map(kwargs["device"])
            kwargs.pop("pin_memory", None)
            args = tuple(_map(a) for a in args)
            return func(*args, **kwargs)

    mode = _CudaIsCpu()
    mode.__enter__()  # NOTE: stays active for the whole process

    cuda = torch.cuda

    class _Props:
        name = "CPU (flydsl interpreter)"
        gcnArchName = ""
        major, minor = 9, 0
        multi_processor_count = 132
        total_memory = 16 << 30
        L2_cache_size = 50 << 20
        warp_size = 32

    class _Stream:
        """A stand-in stream: handle 0 (flydsl's CPU device ignores streams)."""

        cuda_stream = 0
        device = torch.device("cpu")

        def __init__(self, *args, **kwargs):
            pass

        def synchronize(self):
            pass

        def wait_stream(self, other):
            pass

        def wait_event(self, event):
            pass

        def record_event(self, event=None):
            event = event or _Event()
            event.record()
            return event

        def query(self):
            return True

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def __eq__(self, other):
            return isinstance(other, _Stream)

        def __hash__(self):
            return 0

    class _Event:
        """Times with ``perf_counter`` (the CPU run is synchronous)."""

        def __init__(self, *args, **kwargs):
            self.t = None

        def record(self, stream=None):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def wait(self, stream=None):
            pass

        def query(self):
            return True

        def elapsed_time(self, end):
            return (end.t - self.t) * 1e3

    class _Graph:
        """``torch.cuda.CUDAGraph`` on the CPU: flydsl's launches captured into it are recorded (not run)
        and ``replay()`` runs them again (flydsl.runtime.CpuGraph); torch work in the capture runs at once."""

        def __init__(self, *args, **kwargs):
            from flydsl.runtime import CpuGraph

            self.cpu = CpuGraph()

        def replay(self):
            self.cpu.replay()

        def reset(self):
            self.cpu.reset()

    class _GraphCtx:
        """``torch.cuda.graph(g)``: captures into ``g``; ``torch.cuda.stream``/``device``: nothing."""

        def __init__(self, graph, *args, **kwargs):
            self._cm = graph.cpu.capture() if graph is not None else None

        def __enter__(self):
            if self._cm is not None:
                self._cm.__enter__()
            return self

        def __exit__(self, *exc):
            if self._cm is not None:
                self._cm.__exit__(*exc)
            return False

    stream0 = _Stream()
    patches = {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda d: None,
        "get_device_name": lambda d=None: _Props.name,
        "get_device_properties": lambda d=None: _Props(),
        "get_device_capability": lambda d=None: (9, 0),
        "synchronize": lambda d=None: None,
        "empty_cache": lambda: None,
        "manual_seed": lambda s: None,  # the tensors are CPU ones: torch.manual_seed seeds them
        "manual_seed_all": lambda s: None,
        "is_initialized": lambda: True,
        "init": lambda: None,
        "mem_get_info": lambda d=None: (8 << 30, 16 << 30),
        "memory_allocated": lambda d=None: 0,
        "max_memory_allocated": lambda d=None: 0,
        "reset_peak_memory_stats": lambda d=None: None,
        "current_stream": lambda d=None: stream0,
        "default_stream": lambda d=None: stream0,
        "set_stream": lambda s: None,
        "stream": lambda s=None: _GraphCtx(None),
        "device": lambda d=None: _GraphCtx(None),
        "Stream": _Stream,
        "Event": _Event,
        "CUDAGraph": _Graph,
        "graph": _GraphCtx,
    }
    for name, value in patches.items():
        setattr(cuda, name, value)


if os.environ.get("FLYDSL_COMPAT_CPU_SHIM", "1") == "1":
    _install()
