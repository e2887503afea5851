"""Benchmark cases: one module per kernel family, each with ``cases(quick) -> list[Case]``."""
