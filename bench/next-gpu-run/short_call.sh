#!/usr/bin/env bash
# A short GPU-host call (about 330 s): the per-call CPU profiles (percall.sh), the allocators'
# latency rows (malloc_ab.sh with LAT_ONLY=1) and the --gpu-wait A/B (wait_ab.sh, 3 rounds).
# Each part leaves a summary and one tarball under $OUT/PART (the device tool brings back only
# a few files: never leave logs loose). Bundle: malloc_ab.sh's (README), plus wait_ab.sh and
# this script.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/short_call.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
OUT=$OUT/percall timeout 120 bash "$here/percall.sh" > /dev/null 2>&1
OUT=$OUT/malloc LAT_ONLY=1 timeout 100 bash "$here/malloc_ab.sh" > /dev/null 2>&1
OUT=$OUT/wait timeout 170 bash "$here/wait_ab.sh" > /dev/null 2>&1
for p in percall malloc wait; do
  f=$OUT/$p/summary-$p.txt
  if [[ -d $OUT/$p/logs ]]; then  # cut short: pack what it left
    tar cJf "$OUT/$p/logs-$p-partial.tar.xz" -C "$OUT/$p" logs json 2>/dev/null && rm -rf "$OUT/$p/logs" "$OUT/$p/json"
  fi
  echo "===== $p"; grep -vE "^ +[0-9.]+ us  \[\.\]" "$f" 2>/dev/null | tail -60
done
