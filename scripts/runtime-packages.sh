#!/usr/bin/env bash
# Prints the distribution packages whose shared libraries a built binary loads
# (ldd, each library mapped to its package with dpkg -S), one per line,
# sorted. Libraries no package owns (the CUDA libraries under /usr/local/cuda,
# which NVIDIA's CUDA runtime image provides) are named on stderr.
# Usage: scripts/runtime-packages.sh [BINARY]   (default build/bin/linalgd)
set -euo pipefail
binary="${1:-build/bin/linalgd}"
[[ -x "$binary" ]] || { echo "runtime-packages: no executable $binary" >&2; exit 2; }
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u |
  while read -r lib; do
    owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true)
    if [[ -z "$owner" ]]; then
      echo "runtime-packages: $lib is in no package" >&2
      continue
    fi
    # "libfoo1:amd64: /usr/lib/..." -> libfoo1
    echo "${owner%%:*}"
  done | sort -u
