#!/usr/bin/env bash
# GPU-host run 17, call 0 (one H200), main before this session's server changes: small calls
# against an echo served in the bench's process and one served by another process; the
# batched path sampled per thread (is one thread the bound?).
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/profile.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; logs=$out/logs; mkdir -p "$logs"
s=$out/summary-profile.txt; : > "$s"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
run() { local n=$1 l=$2; shift 2; local t=$SECONDS; timeout "$l" "$@" > "$logs/$n.log" 2>&1; echo "$n: rc=$? in $((SECONDS-t)) s" | tee -a "$s"; }
B="$h/bin/linalgd-bench"; P="$h/bin/perf"
"$h/bin/linalgd" --listen 127.0.0.1:50081 --metrics-listen "" > "$logs/srv_cpu.log" 2>&1 & p1=$!
"$h/bin/linalgd" --listen 127.0.0.1:50082 --metrics-listen "" --cpu-threshold 0 > "$logs/srv_gpu.log" 2>&1 & p2=$!
"$B" --serve-echo 127.0.0.1:50099 > "$logs/echo_server.log" 2>&1 & p4=$!
sleep 4
for i in 1 2; do
  run latency_cpu_$i 60 "$B" --target 127.0.0.1:50081 --workloads latency --small-iterations 5000
  run latency_cpu_echo_apart_$i 60 "$B" --target 127.0.0.1:50081 --echo-target 127.0.0.1:50099 --workloads latency --small-iterations 5000
  run latency_gpu128_echo_apart_$i 60 "$B" --target 127.0.0.1:50082 --echo-target 127.0.0.1:50099 --workloads latency --small-n 128 --small-iterations 5000
done
# Context switches and CPU of the server per small call (CPU lane), perf stat over 5000 calls.
"$P" stat -e context-switches,cpu-migrations,task-clock -p $p1 -o "$logs/stat_cpu.txt" -- sleep 6 & ps=$!
sleep 0.5; run latency_cpu_stat 60 "$B" --target 127.0.0.1:50081 --echo-target 127.0.0.1:50099 --workloads latency --small-iterations 8000; wait $ps
kill $p1 $p2 $p4; wait 2>/dev/null
timeout 120 "$P" record -F 499 -g -o "$logs/batching.data" -- "$B" --workloads batching --batch-shm --batch-connections 16 --batch-seconds 3 > "$logs/batching_shm.log" 2>&1
echo "batching perf rc=$?" >> "$s"
"$P" report -i "$logs/batching.data" --no-children --sort pid --stdio -g none 2>/dev/null | grep -E "^ +[0-9.]+%" | head -40 > "$logs/batching.tid.txt"
for t in $(awk '{print $2}' "$logs/batching.tid.txt" | cut -d: -f1 | head -6); do
  echo "== tid $t"; "$P" report -i "$logs/batching.data" --no-children --tid "$t" --sort dso,sym --stdio -g none 2>/dev/null | grep -E "^ +[0-9.]+%" | head -14 | cut -c1-160
done > "$logs/batching.toptids.txt"
"$P" report -i "$logs/batching.data" --no-children --sort comm --stdio -g none 2>/dev/null | grep -E "^ +[0-9.]+%" | head -20 > "$logs/batching.comm.txt"
run batching_handles8 60 "$B" --workloads batching --batch-shm --batch-connections 16 --batch-handles 8
run batching_conn64 60 "$B" --workloads batching --batch-shm --batch-connections 64
nproc >> "$s"
for f in "$logs"/latency_*.log; do echo "== $(basename $f .log)"; grep -E "p50" "$f" | head -2; done >> "$s"
echo "== stat (CPU lane server, 8000 timed calls + warm-up)" >> "$s"; grep -E "context|migrations|task-clock" "$logs/stat_cpu.txt" >> "$s"
for f in batching_shm batching_handles8 batching_conn64; do echo "== $f"; grep -iE "calls/s|p50" "$logs/$f.log" | head -4; done >> "$s"
echo "== batching threads by comm" >> "$s"; cat "$logs/batching.comm.txt" >> "$s"
echo "== batching threads (perf samples by tid; 499 Hz)" >> "$s"; head -25 "$logs/batching.tid.txt" >> "$s"; cat "$logs/batching.toptids.txt" >> "$s"
rm -f "$logs/batching.data"
tar cJf "$out/logs-profile.tar.xz" -C "$out" logs && rm -rf "$logs"
cat "$s"
