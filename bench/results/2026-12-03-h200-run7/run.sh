#!/usr/bin/env bash
# This session's GPU-host checks (one H200): GPU tests, the Python client on the
# host's current stack against a GPU server, hardening tests with a GPU in service.
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"
s=$out/summary.txt; : > "$s"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
run() { local n=$1 l=$2; shift 2; local t=$SECONDS; timeout "$l" "$@" > "$out/$n.log" 2>&1; echo "$n: rc=$? in $((SECONDS-t)) s" | tee -a "$s"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$s" 2>&1
python3 -c "import sys, google.protobuf as p, grpc, numpy; print('python', sys.version.split()[0], 'protobuf', p.__version__, 'grpcio', grpc.__version__, 'numpy', numpy.__version__)" >> "$s" 2>&1
run gpu_tests 150 "$h/bin/gpu_tests"
run gpu_server_tests 120 "$h/bin/gpu_server_tests"
run hardening_gpu 120 "$h/bin/integration_tests" --gtest_filter='Hardening*:Sparse*:Server*'
LINALGD_SERVER="$h/bin/linalgd" run python_client 240 python3 -m pytest -q -p no:cacheprovider tests/python
run bench_latency 90 "$h/bin/linalgd-bench" --workloads latency,batching --json "$out/bench.json"
for f in gpu_tests gpu_server_tests hardening_gpu; do
  grep -E "^\[  (PASSED|FAILED) |tests ran" "$out/$f.log" | head -20 | sed "s/^/$f: /" >> "$s"
done
grep -E "Failure|Expected|Which is" "$out/gpu_tests.log" "$out/gpu_server_tests.log" "$out/hardening_gpu.log" | head -30 >> "$s"
tail -15 "$out/python_client.log" >> "$s"
tail -30 "$out/bench_latency.log" >> "$s"
cat "$s"
