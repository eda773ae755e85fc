#!/usr/bin/env bash
# Where one caller's 128^3 f32 GPU-lane call spends its time beyond the echo (about 200 s):
#   - linalgd-gpu-bench --only small, twice: the backend's call in process, back to back, after a
#     200 us sleep (small_call_lone: the worker slept, as between one caller's calls) and with
#     the host's caches evicted before each (small_call_cold);
#   - bench/percall_cpu.sh latency --small-n 128 against a server sending every product to the
#     GPU, queued (--cpu-threshold 0 --gpu-inline-max-us 0) and inline (--gpu-inline-max-us 200): the CPU each shared
#     object and each hot function of linalgd costs a call, beside an out-of-process echo's.
# The table's latency rows give the wall-time split (ExecutionInfo's queue and run per call).
# Bundle: gpu_run_env.sh, this script, bench/percall_cpu.sh, liblinalgd_crc32c.so, linalgd,
# linalgd-bench, linalgd-gpu-bench and /usr/bin/perf.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/small_call_profile.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" small_call
export B=$h/bin PERF=$h/bin/perf
for i in 1 2; do run "gpu_bench_small_$i" 60 "$h/bin/linalgd-gpu-bench" --only small --json "$json/gpu_bench_small_$i.json"; done
P=$h/percall_cpu.sh
run percall_gpu128 90 env OUT="$logs/pc_gpu128" SERVER_ARGS="--cpu-threshold 0 --gpu-inline-max-us 0" bash "$P" latency --small-n 128
run percall_gpu128_inline 90 env OUT="$logs/pc_gpu128_inline" \
  SERVER_ARGS="--cpu-threshold 0 --gpu-inline-max-us 200" bash "$P" latency --small-n 128
{
  for i in 1 2; do echo "== gpu_bench_small_$i"; grep -E "^small_call" "$logs/gpu_bench_small_$i.log"; done
  for n in gpu128 gpu128_inline; do
    echo "== percall_$n"
    grep -vE "^\[20|wrote " "$logs/percall_$n.log"
    rm -f "$logs/pc_$n"/*.data
  done
} >> "$s"
tar cJf "$out/logs-small-call.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
