"""Norm plan exploration on the GPU: whole-launcher variants (any builder options) against the library's defaults, cell
by cell (kernel, dtype, row length, row count), each beside torch's copy of the same bytes.

The exploration rounds behind the per-shape rules of sessions 21-22 (``kernels/norm/row_tail.py``'s tail and
few-rows plans) are named sets (:data:`SETS`): ``python -m benchmarks.norm_variants --set few22 --workers 15``
reproduces a round of ``benchmarks/results/2026-12-01-NVIDIA-H200-norm-few-s22-explore.log`` (its ``default``: the
library's defaults of the day, so a round's rules are in it once they land); ``--cells`` /
``--variants`` (JSON) run any other. One line per cell: ``name=us/%`` for every variant (``%``: the copy's time over
the kernel's; ``BAD``: wrong rows against a float64 reference), then the best. Timing: CUDA-graph replays, median of
150 (:func:`benchmarks.norm_ragged.checked_us`).
"""

from __future__ import annotations

import argparse
import json

from .norm_ragged import _tensors, checked_us, compile_in_workers, compile_share, copy_us, parse_args, reference

_O512 = {"onchip_threads": 512, "max_registers": 64, "cache_hint": "cs"}
_NS512 = {"shape_defaults": False, **_O512}
_NS1024 = {"shape_defaults": False, "cache_hint": "cs"}
_KINDS = ("softmax", "rmsnorm", "rmsnorm+add", "layernorm")


_TAIL_SHAPES = (("softmax", "bf16", 49160), ("softmax", "bf16", 65536), ("softmax", "f32", 65536),
                ("rmsnorm", "bf16", 65536), ("rmsnorm", "f32", 65536))  # fmt: skip


def _grid(kernels, dtypes, lengths, rows):
    return [(k, dt, n, m) for k in kernels for dt in dtypes for n in lengths for m in rows]


