#!/usr/bin/env bash
# GPU-host profile (one H200): where a small call's time goes on the 16-core host.
# perf samples the server (call graphs) while linalgd-bench drives it: the CPU lane's
# 64^3 f32 matmul, the GPU lane's 128^3 f32 matmul, and the batching workload
# (256 callers over shared memory, its own servers, sampled whole).
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/profile.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; logs=$out/plogs; mkdir -p "$logs"
s=$out/summary-profile.txt; : > "$s"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
P="$h/bin/perf"; B="$h/bin/linalgd-bench"
cat /proc/sys/kernel/perf_event_paranoid >> "$s" 2>&1
report() {  # name: the top of the self and the caller-inclusive profiles
  "$P" report -i "$logs/$1.data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -E "^ +[0-9.]+%" | head -45 > "$logs/$1.self.txt"
  "$P" report -i "$logs/$1.data" --children --sort sym --stdio -g none 2>/dev/null | grep -E "^ +[0-9.]+%" | head -60 > "$logs/$1.children.txt"
  { echo "== $1 self"; head -30 "$logs/$1.self.txt"; echo "== $1 children"; head -40 "$logs/$1.children.txt"; } >> "$s"
}
profile_server() {  # name, bench args...: perf on a running server while the bench drives it
  local name=$1 port=$2; shift 2
  "$h/bin/linalgd" --listen 127.0.0.1:$port --metrics-listen "" "$@" > "$logs/srv_$name.log" 2>&1 & local pid=$!
  sleep 4
  timeout 60 "$B" --target 127.0.0.1:$port --workloads latency --small-iterations 40000 $BENCH_ARGS > "$logs/bench_$name.log" 2>&1 & local b=$!
  sleep 3
  timeout 20 "$P" record -F 1999 -g -p $pid -o "$logs/$name.data" -- sleep 8 > "$logs/perf_$name.log" 2>&1
  wait $b; kill $pid; wait $pid 2>/dev/null
  grep -E "p50|p99" "$logs/bench_$name.log" | head -4 >> "$s"
  report "$name"
}
BENCH_ARGS="" profile_server cpu64 50091
BENCH_ARGS="--small-n 128" profile_server gpu128 50092 --cpu-threshold 0
timeout 120 "$P" record -F 999 -g -o "$logs/batching.data" -- "$B" --workloads batching --batch-shm --batch-connections 16 --batch-seconds 3 > "$logs/bench_batching.log" 2>&1
grep -iE "calls/s|p50" "$logs/bench_batching.log" | head -12 >> "$s"
report batching
tar cJf "$out/plogs.tar.xz" -C "$out" plogs && rm -rf "$logs"
cat "$s"
