#!/usr/bin/env bash
# The committed defaults at 64K (48K-64K f32: re-read pairs; 64K bf16 unchanged) beside main's plans (before=True),
# the default timed again, torch's copy of the same bytes, Triton and torch eager; graph replays, 200 each; the
# LayerNorm gpu tests of the new default first (~60 s on the H200). bash benchmarks/layernorm_long_final.sh from the
# repository root; results (json, md, png) under $OUT_DIR (default benchmarks/results), the markdown table on stdout.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FLYDSL_RUNTIME_ENABLE_CACHE=0
OUT_DIR=${OUT_DIR:-benchmarks/results}; mkdir -p "$OUT_DIR"
LOGS=$(mktemp -d)  # the tests' and the sweep's logs
C=$(git rev-parse --short HEAD 2>/dev/null || echo "${FLYDSL_BENCH_COMMIT:-unknown}")
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
DAY=$(date -u +%Y-%m-%d)
echo "$GPU; commit $C; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== gpu tests (LayerNorm: the 48K-64K f32 default, re-read pairs, the default shapes)"
timeout 30 python3 -m pytest -q -rf -m gpu -p no:cacheprovider -n 8 tests/kernels/test_layernorm.py \
  -k "48k or reread or test_layernorm_gpu[" > "$LOGS/tests.log" 2>&1; echo "tests rc=$?"
grep -E "^FAILED|^ERROR|passed|failed" "$LOGS/tests.log" | cut -c1-200 | tail -6
FLYDSL_NORM_SHAPES=rows64k FLYDSL_NORM_KERNELS=layernorm FLYDSL_NORM_TIMING=graph FLYDSL_BENCH_COMMIT=$C \
FLYDSL_NORM_VARIANTS=before,again timeout 36 python3 -m benchmarks.run norm_sweep --reps 200 --tag lnst-final \
  --out "$OUT_DIR" > "$LOGS/sweep.log" 2>&1
echo "sweep rc=$?"
grep -E "Error|FAIL|max error" "$LOGS/sweep.log" | cut -c1-200 | head -4
J=$(ls -t "$OUT_DIR"/*lnst-final.json 2>/dev/null | head -1)
[ -n "$J" ] && python3 - "$J" "$GPU" "$C" "$DAY" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
t = {}
for r in data["results"]:
    if r["impl"].endswith(":graph"):
        t.setdefault((tuple(r["shape"]), r["dtype"]), {})[r["impl"].removesuffix(":graph")] = r["median_us"]
rate = data["meta"]["copy_gbps"]
print(f"LayerNorm long rows, {sys.argv[2]}, commit {sys.argv[3]}, {sys.argv[4]}; graph replays, median of 200;")
print(f"% = torch's copy of the same bytes (same run) over the time; large-copy rate {rate:.0f} GB/s\n")
print("| shape | copy µs | before (main) µs | now µs | again µs | Triton µs | torch µs |")
print("|---|---|---|---|---|---|---|")
for (shape, dt), v in t.items():
    c = v["copy"]
    f = lambda k: f"{v[k]:.1f} ({100 * c / v[k]:.1f}%)" if k in v and v[k] == v[k] else "-"
    print(f"| {shape[0]} x {shape[1]} {dt} | {c:.1f} | {f('flydsl-before')} | **{f('flydsl')}** | {f('flydsl-again')} "
          f"| {f('triton')} | {f('torch')} |")
PY
echo "wall=${SECONDS}s"
