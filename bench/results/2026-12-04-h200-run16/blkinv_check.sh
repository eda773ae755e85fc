#!/usr/bin/env bash
# GPU-host run 16, third call: triangular solves by inverted diagonal blocks (cuSOLVER trtri or
# cuBLAS trsm for the blocks, cuBLAS gemv/trmv per block step), branch blkinv at 494847d.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/blkinv_check.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"
s=$out/summary-blkinv.txt; : > "$s"
timeout 200 "$h/bin/gpu_tests" --gtest_filter='*Block*:*Rcond*:*Condition*:*Singular*' > "$out/gpu_tests_blkinv.log" 2>&1; echo "gpu_tests rc=$?" >> "$s"
grep -E "^\[  (PASSED|FAILED) |Failure" "$out/gpu_tests_blkinv.log" | head -20 >> "$s"
timeout 200 "$h/bin/linalgd-gpu-bench" > "$out/gpu_bench_blkinv.log" 2>&1; echo "gpu_bench rc=$?" >> "$s"
grep -vE "^\[" "$out/gpu_bench_blkinv.log" >> "$s"
xz -9 "$out/gpu_tests_blkinv.log"
cat "$s"
