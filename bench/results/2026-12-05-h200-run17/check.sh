#!/usr/bin/env bash
# GPU-host run 17, first call (one H200): the merge of this session's branches (two-column
# triangular solves for the condition estimate; small GPU jobs run on the gRPC thread).
# The GPU tests, the estimate's cost (trsv, trsv2, solves), small calls through the
# server (CPU lane 64^3, GPU lane 128^3 with --gpu-inline-max-us 200 and with the default 0).
# Apply pending/est2.mbox first (git am) for the trsv2 rows and the paired estimate's tests.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/check.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; logs=$out/logs; json=$out/json; mkdir -p "$logs" "$json"
s=$out/summary-check.txt; : > "$s"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
run() { local n=$1 l=$2; shift 2; local t=$SECONDS; timeout "$l" "$@" > "$logs/$n.log" 2>&1; echo "$n: rc=$? in $((SECONDS-t)) s" | tee -a "$s"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$s" 2>&1
"$h/bin/linalgd" --version >> "$s" 2>&1
run gpu_tests 240 "$h/bin/gpu_tests"
run gpu_unit_tests 30 "$h/bin/gpu_unit_tests"
run gpu_server_tests 150 "$h/bin/gpu_server_tests"
run gpu_bench 150 "$h/bin/linalgd-gpu-bench" --only trsv,trsv2,solves,small_call --sizes 1024,2048,4096,8192 --json "$json/gpu_bench_solves.json"
B="$h/bin/linalgd-bench"
"$h/bin/linalgd" --listen 127.0.0.1:50081 --metrics-listen "" > "$logs/srv_cpu.log" 2>&1 & p1=$!
"$h/bin/linalgd" --listen 127.0.0.1:50082 --metrics-listen "" --cpu-threshold 0 --gpu-inline-max-us 200 > "$logs/srv_gpu.log" 2>&1 & p2=$!
"$h/bin/linalgd" --listen 127.0.0.1:50083 --metrics-listen "" --cpu-threshold 0 > "$logs/srv_gpu_queued.log" 2>&1 & p3=$!
"$B" --serve-echo 127.0.0.1:50099 > "$logs/echo_server.log" 2>&1 & p4=$!
sleep 4
run latency_cpu_echo_apart 60 "$B" --target 127.0.0.1:50081 --echo-target 127.0.0.1:50099 --workloads latency --small-iterations 5000 --json "$json/latency_cpu_echo_apart.json"
run latency_gpu128_echo_apart 60 "$B" --target 127.0.0.1:50082 --echo-target 127.0.0.1:50099 --workloads latency --small-n 128 --small-iterations 5000 --json "$json/latency_gpu128_echo_apart.json"
run latency_cpu 60 "$B" --target 127.0.0.1:50081 --workloads latency --small-iterations 5000 --json "$json/latency_cpu.json"
run latency_gpu128 60 "$B" --target 127.0.0.1:50082 --workloads latency --small-n 128 --small-iterations 5000 --json "$json/latency_gpu128.json"
run latency_gpu128_queued 60 "$B" --target 127.0.0.1:50083 --workloads latency --small-n 128 --small-iterations 5000 --json "$json/latency_gpu128_queued.json"
run latency_gpu128_again 60 "$B" --target 127.0.0.1:50082 --workloads latency --small-n 128 --small-iterations 5000 --json "$json/latency_gpu128_again.json"
kill $p1 $p2 $p3 $p4; wait 2>/dev/null
run gpu_inline 90 "$B" --workloads gpu_inline --batch-shm --batch-n 128 --batch-latency-iterations 2000 --json "$json/gpu_inline.json"
run batching_inline 60 "$B" --workloads batching --batch-shm --batch-connections 16 --batch-gpu-inline-max-us 200 --json "$json/batching_inline.json"
# The batched path, per thread: is one thread the bound (a tid near 100% of a core)?
P="$h/bin/perf"
timeout 120 "$P" record -F 499 -g -o "$logs/batching.data" -- "$B" --workloads batching --batch-shm --batch-connections 16 --batch-seconds 3 --json "$json/batching_shm.json" > "$logs/batching_shm.log" 2>&1
"$P" report -i "$logs/batching.data" --no-children --sort pid --stdio -g none 2>/dev/null | grep -E "^ +[0-9.]+%" | head -40 > "$logs/batching.tid.txt"
for t in $(awk '{print $2}' "$logs/batching.tid.txt" | cut -d: -f1 | head -4); do
  echo "== tid $t"; "$P" report -i "$logs/batching.data" --no-children --tid "$t" --sort dso,sym --stdio -g none 2>/dev/null | grep -E "^ +[0-9.]+%" | head -15 | cut -c1-160
done > "$logs/batching.toptids.txt"
run batching_handles8 60 "$B" --workloads batching --batch-shm --batch-connections 16 --batch-handles 8 --json "$json/batching_handles8.json"
run batching_conn32 60 "$B" --workloads batching --batch-shm --batch-connections 32 --json "$json/batching_conn32.json"
for f in gpu_tests gpu_unit_tests gpu_server_tests; do
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$logs/$f.log" | head -20 | sed "s/^/$f: /" >> "$s"
done
grep -hE "Failure|Expected|Which is|error|Value of" "$logs"/gpu_*.log | head -40 >> "$s"
echo "== gpu_bench" >> "$s"; grep -vE "^\[" "$logs/gpu_bench.log" >> "$s"
for f in latency_cpu_echo_apart latency_gpu128_echo_apart latency_cpu latency_gpu128 latency_gpu128_queued latency_gpu128_again; do echo "== $f"; grep -vE "^\s*$" "$logs/$f.log" | tail -8; done >> "$s"
echo "== gpu_inline" >> "$s"; grep -vE "^\s*$|^\[" "$logs/gpu_inline.log" | tail -12 >> "$s"
for f in batching_shm batching_inline batching_handles8 batching_conn32; do echo "== $f"; grep -iE "calls/s|p50" "$logs/$f.log" | head -6; done >> "$s"
echo "== batching threads (perf samples by tid; 499 Hz)" >> "$s"; head -25 "$logs/batching.tid.txt" >> "$s"; cat "$logs/batching.toptids.txt" >> "$s"
rm -f "$logs/batching.data"
tar cJf "$out/logs-check.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
