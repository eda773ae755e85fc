#!/usr/bin/env bash
# OpenBLAS's idle spin on the CPU lane (about 60 s): OpenBLAS's pool threads spin ~2^28 cycles
# after each threaded call, so 64 callers of 128^3 products kept 16 cores busy at 2.6-3.9 ms of
# CPU a call (table.sh's batching_cpu rows, runs 28-53). OPENBLAS_THREAD_TIMEOUT=4 makes them
# sleep at once (the same thread count, so the same bits), against the default and against the
# governor (--busy-blas-threads 1, whose products' bits depend on the load): 64 callers'
# throughput and one caller's p50 (128^3 f32 and 64^3 f32 on the CPU lane), ROUNDS rounds (2).
#   OUT=$OUT bash gpu-bundle/blas_spin.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" blas_spin
B=$h/bin/linalgd-bench
S=(--metrics-listen "" --cpu-threshold 100000)
"$h/bin/linalgd" --listen 127.0.0.1:50161 "${S[@]}" > "$logs/srv_default.log" 2>&1 & p1=$!
OPENBLAS_THREAD_TIMEOUT=4 "$h/bin/linalgd" --listen 127.0.0.1:50162 "${S[@]}" > "$logs/srv_timeout4.log" 2>&1 & p2=$!
"$h/bin/linalgd" --listen 127.0.0.1:50163 "${S[@]}" --busy-blas-threads 1 > "$logs/srv_governor.log" 2>&1 & p3=$!
"$B" --serve-echo 127.0.0.1:50164 > "$logs/srv_echo.log" 2>&1 & pe=$!
finish() {
  kill $p1 $p2 $p3 $pe 2>/dev/null; wait 2>/dev/null
  {
    echo "== 50161 default, 50162 OPENBLAS_THREAD_TIMEOUT=4, 50163 --busy-blas-threads 1"
    for f in "$logs"/tp128x64_*.log; do echo "-- $(basename "$f" .log)"; grep -E "callers|CPU" "$f" | head -4; done
    for f in "$logs"/lat*.log; do echo "-- $(basename "$f" .log)"; grep -E "p50" "$f" | head -2; done
  } >> "$s" 2>/dev/null
  cat "$s"
}
on_stop finish
sleep 4
for r in $(seq "${ROUNDS:-2}"); do
  for port in 50161 50162 50163; do
    run "tp128x64_${port}_$r" 25 "$B" --target 127.0.0.1:$port --workloads throughput --concurrency 64 --small-n 128 --throughput-seconds 4
    for n in 128 64; do
      run "lat${n}_${port}_$r" 25 "$B" --target 127.0.0.1:$port --echo-target 127.0.0.1:50164 --workloads latency --small-n $n --small-iterations 2000
    done
  done
done
finish
