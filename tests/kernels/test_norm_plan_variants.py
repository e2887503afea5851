"""Every named norm plan on every norm kernel, on the interpreter: the right rows or a ValueError that says why.

The plans of ``benchmarks.cases.norm_sweep.VARIANTS`` and ``benchmarks.norm_ragged.VARIANTS`` are what the
benchmarks and users ask for; they were tried only on the kernels and lengths they were tuned for. The GPU version
of this check is ``tools/norm_plan_fuzz.py`` (more lengths and row counts; it found the defects these cases keep
fixed: ``light_reduce`` over a cluster plan gave wrong rows, a re-read pair plan of a row held in registers indexed
past its chunks, a stream plan on 2-byte accesses failed inside its trace, and other kernels' options were a
``TypeError`` from inside the trace). Two shapes: 3 rows of 20000 f32 (onchip, stream, pair and cluster plans all
apply) and 3 rows of 3001 bf16 (odd: 2-byte accesses).
"""

from __future__ import annotations

import pytest
from norm_cases import check_rows, kernel_args

from benchmarks.cases.norm_sweep import KERNELS, VARIANTS
from benchmarks.norm_ragged import VARIANTS as RAGGED
from tools.fuzz_pool import raised_in

PLANS = {"default": {}, **VARIANTS, **{f"ragged-{k}": v for k, v in RAGGED.items()}}
SHAPES = [(3, 20000, "f32"), (3, 3001, "bf16")]
TOL = {"f32": 1e-4, "bf16": 2e-2}


@pytest.mark.parametrize("M,N,dtype", SHAPES, ids=[f"{m}x{n}-{d}" for m, n, d in SHAPES])
@pytest.mark.parametrize("name", list(PLANS))
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_every_named_plan_is_right_or_refused(kernel, name, M, N, dtype, interpreter):
    inputs, y, ro, args = kernel_args(kernel, M, N, dtype)
    try:
        KERNELS[kernel][0](N, dtype, dict(PLANS[name]))(*args)
    except ValueError as e:  # a refusal: the kernel library's own check, not the DSL's from deep inside a trace
        assert str(e) and raised_in(e).startswith("kernels"), (raised_in(e), e)
        return
    check_rows(kernel, inputs, y, ro, TOL[dtype])
