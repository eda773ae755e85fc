# The shared start of a GPU-host run script (bench/results/*/run.sh), sourced as
#   . "$(dirname "$0")/gpu_run_env.sh" PART
# with both files bundled side by side (gpu-bundle -x). Sets h (the bundle's folder), out
# ($OUT), logs and json (folders under it), s (the summary file of PART, emptied) and
# run NAME LIMIT CMD... (CMD under `timeout LIMIT`, its output in $logs/NAME.log, its rc and
# seconds appended to $s) and on_stop FUNC (FUNC on SIGTERM, then exit 124); exports
# OPENBLAS_CORETYPE (SkylakeX where the CPU has AVX-512: Debian's OpenBLAS would otherwise pick
# a slower kernel on the host's CPU) and the bundled CRC32C library; writes the GPU, the Python stack and the server's version to $s.
# gpu_suites runs the three GPU suites; phases NAME ARGS... runs batching_phases.sh (bundled
# beside, with /usr/bin/perf) with linalgd-bench's ARGS.
h=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; logs=$out/logs; json=$out/json; mkdir -p "$logs" "$json"
s=$out/summary-${1:-run}.txt; : > "$s"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
export LINALGD_CRC32C_LIBRARY="$h/liblinalgd_crc32c.so"
# The command runs in the background and `run` waits for it, so that a signal to the script
# (its own `timeout`) is handled at once (on_stop), not after the command's limit.
run_pid=
run() {
  local n=$1 l=$2; shift 2; local t=$SECONDS
  timeout "$l" "$@" > "$logs/$n.log" 2>&1 & run_pid=$!
  wait $run_pid; local rc=$?; run_pid=
  echo "$n: rc=$rc in $((SECONDS-t)) s" | tee -a "$s"
}
# on_stop FUNC: on SIGTERM (the script's `timeout`), the running command is ended, FUNC runs
# (a summary, packing the logs) and the script exits 124: a run cut short still brings back
# what it measured.
on_stop() {
  # shellcheck disable=SC2064  # FUNC is expanded now, on purpose
  trap "echo \"stopped by a signal after \$SECONDS s\" >> \"\$s\"; [[ -n \"\$run_pid\" ]] && kill \$run_pid 2>/dev/null; $1; exit 124" TERM
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$s" 2>&1
python3 -c "import sys, google.protobuf as p, grpc, numpy; print('python', sys.version.split()[0], 'protobuf', p.__version__, 'grpcio', grpc.__version__, 'numpy', numpy.__version__)" >> "$s" 2>&1
"$h/bin/linalgd" --version >> "$s" 2>&1
# The three GPU suites under their limits; their verdict lines and failures appended to $s.
gpu_suites() {
  run gpu_tests 200 "$h/bin/gpu_tests"
  run gpu_unit_tests 30 "$h/bin/gpu_unit_tests"
  run gpu_server_tests 60 "$h/bin/gpu_server_tests"
  for f in gpu_tests gpu_unit_tests gpu_server_tests; do
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|good calls were batched" "$logs/$f.log" |
      head -20 | sed "s/^/$f: /" >> "$s"
  done
  grep -hE "Failure|Expected|Which is|Value of" "$logs"/gpu_*.log | head -40 >> "$s"
}
# batching_phases.sh's output in $logs/NAME.log and the summary, its perf data dropped.
phases() {
  local n=$1; shift
  B=$h/bin PERF=$h/bin/perf OUT=$out/$n OBJECTS=${OBJECTS:-linalgd-bench|libc.so|libcuda} \
    run "$n" 90 bash "$h/batching_phases.sh" "$@"
  rm -f "$out/$n"/*.data
  { echo "== $n"; grep -vE "^\[" "$logs/$n.log" | head -80; } >> "$s"
}
