#!/usr/bin/env bash
# One GPU-host call (about 480 s) for a session that may get only one: main's GPU suites, the
# GEMM autotuner's A/B (gemm_ab.sh), the performance table's core rows (small calls against the
# echo, batching against the echo ceiling at 16, 64 and 256 callers, e2e64, linalgd-gpu-bench
# once), and the Python client's argument and deadline tests on the host's current Python stack.
# Bundle: linalgd, linalgd-bench, linalgd-gpu-bench, linalgd-gpu-bench-tune, gpu_tests,
# gpu_tests-tune, gpu_unit_tests, gpu_server_tests with gpu_run_env.sh, gemm_ab.sh, this script
# and liblinalgd_crc32c.so; carry client/python/linalgd/_proto too.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/one_call_table.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_run_env.sh" one
B=$h/bin/linalgd-bench
gpu_suites
LINALGD_SERVER="$h/bin/linalgd" run python_args 60 python3 -m pytest -q -p no:cacheprovider \
  tests/python/test_info_errors.py tests/python/test_aio.py tests/python/test_shm.py \
  tests/python/test_retry.py tests/python/test_flags.py
tail -6 "$logs/python_args.log" >> "$s"
srv() { "$h/bin/linalgd" --listen "127.0.0.1:$1" --metrics-listen "" "${@:2}" > "$logs/srv_$1.log" 2>&1 & pids+=($!); }
pids=()
srv 50081; srv 50082 --cpu-threshold 0
sleep 5
for r in 1 2 3; do
  run "lat_cpu64_$r" 40 "$B" --target 127.0.0.1:50081 --workloads latency --small-iterations 5000 --json "$json/lat_cpu64_$r.json"
  run "lat_gpu128_$r" 40 "$B" --target 127.0.0.1:50082 --workloads latency --small-n 128 --small-iterations 5000 --json "$json/lat_gpu128_$r.json"
done
run e2e64 120 "$B" --target 127.0.0.1:50082 --workloads e2e64 --e2e-matmul-sizes 4096 --e2e-solve-sizes 4096 8192 --large-iterations 3 --json "$json/e2e64.json"
kill "${pids[@]}"; wait 2>/dev/null
for r in 1 2; do
  run "batching_shm_$r" 40 "$B" --workloads batching --batch-shm --batch-connections 16 --json "$json/batching_shm_$r.json"
done
for c in 16 64; do
  run "batching_shm_c$c" 40 "$B" --workloads batching --batch-shm --batch-connections 16 --batch-callers $c --json "$json/batching_shm_c$c.json"
done
run gpu_bench 60 "$h/bin/linalgd-gpu-bench" --json "$json/gpu_bench.json"
{
  for f in "$logs"/lat_*.log; do echo "-- $(basename "$f" .log)"; grep -E "p50.*echo" "$f"; done
  for f in "$logs"/batching_*.log; do echo "-- $(basename "$f" .log)"; grep -E "batched.*max-batch|echo ceiling|CPU per call|cores busy" "$f"; done
  echo "== e2e64"; grep -iE "solve|matmul" "$logs/e2e64.log" | head -12
  echo "== gpu_bench"; grep -E "^(gemm|solve|lu|chol|potrf|getrf)" "$logs/gpu_bench.log" | head -60
} >> "$s"
tar cJf "$out/logs-one.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
OUT=$out/gemm bash "$here/gemm_ab.sh" > /dev/null 2>&1
cat "$out/gemm/summary-gemm.txt" >> "$s"
mv "$out/gemm/logs-gemm.tar.xz" "$out/" 2>/dev/null
cat "$s"
