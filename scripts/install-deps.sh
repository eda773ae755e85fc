#!/usr/bin/env bash
# Installs what linalgd needs to build and run, from the distribution's
# packages (Debian 12 or Ubuntu 24.04). With --test, also what the tests need.
# Skips apt entirely when everything is already installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev
  libabsl-dev libspdlog-dev libfmt-dev libcli11-dev prometheus-cpp-dev
  libopenblas-dev liblapacke-dev libsuitesparse-dev
  libgtest-dev libgmock-dev
  python3 python3-numpy python3-grpcio python3-protobuf python3-grpc-tools
  python3-setuptools python3-pip
  python3-crc32c  # CRC32C of the Python client's large transfers
)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(python3-pytest python3-scipy python3-torch prometheus curl xz-utils openssl)
  # scripts/fuzz.sh and scripts/sanitize.sh: clang with libFuzzer and the
  # sanitizer runtimes, llvm-symbolizer for their stack traces.
  packages+=(clang-14 libclang-rt-14-dev llvm-14)
  # scripts/format.sh --check (CI): Debian's clang-format (14).
  packages+=(clang-format)
  # A Node.js from elsewhere (e.g. NodeSource, which bundles npm) conflicts
  # with Debian's npm package: only install Debian's when there is no npm.
  command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
fi
extra="${LINALGD_EXTRA_PACKAGES:-}"
# shellcheck disable=SC2206
packages+=($extra)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
