#!/usr/bin/env bash
# A client-only build (-DLINALGD_BUILD_SERVER=OFF: no CUDA, SuiteSparse or
# BLAS) installed into a fresh prefix; a project outside the tree built
# against that prefix with find_package(linalgd CONFIG) and with pkg-config;
# both run against a real server on a loopback port the kernel picks.
# Usage: check_install.sh SOURCE_DIR WORK_DIR LINALGD_BINARY
# WORK_DIR is fixed (under the build tree), so its builds are incremental.
set -euo pipefail
src="$(realpath "$1")"
work="$(realpath -m "$2")"
linalgd="$3"
build="$work/client-only"
prefix="$work/prefix"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# What this checks (the installed files, find_package, pkg-config, linking, one call) does
# not depend on optimization: at -O0 the client and the CLI build in a quarter less time
# (124 -> 95 s with no ccache).
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLINALGD_BUILD_SERVER=OFF \
  -DCMAKE_CXX_FLAGS_RELEASE="-O0 -DNDEBUG" -DLINALGD_BUILD_TESTS=OFF \
  -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
cmake --build "$build" -j "${JOBS:-2}" >/dev/null
if grep -qiE 'cholmod|umfpack|spqr|openblas|cudart|spdlog|prometheus' "$build/build.ninja"; then
  echo "check_install: the client-only build links a server dependency" >&2
  exit 1
fi
rm -rf "$prefix"
cmake --install "$build" >/dev/null
for f in bin/linalgd-cli include/linalgd/client.h lib/liblinalgd_client.a \
  lib/cmake/linalgd/linalgdConfig.cmake lib/pkgconfig/linalgd.pc; do
  [[ -e "$prefix/$f" ]] || { echo "check_install: $prefix/$f not installed" >&2; exit 1; }
done

# The consumer, with CMake.
cmake -S "$src/tests/packaging/consumer" -B "$work/consumer-cmake" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" >/dev/null
cmake --build "$work/consumer-cmake" >/dev/null
# The consumer, with pkg-config.
mkdir -p "$work/consumer-pc"
read -r -a flags <<<"$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs linalgd)"
compiler=(c++)
command -v ccache >/dev/null && compiler=(ccache c++)
"${compiler[@]}" -std=c++17 -O1 -o "$work/consumer-pc/consumer" \
  "$src/tests/packaging/consumer/main.cc" "${flags[@]}"

# Port 0: the kernel picks a free one at the server's bind; its log line names it.
LINALGD_DISABLE_GPU=1 "$linalgd" --listen 127.0.0.1:0 --metrics-listen "" \
  >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
port=""
for _ in $(seq 100); do
  [[ -n "$port" ]] || port=$(sed -n 's/.*listening on port \([0-9][0-9]*\) .*/\1/p' "$work/server.log")
  [[ -n "$port" ]] &&
    "$prefix/bin/linalgd-cli" --target "127.0.0.1:$port" --timeout 1s health >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
"$work/consumer-cmake/consumer" "127.0.0.1:$port"
"$work/consumer-pc/consumer" "127.0.0.1:$port"
echo "check_install: installed client found by find_package and pkg-config, both ran"
