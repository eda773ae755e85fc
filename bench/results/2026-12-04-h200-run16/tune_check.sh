#!/usr/bin/env bash
# GPU-host run 16, last call: cuBLASLt candidates timed over a 0.5 ms window after a warm-up,
# the heuristic's order kept unless a later one is 2% faster; the GEMM rows three times and
# the matmul GPU tests.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/tune_check.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"
s=$out/summary-tune.txt; : > "$s"
for r in 1 2 3; do echo "== linalgd-gpu-bench --only gemm, run $r" >> "$s"; timeout 60 "$h/bin/linalgd-gpu-bench" --only gemm 2>&1 | grep -E "^gemm" >> "$s"; done
timeout 120 "$h/bin/gpu_tests" --gtest_filter='*Matmul*:*Lt*:*Gemm*' > "$out/gpu_tests_tune.log" 2>&1; echo "gpu_tests rc=$?" >> "$s"
grep -E "^\[  (PASSED|FAILED) |Failure" "$out/gpu_tests_tune.log" | head -10 >> "$s"
xz -9 "$out/gpu_tests_tune.log"
cat "$s"
