#!/usr/bin/env bash
# Installs the dependencies, builds, and starts the server in the foreground
# (on the CPU when there is no GPU). Arguments go to the server, e.g.
#   scripts/serve.sh --log-level debug   (127.0.0.1:50051; other hosts: --tls-cert/--tls-key)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DLINALGD_FAULT_INJECTION=OFF
# Debian's OpenBLAS 0.3.21 does not recognise recent AVX-512 CPUs and falls
# back to slow kernels: pick SkylakeX when the CPU has AVX-512 and nobody chose.
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=SkylakeX
fi
exec "${BUILD_DIR:-build}/bin/linalgd" "$@"
