#!/usr/bin/env bash
# One GPU-host call (about 470 s): where the batched paths' CPU goes per call (batching_phases.sh
# on the GPU lane's 256 callers of 128^3 through shared memory, then on the CPU lane's 64 callers
# of 64^3), then the whole performance table (table.sh, with the JSON for bench/report.py).
# Bundle: linalgd, linalgd-bench, linalgd-gpu-bench and /usr/bin/perf with gpu_run_env.sh,
# batching_phases.sh, table.sh, this script and liblinalgd_crc32c.so; carry
# client/python/linalgd/_proto too.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/phases_table.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_run_env.sh" phases
phases phases_gpu128 --batch-shm --batch-connections 16
# --batch-cpu-threshold: the CPU lane for real (its default, 0, sends every product to the GPU
# where there is one: run 24's and 26's "CPU lane" phase ran its 64^3 products on gpu:0).
phases phases_cpu64 --batch-shm --batch-connections 16 --batch-callers 64 --batch-n 64 \
  --batch-inline-max-us 0 --batch-cpu-threshold 1000000
tar cJf "$out/logs-phases.tar.xz" -C "$out" logs phases_gpu128 phases_cpu64 && rm -rf "$logs"/phases_*
OUT=$out timeout 440 bash "$h/table.sh"
