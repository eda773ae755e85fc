#!/usr/bin/env bash
# Installs the dependencies, checks the formatting (scripts/format.sh), builds,
# and runs every test: unit, integration, python, deploy checks and the soak
# (ctest label soak, about 3 minutes); GPU tests skip without a device. Then,
# with clang and CUDA off:
# - an ASan + UBSan build (it is also the build without CUDA, which must
#   compile and pass) running the unit and integration tests again, with
#   libFuzzer instrumentation so that
# - every fuzz target runs its known crashes and then LINALGD_FUZZ_SECONDS
#   (30) seconds of fuzzing;
# - a TSan build of the scheduler, store and service unit tests (Debian's
#   abseil is not instrumented: tests/tsan_absl_annotations.cc tells TSan
#   about its locks).
# LINALGD_QUICK=1 skips the three clang stages.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/format.sh --check
# --inject-faults (the soak and shutdown tests) exists only in builds that ask for it.
build_args=(-DLINALGD_FAULT_INJECTION=ON)
# Without a GPU no test runs a kernel: the kernels are compiled for the two sides of their
# one architecture branch (sm_75, sm_90) only, under a third of the seven architectures' time
# (LINALGD_CUDA_ARCHITECTURES overrides; with a GPU the default list is built).
cuda_archs="${LINALGD_CUDA_ARCHITECTURES:-}"
if [[ -z $cuda_archs ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  cuda_archs="75-real;90-real"
fi
[[ -z $cuda_archs ]] || build_args+=(-DCMAKE_CUDA_ARCHITECTURES="$cuda_archs")
scripts/build.sh "${build_args[@]}"
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j 2 "$@"
if [[ -n "${LINALGD_QUICK:-}" ]]; then
  exit 0
fi
echo "== ASan + UBSan build without CUDA: unit and integration tests =="
LINALGD_FUZZ=ON scripts/sanitize.sh asan
echo "== fuzzing =="
FUZZ_BUILD_DIR=build-asan scripts/fuzz.sh --seconds "${LINALGD_FUZZ_SECONDS:-30}"
echo "== TSan: scheduler, store and service unit tests =="
scripts/sanitize.sh tsan
