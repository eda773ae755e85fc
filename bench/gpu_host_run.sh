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
run gpu_tests 150 "$here/bin/gpu_tests" --gtest_output=json:$out/gpu_tests.json
run gpu_server_tests 120 "$here/bin/gpu_server_tests"
run gpu_bench 150 "$here/bin/linalgd-gpu-bench" --json "$out/gpu_bench.json" ${GPU_BENCH_ARGS:-}
run bench 240 "$here/bin/linalgd-bench" --json "$out/bench.json" ${BENCH_ARGS:---workloads latency,throughput,large,e2e64 --large-n 4096 --e2e-matmul-sizes 1024,4096 --e2e-solve-sizes 4096,8192}
for f in gpu_tests gpu_server_tests; do
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$out/$f.log" | head -20 | sed "s/^/$f: /" >> "$summary"
done
tail -25 "$out/gpu_bench.log" >> "$summary"
tail -40 "$out/bench.log" >> "$summary"
cat "$summary"
