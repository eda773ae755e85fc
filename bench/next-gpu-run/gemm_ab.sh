#!/usr/bin/env bash
# The GEMM autotuner's A/B: linalgd-gpu-bench --only gemm of main (linalgd-gpu-bench) and of a
# build with a change to the tuner (linalgd-gpu-bench-tune), interleaved, ROUNDS rounds (3),
# then that build's GPU matmul tests (gpu_tests-tune --gtest_filter '*Matmul*', the autotuned
# shapes included). Bundle both builds' linalgd-gpu-bench and gpu_tests-tune with
# gpu_run_env.sh and this script.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/gemm_ab.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" gemm
for r in $(seq "${ROUNDS:-3}"); do
  run "gemm_main_$r" 60 "$h/bin/linalgd-gpu-bench" --only gemm --json "$json/gemm_main_$r.json"
  run "gemm_tune_$r" 60 "$h/bin/linalgd-gpu-bench-tune" --only gemm --json "$json/gemm_tune_$r.json"
done
[[ -x "$h/bin/gpu_tests-tune" ]] && run gpu_tests_tune 120 "$h/bin/gpu_tests-tune" --gtest_filter="*Matmul*"
{
  for f in "$logs"/gemm_*.log; do echo "-- $(basename "$f" .log)"; grep -E "^gemm" "$f"; done
  [[ -f "$logs/gpu_tests_tune.log" ]] && grep -E "^\[  (PASSED|FAILED) |Failure" "$logs/gpu_tests_tune.log" | head -20
} >> "$s"
tar cJf "$out/logs-gemm.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
