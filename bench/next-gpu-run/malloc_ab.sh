#!/usr/bin/env bash
# The next GPU-host run (prepared in run 18, not run): which malloc for the server and
# linalgd-bench. Three set-ups,
# interleaved, two rounds: glibc (the same binaries with jemalloc's NEEDED entry removed:
# `patchelf --remove-needed libjemalloc.so.2`, as linalgd-glibc / linalgd-bench-glibc),
# jemalloc with its default oversize_threshold (8 MiB: MALLOC_CONF overrides the compiled-in
# setting; what run 18's first call measured), jemalloc with oversize_threshold 0 (the
# compiled-in setting, server/common/jemalloc_conf.cc). Each: the CPU lane's 64^3 and the GPU
# lane's 128^3 p50 against the echo (server and bench of the set-up), the batched shm path
# (in the bench's process) and the streamed 4096^2 f32 round trip (data workload, in-process).
# Then the BLAS thread governor against --blas-threads 1 (64 callers of 128^3, CPU lane), and
# the Python client against the C++ client on one server.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT [LAT_ONLY=1] bash gpu-bundle/malloc_ab.sh
# LAT_ONLY=1: the two latency rows of each set-up only (about 80 s).
set -u
. "$(dirname "$0")/gpu_run_env.sh" malloc
setup() {  # name -> sets S (server), BB (bench), and MALLOC_CONF
  case $1 in
    glibc) S=$h/bin/linalgd-glibc; BB=$h/bin/linalgd-bench-glibc; unset MALLOC_CONF ;;
    je8m) S=$h/bin/linalgd; BB=$h/bin/linalgd-bench; export MALLOC_CONF=oversize_threshold:8388608 ;;
    je0) S=$h/bin/linalgd; BB=$h/bin/linalgd-bench; unset MALLOC_CONF ;;
  esac
}
for round in 1 2; do for m in glibc je8m je0; do
  setup $m
  "$S" --listen 127.0.0.1:50081 --metrics-listen "" --log-level info > "$logs/srv_cpu_${m}_$round.log" 2>&1 & p1=$!
  "$S" --listen 127.0.0.1:50082 --metrics-listen "" --cpu-threshold 0 > "$logs/srv_gpu_${m}_$round.log" 2>&1 & p2=$!
  sleep 4
  run "lat_cpu_${m}_$round" 40 "$BB" --target 127.0.0.1:50081 --workloads latency --small-iterations 5000 --json "$json/lat_cpu_${m}_$round.json"
  run "lat_gpu128_${m}_$round" 40 "$BB" --target 127.0.0.1:50082 --workloads latency --small-n 128 --small-iterations 5000 --json "$json/lat_gpu128_${m}_$round.json"
  kill $p1 $p2; wait 2>/dev/null
  [[ -n "${LAT_ONLY:-}" ]] && continue
  run "batching_shm_${m}_$round" 40 "$BB" --workloads batching --batch-shm --batch-connections 16 --json "$json/batching_shm_${m}_$round.json"
  run "data_${m}_$round" 60 "$BB" --workloads data --data-n 4096 --data-connections 4 --data-iterations 3 --factor-n 64 --factor-solves 2 --json "$json/data_${m}_$round.json"
done; done
unset MALLOC_CONF
if [[ -z "${LAT_ONLY:-}" ]]; then
  # The governor against --blas-threads 1 on the same host and run (64 callers of 128^3 on the
  # CPU lane; the first call of run 18 measured the governor against threaded only).
  "$h/bin/linalgd" --listen 127.0.0.1:50151 --metrics-listen 127.0.0.1:9471 --cpu-threshold 100000 --busy-blas-threads 1 > "$logs/srv_governor.log" 2>&1 & p3=$!
  "$h/bin/linalgd" --listen 127.0.0.1:50153 --metrics-listen "" --cpu-threshold 100000 --blas-threads 1 > "$logs/srv_blas1.log" 2>&1 & p4=$!
  sleep 4
  for port in 50151 50153 50151 50153; do
    run "tp128x64_${port}_$SECONDS" 25 "$h/bin/linalgd-bench" --target 127.0.0.1:$port --workloads throughput --concurrency 64 --small-n 128 --throughput-seconds 4
  done
  python3 -c "import urllib.request as u; print(''.join(l for l in u.urlopen('http://127.0.0.1:9471/metrics').read().decode().splitlines(True) if l.startswith('linalgd_cpu_blas')))" > "$logs/governor_metrics.txt" 2>&1
  kill $p3 $p4; wait 2>/dev/null
  # The Python client against the C++ client, both now on this one server (python_transfer.py
  # passes it to linalgd-bench as --target; before, the C++ figure came from a server in
  # linalgd-bench's own process).
  "$h/bin/linalgd" --listen 127.0.0.1:50081 --metrics-listen "" > "$logs/srv_py.log" 2>&1 & p5=$!
  sleep 4
  for i in 1 2; do
    run "py_transfer_$i" 100 python3 bench/python_transfer.py --target 127.0.0.1:50081 --cpp-bench "$h/bin/linalgd-bench" --matmul-n 4096 --solve-n 8192 --transfer-mib 128 --repeat 3 --connections 4
  done
  kill $p5; wait 2>/dev/null
  for i in 1 2; do echo "== py_transfer_$i"; grep -A5 "| client | GB/s" "$logs/py_transfer_$i.log"; done >> "$s"
  echo "== the governor's count and changes after its two runs" >> "$s"; cat "$logs/governor_metrics.txt" >> "$s"
  for f in "$logs"/tp128x64_*.log; do echo "-- $(basename "$f" .log) (50151 governor, 50153 --blas-threads 1)"; grep callers "$f"; done >> "$s"
fi
shopt -s nullglob  # LAT_ONLY: no batching logs nor data files
grep -h "malloc:" "$logs"/srv_cpu_*_1.log >> "$s"
for f in "$logs"/lat_*.log "$logs"/batching_shm_*.log; do
  echo "-- $(basename "$f" .log)"; grep -E "p50.*echo|batched.*max-batch|echo ceiling" "$f"
done >> "$s"
for f in "$json"/data_*.json; do
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); f={m['name']:m['value'] for m in r['measurements'] if m['workload']=='data'}; print(sys.argv[2], 'streaming %.3f GB/s, inline %.3f, shm %.3f' % (f['streaming.rate'], f.get('inline.rate',0), f.get('shm.rate',0)))" "$f" "$(basename "$f" .json)"
done >> "$s"
tar cJf "$out/logs-malloc.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
