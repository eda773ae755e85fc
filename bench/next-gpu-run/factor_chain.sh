#!/usr/bin/env bash
# Cached-factor solves by the chain kernel (gpu_factor.h FactorSolvePath::kChain) against
# getrs / potrs: their GPU tests, then linalgd-gpu-bench --only factor_solves at 1024, 4096 and 8192,
# ROUNDS (2) rounds. Writes $OUT/summary-factor_chain.txt and $OUT/logs-factor_chain.tar.xz.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT timeout 200 bash gpu-bundle/factor_chain.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" factor_chain
finish() {
  tar cJf "$out/logs-factor_chain.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
  cat "$s"
}
on_stop finish
run chain_tests 90 "$h/bin/gpu_tests" \
  --gtest_filter='*Chain*:FactorSolveTakes*:GpuFactor*:*FactorsSolveLikeTheCpu*'
grep -E "^\[  (PASSED|FAILED) |tests ran|Failure|Expected|Which is|cuSOLVER's" \
  "$logs/chain_tests.log" | head -40 >> "$s"
for r in $(seq 1 "${ROUNDS:-2}"); do
  run "factor_bench_$r" 100 "$h/bin/linalgd-gpu-bench" --only factor_solves \
    --sizes 1024,4096,8192 --json "$json/factor_bench_$r.json"
  grep -E "^factor_solve" "$logs/factor_bench_$r.log" | sed "s/^/round $r: /" >> "$s"
done
finish
