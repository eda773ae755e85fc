#!/usr/bin/env bash
# The condition estimate's paired solves with their two columns side by side on two streams
# (FactorRcondOptions split_columns, the default) against both in one launch: the GPU suites
# (the estimate's bitwise checks among them), then linalgd-gpu-bench --only solves twice (the
# *_rcond_vs_one_stream rows, and the solves with and without the estimate). About 200 s.
# Bundle: gpu_run_env.sh, this script, liblinalgd_crc32c.so, linalgd, linalgd-gpu-bench,
# gpu_tests, gpu_unit_tests, gpu_server_tests.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/split_columns.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" split
gpu_suites
for i in 1 2; do run "gpu_bench_solves_$i" 90 "$h/bin/linalgd-gpu-bench" --only solves --json "$json/gpu_bench_solves_$i.json"; done
for i in 1 2; do
  echo "== gpu_bench_solves_$i"
  grep -E "^(lu|chol|cholesky)" "$logs/gpu_bench_solves_$i.log"
done >> "$s"
tar cJf "$out/logs-split.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
