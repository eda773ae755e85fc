#!/usr/bin/env bash
set -u
tar xJf .gpu-bundle.tar.xz && cd gpu-bundle && . ./env.sh
export OPENBLAS_CORETYPE=SkylakeX
B=$PWD/bin
for v in "c1:" "c16:--batch-connections 16" "c64:--batch-connections 64" "shm:--batch-shm"; do
  n=${v%%:*}; a=${v#*:}
  timeout 120 $B/linalgd-bench --workloads batching $a --json $OUT/batching_$n.json > $OUT/batching_$n.log 2>&1; echo "$n rc=$?"
  grep -E "calls/s|us\)" $OUT/batching_$n.log
done
