#!/usr/bin/env bash
# GPU-host run 16, second call: the sync-free triangular-solve kernel, second version
# (each CTA inverts its 32x32 diagonal block while it waits), branch trsv at 0cf0d0c.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/trsv_check.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"
s=$out/summary-trsv.txt; : > "$s"
timeout 200 "$h/bin/gpu_tests" --gtest_filter='*Trsv*:*RcondTrsv*:*PermuteVector*:*Rcond*:*Condition*:*Singular*' > "$out/gpu_tests_trsv.log" 2>&1; echo "gpu_tests rc=$?" >> "$s"
grep -E "^\[  (PASSED|FAILED) |Failure" "$out/gpu_tests_trsv.log" | head -20 >> "$s"
timeout 200 "$h/bin/linalgd-gpu-bench" --only trsv,solves --sizes 1024,4096,8192 > "$out/gpu_bench_trsv.log" 2>&1; echo "gpu_bench rc=$?" >> "$s"
grep -vE "^\[" "$out/gpu_bench_trsv.log" >> "$s"
xz -9 "$out/gpu_tests_trsv.log"
cat "$s"
