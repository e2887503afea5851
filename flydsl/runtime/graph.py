"""Launch graphs on the CPU interpreter: the counterpart of a CUDA graph's capture and replay.

While :meth:`CpuGraph.capture` is active on a thread, a launch on the CPU device is *recorded* instead
of run (as CUDA records work issued on a capturing stream); :meth:`CpuGraph.replay` runs the recorded
launches again, in order, over the same memory — so results written between capture and replay are
recomputed, as on the GPU. As with CUDA graphs, the tensors a recorded launch uses must stay alive and
in place, and the argument values are the ones seen at capture time. Only flydsl launches are
recorded; other work issued during the capture (torch operations) runs at once.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

__all__ = ["CpuGraph", "recording_graph"]

_tls = threading.local()


def recording_graph() -> CpuGraph | None:
    """The graph recording this thread's CPU launches, or None."""
    return getattr(_tls, "graph", None)


class CpuGraph:
    """A recorded sequence of CPU launches (``(launcher, abi values)`` pairs)."""

    def __init__(self):
        self._calls: list = []

    @contextmanager
    def capture(self):
        """Record (not run) the CPU launches of this thread until the block ends; nested captures are
        an error, as in CUDA."""
        if recording_graph() is not None:
            raise RuntimeError("a CPU launch graph is already capturing on this thread")
        self._calls = []
        _tls.graph = self
        try:
            yield self
        finally:
            _tls.graph = None

    def record(self, launcher, vals: list) -> None:
        self._calls.append((launcher, list(vals)))

    def replay(self) -> None:
        """Run the recorded launches in order."""
        for launcher, vals in self._calls:
            launcher(vals)

    def reset(self) -> None:
        """Forget the recorded launches."""
        self._calls = []

    def __len__(self) -> int:
        return len(self._calls)
