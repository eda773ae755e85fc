#!/usr/bin/env bash
# The --gpu-wait A/B (how the threads that wait for the GPU spend the wait): the settings in
# WAITS (default auto yield block) interleaved, ROUNDS rounds (default 3): 256 callers of
# 128^3 f32 through shared memory, batched against --max-batch=1 (in linalgd-bench's process,
# its --gpu-wait), and one caller's 128^3 p50 on the GPU lane against the echo (a server of
# that --gpu-wait). Run 20 (bench/results/2026-12-05-run20/) ran it twice on an H100 with a
# per-wait experiment (block-batches, its block-batches.patch) in place of yield.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT [ROUNDS=3] [WAITS="auto block"] bash gpu-bundle/wait_ab.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" wait
B="$h/bin/linalgd-bench"
waits="${WAITS:-auto yield block}"
for round in $(seq "${ROUNDS:-3}"); do for w in $waits; do
  "$h/bin/linalgd" --listen 127.0.0.1:50092 --metrics-listen "" --cpu-threshold 0 --gpu-wait $w > "$logs/srv_${w}_$round.log" 2>&1 & p=$!
  sleep 3
  run "lat_gpu128_${w}_$round" 40 "$B" --target 127.0.0.1:50092 --workloads latency --small-n 128 --small-iterations 3000 --json "$json/lat_gpu128_${w}_$round.json"
  kill $p; wait 2>/dev/null
  run "batching_shm_${w}_$round" 40 "$B" --gpu-wait $w --workloads batching --batch-shm --batch-connections 16 --json "$json/batching_shm_${w}_$round.json"
done; done
for round in $(seq "${ROUNDS:-3}"); do for w in $waits; do
  echo "-- $w, round $round: $(grep -ho 'gpu-wait [a-z-]*) in service' "$logs/srv_${w}_$round.log")"
  grep -hE "p50.*echo" "$logs/lat_gpu128_${w}_$round.log"
  grep -hE "batched.*max-batch|echo ceiling" "$logs/batching_shm_${w}_$round.log"
done; done >> "$s"
tar cJf "$out/logs-wait.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
