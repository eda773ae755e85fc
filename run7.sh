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
timeout 100 $B/linalgd-bench --workloads data --data-n 4096 --data-iterations 10 --factor-n 512 --factor-solves 5 --json $OUT/data_q.json > $OUT/data_q.log 2>&1; echo "data rc=$?"
grep -E "round trip" $OUT/data_q.log | head -4
