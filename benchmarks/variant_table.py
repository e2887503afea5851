"""A compact table of a norm sweep's graph-replay rows: per kernel and shape, the same-shape copy, the default
and every variant (µs and % of the copy's time). ``python -m benchmarks.variant_table results.json``."""

from __future__ import annotations

import json
import sys


def table(path: str) -> str:
    rows = json.load(open(path))["results"]
    by: dict = {}
    for r in rows:
        if not r["impl"].endswith(":graph") or r.get("median_us") is None:
            continue
        key = (r["kernel"], tuple(r["shape"]), r["dtype"])
        by.setdefault(key, {})[r["impl"][: -len(":graph")]] = r["median_us"]
    out = []
    for (k, (m, n), dt), t in by.items():
        copy = t.get("copy")
        cells = []
        for name, us in t.items():
            label = {"flydsl": "default"}.get(name, name.removeprefix("flydsl-"))
            pct = f" ({100 * copy / us:.1f}%)" if copy and name != "copy" else ""
            cells.append(f"{label} {us:.1f}{pct}")
        out.append(f"{k:10s} {m}x{n} {dt:4s} | " + " | ".join(cells))
    return "\n".join(out)


if __name__ == "__main__":
    print(table(sys.argv[1]))
