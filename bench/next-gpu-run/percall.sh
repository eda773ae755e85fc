#!/usr/bin/env bash
# The next GPU-host run: where the server's CPU goes per call on the 16-core host, beside an
# out-of-process echo's (bench/percall_cpu.sh, bundled flat beside this script): the CPU
# lane's 64^3 f32 (one caller), the GPU lane's 128^3 (one caller, and 256 callers batched
# over TCP). On the build machine linalgd costs 1.2x the echo's CPU per call; on the host the
# small-call p50 is 1.4-1.7x the echo's, the GPU lane's echo + 200-370 us and its batched
# calls/s 45-56% of the echo ceiling: these profiles show which objects the difference is in.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/percall.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" percall
export B=$h/bin PERF=$h/bin/perf
P=$h/percall_cpu.sh
run percall_cpu64 90 env OUT="$logs/pc_cpu64" bash "$P" latency
run percall_gpu128 90 env OUT="$logs/pc_gpu128" SERVER_ARGS="--cpu-threshold 0" bash "$P" latency --small-n 128
run percall_gpu128_tp 90 env OUT="$logs/pc_gpu128_tp" SERVER_ARGS="--cpu-threshold 0" bash "$P" throughput --small-n 128
run percall_cpu32_tp 90 env OUT="$logs/pc_cpu32_tp" SERVER_ARGS="--inline-max-us 0" bash "$P" throughput
for n in cpu64 gpu128 gpu128_tp cpu32_tp; do
  echo "== percall_$n"
  grep -vE "^\[20|wrote " "$logs/percall_$n.log"
  rm -f "$logs/pc_$n"/*.data
done >> "$s"
tar cJf "$out/logs-percall.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
