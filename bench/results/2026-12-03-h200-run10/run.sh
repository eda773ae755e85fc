#!/usr/bin/env bash
# Run 10: after the trsv condition estimate and complex dtypes.
# GPU-host checks after condition estimation, empty tensors, the one request
# path and fd-passing shared memory (one H200): GPU tests, integration tests
# with a GPU in service, the Python client (numpy parity, condition) on the
# host's current stack, the decision table on the GPU, the estimate's cost
# (linalgd-gpu-bench: ours vs direct cuSOLVER) and the shared-memory figures.
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"
s=$out/summary.txt; : > "$s"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
run() { local n=$1 l=$2; shift 2; local t=$SECONDS; timeout "$l" "$@" > "$out/$n.log" 2>&1; echo "$n: rc=$? in $((SECONDS-t)) s" | tee -a "$s"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$s" 2>&1
python3 -c "import sys, google.protobuf as p, grpc, numpy; print('python', sys.version.split()[0], 'protobuf', p.__version__, 'grpcio', grpc.__version__, 'numpy', numpy.__version__)" >> "$s" 2>&1
run gpu_tests 200 "$h/bin/gpu_tests"
run gpu_server_tests 120 "$h/bin/gpu_server_tests"
run integration_gpu 200 "$h/bin/integration_tests" --gtest_filter='Hardening*:Sparse*:Server*:Shm*:ClientShm*:SharedTensor*:Empty*:RequestMetrics*:IntegrationTest.Solve*'
LINALGD_SERVER="$h/bin/linalgd" run python_client 300 python3 -m pytest -q -p no:cacheprovider tests/python
"$h/bin/linalgd" --listen 127.0.0.1:50077 --cpu-threshold 0 > "$out/decision_server.log" 2>&1 &
srv=$!; sleep 4
run decision_table 150 python3 bench/decision_table.py --target 127.0.0.1:50077 --big
kill $srv; wait $srv 2>/dev/null
run gpu_bench 200 "$h/bin/linalgd-gpu-bench" --json "$out/gpu_bench.json"
run bench_data 150 "$h/bin/linalgd-bench" --workloads data --data-n 4096 --data-iterations 3 --factor-n 4096 --factor-solves 100 --json "$out/bench_data.json"
run bench_batch_shm 120 "$h/bin/linalgd-bench" --workloads batching --batch-shm --batch-connections 16 --json "$out/bench_batch_shm.json"
for f in gpu_tests gpu_server_tests integration_gpu; do
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$out/$f.log" | head -20 | sed "s/^/$f: /" >> "$s"
done
grep -E "Failure|Expected|Which is" "$out/gpu_tests.log" "$out/gpu_server_tests.log" "$out/integration_gpu.log" | head -40 >> "$s"
tail -25 "$out/python_client.log" >> "$s"
cat "$out/decision_table.log" >> "$s"
grep -iE "solve|lu|chol" "$out/gpu_bench.log" | head -20 >> "$s"
tail -40 "$out/bench_data.log" >> "$s"
tail -25 "$out/bench_batch_shm.log" >> "$s"
cat "$s"
# Everything but the summary in one archive (the device tool returns a few files only).
cd "$out" && tar czf logs.tgz --exclude=logs.tgz --exclude=summary.txt . && find . -type f ! -name logs.tgz ! -name summary.txt -delete
