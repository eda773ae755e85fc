#!/usr/bin/env bash
# GPU-host run 11 (one H200): GPU tests after the GPU-engine refactor (state owned
# by the engine), integration tests with a GPU in service, the Python client's
# whole suite on the host's current Python stack, the Python client's transfer
# rates against the C++ client's (same host, same run), the small-call latency
# with and without running tiny CPU jobs on the gRPC thread (--inline-max-us),
# and linalgd-gpu-bench. Logs are packed into one tarball; summary.txt last.
#   tar xJf .gpu-bundle.tar.xz && bash gpu-bundle/run.sh tests   # then: ... run.sh bench
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"; logs=$out/logs; mkdir -p "$logs"
s=$out/summary.txt; : > "$s"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
export LINALGD_CRC32C_LIBRARY="$h/lib/liblinalgd_crc32c.so"
run() { local n=$1 l=$2; shift 2; local t=$SECONDS; timeout "$l" "$@" > "$logs/$n.log" 2>&1; echo "$n: rc=$? in $((SECONDS-t)) s" | tee -a "$s"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$s" 2>&1
python3 -c "import sys, google.protobuf as p, grpc, numpy; print('python', sys.version.split()[0], 'protobuf', p.__version__, 'grpcio', grpc.__version__, 'numpy', numpy.__version__)" >> "$s" 2>&1
part=${1:-tests}
if [[ $part == tests ]]; then
run gpu_tests 150 "$h/bin/gpu_tests"
run gpu_unit_tests 30 "$h/bin/gpu_unit_tests"
run gpu_server_tests 120 "$h/bin/gpu_server_tests"
run integration_gpu 150 "$h/bin/integration_tests" --gtest_filter='Hardening*:Sparse*:Server*:Shm*:ClientShm*:SharedTensor*:Empty*:RequestMetrics*:IntegrationTest.Solve*:Batching*'
LINALGD_SERVER="$h/bin/linalgd" run python_client 240 python3 -m pytest -q -p no:cacheprovider tests/python
for f in gpu_tests gpu_unit_tests gpu_server_tests integration_gpu; do
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$logs/$f.log" | head -20 | sed "s/^/$f: /" >> "$s"
done
grep -hE "Failure|Expected|Which is" "$logs"/gpu_*.log "$logs/integration_gpu.log" | head -40 >> "$s"
tail -15 "$logs/python_client.log" >> "$s"
else
# Small calls: tiny CPU jobs on the gRPC thread (default 50 us) vs always queued.
"$h/bin/linalgd" --listen 127.0.0.1:50081 --metrics-listen "" --inline-max-us 0 > "$logs/srv_queued.log" 2>&1 &
q=$!
"$h/bin/linalgd" --listen 127.0.0.1:50082 --metrics-listen "" > "$logs/srv_inline.log" 2>&1 &
i=$!
sleep 4
for r in 1 2; do
  run "latency_queued_$r" 60 "$h/bin/linalgd-bench" --target 127.0.0.1:50081 --workloads latency --small-iterations 5000
  run "latency_inline_$r" 60 "$h/bin/linalgd-bench" --target 127.0.0.1:50082 --workloads latency --small-iterations 5000
done
# The Python client against the C++ client, same server (the GPU one).
run py_f64 150 python3 bench/python_transfer.py --target 127.0.0.1:50082 --matmul-n 4096 --solve-n 8192 --transfer-mib 128
run py_f32_streamed 90 python3 bench/python_transfer.py --target 127.0.0.1:50082 --matmul-n 4096 --matmul-dtype float32 --stream-threshold-mib 1e-6 --solve-n 1024 --transfer-mib 64
kill $q $i; wait 2>/dev/null
run cpp_data 120 "$h/bin/linalgd-bench" --workloads data --data-n 4096 --data-iterations 3 --json "$logs/cpp_data.json"
run gpu_bench 150 "$h/bin/linalgd-gpu-bench" --json "$logs/gpu_bench.json"
for f in "$logs"/latency_*.log; do echo "== $(basename "$f")"; grep -E "p50|p99" "$f" | head -3; done >> "$s"
for f in py_f64 py_f32_streamed; do echo "== $f"; tail -14 "$logs/$f.log"; done >> "$s"
echo "== cpp_data" >> "$s"; grep -E "rate|e2e" "$logs/cpp_data.log" | head -20 >> "$s"
echo "== gpu_bench" >> "$s"; grep -iE "gemm|solve|lu|chol|ratio" "$logs/gpu_bench.log" | head -30 >> "$s"
fi
tar cJf "$out/logs-$part.tar.xz" -C "$out" logs && rm -rf "$logs"
cat "$s"
