"""tools/norm_option_fuzz.py (random norm builder options on the interpreter) and the option checks it led to."""

from __future__ import annotations

import pytest

from benchmarks.cases import norm_sweep
from tools import norm_option_fuzz as fuzz
from tools.fuzz_pool import raised_in


def test_a_few_random_cases_are_right_or_refused(monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    kinds = [fuzz.case(s) for s in range(12)]
    assert [w for k, w in kinds if k == "defect"] == [] and sum(k == "ok" for k, _ in kinds) >= 6, kinds


def test_a_defect_is_reported_with_its_seed_and_options(monkeypatch):
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")

    def broken(n, dt, plan):
        return lambda *args: 1 // 0

    monkeypatch.setattr(norm_sweep, "KERNELS", {k: (broken, *v[1:]) for k, v in norm_sweep.KERNELS.items()})
    kind, d = fuzz.case(7)
    assert kind == "defect" and d.startswith("ZeroDivisionError seed 7: ") and '"shape_defaults"' in d


def test_the_generator_draws_invalid_values_now_and_then():
    import random

    drawn = [fuzz.options(random.Random(s), "layernorm") for s in range(400)]
    assert any(o.get(k) in v for o in drawn for k, v in fuzz._BAD.items())
    assert any("few_plan" in o for o in drawn) and any(o.get("stream") for o in drawn)


@pytest.mark.parametrize(
    "bad, match",
    [({"cluster_cols": 0, "long_rows": "cluster"}, "cluster_cols=0: give an integer of at least 1"),
     ({"block_threads": 2048}, "block_threads=2048: give an integer of at least 1 and at most 1024"),
     ({"row_iters": 0}, "row_iters=0"), ({"long_rows": "bogus"}, "long_rows must be"),
     ({"chunk_threads": 96}, "chunk_threads=96: a row's threads are a power of two"),
     ({"kept_values": -1}, "kept_values=-1"), ({"persist": -1}, "persist=-1")],
)  # fmt: skip
def test_out_of_range_plan_options_are_refused_when_built(bad, match):
    for kernel in norm_sweep.KERNELS:
        with pytest.raises(ValueError, match=match) as e:
            norm_sweep.KERNELS[kernel][0](2500, "f32", {"shape_defaults": False, **bad})
        assert raised_in(e.value).startswith("kernels"), raised_in(e.value)
