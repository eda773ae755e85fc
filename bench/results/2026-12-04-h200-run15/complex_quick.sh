#!/usr/bin/env bash
# First GPU run of complex matmul, solve and factorize on the GPU (one H200): the whole
# gpu_tests suite (the data-movement kernels changed for every dtype), the GPU server
# tests, and the accuracy table against a server that sends everything to the GPU.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/complex_quick.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"
s=$out/summary-complex.txt; : > "$s"
run() { local n=$1 l=$2; shift 2; local t=$SECONDS; timeout "$l" "$@" > "$out/$n.log" 2>&1; echo "$n: rc=$? in $((SECONDS-t)) s" | tee -a "$s"; }
run gpu_tests 240 "$h/bin/gpu_tests"
run gpu_unit_tests 30 "$h/bin/gpu_unit_tests"
run gpu_server_tests 150 "$h/bin/gpu_server_tests"
"$h/bin/linalgd" --listen 127.0.0.1:50082 --metrics-listen "" --cpu-threshold 0 > "$out/srv.log" 2>&1 & p=$!
sleep 5
run accuracy 120 python3 bench/accuracy.py --target 127.0.0.1:50082 --out "$out/accuracy.md"
kill $p; wait 2>/dev/null
for f in gpu_tests gpu_unit_tests gpu_server_tests; do
  grep -E "^\[  (FAILED|PASSED) |tests ran" "$out/$f.log" | head -20 | sed "s/^/$f: /" >> "$s"
done
grep -hE "Failure|Expected|Which is|error|Value of" "$out"/gpu_*.log | head -40 >> "$s"
cat "$out/accuracy.md" >> "$s" 2>/dev/null; tail -3 "$out/accuracy.log" >> "$s"
xz -T0 "$out"/*.log
cat "$s"
