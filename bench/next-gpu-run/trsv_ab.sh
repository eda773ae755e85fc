#!/usr/bin/env bash
# A triangular-solve kernel change against main's: the GPU suites of the changed build, then
# linalgd-gpu-bench --only trsv,solves at 4096 and 8192 of main's build (linalgd-gpu-bench-base)
# and the changed one (linalgd-gpu-bench) in turn, ROUNDS rounds (3): the trsv_* rows (one
# sweep) and the condition estimate's rows. About 150 s.
# SUITES=0: without the GPU suites (about 100 s).
# Bundle: gpu_run_env.sh, this script, liblinalgd_crc32c.so, linalgd, linalgd-gpu-bench,
# linalgd-gpu-bench-base, gpu_tests, gpu_unit_tests, gpu_server_tests.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/trsv_ab.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" trsv_ab
[[ ${SUITES:-1} == 1 ]] && gpu_suites
for r in $(seq 1 "${ROUNDS:-3}"); do
  for v in base new; do
    b=$h/bin/linalgd-gpu-bench; [[ $v == base ]] && b=$h/bin/linalgd-gpu-bench-base
    run "${v}_$r" 90 "$b" --only trsv,solves --sizes 4096,8192 --json "$json/${v}_$r.json"
  done
done
for r in $(seq 1 "${ROUNDS:-3}"); do
  for v in base new; do
    echo "== ${v}_$r"
    grep -E "^(trsv|cholesky_rcond|lu_rcond|cholesky_solve|lu_solve|chol)" "$logs/${v}_$r.log"
  done
done >> "$s"
tar cJf "$out/logs-trsv_ab.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
