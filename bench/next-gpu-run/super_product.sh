#!/usr/bin/env bash
# The condition estimate's super-block sweeps as the product has them (super_sweep.h): their
# GPU tests (the sweep against the host's substitution, rcond against the chain's), then
# linalgd-gpu-bench's solves rows ROUNDS (2) times at 4096 and 8192 (cholesky_solve against
# cholesky_solve_no_estimate: the estimate's cost; chol_rcond_vs_chain: the estimate alone,
# super-blocks against the chain). About 60 s. Bundle: gpu_run_env.sh, this script,
# liblinalgd_crc32c.so, linalgd, linalgd-gpu-bench, gpu_tests.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/super_product.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" super_product
run super_tests 120 "$h/bin/gpu_tests" --gtest_filter="${FILTER:-*Super*:*Rcond*}"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure|Expected|Which is|super |diff" \
  "$logs/super_tests.log" | head -60 >> "$s"
for r in $(seq 1 "${ROUNDS:-2}"); do
  run "solves_$r" 120 "$h/bin/linalgd-gpu-bench" --only solves --sizes 4096,8192 --json "$json/solves_$r.json"
  { echo "== solves_$r"; grep -E "^(cholesky|chol_|lu_solve)|benchmark failed|super-block sweeps" "$logs/solves_$r.log"; } >> "$s"
done
tar cJf "$out/logs-super_product.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
