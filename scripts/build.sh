#!/usr/bin/env bash
# Configures and builds linalgd into $BUILD_DIR (default build/): executables
# in $BUILD_DIR/bin. CUDA is used when a toolkit is found (override with
# LINALGD_WITH_CUDA=ON|OFF). Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
args=(-G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}")
if [[ -n "${LINALGD_WITH_CUDA:-}" ]]; then
  args+=(-DLINALGD_WITH_CUDA="$LINALGD_WITH_CUDA")
fi
if [[ -z "${CUDACXX:-}" && -x /usr/local/cuda/bin/nvcc ]]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake -S . -B "$build_dir" "${args[@]}" "$@" >/dev/null
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}"
