#!/usr/bin/env bash
# GPU-host run 16, first call: the new triangular-solve kernel (condition estimate) and
# the small products' one round trip, built from a merge of those two branches.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/check.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; logs=$out/logs; mkdir -p "$logs"
s=$out/summary-check.txt; : > "$s"
run() { local n=$1 l=$2; shift 2; local t=$SECONDS; timeout "$l" "$@" > "$logs/$n.log" 2>&1; echo "$n: rc=$? in $((SECONDS-t)) s" | tee -a "$s"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$s" 2>&1
"$h/bin/linalgd" --version >> "$s" 2>&1
run gpu_tests 240 "$h/bin/gpu_tests"
run gpu_unit_tests 30 "$h/bin/gpu_unit_tests"
run gpu_server_tests 150 "$h/bin/gpu_server_tests"
run gpu_bench 200 "$h/bin/linalgd-gpu-bench" --only trsv,solves,small_call
B="$h/bin/linalgd-bench"
"$h/bin/linalgd" --listen 127.0.0.1:50081 --metrics-listen "" > "$logs/srv_cpu.log" 2>&1 & p1=$!
"$h/bin/linalgd" --listen 127.0.0.1:50082 --metrics-listen "" --cpu-threshold 0 > "$logs/srv_gpu.log" 2>&1 & p2=$!
sleep 4
run latency_cpu 60 "$B" --target 127.0.0.1:50081 --workloads latency --small-iterations 5000
run latency_gpu128 60 "$B" --target 127.0.0.1:50082 --workloads latency --small-n 128 --small-iterations 5000
kill $p1 $p2; wait 2>/dev/null
for f in gpu_tests gpu_unit_tests gpu_server_tests; do
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$logs/$f.log" | head -20 | sed "s/^/$f: /" >> "$s"
done
grep -hE "Failure|Expected|Which is|error|Value of" "$logs"/gpu_*.log | head -40 >> "$s"
echo "== gpu_bench" >> "$s"; cat "$logs/gpu_bench.log" >> "$s"
for f in latency_cpu latency_gpu128; do echo "== $f"; grep -vE "^\s*$" "$logs/$f.log" | tail -12; done >> "$s"
tar cJf "$out/logs-check.tar.xz" -C "$out" logs && rm -rf "$logs"
cat "$s"
