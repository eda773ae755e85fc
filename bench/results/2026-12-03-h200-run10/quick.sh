#!/usr/bin/env bash
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
timeout 150 "$h/bin/gpu_tests" --gtest_filter='*Condition*:*Factor*:*Solve*:*Empty*' > "$out/gpu_tests_subset.log" 2>&1; echo "gpu_tests subset rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$out/gpu_tests_subset.log" | head -20
LINALGD_SERVER="$h/bin/linalgd" timeout 120 python3 -m pytest -q -p no:cacheprovider tests/python/test_condition.py > "$out/test_condition.log" 2>&1; echo "test_condition rc=$?"; tail -5 "$out/test_condition.log"
timeout 200 "$h/bin/linalgd-gpu-bench" --json "$out/gpu_bench.json" > "$out/gpu_bench.log" 2>&1; echo "gpu_bench rc=$?"
grep -E "solve" "$out/gpu_bench.log"
