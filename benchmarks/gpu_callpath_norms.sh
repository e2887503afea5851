#!/usr/bin/env bash
# Issue 12 on the GPU in one device call (~3-4 minutes): the call path's host cost, the gpu tests of the call
# path and the norm kernels, and the norm shape sweep with flydsl's plan variants; a compact table last.
#   bash benchmarks/gpu_callpath_norms.sh            (from the repository root, on the GPU machine)
# Environment: OUT (results folder, default /tmp/flydsl_out), FLYDSL_NORM_VARIANTS (default: the four most
# likely winners, two_pass,onchip512,iters2,ept8, which fit the time; "all" adds onchip512k16, t1024, iters4,
# bt512, ept32 for ~1.5 more minutes),
# SWEEP_ARGS (extra arguments of benchmarks.run, e.g. --quick), FLYDSL_BENCH_COMMIT (the commit to record).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FLYDSL_RUNTIME_ENABLE_CACHE=0
export FLYDSL_NORM_VARIANTS=${FLYDSL_NORM_VARIANTS:-two_pass,onchip512,iters2,ept8}
OUT=${OUT:-/tmp/flydsl_out}
mkdir -p "$OUT"
LOG=$OUT/callpath_norms.log
: >"$LOG"

step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  echo "===== $name: $*" >>"$LOG"
  timeout "$limit" "$@" >>"$LOG" 2>&1
  local rc=$?
  printf "%-16s rc=%-3s %4ss\n" "$name" "$rc" "$((SECONDS - t0))" >>"$OUT/steps.txt"
}

: >"$OUT/steps.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >>"$OUT/steps.txt" 2>&1
step launch_overhead 60 python3 -m benchmarks.launch_overhead
step gpu_tests 80 python3 -m pytest -q -m gpu -x -p no:cacheprovider -n 8 tests/gpu/test_call_path.py \
  tests/kernels/test_rmsnorm.py tests/kernels/test_softmax.py tests/kernels/test_layernorm.py
step norm_sweep 140 python3 -m benchmarks.run norm_sweep --reps 60 --tag norms --out "$OUT" ${SWEEP_ARGS:-}

echo "---------------- steps ----------------"
cat "$OUT/steps.txt"
echo "---------------- launch overhead (us per call) ----------------"
sed -n '/===== launch_overhead/,/===== gpu_tests/p' "$LOG" | grep -E "^\[|^what" || true
echo "---------------- gpu tests ----------------"
sed -n '/===== gpu_tests/,/===== norm_sweep/p' "$LOG" | grep -E "passed|failed|error|call path\]" | tail -6
echo "---------------- norm sweep ----------------"
J=$(ls -t "$OUT"/*-norms.json 2>/dev/null | head -1)
if [ -n "$J" ]; then
  python3 -m benchmarks.norm_summary "$J"
else
  grep -E "Error|error|Traceback" "$LOG" | tail -10
fi
