#!/usr/bin/env bash
# Builds with CUDA (Release, Hopper and a generic target) into build-gpu/ and
# packs the GPU tests, the benchmarks and the server for the GPU host into
# .gpu-bundle.tar.xz (git-ignored), with bench/gpu_host_run.sh beside them.
# On the host: tar xJf .gpu-bundle.tar.xz && bash gpu-bundle/gpu_host_run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build-gpu LINALGD_WITH_CUDA=ON scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES="90;75"
bin=build-gpu/bin
exes=()
for e in linalgd linalgd-cli linalgd-bench linalgd-gpu-bench gpu_tests gpu_server_tests; do
  [[ -x $bin/$e ]] && exes+=("$bin/$e")
done
bundler=${GPU_BUNDLER:-../shared/device/gpu-bundle}
"$bundler" -o .gpu-bundle.tar.xz -x bench/gpu_host_run.sh "${exes[@]}"
