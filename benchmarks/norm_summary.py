"""A compact table of a norm sweep's results: ``python -m benchmarks.norm_summary RESULTS.json`` (``--long-table
RESULTS.json``: the long rows against the same-shape copy and the large-copy rate, as markdown).

One line per (kernel, shape, dtype): flydsl's default plan and its best variant (back-to-back, µs and % of
the measured copy bandwidth), torch eager, Triton and torch.compile; then the same under CUDA-graph replay
(flydsl's best, torch, Triton). ``!`` marks a failed correctness check.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def _fmt(r) -> str:
    return "-" if r is None or r["median_us"] != r["median_us"] else f"{r['median_us']:.1f}"


def _best(impls: dict, graph: bool):
    """(name, result) of flydsl's fastest plan, back-to-back or under graph replay."""
    cands = [
        (n, r)
        for n, r in impls.items()
        if n.startswith("flydsl") and n.endswith(":graph") == graph and r["median_us"] == r["median_us"]
    ]
    return min(cands, key=lambda c: c[1]["median_us"]) if cands else (None, None)


def summarize(path: str) -> str:
    data = json.load(open(path))
    rows = defaultdict(dict)
    for r in data["results"]:
        rows[(r["kernel"], tuple(r["shape"]), r["dtype"])][r["impl"]] = r
    out = [
        f"copy {data['meta']['copy_gbps']:.0f} GB/s, commit {data['meta']['commit']}; µs (% of copy); "
        "b2b = back-to-back calls, g = CUDA-graph replay",
        f"{'kernel':11s} {'shape':12s} {'dt':4s} | {'flydsl':>13s} {'best variant':>26s} | {'torch':>7s} "
        f"{'triton':>7s} {'compile':>7s} | {'fly:g':>13s} {'torch:g':>7s} {'tri:g':>7s} {'comp:g':>7s}",
    ]
    for (k, shape, dt), impls in rows.items():
        d = impls.get("flydsl")
        bn, b = _best(impls, graph=False)
        gn, g = _best(impls, graph=True)
        bad = "!" if "check" in impls else " "
        fly = f"{_fmt(d)} ({d['pct_copy']:.0f}%)" if d else "-"
        var = (
            f"{bn.removeprefix('flydsl-') if bn != 'flydsl' else 'default'} {_fmt(b)} ({b['pct_copy']:.0f}%)"
            if b
            else "-"
        )
        flyg = f"{_fmt(g)} ({g['pct_copy']:.0f}%)" if g else "-"
        out.append(
            f"{k:11s} {'x'.join(map(str, shape)):12s} {dt:4s}{bad}| {fly:>13s} {var:>26s} | "
            f"{_fmt(impls.get('torch')):>7s} {_fmt(impls.get('triton')):>7s} {_fmt(impls.get('torch.compile')):>7s} | "
            f"{flyg:>13s} {_fmt(impls.get('torch:graph')):>7s} {_fmt(impls.get('triton:graph')):>7s} "
            f"{_fmt(impls.get('torch.compile:graph')):>7s}"
            + (f"  [graph best: {gn.removesuffix(':graph')}]" if gn not in (None, "flydsl:graph") else "")
        )
    return "\n".join(out)


def variants(path: str) -> str:
    """One line per (kernel, shape, dtype) with flydsl's default and every variant, back-to-back: µs (% of
    copy), so the candidates of a run compare side by side (``!``: failed, its output wrong included)."""
    data = json.load(open(path))
    rows = defaultdict(dict)
    for r in data["results"]:
        if r["impl"].startswith("flydsl") and not r["impl"].endswith(":graph"):
            rows[(r["kernel"], tuple(r["shape"]), r["dtype"])][r["impl"]] = r
    out = []
    for (k, shape, dt), impls in rows.items():
        if len(impls) < 2:
            continue
        parts = []
        for n, r in impls.items():
            bad = "!" if r["note"].startswith("failed") else ""  # a variant whose output was wrong, or that failed
            parts.append(f"{n.removeprefix('flydsl-') if n != 'flydsl' else 'default'} {_fmt(r)} "
                         f"({r['pct_copy']:.0f}%){bad}")  # fmt: skip
        out.append(f"{k:11s} {'x'.join(map(str, shape)):12s} {dt:4s} | " + " | ".join(parts))
    return "\n".join(out)


