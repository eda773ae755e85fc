#!/usr/bin/env bash
# Every executable's --version names it, the project version and the git
# commit of the source tree; cmake/WriteVersion.cmake says "unknown" outside
# a git checkout (or the commit it is given); linalgd-cli --help lists the
# exit codes.
# Usage: check_version.sh SOURCE_DIR VERSION EXECUTABLE...
set -euo pipefail
src="$1"
version="$2"
shift 2
commit=$(git -C "$src" rev-parse --short=12 HEAD)
for exe in "$@"; do
  name=$(basename "$exe")
  out=$("$exe" --version)
  if [[ ! "$out" =~ ^$name\ $version\ \(commit\ $commit(-dirty)?\)$ ]]; then
    echo "check_version: '$exe --version' printed '$out', expected '$name $version (commit $commit)'" >&2
    exit 1
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake -DSOURCE_DIR="$tmp" -DOUTPUT="$tmp/v.h" -DVERSION="$version" -P "$src/cmake/WriteVersion.cmake"
grep -q 'LINALGD_GIT_COMMIT "unknown"' "$tmp/v.h" || { cat "$tmp/v.h" >&2; exit 1; }
cmake -DSOURCE_DIR="$tmp" -DOUTPUT="$tmp/v.h" -DVERSION="$version" -DGIT_COMMIT=abc123 \
  -P "$src/cmake/WriteVersion.cmake"
grep -q 'LINALGD_GIT_COMMIT "abc123"' "$tmp/v.h" || { cat "$tmp/v.h" >&2; exit 1; }

for exe in "$@"; do
  if [[ "$(basename "$exe")" == linalgd-cli ]]; then
    "$exe" --help | grep -q "Exit codes: 0 success; 1 the server answered with an error status" ||
      { echo "check_version: linalgd-cli --help lists no exit codes" >&2; exit 1; }
  fi
done
echo "check_version: $# executables report $version (commit $commit)"
