"""FlyDSL's ``flydsl.expr.utils``: helpers around the DSL (:mod:`.print_typst` draws layouts)."""
