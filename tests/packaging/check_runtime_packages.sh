#!/usr/bin/env bash
# The runtime list of `scripts/install-deps.sh --runtime` for this
# distribution covers every package whose libraries the built server and
# linalgd-cli load (scripts/runtime-packages.sh: ldd through dpkg -S).
# Usage: check_runtime_packages.sh SOURCE_DIR BINARY...
set -euo pipefail
src="$1"
shift
needed=$(for b in "$@"; do "$src/scripts/runtime-packages.sh" "$b" 2>/dev/null; done | sort -u)
listed=$(bash "$src/scripts/install-deps.sh" --runtime --list | sort -u)
missing=$(comm -23 <(echo "$needed") <(echo "$listed"))
if [[ -n "$missing" ]]; then
  echo "check_runtime_packages: install-deps.sh --runtime lacks: $(echo $missing)" >&2
  exit 1
fi
echo "check_runtime_packages: all $(echo "$needed" | wc -l) packages that $* load are listed"
