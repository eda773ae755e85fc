#!/usr/bin/env bash
# Usage: scripts/fuzz.sh [--seconds N]   (N: per target, default 30)
# Builds the libFuzzer targets of tests/fuzz in build-fuzz (clang-14, ASan +
# UBSan, CUDA off), runs each known crash in tests/fuzz/regressions/
# (<target>-<what>) through its target, then fuzzes every target for N
# seconds from a temporary copy of tests/fuzz/corpus/<target> (the committed
# corpus never grows), JOBS targets side by side (default: one a core).
# Crash inputs land in build-fuzz/artifacts/. Prints the executions per
# target; exits 1 when any regression or fuzz run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=30
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    *) echo "usage: $0 [--seconds N]" >&2; exit 2 ;;
  esac
done
targets=(fuzz_csr fuzz_requests fuzz_upload fuzz_client_readers)
build="${FUZZ_BUILD_DIR:-build-fuzz}"
if [[ ! -f $build/CMakeCache.txt ]]; then
  CC="${CC:-clang-14}" CXX="${CXX:-clang++-14}" cmake -S . -B "$build" -G Ninja \
    -DLINALGD_WITH_CUDA=OFF -DLINALGD_FUZZ=ON -DLINALGD_BUILD_TESTS=ON >/dev/null
fi
cmake --build "$build" -j "${JOBS:-2}" --target "${targets[@]}"

export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer-14 || true)}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Memory caps: the server targets bound tensors to 1 << 20 elements and the
# inputs are a few KiB, so one allocation over 256 MiB (or 2 GiB resident)
# is a finding: memory an attacker can make the code take.
opts=(-rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10)
artifacts="$build/artifacts"
mkdir -p "$artifacts"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The gist of a libFuzzer log: the error, our frames, the crash input.
report() {
  grep -E "ERROR:|SUMMARY:|runtime error|FUZZ_REQUIRE|Test unit written|#[0-9]+ 0x.* in .*/(server|client|tests)/" \
    "$1" | grep -v "LLVMFuzzer\|fuzzer::" | sed 's/^ *//' | cut -c1-200 | head -12 || true
}
# One target: its known crashes, then the fuzzing. Writes its log lines to
# $work/$t.out, its summary line to $work/$t.summary and what failed to
# $work/$t.failed (output of targets run side by side stays apart).
run_target() {
  local t=$1 bin="$build/bin/$1" f rc execs
  : >"$work/$t.failed"
  for f in tests/fuzz/regressions/"$t"-*; do
    [[ -e $f ]] || continue
    echo "== $t: regression $f"
    if ! "$bin" "${opts[@]}" -artifact_prefix="$artifacts/$t-regression-" "$f" \
        >"$work/$t.reg.log" 2>&1; then
      report "$work/$t.reg.log"
      echo "$t:$(basename "$f")" >>"$work/$t.failed"
    fi
  done
  echo "== $t: fuzzing ${seconds}s"
  mkdir -p "$work/$t"
  cp tests/fuzz/corpus/"$t"/* "$work/$t"/
  rc=0
  "$bin" "${opts[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$t-" "$work/$t" >"$work/$t.log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)"
  if [[ $rc -ne 0 ]]; then
    report "$work/$t.log"
    echo "$t:fuzz" >>"$work/$t.failed"
  fi
  printf '%-20s %10s executions  rc=%d\n' "$t" "${execs:-?}" "$rc" >"$work/$t.summary"
}
# JOBS targets at a time (default: the cores), each on its own core.
jobs="${JOBS:-$(nproc)}"
running=0
for t in "${targets[@]}"; do
  if [[ $running -ge $jobs ]]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$t" >"$work/$t.out" 2>&1 &
  running=$((running + 1))
done
wait || true
failed=()
for t in "${targets[@]}"; do
  cat "$work/$t.out"
  if [[ -f $work/$t.summary ]]; then
    mapfile -t -O "${#failed[@]}" failed <"$work/$t.failed"
  else
    failed+=("$t:died")  # run_target itself stopped (set -e)
  fi
done
echo "== summary (${seconds}s per target)"
cat "$work"/*.summary
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FAILED after ${SECONDS}s: ${failed[*]} (inputs in $artifacts/)"
  exit 1
fi
echo "fuzz: no crashes (${SECONDS}s)"
