"""Random preshuffle-GEMM configurations on the interpreter: the right C (rows past M untouched) or a ValueError the
kernel library raised that says why.

The same draws as ``tools/gemm_config_fuzz.py`` (which runs 1200 of them on the GPU), kept to the problems the
interpreter runs quickly (N x K up to 384 x 512, M up to 33). That tool found configurations that failed inside the
kernels' builds (split-K partials past 48 KB of static shared memory, stream-K heads beside a ring that did not fit)
and refusals that contradicted themselves; these cases keep such paths covered in CI.
"""

from __future__ import annotations

import pytest

from tools.gemm_config_fuzz import _one, configs

CASES = [c for c in configs(2000, seed=7) if c["N"] * c["K"] <= 384 * 512 and c["M"] <= 33][:120]


@pytest.mark.parametrize("cfg", CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_a_configuration_is_right_or_refused(cfg, interpreter):
    status, msg = _one(cfg, cuda=False)
    assert status == "ok" or (status == "ERR" and msg.startswith("ValueError")), (cfg, status, msg)
