"""``flydsl.compiler.jit_argument``: FlyDSL's registry of launcher argument types, over ours.

* ``JitArgumentRegistry.register(PyType, dsl_type=None)(constructor)`` — instances of ``PyType`` passed
  to a ``@flyc.jit`` function are converted with ``constructor`` first, then passed as that value
  (e.g. ``register(MyStream)(fx.Stream)``).
* ``TorchTensorJitArg(t, dynamic_layout=True, use_32bit_stride=False)`` — a torch tensor argument: a
  layout-dynamic tensor by default (one compile for all shapes), or a static layout
  (``dynamic_layout=False``, as ``flyc.from_torch_tensor``); its dynamic strides are 64-bit unless
  ``use_32bit_stride``; ``__cache_signature__()`` is its specialization key part, ``__c_abi_spec__()``
  how the host function receives it (``flydsl.runtime.args.TensorAdaptor``).
"""

from __future__ import annotations

from ..runtime.args import TensorAdaptor, torch_ref, unit_axis
from .specialize import CONVERTERS, convert_arg

__all__ = ["JitArgumentRegistry", "TorchTensorJitArg"]


class JitArgumentRegistry:
    """Python argument types and the constructors that turn them into launcher arguments."""

    registry: dict = {}

    @classmethod
    def register(cls, py_type: type, *, dsl_type=None):
        def decorator(constructor):
            def convert(x, key, vals):
                convert_arg(constructor(x), key, vals)

            cls.registry[py_type] = (constructor, dsl_type)
            CONVERTERS[py_type] = convert
            return constructor

        return decorator

    @classmethod
    def get(cls, py_type: type):
        return cls.registry.get(py_type)


class TorchTensorJitArg(TensorAdaptor):
    """A torch tensor argument (see the module docstring).

    Raises:
        RuntimeError: ``dynamic_layout=True`` for a tensor with no unit-stride mode (a strided slice): it
            cannot be layout-dynamic; pass ``flyc.from_torch_tensor(t)`` for a static layout, or a copy.
    """

    __slots__ = ()

    def __init__(self, tensor, *, dynamic_layout: bool = True, use_32bit_stride: bool = False, assumed_align=None):
        super().__init__(torch_ref(tensor), use_32bit_stride)
        r = self.ref
        if dynamic_layout and len(r.shape):
            if unit_axis(r.shape, r.strides) < 0:
                raise RuntimeError(
                    f"cannot auto-mark layout-dynamic a tensor with no unit-stride dimension (shape "
                    f"{tuple(r.shape)}, strides {tuple(r.strides)}); pass flyc.from_torch_tensor(t) for a "
                    "static layout (its shape enters the cache key) or t.contiguous()"
                )
            self.mark_layout_dynamic()


CONVERTERS[TorchTensorJitArg] = CONVERTERS[TensorAdaptor]
