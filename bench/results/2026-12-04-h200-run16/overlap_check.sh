#!/usr/bin/env bash
# GPU-host run 16, seventh call: the condition estimate on a second stream beside the solve,
# branch overlap at 0b5ad85 (the full gpu_tests, then the solve rows).
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/overlap_check.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"
s=$out/summary-overlap.txt; : > "$s"
timeout 240 "$h/bin/gpu_tests" > "$out/gpu_tests_overlap.log" 2>&1; echo "gpu_tests rc=$?" >> "$s"
grep -E "^\[  (PASSED|FAILED) |Failure" "$out/gpu_tests_overlap.log" | head -20 >> "$s"
timeout 200 "$h/bin/linalgd-gpu-bench" --only solves --sizes 1024,4096,8192 > "$out/gpu_bench_overlap.log" 2>&1; echo "gpu_bench rc=$?" >> "$s"
grep -vE "^\[" "$out/gpu_bench_overlap.log" >> "$s"
xz -9 "$out/gpu_tests_overlap.log"
cat "$s"
