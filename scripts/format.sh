#!/usr/bin/env bash
# Formats the tree's C++ and CUDA sources with clang-format (.clang-format: Google
# style, 100 columns). --check changes nothing and fails when a file is not formatted.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(-i)
if [[ "${1:-}" == "--check" ]]; then
  mode=(--dry-run --Werror)
fi
git ls-files -z -- '*.cc' '*.h' '*.cu' '*.cuh' | xargs -0 clang-format "${mode[@]}"
