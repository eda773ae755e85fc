#!/usr/bin/env bash
# The super-block triangular sweep experiment (linalgd-gpu-bench --only super: f64 sweeps
# through 256-, 512- and 1024-row super-blocks, their diagonal blocks inverted once, as CUDA
# graphs of cuBLAS gemv calls, call by call and as one cooperative kernel, against the chain
# kernel), ROUNDS (2) rounds
# at 4096 and 8192, then the solves' rows once (the condition estimate's cost on this host).
# About 20 s. Bundle: gpu_run_env.sh, this script, liblinalgd_crc32c.so, linalgd,
# linalgd-gpu-bench.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/super_ab.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" super_ab
for r in $(seq 1 "${ROUNDS:-2}"); do
  run "super_$r" 90 "$h/bin/linalgd-gpu-bench" --only super --sizes 4096,8192 --json "$json/super_$r.json"
done
run solves 90 "$h/bin/linalgd-gpu-bench" --only solves --sizes 4096,8192 --json "$json/solves.json"
for f in "$logs"/super_*.log "$logs/solves.log"; do
  echo "== $(basename "$f" .log)"
  grep -E "^(super|coop|max|cholesky|chol_|lu_solve|lu_rcond)|benchmark failed" "$f"
done >> "$s"
tar cJf "$out/logs-super_ab.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
