#!/usr/bin/env bash
# GPU-host run 16, fourth call: the triangular-solve kernel with 32- or 64-row blocks,
# branch trsv64 at 908b831.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/trsv64_check.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"
s=$out/summary-trsv64.txt; : > "$s"
timeout 200 "$h/bin/gpu_tests" --gtest_filter='*Trsv*:*RcondTrsv*:*Rcond*:*Condition*' > "$out/gpu_tests_trsv64.log" 2>&1; echo "gpu_tests rc=$?" >> "$s"
grep -E "^\[  (PASSED|FAILED) |Failure" "$out/gpu_tests_trsv64.log" | head -20 >> "$s"
timeout 200 "$h/bin/linalgd-gpu-bench" --only trsv,solves --sizes 1024,2048,4096,8192 > "$out/gpu_bench_trsv64.log" 2>&1; echo "gpu_bench rc=$?" >> "$s"
grep -vE "^\[" "$out/gpu_bench_trsv64.log" >> "$s"
xz -9 "$out/gpu_tests_trsv64.log"
cat "$s"