# name -> (cells, variants): the session-22 rounds of the explore log, (1)-(5) (the persistent cluster round's plans
# are not in the library)
SETS = {
    "tail22": (
        [(k, dt, n, m) for k, dt, n in _TAIL_SHAPES for m in (132, 140, 160, 273)],
        {"default": {}, "notail": {"tail_cols": 0}, "o512": {**_NS512, "tail_cols": 0},
         "o512T": {**_NS512, "tail_cols": 16384}, "o512p2T": {**_NS512, "persist": 2, "tail_cols": 16384},
         "r48": {"tail_regs": 48}, "p0T": {"persist": 0, "tail_cols": 16384}, "p0noT": {"persist": 0, "tail_cols": 0},
         **{f"cl{k}": {"shape_defaults": False, "long_rows": "cluster", "cluster_cols": 65536 // k} for k in (2, 4, 8)},
         "T8k": {"tail_cols": 8192}, "T32k": {"tail_cols": 32768}},
    ),
    "few22": (
        _grid(_KINDS, ("bf16", "f32"), (49160, 65536), (34, 64, 100, 132, 140, 160, 200, 273)),
        {"default": {}, "o512": {**_NS512, "tail_cols": 0}, "o512T": {**_NS512, "tail_cols": 16384},
         "o512T8": {**_NS512, "tail_cols": 8192}, "o512p2T": {**_NS512, "persist": 2, "tail_cols": 16384},
         "o1024": {**_NS1024, "tail_cols": 0}, "o1024T": {**_NS1024, "tail_cols": 16384}},
    ),
    "mid22": (
        _grid(("softmax", "layernorm"), ("bf16", "f32"), (49160, 65536), (180, 200, 230, 273)),
        {"default": {}, "tb400": {"tail_blocks": 400}, "T32": {"tail_cols": 32768},
         "few": {"few_rows": (133, 273), "few_plan": _O512},
         "fewT32": {"few_rows": (133, 273), "few_plan": _O512, "tail_cols": 32768},
         "fewtb400": {"few_rows": (133, 273), "few_plan": _O512, "tail_blocks": 400},
         "fewr2": {"few_rows": (133, 273), "few_plan": _O512, "tail_rounds": 1}},
    ),
    "fewtail22": (
        _grid(("rmsnorm+add", "layernorm"), ("f32",), (49160, 65536), (34, 40, 48, 56, 64, 140, 160))
        + _grid(("layernorm",), ("bf16",), (49160, 65536), (34, 40, 48, 56, 64, 140, 160)),
        {"default": {}, "T16": {"few_rows": (34, 66), "few_plan": {"tail_cols": 16384}},
         "T16ln": {"few_plan": {"cache_hint": "cs", "tail_cols": 16384}}},  # (LayerNorm f32's rule, its own tail)
    ),
    "bigtail22": (
        [("softmax", "bf16", 40000, 838), ("softmax", "bf16", 49160, 682), ("softmax", "bf16", 57344, 585),
         ("softmax", "bf16", 61440, 546), ("softmax", "f32", 40960, 409), ("softmax", "f32", 49160, 341),
         ("softmax", "f32", 53248, 315), ("layernorm", "bf16", 40960, 819), ("layernorm", "bf16", 49160, 682),
         ("layernorm", "bf16", 61440, 546), ("layernorm", "bf16", 65536, 512), ("layernorm", "f32", 40960, 409),
         ("layernorm", "f32", 49160, 341), ("layernorm", "f32", 53248, 315), ("layernorm", "f32", 57344, 292),
         ("rmsnorm", "f32", 53248, 315), ("rmsnorm", "f32", 49160, 341)],
        {"default": {}, "T16r8": {"tail_cols": 16384, "tail_rounds": 8},
         "T16r8b400": {"tail_cols": 16384, "tail_rounds": 8, "tail_blocks": 400},
         "o512": {**_NS512, "tail_cols": 0}, "o512T": {**_NS512, "tail_cols": 16384, "tail_rounds": 8},
         "o512Tb400": {**_NS512, "tail_cols": 16384, "tail_rounds": 8, "tail_blocks": 400},
         "o512p2T": {**_NS512, "tail_cols": 16384, "tail_rounds": 8, "persist": 2}},
    ),
}  # fmt: skip


def _json(text: str):
    """JSON with tuples for lists (``few_rows`` is a range ``(lo, hi)``)."""

    def tuples(v):
        return tuple(map(tuples, v)) if isinstance(v, list) else {k: tuples(x) for k, x in v.items()} if isinstance(
            v, dict) else v  # fmt: skip

    return tuples(json.loads(text))


def _line(k: str, dt: str, n: int, M: int, variants: dict) -> str:
    inputs, y, args = _tensors(k, M, n, dt)
    want, _ = reference(k, *inputs)
    copy = copy_us(k, M, n, inputs[0])
    cells = []
    for name, plan in variants.items():
        try:
            us = checked_us(k, n, dt, plan, args, y, want)
            cells.append((name, us, f"{name}={us:.1f}/{copy / us * 100:.0f}"))
        except AssertionError:
            cells.append((name, float("inf"), f"{name}=BAD"))
        except ValueError as e:  # a plan the kernel refuses for this shape
            cells.append((name, float("inf"), f"{name}:refused({str(e)[:60]})"))
    best = min(cells, key=lambda c: c[1])
    default = cells[0][1]
    return (f"{k:11s} {dt:4s} {n:6d} M={M:4d} T={M % 132:3d} copy {copy:5.1f} | " + " ".join(c[2] for c in cells)
            + f" | best {best[0]} {copy / best[1] * 100:.0f}% vs {copy / default * 100:.0f}%")  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=sorted(SETS), help="a named round (cells and variants)")
    ap.add_argument("--cells", help="JSON [[kernel, dtype, n, M], ...] (instead of the set's)")
    ap.add_argument("--variants", help='JSON {"name": {options}, ...} (instead of the set\'s; the first is the base)')
    ap.add_argument("--kernels", help="only these kernels (comma-separated)")
    args = parse_args(ap, argv)
    cells, variants = SETS[args.set] if args.set else ([], {"default": {}})
    cells = [tuple(c) for c in _json(args.cells)] if args.cells else cells
    variants = _json(args.variants) if args.variants else variants
    if args.kernels:
        cells = [c for c in cells if c[0] in args.kernels.split(",")]
    if not cells:
        ap.error("no cells: give --set or --cells")
    if args.compile_share:
        shapes = dict.fromkeys(c[:3] for c in cells)
        compile_share([(k, n, dt, v) for k, dt, n in shapes for v in variants.values()], *args.compile_share)
        return 0
    compile_in_workers("benchmarks.norm_variants", argv, args.workers)
    for k, dt, n, M in cells:
        print(_line(k, dt, n, M, variants), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
