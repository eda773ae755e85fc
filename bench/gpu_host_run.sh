#!/usr/bin/env bash
# Runs every GPU test and benchmark on the GPU host, in one go, from an
# unpacked gpu-bundle (see scripts/gpu-bundle.sh). Writes at most 8 files to
# $OUT and prints a short summary last.
#   tar xJf .gpu-bundle.tar.xz && bash gpu-bundle/gpu_host_run.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
out=${OUT:-/tmp/linalgd-gpu-out}
mkdir -p "$out"
# Debian's OpenBLAS 0.3.21 needs this on the host's AVX-512 CPU (the rollback path).
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=SkylakeX
fi
summary=$out/summary.txt
: > "$summary"
run() {  # run NAME LIMIT_S COMMAND...: output in $out/NAME.log
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  echo "$name: rc=$? in $((SECONDS - start)) s" | tee -a "$summary"
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$summary" 2>&1
run gpu_tests ${T_GPU_TESTS:-120} "$here/bin/gpu_tests" --gtest_output=json:$out/gpu_tests.json
run gpu_server_tests ${T_SERVER_TESTS:-90} "$here/bin/gpu_server_tests"
run gpu_bench ${T_GPU_BENCH:-120} "$here/bin/linalgd-gpu-bench" --json "$out/gpu_bench.json" ${GPU_BENCH_ARGS:-}
bench() {  # bench NAME LIMIT_S ARGS...: linalgd-bench, JSON in $out/NAME.json, log appended to bench.log
  local name=$1 limit=$2; shift 2
  run "$name" "$limit" "$here/bin/linalgd-bench" --json "$out/$name.json" "$@"
  { echo "== $name"; tail -30 "$out/$name.log"; } >> "$out/bench.log"
  rm -f "$out/$name.log"
}
bench bench_main ${T_BENCH_MAIN:-200} ${BENCH_MAIN_ARGS:---workloads latency,throughput,large,e2e64,stress --large-n 4096 --e2e-matmul-sizes 1024,4096 --e2e-solve-sizes 4096,8192 --stress-callers 64 --stress-seconds 20 --stress-large-n 2048}
bench bench_extra ${T_BENCH_EXTRA:-150} ${BENCH_EXTRA_ARGS:---workloads batching,data --data-n 4096 --factor-n 8192 --factor-solves 1000}
if [[ -n ${RUN_SPARSE:-} ]]; then
  bench bench_sparse ${T_BENCH_SPARSE:-150} --workloads sparse --sparse-2d 1000 --sparse-3d 100 --sparse-graph 1000000 --sparse-methods cg --large-warmup 0
fi
# The stress run against a server whose GPU budget binds (a small fraction of
# the device), so that admission, waiting and CPU rollback are exercised.
port=50611
"$here/bin/linalgd" --listen 127.0.0.1:$port --metrics-listen "" \
    --gpu-memory-fraction ${STRESS_FRACTION:-0.01} --handles-per-device 8 > "$out/stress_server.log" 2>&1 &
spid=$!
sleep 3
bench bench_budget ${T_BENCH_BUDGET:-120} --target 127.0.0.1:$port ${BUDGET_ARGS:---workloads stress --stress-callers 64 --stress-seconds 30 --stress-large-n 2800}
kill -TERM $spid; wait $spid; echo "stress server exit: $?" >> "$summary"
{ echo "== stress server log"; grep -v " info " "$out/stress_server.log" | tail -20; } >> "$out/bench.log"
rm -f "$out/stress_server.log"
for f in gpu_tests gpu_server_tests; do
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$out/$f.log" | head -30 | sed "s/^/$f: /" >> "$summary"
done
grep -E "Failure|error|Expected|Which is" "$out/gpu_tests.log" | head -40 >> "$summary"
rm -f "$out/gpu_tests.log"
tail -25 "$out/gpu_bench.log" >> "$summary"
rm -f "$out/gpu_bench.log"
cat "$summary"
tail -60 "$out/bench.log"
