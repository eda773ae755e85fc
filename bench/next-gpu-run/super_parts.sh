#!/usr/bin/env bash
# The product's super-block sweep in parts and whole: its GPU tests (*Super*), then
# linalgd-gpu-bench --only super (product<nb>_setup = SuperSweep::Create, its inverses;
# product<nb>_LN / _LT[_2col] = one sweep of 1 or 2 columns in one stream, _forked with its
# trailing updates on the column stream, _graph each captured once and replayed as a CUDA graph
# (the host's launches out), against the chain kernel's sweep) and the solves rows
# (chol_rcond_super_vs_chain, chol_rcond_super_vs_forked, cholesky_solve_super_vs_chain;
# with the inverses made beside the estimate's first solve: cholesky_solve_super_no_estimate,
# the solve with that estimate against none in turn, cholesky_solve_beside_vs_first,
# cholesky_solve_beside_vs_one_lane (its first solve's two columns in one launch),
# cholesky_solve_priority_{super,chain}_no_estimate (the estimate's streams first) and
# chol_rcond_beside_vs_first, against the inverses made before it), ROUNDS (2) times at 4096
# and 8192. About 90 s. SWEEPS=0 leaves --only super out; FILTER: the tests' (*Super*).
# Bundle: gpu_run_env.sh, this script, liblinalgd_crc32c.so, linalgd, linalgd-gpu-bench,
# gpu_tests.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/super_parts.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" super_parts
run super_tests 120 "$h/bin/gpu_tests" --gtest_filter="${FILTER:-*Super*}"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure|Expected|Which is|differs" \
  "$logs/super_tests.log" | head -40 >> "$s"
for r in $(seq 1 "${ROUNDS:-2}"); do
  [[ ${SWEEPS:-1} == 0 ]] ||
    run "super_$r" 150 "$h/bin/linalgd-gpu-bench" --only super --sizes 4096,8192 --json "$json/super_$r.json"
  [[ ${SWEEPS:-1} == 0 ]] || { echo "== super_$r"; grep -E "^(product|super[0-9]+_L|super[0-9]+_setup)|product.*max \|it|benchmark failed" "$logs/super_$r.log"; } >> "$s"
  run "solves_$r" 120 "$h/bin/linalgd-gpu-bench" --only solves --sizes 4096,8192 --json "$json/solves_$r.json"
  { echo "== solves_$r"; grep -E "^(cholesky|chol_)|benchmark failed|super-block sweeps" "$logs/solves_$r.log"; } >> "$s"
done
tar cJf "$out/logs-super_parts.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
