#!/usr/bin/env bash
# One device call: the whole gpu-marked suite, the GEMM examples and the call-path/norm measurements, each
# step under its own time limit so a slow step cannot eat the call; a compact summary is printed last.
#   bash benchmarks/gpu_round.sh STEP...      (from the repository root, on the GPU machine)
# STEP: tests | ex05 | ex05sweep | ex06 | launch | norms | gemmbench | gemmcheck | preshuffle | compat   (default: all but
# the last three). Logs go to $OUT (the device tool brings them back). TEST_ARGS: pytest's paths and options for
# the tests step (default: tests); FLYDSL_NORM_VARIANTS / FLYDSL_NORM_SHAPES (long|short|few, comma-separated):
# the norms step's variants and shape groups.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/flydsl_out}
mkdir -p "$OUT"
LOG=$OUT/round.log
SUM=$OUT/steps.txt
: >"$LOG"
: >"$SUM"

step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  echo "===== $name: $*" >>"$LOG"
  timeout "$limit" "$@" >>"$LOG" 2>&1
  printf "%-12s rc=%-3s %4ss\n" "$name" "$?" "$((SECONDS - t0))" >>"$SUM"
}

STEPS=${*:-tests ex05 ex05sweep ex06 launch norms}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >>"$SUM" 2>&1
for s in $STEPS; do
  case $s in
  tests) step tests "${T_TESTS:-160}" python3 -m pytest -q -m gpu -p no:cacheprovider -n 8 --tb=short -rfE ${TEST_ARGS:-tests} ;;
  ex05) step ex05 50 python3 examples/05_gemm_mma_sync.py ;;
  ex05sweep) step ex05sweep 80 python3 examples/05_gemm_mma_sync.py --sweep ;;
  ex06) step ex06 100 python3 examples/06_gemm_wgmma.py --bench ;;
  launch) step launch "${T_LAUNCH:-60}" python3 -m benchmarks.launch_overhead ;;
  norms) step norms "${T_NORMS:-110}" env FLYDSL_NORM_VARIANTS="${FLYDSL_NORM_VARIANTS:-two_pass,onchip512,iters2,ept8}" \
    python3 -m benchmarks.run norm_sweep --reps 40 --tag norms --out "$OUT" ;;
  gemmbench) step gemmbench 150 python3 -m benchmarks.run gemm --reps 30 --tag gemm-atoms --out "$OUT" ;;
  preshuffle) step preshuffle 200 python3 -m benchmarks.run preshuffle_gemm --reps 30 --tag preshuffle --out "$OUT" ;;
  compat) step compat 150 python3 tools/flydsl_compat.py ;;
  gemmcheck) step gemmcheck "${T_GEMMCHECK:-240}" python3 -m benchmarks.gemm_gpu_check --iters 20 ${GEMMCHECK_ARGS:-} ;;
  esac
done

echo "================ steps"
cat "$SUM"
echo "================ tests"
sed -n '/===== tests/,/===== /p' "$LOG" | grep -E "^(FAILED|ERROR)|passed|failed" | tail -30
echo "================ gemm examples"
grep -E "PASS|FAIL|TFLOP|cuBLAS|ratio|^\s*(bf16|f16|fp8|e4m3)" "$LOG" | grep -v "^=====" | tail -45
echo "================ launch"
sed -n '/===== launch/,/===== /p' "$LOG" | grep -E "^\[|^native launch" | tail -40
J=$(ls -t "$OUT"/*-norms.json 2>/dev/null | head -1)
if [ -n "$J" ]; then
  echo "================ norms"
  python3 -m benchmarks.norm_summary "$J" 2>&1 | tail -120
fi
# the device tool brings back at most 8 files: the result tables travel as one archive
(cd "$OUT" && ls *.json *.md *.png >/dev/null 2>&1 && tar czf results.tgz ./*.json ./*.md ./*.png && rm -f ./*.json ./*.md ./*.png)
true
