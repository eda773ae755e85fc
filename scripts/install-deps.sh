#!/usr/bin/env bash
# Installs what linalgd needs to build and run, from the distribution's
# packages (Debian 12 or Ubuntu 24.04). With --test, also what the tests need.
# With --runtime, only the shared libraries a built server and linalgd-cli
# load (a container's runtime stage): the list of this distribution below, or
# with --runtime FILE the packages FILE names, one a line, as
# scripts/runtime-packages.sh writes them for a build on the same
# distribution. --list prints the packages instead of installing them.
# Skips apt entirely when everything is already installed.
set -euo pipefail

mode=""
runtime_file=""
list_only=false
while [[ $# -gt 0 ]]; do
  case "$1" in
    --test) mode=test ;;
    --runtime)
      mode=runtime
      if [[ $# -gt 1 && "$2" != --* ]]; then
        runtime_file="$2"
        shift
      fi
      ;;
    --list) list_only=true ;;
    *) echo "install-deps: unknown argument $1 (--test, --runtime [FILE], --list)" >&2; exit 2 ;;
  esac
  shift
done

# What `scripts/runtime-packages.sh build/bin/linalgd` prints on each
# distribution (ctest packaging_runtime_packages checks the list of the
# distribution it runs on against the build). The CUDA libraries come from
# NVIDIA's CUDA runtime image and are not listed.
runtime_packages() {
  local id version
  id=$(. /etc/os-release && echo "$ID")
  version=$(. /etc/os-release && echo "$VERSION_ID")
  case "$id-$version" in
    debian-12)
      echo libabsl20220623 libamd2 libc-ares2 libc6 libcamd2 libccolamd2 libcholmod3 \
        libcivetweb1 libcolamd2 libfmt9 libgcc-s1 libgfortran5 libgomp1 libgrpc++1.51 \
        libgrpc29 libjemalloc2 liblapacke libmetis5 libopenblas0-pthread \
        libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libprotobuf32 libquadmath0 libre2-9 \
        libspdlog1.10 libspqr2 \
        libssl3 libstdc++6 libsuitesparseconfig5 libtmglib3 libumfpack5 zlib1g
      ;;
    ubuntu-24.04)
      echo libabsl20220623t64 libamd3 libc-ares2 libc6 libcamd3 libccolamd3 libcholmod5 \
        libcivetweb1 libcolamd3 libfmt9 libgcc-s1 libgfortran5 libgomp1 libgrpc++1.51t64 \
        libgrpc29t64 libjemalloc2 liblapacke libmetis5 libopenblas0-pthread \
        libprometheus-cpp-core1.0 \
        libprometheus-cpp-pull1.0 libprotobuf32t64 libquadmath0 libre2-10 libspdlog1.12 \
        libspqr4 libssl3t64 libstdc++6 libsuitesparseconfig7 libtmglib3 libumfpack6 zlib1g
      ;;
    *)
      echo "install-deps: no runtime list for $id $version; give --runtime FILE" >&2
      return 1
      ;;
  esac
}

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev
  libabsl-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev prometheus-cpp-dev
  libopenblas-dev liblapacke-dev libsuitesparse-dev
  libjemalloc-dev  # the server's malloc (LINALGD_JEMALLOC)
  libgtest-dev libgmock-dev
  python3 python3-numpy python3-grpcio python3-protobuf python3-grpc-tools
  python3-setuptools python3-pip
  python3-crc32c  # CRC32C of the Python client's large transfers
)
if [[ "$mode" == runtime ]]; then
  if [[ -n "$runtime_file" ]]; then
    mapfile -t packages < <(grep -v '^[[:space:]]*$' "$runtime_file")
  else
    read -r -a packages <<<"$(runtime_packages)"
  fi
fi
if [[ "$mode" == test ]]; then
  packages+=(python3-pytest python3-scipy python3-torch prometheus curl xz-utils openssl)
  packages+=(python3-matplotlib)  # bench/report.py's plots (tests/python/test_report.py)
  packages+=(mypy)  # the Python client's type hints (tests/python/test_types.py)
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

if $list_only; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

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
