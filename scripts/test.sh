#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test: unit, integration,
# python and deploy checks; GPU tests skip without a device. Then the same
# suite against a build without CUDA (-DLINALGD_WITH_CUDA=OFF), which must
# compile and pass too (ccache makes the second build cheap).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j 2 "$@"
if [[ -z "${LINALGD_SKIP_NOCUDA:-}" ]] && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "== build without CUDA =="
  BUILD_DIR=build-nocuda LINALGD_WITH_CUDA=OFF scripts/build.sh
  ctest --test-dir build-nocuda --output-on-failure -j 2 -L 'unit|integration' "$@"
fi
