#!/usr/bin/env bash
# Run 14, after the estimator revert: the GPU condition, factor and solve tests and
# linalgd-gpu-bench's solve rows.
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
"$h/bin/gpu_tests" --gtest_filter='GpuCondition*:GpuFactor*:GpuSolve*:GpuMatmul*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|Failure" | head -20
"$h/bin/linalgd-gpu-bench" --json "$OUT/gpu_bench_after_revert.json" 2>&1 | grep -E "solve|rcond|getrs|ratio"
