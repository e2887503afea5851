"""``RawAddress``: the ABI value of a raw-pointer argument (``flyc.from_c_void_p``).

The CUDA launcher passes it as the integer it is. The CPU interpreter checks every access against the
buffer it belongs to, so it looks the address up among the live CPU tensors and numpy arrays
(:func:`owning_region`) and registers that allocation; an address into none of them is FLY401.

The search walks every object the garbage collector tracks (half a second in a large process), so the
regions found are remembered with a weak reference to their owner: a later address inside a region whose
owner is alive and still holds that memory is answered without a search (FlyDSL's kernel tests launch the
same raw pointers hundreds of times).
"""

from __future__ import annotations

import threading
import weakref

__all__ = ["RawAddress", "owning_region"]

#: start -> (nbytes, weak reference to the owner) of the regions found so far
_FOUND: dict[int, tuple[int, weakref.ref]] = {}
_FOUND_LOCK = threading.Lock()


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


def _region_of(owner) -> tuple[int, int] | None:
    """``(start, nbytes)`` of the memory ``owner`` (a numpy base array or a CPU tensor) holds now."""
    if hasattr(owner, "untyped_storage"):
        st = owner.untyped_storage()
        return st.data_ptr(), st.nbytes()
    return owner.ctypes.data, owner.nbytes


def _remembered(address: int) -> tuple[int, int, object] | None:
    """A remembered region containing ``address`` whose owner is alive and still holds it (dead or
    moved entries are dropped)."""
    with _FOUND_LOCK:
        items = list(_FOUND.items())
    for start, (nbytes, ref) in items:
        if not start <= address < start + nbytes:
            continue
        owner = ref()
        if owner is not None and _region_of(owner) == (start, nbytes):
            return start, nbytes, owner
        with _FOUND_LOCK:
            if _FOUND.get(start, (0, None))[1] is ref:
                del _FOUND[start]
    return None


def owning_region(address: int) -> tuple[int, int, object] | None:
    """``(start, nbytes, owner)`` of the live CPU tensor/array memory that contains ``address`` (the
    smallest such region), or None. Lets the interpreter check raw-pointer accesses against the
    allocation they belong to. Live allocations are disjoint, so a remembered live region that
    contains the address is the answer a search would give."""
    hit = _remembered(address)
    if hit is not None:
        return hit
    best = None
    for start, nbytes, owner in _storages():
        if start <= address < start + nbytes and (best is None or nbytes < best[1]):
            best = (start, nbytes, owner)
    if best is not None:
        try:
            ref = weakref.ref(best[2])
        except TypeError:  # an owner that cannot be weakly referenced is searched for every time
            return best
        with _FOUND_LOCK:
            _FOUND[best[0]] = (best[1], ref)
    return best
