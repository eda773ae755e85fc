#!/usr/bin/env bash
# Configures a CPU-only build with -DLINALGD_GPL=OFF in a fixed directory
# (incremental, and ccache makes a fresh one cheap), builds only the CPU
# backend's test of the refused sparse direct methods, runs it, and checks
# that the test binary links none of SuiteSparse's GPL-2+ libraries.
# Usage: gpl_off_build.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1"
build="$2"
# -O1: what this checks (the sparse solves without SuiteSparse's GPL parts, and what the
# binary links) does not need -O3's compile time.
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLINALGD_WITH_CUDA=OFF \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DLINALGD_GPL=OFF -DLINALGD_BUILD_TESTS=ON >/dev/null
cmake --build "$build" --target cpu_sparse_without_gpl_test -j "${JOBS:-2}" >/dev/null
"$build/bin/cpu_sparse_without_gpl_test"
needed=$(readelf -d "$build/bin/cpu_sparse_without_gpl_test" | grep NEEDED || true)
if grep -E 'libcholmod|libumfpack|libspqr' <<<"$needed"; then
  echo "gpl_off_build: the -DLINALGD_GPL=OFF binary links a GPL-2+ SuiteSparse library" >&2
  exit 1
fi
echo "gpl_off_build: no CHOLMOD, UMFPACK or SPQR linked"
