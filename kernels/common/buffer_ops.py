"""Buffer loads and stores with AMD bounds semantics, where FlyDSL's kernel library keeps them.

Kernels written for ROCm FlyDSL import ``kernels.common.buffer_ops``; the functions are those of
``fx.buffer_ops`` (:mod:`flydsl.expr.buffer_ops`): offsets in elements of ``dtype``, loads past the
resource's ``num_records`` read zeros, stores past it are dropped.
"""

from flydsl.expr.buffer_ops import (
    MAX_NUM_RECORDS,
    BufferResource,
    buffer_load,
    buffer_store,
    create_buffer_resource,
)

__all__ = ["create_buffer_resource", "buffer_load", "buffer_store", "BufferResource", "MAX_NUM_RECORDS"]
