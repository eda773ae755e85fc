#!/usr/bin/env bash
# The next GPU-host run: --gpu-wait (how the threads that wait for the GPU spend the wait)
# auto (CUDA's choice on this host: a spin), yield and block, one after another: 256 callers
# of 128^3 f32 through shared memory, batched (in linalgd-bench's process, its --gpu-wait),
# and one caller's 128^3 p50 on the GPU lane against the echo (a server of that --gpu-wait).
# Run 17's profile of the batched path had four GPU workers as its busiest threads, mostly in
# libcuda: a spinning wait takes a core from the callers and the gRPC threads.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/wait_ab.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" wait
B="$h/bin/linalgd-bench"
for w in auto yield block; do
  "$h/bin/linalgd" --listen 127.0.0.1:50092 --metrics-listen "" --cpu-threshold 0 --gpu-wait $w > "$logs/srv_$w.log" 2>&1 & p=$!
  sleep 3
  run "lat_gpu128_$w" 40 "$B" --target 127.0.0.1:50092 --workloads latency --small-n 128 --small-iterations 3000 --json "$json/lat_gpu128_$w.json"
  kill $p; wait 2>/dev/null
  run "batching_shm_$w" 40 "$B" --gpu-wait $w --workloads batching --batch-shm --batch-connections 16 --json "$json/batching_shm_$w.json"
done
for w in auto yield block; do
  echo "-- $w: $(grep -ho 'gpu-wait [a-z]*) in service' "$logs/srv_$w.log")"
  grep -hE "p50.*echo" "$logs/lat_gpu128_$w.log"
  grep -hE "batched.*max-batch|echo ceiling" "$logs/batching_shm_$w.log"
done >> "$s"
tar cJf "$out/logs-wait.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
