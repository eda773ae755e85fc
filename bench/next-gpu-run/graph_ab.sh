#!/usr/bin/env bash
# The small products' CUDA graphs (server/gpu/small_graphs.h) on and off, in one binary: the GPU
# suites (SUITES=0: none), then
#   - linalgd-gpu-bench --only small, twice: the small_graph rows (the backend's 64^3, 128^3
#     and 256^3 call with graphs against without, calls in turn; at 128 after a 200 us sleep and
#     with the host's caches evicted too);
#   - one caller's 128^3 f32 GPU-lane p50 (linalgd-bench latency against its echo) on servers
#     with graphs and with --no-gpu-small-graphs, each queued and inline (--gpu-inline-max-us
#     200), ROUNDS (3) rounds in turn;
#   - with perf bundled (PERCALL=1, default): bench/percall_cpu.sh latency --small-n 128 against
#     each server: the CPU a call costs by shared object (libcublasLt, libcuda) and function.
# About 300 s (240 without perf).
# Bundle: gpu_run_env.sh, this script, bench/percall_cpu.sh, liblinalgd_crc32c.so, linalgd,
# linalgd-bench, linalgd-gpu-bench, gpu_tests, gpu_unit_tests, gpu_server_tests, /usr/bin/perf.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/graph_ab.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" graph_ab
[[ ${SUITES:-1} == 1 ]] && gpu_suites
B=$h/bin/linalgd-bench
for i in 1 2; do
  run "gpu_bench_small_$i" 60 "$h/bin/linalgd-gpu-bench" --only small --json "$json/gpu_bench_small_$i.json"
done
serve() {  # name port flags...: a server sending every product to the GPU
  local n=$1 port=$2; shift 2
  "$h/bin/linalgd" --listen "127.0.0.1:$port" --metrics-listen "" --cpu-threshold 0 --log-level info "$@" \
    > "$logs/srv_$n.log" 2>&1 &
  pids+=($!)
}
pids=()
serve graphs 50091 --gpu-inline-max-us 0
serve no_graphs 50092 --gpu-inline-max-us 0 --no-gpu-small-graphs
serve graphs_inline 50093 --gpu-inline-max-us 200
serve no_graphs_inline 50094 --gpu-inline-max-us 200 --no-gpu-small-graphs
sleep 5
for r in $(seq 1 "${ROUNDS:-3}"); do
  port=50091
  for v in graphs no_graphs graphs_inline no_graphs_inline; do
    run "lat_${v}_$r" 40 "$B" --target 127.0.0.1:$port --workloads latency --small-n 128 --small-iterations 5000 --json "$json/lat_${v}_$r.json"
    port=$((port + 1))
  done
done
kill "${pids[@]}"; wait 2>/dev/null
if [[ ${PERCALL:-1} == 1 && -x $h/bin/perf ]]; then
  export B=$h/bin PERF=$h/bin/perf
  run percall_graphs 90 env OUT="$logs/pc_graphs" SERVER_ARGS="--cpu-threshold 0 --gpu-inline-max-us 0" bash "$h/percall_cpu.sh" latency --small-n 128
  run percall_no_graphs 90 env OUT="$logs/pc_no_graphs" SERVER_ARGS="--cpu-threshold 0 --gpu-inline-max-us 0 --no-gpu-small-graphs" \
    bash "$h/percall_cpu.sh" latency --small-n 128
  rm -f "$logs"/pc_*/*.data
fi
{
  for i in 1 2; do echo "== gpu_bench_small_$i"; grep -E "^small_" "$logs/gpu_bench_small_$i.log"; done
  python3 - "$json" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/lat_*.json")):
    m = {x["name"]: x["value"] for x in json.load(open(f))["measurements"]}
    print(f"{f.split('/')[-1][:-5]:24} p50 {m['linalgd.p50']:7.1f} echo {m['echo.p50']:7.1f} "
          f"(+{m['linalgd.p50'] - m['echo.p50']:5.1f}) queue {m['linalgd.server_queue_mean']:6.1f} "
          f"run {m['linalgd.server_run_mean']:6.1f} us")
PY
  for n in graphs no_graphs; do
    [[ -f $logs/percall_$n.log ]] || continue
    echo "== percall_$n"
    grep -vE "^\[20|wrote " "$logs/percall_$n.log" | head -60
  done
  grep -h "small graphs" "$logs"/srv_*.log | head -2
} >> "$s"
tar cJf "$out/logs-graph_ab.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
