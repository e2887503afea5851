"""A dry run of the long-row norm benchmark scripts on the CPU interpreter (``benchmarks.norm_ragged.DEVICE =
"cpu"``: torch CPU tensors, wall-clock times): their option handling, checks and table lines stay runnable without a
GPU. The times mean nothing here."""

from __future__ import annotations

import json
import re

import pytest

from benchmarks import norm_ragged, norm_tail, norm_variants

pytest.importorskip("torch")


@pytest.fixture
def dry(monkeypatch, interpreter):
    monkeypatch.setattr(norm_ragged, "DEVICE", "cpu")


def test_norm_variants_runs_cells_and_variants(dry, capsys):
    cells = json.dumps([["softmax", "f32", 2500, 3], ["layernorm", "bf16", 3001, 2]])
    variants = json.dumps({"default": {}, "notail": {"tail_cols": 0},
                           "few": {"few_rows": [2, 3], "few_plan": {"onchip_threads": 64}},
                           "bad": {"onchip_threads": 96}})  # fmt: skip
    assert norm_variants.main(["--cells", cells, "--variants", variants]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(
        re.search(r"default=[\d.]+/\d+ notail=[\d.]+/\d+ few=[\d.]+/\d+", ln) for ln in lines
    )
    assert all("bad:refused(onchip_threads=96" in ln and "| best " in ln for ln in lines), lines


def test_norm_tail_prints_its_table(dry, capsys):
    argv = [
        "--lengths",
        "2500",
        "--kernels",
        "rmsnorm+add",
        "--dtypes",
        "f32",
        "--rows",
        "3",
        "--plans",
        "flydsl,no few",
    ]
    assert norm_tail.main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("| kernel | dtype | shape | M % 132 | copy us | flydsl us (%) | no few | torch eager |")
    assert out[2].startswith("| rmsnorm+add | f32 | 3 x 2500 | 3 |"), out


def test_the_compile_share_builds_every_plan_or_skips_a_refused_one(dry):
    norm_ragged.compile_share([("softmax", 2500, "f32", {}), ("rmsnorm", 2500, "bf16", {"onchip_threads": 96})], 0, 1)


def test_cells_rotate_their_tensors_past_l2(monkeypatch):
    """Each cell's calls rotate over copies of their tensors of twice the L2 (METHOD: inputs that fit the cache
    measure the cache); ``--l2-warm`` times one set, as before session 23."""
    import torch

    monkeypatch.setattr(norm_ragged, "DEVICE", "cuda")
    assert [norm_ragged.rotation(b) for b in (8_800_000, 64 << 20, 1 << 30, 1000)] == [15, 2, 1, 64]
    sets = norm_ragged.rotated((torch.ones(3), 5), 3)
    assert len(sets) == 3 and all(s[1] == 5 and s[0].sum() == 3 for s in sets) and sets[1][0] is not sets[0][0]
    norm_ragged.set_rotation(True)
    try:
        assert norm_ragged.rotation(8_800_000) == 1
    finally:
        norm_ragged.set_rotation(False)
    assert norm_ragged.call_bytes((torch.ones(4, 2), torch.ones(3, dtype=torch.bfloat16), 7)) == 38
