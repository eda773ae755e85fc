#!/usr/bin/env bash
# Batching toward the echo ceiling with callers whose tensors live in shared memory: the
# batching workload at 256 callers of 128^3 f32 over 16 connections through shm, its tensors
# copied through each client's region per call (the table's batching_shm) and in place
# (--batch-shm-in-place: shared tensors filled once), alternating, three rounds; then
# batching_phases.sh on the in-place path and on the CPU lane (64 callers of 64^3 with
# --batch-cpu-threshold, so that the products stay on the CPU). About 200 s. Bundle:
# linalgd-bench and /usr/bin/perf with gpu_run_env.sh, batching_phases.sh, this script and
# liblinalgd_crc32c.so.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/in_place.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_run_env.sh" in_place
B=$h/bin/linalgd-bench
for r in 1 2 3; do
  run "batching_shm_$r" 40 "$B" --workloads batching --batch-shm --batch-connections 16 \
    --json "$json/batching_shm_$r.json"
  run "batching_shm_in_place_$r" 40 "$B" --workloads batching --batch-shm --batch-shm-in-place \
    --batch-connections 16 --json "$json/batching_shm_in_place_$r.json"
done
for f in "$logs"/batching_*.log; do
  echo "-- $(basename "$f" .log)"
  grep -E "batched.*max-batch|echo ceiling|CPU per call|cores busy" "$f"
done >> "$s"
phases phases_gpu128_in_place --batch-shm --batch-shm-in-place --batch-connections 16
phases phases_cpu64 --batch-shm --batch-connections 16 --batch-callers 64 --batch-n 64 \
  --batch-inline-max-us 0 --batch-cpu-threshold 1000000
tar cJf "$out/logs-in-place.tar.xz" -C "$out" logs json phases_gpu128_in_place phases_cpu64 &&
  rm -rf "$logs" "$json" "$out"/phases_*
cat "$s"
