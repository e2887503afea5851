"""``flydsl._mlir.extras``: ``types`` (``T.i32()``, ``T.f32()``, ``T.vector(4, T.f32())``)."""
