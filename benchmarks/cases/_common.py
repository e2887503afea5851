"""What several benchmark cases share: loading an example script, and the norm kernels' shapes."""

from __future__ import annotations

import functools
import importlib.util
import pathlib

__all__ = ["load_example", "NORM_DTYPES", "NORM_HEADLINE", "NORM_SWEEP", "NORM_QUICK", "NORM_COMPILE"]

_EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@functools.cache
def load_example(name: str):
    """``examples/<name>.py`` as a module (its ``main`` is not run)."""
    spec = importlib.util.spec_from_file_location(f"flydsl_example_{name}", _EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# softmax / RMSNorm / LayerNorm: the headline shape, then a sweep; torch.compile on the headline only
NORM_DTYPES = ("bf16", "f16", "f32")
NORM_HEADLINE = (32768, 8192, "bf16")
NORM_SWEEP = [(4096, n, dt) for dt in NORM_DTYPES for n in (1024, 4096, 8192, 16384)] + [(1024, 32768, "bf16")]
NORM_QUICK = [NORM_HEADLINE, (4096, 4096, "f32")]
NORM_COMPILE = {NORM_HEADLINE}
