"""``RawAddress``: the ABI value of a raw-pointer argument (``flyc.from_c_void_p``).

The CUDA launcher passes it as the integer it is. The CPU interpreter checks every access against the
buffer it belongs to, so it looks the address up among the live CPU tensors and numpy arrays
(:func:`owning_region`) and registers that allocation; an address into none of them is FLY401.
"""

from __future__ import annotations

__all__ = ["RawAddress", "owning_region"]


class RawAddress(int):
    """An address passed to a kernel's pointer parameter as is."""


def _candidates():
    """Objects that may own the memory: tracked objects, the values of tracked dicts/lists/tuples (numpy
    arrays are not tracked by the collector themselves) and the locals of the calling frames."""
    import gc
    import sys

    for o in gc.get_objects():
        yield o
        if isinstance(o, dict):
            yield from o.values()
        elif isinstance(o, (list, tuple)):
            yield from o
    f = sys._getframe(1)
    while f is not None:
        yield from f.f_locals.values()
        f = f.f_back


def _storages():
    """(start, nbytes, owner) of the memory of live torch CPU tensors and numpy arrays."""
    import sys

    import numpy as np

    torch = sys.modules.get("torch")
    for o in _candidates():
        if isinstance(o, np.ndarray):
            base = o
            while isinstance(base.base, np.ndarray):
                base = base.base
            if base.nbytes:
                yield base.ctypes.data, base.nbytes, base
        elif torch is not None and isinstance(o, torch.Tensor) and o.device.type == "cpu":
            try:
                st = o.untyped_storage()
                if st.nbytes():
                    yield st.data_ptr(), st.nbytes(), o
            except (RuntimeError, NotImplementedError):  # meta/sparse tensors have no plain storage
                continue


def owning_region(address: int) -> tuple[int, int, object] | None:
    """``(start, nbytes, owner)`` of the live CPU tensor/array memory that contains ``address`` (the
    smallest such region), or None. Lets the interpreter check raw-pointer accesses against the
    allocation they belong to."""
    best = None
    for start, nbytes, owner in _storages():
        if start <= address < start + nbytes and (best is None or nbytes < best[1]):
            best = (start, nbytes, owner)
    return best