def against_copy(path: str) -> str:
    """One line per (kernel, shape, dtype) of a run with ``copy:graph`` rows (the long rows): CUDA-graph replay
    times in µs and, in parentheses, the copy's time at the same shape over the implementation's (its % of the
    same-shape copy, the honest ceiling: ramp-up and tail included); flydsl's default, then its variants."""
    data = json.load(open(path))
    rows = defaultdict(dict)
    for r in data["results"]:
        if r["impl"].endswith(":graph"):
            rows[(r["kernel"], tuple(r["shape"]), r["dtype"])][r["impl"].removesuffix(":graph")] = r
    out = []
    for (k, shape, dt), impls in rows.items():
        c = impls.get("copy")
        if c is None or c["median_us"] != c["median_us"]:
            continue

        def cell(name, r, copy_us=c["median_us"]):
            if r is None or r["median_us"] != r["median_us"]:
                return f"{name} -"
            return f"{name} {r['median_us']:.1f} ({100 * copy_us / r['median_us']:.0f}%)"

        fly = impls.get("flydsl")
        parts = [cell("default", fly)]
        parts += [cell(n.removeprefix("flydsl-"), r) for n, r in impls.items() if n.startswith("flydsl-")]
        parts += [cell(n, impls.get(n)) for n in ("triton", "torch")]
        head = f"{k:11s} {'x'.join(map(str, shape)):11s} {dt:4s} copy {c['median_us']:5.1f} ({c['pct_copy']:.0f}%)"
        out.append(head + " | " + " | ".join(parts))
    return "\n".join(out)


def long_rows_table(path: str) -> str:
    """A markdown table of the long rows (runs with ``copy:graph`` rows): per kernel and shape, torch's copy of the
    same bytes (µs, and its own % of the large-copy rate the run measured), then flydsl's default plan, Triton and
    torch eager — each as µs, % of the same-shape copy (the copy's time over its time: the ceiling a kernel that reads
    and writes those bytes once can reach, ramp-up and tail included) and % of the large-copy rate."""
    data = json.load(open(path))
    rows = defaultdict(dict)
    for r in data["results"]:
        if r["impl"].endswith(":graph"):
            rows[(r["kernel"], tuple(r["shape"]), r["dtype"])][r["impl"].removesuffix(":graph")] = r
    rate = data["meta"]["copy_gbps"]
    out = [
        f"| shape | kernel | copy µs (% of {rate:.0f} GB/s) | flydsl µs | % of same-shape copy | % of {rate:.0f} GB/s "
        "| Triton µs (same-shape %) | torch µs (same-shape %) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (k, shape, dt), impls in rows.items():
        c, f = impls.get("copy"), impls.get("flydsl")
        if c is None or f is None or c["median_us"] != c["median_us"] or f["median_us"] != f["median_us"]:
            continue
        cu = c["median_us"]

        def alt(name, cu=cu, impls=impls):
            r = impls.get(name)
            ok = r is not None and r["median_us"] == r["median_us"]
            return f"{r['median_us']:.1f} ({100 * cu / r['median_us']:.0f}%)" if ok else "-"

        out.append(
            f"| {'x'.join(map(str, shape))} {dt} | {k} | {cu:.1f} ({c['pct_copy']:.1f}%) | {f['median_us']:.1f} | "
            f"{100 * cu / f['median_us']:.1f}% | {f['pct_copy']:.1f}% | {alt('triton')} | {alt('torch')} |"
        )
    return "\n".join(out)


def compare(old: str, new: str, impl: str = "flydsl:graph") -> str:
    """One line per (kernel, shape, dtype) of ``new`` that ``old`` has too: ``impl``'s time in each and the
    change (a regression check of the shapes a change should leave alone)."""

    def times(path):
        return {(r["kernel"], tuple(r["shape"]), r["dtype"]): r["median_us"] for r in json.load(open(path))["results"]
                if r["impl"] == impl}  # fmt: skip

    a, b = times(old), times(new)
    out = []
    for key, t in b.items():
        if key in a and t == t and a[key] == a[key]:
            k, shape, dt = key
            out.append(f"{k:11s} {'x'.join(map(str, shape)):11s} {dt:4s} {a[key]:7.1f} -> {t:7.1f} us "
                       f"({100 * (a[key] / t - 1):+.1f}%)")  # fmt: skip
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--long-table":  # the long rows as a markdown table
        print(long_rows_table(sys.argv[2]))
        raise SystemExit(0)
    if len(sys.argv) == 3:  # old new: the regression check
        print(compare(sys.argv[1], sys.argv[2]))
        raise SystemExit(0)
    print(summarize(sys.argv[1]))
    v = variants(sys.argv[1])
    if v:
        print("variants (back-to-back):")
        print(v)
    c = against_copy(sys.argv[1])
    if c:
        print("against the copy at the same shape (graph replay: µs, copy time / time):")
        print(c)
