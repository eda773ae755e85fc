#!/usr/bin/env bash
# Usage: scripts/sanitize.sh asan|tsan [TARGET...]
# asan: clang-14 build in build-asan with -DLINALGD_SANITIZE=ON (ASan +
#   UBSan on our code, any UB fatal), CUDA off; builds everything (or only
#   TARGETs) and runs ctest -L 'unit|integration'. With LINALGD_FUZZ=ON the
#   same build also has the fuzz targets (FUZZ_BUILD_DIR=build-asan
#   scripts/fuzz.sh then runs them without another build).
# tsan: clang-14 build in build-tsan with -DLINALGD_SANITIZE=thread, CUDA
#   off; builds the scheduler, store and service unit tests (or TARGETs) and
#   runs them. Third-party libraries (gRPC, protobuf, abseil) are not
#   instrumented: tests/tsan_absl_annotations.cc makes absl's locks visible
#   and tests/tsan.supp silences reports inside the others.
# Exits non-zero on a build failure or a failing (sanitizer-aborted) test.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
shift || true
case "$mode" in
  asan) build=build-asan; sanitize=ON; default_targets=() ;;
  tsan) build=build-tsan; sanitize=thread; LINALGD_FUZZ=OFF
        default_targets=(tsan_canary_tests scheduler_tests store_unit_tests service_unit_tests) ;;
  *) echo "usage: $0 asan|tsan [TARGET...]" >&2; exit 2 ;;
esac
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(${default_targets[@]+"${default_targets[@]}"})

CC="${CC:-clang-14}" CXX="${CXX:-clang++-14}" cmake -S . -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLINALGD_WITH_CUDA=OFF -DLINALGD_BUILD_TESTS=ON \
  -DLINALGD_SANITIZE="$sanitize" -DLINALGD_FUZZ="${LINALGD_FUZZ:-OFF}" >/dev/null
target_args=()
[[ ${#targets[@]} -eq 0 ]] || target_args=(--target "${targets[@]}")
cmake --build "$build" -j "${JOBS:-2}" ${target_args[@]+"${target_args[@]}"}

symbolizer="$(command -v llvm-symbolizer-14 || true)"
export ASAN_SYMBOLIZER_PATH="$symbolizer"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:external_symbolizer_path=$symbolizer"
TSAN_OPTIONS+=":suppressions=$PWD/tests/tsan.supp"
# With TARGETs: only their tests, by their gtest suite names (ctest -R).
select=(-E '_NOT_BUILT$')
if [[ ${#targets[@]} -gt 0 ]]; then
  suites="$(for t in "${targets[@]}"; do "$build/bin/$t" --gtest_list_tests; done |
    sed -n 's/^\([A-Za-z0-9_/]*\)\.$/\1/p' | sort -u | paste -sd'|')"
  select+=(-R "^($suites)\.")
fi
labels='unit|integration'
[[ $mode == asan ]] || labels=unit
ctest --test-dir "$build" --output-on-failure -j 2 -L "$labels" "${select[@]}"
echo "sanitize $mode: passed (${SECONDS}s)"
