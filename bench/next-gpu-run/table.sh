#!/usr/bin/env bash
# The performance table in one GPU-host call (about 480 s on an H100 since the echo has a process
# of its own; give it `timeout 560`; stopped earlier by its timeout's SIGTERM, it still writes
# the summary of what ran and packs its logs):
# every row of the performance goals measured on one host in one run, with the JSON that
# bench/report.py turns into the report with plots (run it where matplotlib is: the JSON comes
# back in logs-table.tar.xz).
#   - small calls: the CPU lane's 64^3 p50 against the echo (three rounds), the GPU lane's
#     128^3 p50 queued (--gpu-inline-max-us 0) and inline (200, the default; three rounds,
#     interleaved), the echo served by a process of its own (linalgd-bench --serve-echo,
#     --echo-target) as linalgd is; then the CPU lane once against the bench's in-process echo;
#   - batching: 256 callers of 128^3 through shm against the echo ceiling, the default (GPU
#     jobs inline under 200 us on an idle lane; three rounds), queued (two) and with callers
#     whose tensors stay in shared
#     memory (--batch-shm-in-place, three), 16 and 64 callers, and the CPU lane
#     batched; each with the CPU a call cost the bench's process (callers and server);
#   - the f64 solve n = 8192 end to end through the C++ client over TCP against in-process
#     LAPACK (e2e64), the accuracy and decision tables, the data paths at 1024-4096;
#   - linalgd-gpu-bench (GEMM against direct cuBLASLt, solves and the estimate's cost), twice;
#   - --cpu-threshold auto's calibration, replicas, the BLAS thread governor against
#     --blas-threads 1 (64 callers of 128^3 on the CPU lane);
#   - the Python client against the C++ client on one server, f64 (the goal's dtype), twice.
# Bundle: gpu_run_env.sh, this script, liblinalgd_crc32c.so, linalgd, linalgd-bench,
# linalgd-gpu-bench; carry client/python/linalgd/_proto too.
# PARTS: the parts to run, of small data batching gpubench others (default all).
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT [PARTS="batching gpubench"] bash gpu-bundle/table.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" table
B=$h/bin/linalgd-bench
serve() {  # name port flags...: a server in the background, its pid in $pid
  local n=$1 port=$2; shift 2
  "$h/bin/linalgd" --listen "127.0.0.1:$port" --metrics-listen "" "$@" > "$logs/srv_$n.log" 2>&1 &
  pid=$!
}
small() {  # small calls (and the servers' calibration line), e2e64, accuracy, decisions, Python
  serve cpu 50081; p1=$pid
  serve gpu 50082 --cpu-threshold 0 --gpu-inline-max-us 0; p2=$pid
  serve gpu_inline 50083 --cpu-threshold 0 --gpu-inline-max-us 200; p3=$pid
  serve auto 50084 --log-level info; p4=$pid
  # The echo served by a process of its own, as linalgd is (--echo-target); one more round of
  # the CPU lane against the bench's in-process echo (what runs up to 51 measured).
  "$B" --serve-echo 127.0.0.1:50085 > "$logs/srv_echo.log" 2>&1 & pe=$!
  sleep 5
  E=(--echo-target 127.0.0.1:50085)
  for r in 1 2 3; do
    run "lat_cpu64_$r" 40 "$B" --target 127.0.0.1:50081 "${E[@]}" --workloads latency --small-iterations 5000 --json "$json/lat_cpu64_$r.json"
    run "lat_gpu128_$r" 40 "$B" --target 127.0.0.1:50082 "${E[@]}" --workloads latency --small-n 128 --small-iterations 5000 --json "$json/lat_gpu128_$r.json"
    run "lat_gpu128_inline_$r" 40 "$B" --target 127.0.0.1:50083 "${E[@]}" --workloads latency --small-n 128 --small-iterations 5000 --json "$json/lat_gpu128_inline_$r.json"
  done
  run lat_cpu64_inproc_echo 40 "$B" --target 127.0.0.1:50081 --workloads latency --small-iterations 5000 --json "$json/lat_cpu64_inproc_echo.json"
  kill $pe
  run e2e64 120 "$B" --target 127.0.0.1:50082 --workloads e2e64 --e2e-matmul-sizes 4096 --e2e-solve-sizes 4096 8192 --large-iterations 3 --json "$json/e2e64.json"
  run accuracy 60 python3 bench/accuracy.py --target 127.0.0.1:50082 --out "$logs/accuracy.md"
  run decisions 60 python3 bench/decision_table.py --target 127.0.0.1:50082 --big
  for i in 1 2; do
    run "py_transfer_$i" 100 python3 bench/python_transfer.py --target 127.0.0.1:50081 --cpp-bench "$B" \
      --matmul-n 4096 --solve-n 8192 --transfer-mib 128 --repeat 3 --connections 4
  done
  kill $p1 $p2 $p3 $p4; wait 2>/dev/null
}
data() {
  for n in 1024 2048 4096; do
    run "data_$n" 60 "$B" --workloads data --data-n "$n" --data-iterations 3 --factor-n 1024 --factor-solves 20 --json "$json/data_$n.json"
  done
}
batching() {  # 256 callers in rounds, then 16 and 64 callers (the plot's callers axis)
  for r in 1 2 3; do
    run "batching_shm_$r" 40 "$B" --workloads batching --batch-shm --batch-connections 16 --json "$json/batching_shm_$r.json"
    [[ $r == 3 ]] || run "batching_shm_queued_$r" 40 "$B" --workloads batching --batch-shm --batch-connections 16 --batch-gpu-inline-max-us 0 --json "$json/batching_shm_queued_$r.json"
    run "batching_shm_in_place_$r" 40 "$B" --workloads batching --batch-shm --batch-shm-in-place --batch-connections 16 --json "$json/batching_shm_in_place_$r.json"
  done
  for c in 16 64; do
    run "batching_shm_c$c" 40 "$B" --workloads batching --batch-shm --batch-connections 16 --batch-callers $c --json "$json/batching_shm_c$c.json"
    run "batching_cpu_c$c" 40 "$B" --workloads batching --batch-cpu-threshold 1000000 --batch-inline-max-us 0 --batch-callers $c --json "$json/batching_cpu_c$c.json"
  done
  run batching_cpu 40 "$B" --workloads batching --batch-cpu-threshold 1000000 --batch-inline-max-us 0 --json "$json/batching_cpu.json"
}
gpubench() {
  for i in 1 2; do run "gpu_bench_$i" 60 "$h/bin/linalgd-gpu-bench" --json "$json/gpu_bench_$i.json"; done
}
others() {  # replicas; the BLAS thread governor against --blas-threads 1
  run replicas 40 python3 bench/replica_throughput.py --server "$h/bin/linalgd" --replicas 1 3 --callers 64 --processes 8 --n 512 --seconds 4 -- --cpu-threshold 0
  serve governor 50151 --cpu-threshold 100000 --busy-blas-threads 1; p5=$pid
  serve blas1 50153 --cpu-threshold 100000 --blas-threads 1; p6=$pid
  sleep 4
  for port in 50151 50153 50151 50153; do
    run "tp128x64_${port}_$SECONDS" 25 "$B" --target 127.0.0.1:$port --workloads throughput --concurrency 64 --small-n 128 --throughput-seconds 4
  done
  kill $p5 $p6; wait 2>/dev/null
}
finish() {  # the summary, and the logs and JSON packed (also when stopped: on_stop)
  shopt -s nullglob  # a part left out (or not reached) leaves no logs
  {
    echo "== cpu-threshold auto"; grep -i "cpu-threshold auto" "$logs"/srv_auto.log | head -3
    for f in "$logs"/lat_*.log; do echo "-- $(basename "$f" .log)"; grep -E "p50.*echo" "$f"; done
    for f in "$logs"/batching_*.log; do echo "-- $(basename "$f" .log)"; grep -E "batched.*max-batch|echo ceiling|CPU per call|cores busy" "$f"; done
    echo "== e2e64"; grep -iE "solve|matmul" "$logs/e2e64.log" | head -12
    for i in 1 2; do echo "== py_transfer_$i"; grep -B2 -A8 "| client | GB/s" "$logs/py_transfer_$i.log"; tail -4 "$logs/py_transfer_$i.log"; done
    for i in 1 2; do echo "== gpu_bench_$i"; grep -E "^(gemm|solve|lu|chol|potrf|getrf)" "$logs/gpu_bench_$i.log" | head -60; done
    echo "== replicas"; tail -6 "$logs/replicas.log"
    for f in "$logs"/tp128x64_*.log; do echo "-- $(basename "$f" .log) (50151 governor, 50153 --blas-threads 1)"; grep callers "$f"; done
    echo "== accuracy"; cat "$logs/accuracy.md" 2>/dev/null
  } >> "$s" 2>/dev/null
  tar cJf "$out/logs-table.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
  cat "$s"
}
on_stop finish
for part in ${PARTS:-small data batching gpubench others}; do "$part"; done
finish
