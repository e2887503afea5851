#!/usr/bin/env bash
# One device call that checks and measures everything GPU-side, then prints a short summary last.
#   bash benchmarks/gpu_session.sh [pytest paths...]     (on the GPU machine, from the repository root)
# Logs and benchmark results go to $OUT (the device tool brings them back).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/flydsl_out}
mkdir -p "$OUT"
LOG=$OUT/session.log
SUM=$OUT/summary.txt
: >"$LOG"
: >"$SUM"

step() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "===== $name: $*" >>"$LOG"
  "$@" >>"$LOG" 2>&1
  local rc=$?
  printf "%-26s rc=%-3s %4ss\n" "$name" "$rc" "$((SECONDS - t0))" | tee -a "$SUM"
}

TESTS=${*:-tests}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >>"$SUM" 2>&1
step example_01 python3 examples/01_vector_add.py
step example_02 python3 examples/02_tiled_copy.py
step example_03 python3 examples/03_transpose.py
step example_04 python3 examples/04_buffer_copy.py
step graph_capture python3 -m benchmarks.graph_check
step gpu_tests python3 -m pytest -q -m gpu -p no:cacheprovider --timeout 240 $TESTS
export FLYDSL_RUNTIME_CACHE_DIR=$(mktemp -d)
step cold_compile python3 -m benchmarks.cold_start compile
step cache_fill env COMPILE_ONLY=1 python3 -m benchmarks.cold_start fill
step cache_hit python3 -m benchmarks.cold_start hit
unset FLYDSL_RUNTIME_CACHE_DIR
step launch_overhead python3 -m benchmarks.launch_overhead
step launch_profile python3 -m benchmarks.launch_profile
if [ -n "${BENCH:-}" ]; then
  step bench python3 -m benchmarks.run $BENCH --out "$OUT/results"
  cp "$OUT"/results/* "$OUT"/ 2>/dev/null && rm -rf "$OUT/results"
fi

echo "---------------- summary ----------------"
cat "$SUM"
grep -E "PASS|FAIL|bandwidth:|passed|failed|error" "$LOG" | grep -v "^=====" | tail -25
grep -E '"mode"' "$LOG"
grep -E "host path|cuda call|torch|per call|jit call|CudaKernel" "$LOG" | tail -12
grep -E "^\[bench\]" "$LOG" | tail -20
