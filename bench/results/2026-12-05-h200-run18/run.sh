#!/usr/bin/env bash
# GPU-host run 18 (one H200, 16 cores): main with jemalloc as the server's malloc, the BLAS
# thread governor and the Cholesky estimate's speculative unit-vector solve.
#   part a: the GPU suites (the estimate's bitwise tests among them); the estimate's cost
#           (linalgd-gpu-bench --only trsv2,solves); small calls and batching against the echo
#           (run 17 without jemalloc: CPU 64^3 1.38-1.55x echo, GPU 128^3 echo+123..217 us,
#           batching 55-56%); the CPU lane's governor (--busy-blas-threads 1) against off.
#   part b: integration with a GPU in service, the Python suite on the host's Python, the
#           Python client's transfer rate against the C++ client's.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/run.sh a   (then b)
# (bundled with -x bench/gpu_run_env.sh, its shared start)
set -u
part=${1:-a}
. "$(dirname "$0")/gpu_run_env.sh" "$part"
B="$h/bin/linalgd-bench"
if [[ $part == a ]]; then
run gpu_tests 150 "$h/bin/gpu_tests"
run gpu_unit_tests 30 "$h/bin/gpu_unit_tests"
run gpu_server_tests 60 "$h/bin/gpu_server_tests"
run gpu_bench 120 "$h/bin/linalgd-gpu-bench" --only trsv2,solves --sizes 1024,4096,8192 --json "$json/gpu_bench_solves.json"
"$h/bin/linalgd" --listen 127.0.0.1:50081 --metrics-listen "" > "$logs/srv_cpu.log" 2>&1 & p1=$!
"$h/bin/linalgd" --listen 127.0.0.1:50082 --metrics-listen "" --cpu-threshold 0 > "$logs/srv_gpu.log" 2>&1 & p2=$!
sleep 4
for i in 1 2 3; do
  run latency_cpu_$i 60 "$B" --target 127.0.0.1:50081 --workloads latency --small-iterations 5000 --json "$json/latency_cpu_$i.json"
done
for i in 1 2; do
  run latency_gpu128_$i 60 "$B" --target 127.0.0.1:50082 --workloads latency --small-n 128 --small-iterations 5000 --json "$json/latency_gpu128_$i.json"
done
kill $p1 $p2; wait 2>/dev/null
for i in 1 2; do run batching_shm_$i 60 "$B" --workloads batching --batch-shm --batch-connections 16 --json "$json/batching_shm_$i.json"; done
run batching_cpu 60 "$B" --workloads batching --batch-cpu-threshold 1000000 --batch-inline-max-us 0 --json "$json/batching_cpu.json"
# The governor: 64 callers of 128^3 on the CPU lane, governor on (--busy-blas-threads 1) and
# off (the default), twice each; then one caller's p50 at 128^3-512^3 with it on.
"$h/bin/linalgd" --listen 127.0.0.1:50151 --metrics-listen "" --cpu-threshold 100000 --busy-blas-threads 1 > "$logs/srv_governor.log" 2>&1 & p3=$!
"$h/bin/linalgd" --listen 127.0.0.1:50152 --metrics-listen "" --cpu-threshold 100000 > "$logs/srv_governor_off.log" 2>&1 & p4=$!
sleep 4
for port in 50151 50152 50151 50152; do
  run "tp128x64_$port" 25 "$B" --target 127.0.0.1:$port --workloads throughput --concurrency 64 --small-n 128 --throughput-seconds 4
done
for n in 128 256 512; do run "governor_lat$n" 25 "$B" --target 127.0.0.1:50151 --workloads latency --small-n $n --small-iterations 500; done
kill $p3 $p4; wait 2>/dev/null
for f in gpu_tests gpu_unit_tests gpu_server_tests; do
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$logs/$f.log" | head -20 | sed "s/^/$f: /" >> "$s"
done
grep -hE "Failure|Expected|Which is|error|Value of" "$logs"/gpu_*.log | head -40 >> "$s"
echo "== gpu_bench" >> "$s"; grep -vE "^\[" "$logs/gpu_bench.log" >> "$s"
for f in latency_cpu_1 latency_cpu_2 latency_cpu_3 latency_gpu128_1 latency_gpu128_2; do echo "== $f"; grep -vE "^\s*$" "$logs/$f.log" | tail -6; done >> "$s"
for f in batching_shm_1 batching_shm_2 batching_cpu; do echo "== $f"; grep -iE "calls/s|p50" "$logs/$f.log" | head -8; done >> "$s"
echo "== governor (50151 on, 50152 off)" >> "$s"
for f in tp128x64_50151 tp128x64_50152 governor_lat128 governor_lat256 governor_lat512; do echo "-- $f"; grep -E "callers|p50" "$logs/$f.log" | head -3; done >> "$s"
grep -h "malloc:\|cpu:" "$logs"/srv_*.log | sort | uniq -c >> "$s"
else
run integration_gpu 120 "$h/bin/integration_tests"
LINALGD_SERVER="$h/bin/linalgd" run python_client 280 python3 -m pytest -q -p no:cacheprovider tests/python
"$h/bin/linalgd" --listen 127.0.0.1:50081 --metrics-listen "" > "$logs/srv_cpu.log" 2>&1 & p1=$!
sleep 4
run py_transfer 100 python3 bench/python_transfer.py --target 127.0.0.1:50081 --cpp-bench "$B" --matmul-n 4096 --solve-n 8192 --transfer-mib 128 --repeat 3 --connections 4
kill $p1; wait 2>/dev/null
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$logs/integration_gpu.log" | head -20 | sed "s/^/integration_gpu: /" >> "$s"
tail -25 "$logs/python_client.log" >> "$s"
echo "== py_transfer" >> "$s"; tail -40 "$logs/py_transfer.log" >> "$s"
fi
tar cJf "$out/logs-$part.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
