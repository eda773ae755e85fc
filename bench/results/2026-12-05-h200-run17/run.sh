#!/usr/bin/env bash
# GPU-host run 17 (one H200), after this session's merges. Part "tests": the GPU tests,
# integration tests with a GPU in service, the Python suite on the host's current Python
# stack. Part "bench": small-call latency (CPU lane inline; GPU lane 128^3), the f64
# end-to-end solve through the C++ client against in-process LAPACK, the accuracy table on
# the GPU, the decision table, the Python client's transfer rate against the C++ client's,
# the data paths, batching against the echo ceiling, linalgd-gpu-bench (GEMM, the
# condition estimate's cost, small calls), 3 replicas against 1 on the one GPU.
# Every JSON goes into json/ for bench/report.py; logs are packed into one tarball per part.
#   tar xJf .gpu-bundle.tar.xz && bash gpu-bundle/run.sh tests && bash gpu-bundle/run.sh bench
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; logs=$out/logs; json=$out/json; mkdir -p "$logs" "$json"
part=${1:-tests}
INTEGRATION_FILTER=${INTEGRATION_FILTER:-*}
s=$out/summary-$part.txt; : > "$s"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
export LINALGD_CRC32C_LIBRARY="$h/liblinalgd_crc32c.so"
run() { local n=$1 l=$2; shift 2; local t=$SECONDS; timeout "$l" "$@" > "$logs/$n.log" 2>&1; echo "$n: rc=$? in $((SECONDS-t)) s" | tee -a "$s"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$s" 2>&1
python3 -c "import sys, google.protobuf as p, grpc, numpy; print('python', sys.version.split()[0], 'protobuf', p.__version__, 'grpcio', grpc.__version__, 'numpy', numpy.__version__)" >> "$s" 2>&1
"$h/bin/linalgd" --version >> "$s" 2>&1
if [[ $part == tests ]]; then
# SKIP_GPU_TESTS=1 where check.sh already ran the three GPU suites in the same session.
if [[ -z "${SKIP_GPU_TESTS:-}" ]]; then
run gpu_tests 200 "$h/bin/gpu_tests"
run gpu_unit_tests 30 "$h/bin/gpu_unit_tests"
run gpu_server_tests 150 "$h/bin/gpu_server_tests"
fi
run integration_gpu 150 "$h/bin/integration_tests" --gtest_filter="$INTEGRATION_FILTER"
LINALGD_SERVER="$h/bin/linalgd" run python_client 300 python3 -m pytest -q -p no:cacheprovider tests/python
for f in gpu_tests gpu_unit_tests gpu_server_tests integration_gpu; do
  [[ -f $logs/$f.log ]] || continue
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$logs/$f.log" | head -20 | sed "s/^/$f: /" >> "$s"
done
grep -hE "Failure|Expected|Which is|error" "$logs"/gpu_*.log "$logs/integration_gpu.log" 2>/dev/null | head -40 >> "$s"
grep -hE "^\[accuracy\]|accuracy" "$logs/gpu_tests.log" 2>/dev/null | head -30 >> "$s"
tail -25 "$logs/python_client.log" >> "$s"
else
B="$h/bin/linalgd-bench"
# Servers: CPU lane for tiny calls (64^3), GPU lane for everything (--cpu-threshold 0),
# and one with the default --cpu-threshold (auto: calibrated at start).
"$h/bin/linalgd" --listen 127.0.0.1:50081 --metrics-listen "" > "$logs/srv_cpu.log" 2>&1 & p1=$!
"$h/bin/linalgd" --listen 127.0.0.1:50082 --metrics-listen "" --cpu-threshold 0 > "$logs/srv_gpu.log" 2>&1 & p2=$!
"$h/bin/linalgd" --listen 127.0.0.1:50083 --metrics-listen "" --log-level info > "$logs/srv_auto.log" 2>&1 & p3=$!
sleep 5
run latency_cpu 60 "$B" --target 127.0.0.1:50081 --workloads latency --small-iterations 5000 --json "$json/latency_cpu.json"
run latency_cpu_again 60 "$B" --target 127.0.0.1:50081 --workloads latency --small-iterations 5000 --json "$json/latency_cpu_again.json"
run latency_gpu128 60 "$B" --target 127.0.0.1:50082 --workloads latency --small-n 128 --small-iterations 5000 --json "$json/latency_gpu128.json"
# Mid-size products on the CPU lane (--cpu-threshold 100000) with OpenBLAS threaded over every
# core (default) and single-threaded (--blas-threads 1): on the 2-core build machine 128^3 and
# 256^3 single-caller p50 was bimodal with the default (437 or ~3,900 us for 128^3; blas 1:
# ~400), and 16 callers of 128^3 reached 1,300-3,500 calls/s (blas 1: 3,200-3,900).
"$h/bin/linalgd" --listen 127.0.0.1:50084 --metrics-listen "" --cpu-threshold 100000 > "$logs/srv_cpu_mid.log" 2>&1 & p4=$!
"$h/bin/linalgd" --listen 127.0.0.1:50085 --metrics-listen "" --cpu-threshold 100000 --blas-threads 1 > "$logs/srv_cpu_mid_blas1.log" 2>&1 & p5=$!
sleep 3
for port in 50084 50085; do for n in 128 256 512; do
  run "cpu_mid_${port}_lat$n" 60 "$B" --target 127.0.0.1:$port --workloads latency --small-n $n --small-iterations 1000
done; run "cpu_mid_${port}_tp128x64" 60 "$B" --target 127.0.0.1:$port --workloads throughput --concurrency 64 --small-n 128 --throughput-seconds 4; done
kill $p4 $p5
run e2e64 240 "$B" --target 127.0.0.1:50082 --workloads e2e64 --e2e-matmul-sizes 4096 --e2e-solve-sizes 4096 8192 --large-iterations 3 --json "$json/e2e64.json"
run accuracy 200 python3 bench/accuracy.py --target 127.0.0.1:50082 --out "$logs/accuracy.md"
run decisions 200 python3 bench/decision_table.py --target 127.0.0.1:50082 --big
run py_transfer 150 python3 bench/python_transfer.py --target 127.0.0.1:50081 --cpp-bench "$B" --matmul-n 4096 --solve-n 8192 --transfer-mib 128 --repeat 3 --connections 4 --sweep 8x2 --processes 8
run py_transfer_tuned 150 python3 bench/python_transfer.py --target 127.0.0.1:50081 --cpp-bench "$B" --matmul-n 4096 --solve-n 8192 --transfer-mib 128 --repeat 3 --connections 4 --sweep 8x2 --tune-malloc
kill $p1 $p2 $p3; wait 2>/dev/null
for n in 1024 2048 4096; do
  run "data_$n" 120 "$B" --workloads data --data-n "$n" --data-iterations 3 --factor-n 1024 --factor-solves 20 --json "$json/data_$n.json"
done
run batching_shm 150 "$B" --workloads batching --batch-shm --batch-connections 16 --json "$json/batching_shm.json"
run batching_shm_again 150 "$B" --workloads batching --batch-shm --batch-connections 16 --json "$json/batching_shm_again.json"
# The CPU lane under 256 callers with OpenBLAS's idle threads spinning (its default, about
# 2^28 cycles after each call) and sleeping at once (OPENBLAS_THREAD_TIMEOUT=4): on the
# 2-core build machine the unbatched path gained ~18% and the batched ~8% without the spin.
run batching_cpu 90 "$B" --workloads batching --batch-cpu-threshold 1000000 --batch-inline-max-us 0 --json "$json/batching_cpu.json"
OPENBLAS_THREAD_TIMEOUT=4 run batching_cpu_nospin 90 "$B" --workloads batching --batch-cpu-threshold 1000000 --batch-inline-max-us 0 --json "$json/batching_cpu_nospin.json"
run gpu_bench 200 "$h/bin/linalgd-gpu-bench" --json "$json/gpu_bench.json"
run replicas 90 python3 bench/replica_throughput.py --server "$h/bin/linalgd" --replicas 1 3 --callers 64 --processes 8 --n 512 --seconds 4 -- --cpu-threshold 0
echo "== cpu-threshold auto" >> "$s"; grep -i "cpu-threshold auto" "$logs/srv_auto.log" | head -3 >> "$s"
for f in latency_cpu latency_cpu_again latency_gpu128 $(cd "$logs" && ls cpu_mid_*.log | sed "s/.log$//"); do echo "== $f"; grep -E "p50|p99|calls/s" "$logs/$f.log" | head -3; done >> "$s"
echo "== e2e64" >> "$s"; grep -iE "solve|matmul" "$logs/e2e64.log" | head -12 >> "$s"
echo "== accuracy" >> "$s"; cat "$logs/accuracy.md" >> "$s" 2>/dev/null; tail -3 "$logs/accuracy.log" >> "$s"
echo "== py_transfer" >> "$s"; tail -60 "$logs/py_transfer.log" >> "$s"
echo "== py_transfer_tuned" >> "$s"; tail -45 "$logs/py_transfer_tuned.log" >> "$s"
for f in batching_shm batching_shm_again batching_cpu batching_cpu_nospin; do echo "== $f"; grep -iE "calls/s|p50" "$logs/$f.log" | head -12; done >> "$s"
echo "== gpu_bench" >> "$s"; grep -vE "^\[" "$logs/gpu_bench.log" | head -90 >> "$s"
echo "== decisions" >> "$s"; tail -40 "$logs/decisions.log" >> "$s"
echo "== replicas" >> "$s"; tail -6 "$logs/replicas.log" >> "$s"
fi
tar cJf "$out/logs-$part.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
