#!/usr/bin/env bash
set -u
tar xJf .gpu-bundle.tar.xz && cd gpu-bundle && . ./env.sh
export OPENBLAS_CORETYPE=SkylakeX
B=$PWD/bin
timeout 100 $B/gpu_server_tests > $OUT/gpu_server_tests.log 2>&1; echo "gpu_server_tests rc=$?"
timeout 150 $B/gpu_tests > $OUT/gpu_tests.log 2>&1; echo "gpu_tests rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) " $OUT/gpu_server_tests.log $OUT/gpu_tests.log | head
for r in 1 2; do for c in 4 8; do
timeout 100 $B/linalgd-bench --workloads data --data-n 4096 --data-iterations 10 --data-connections $c --factor-n 512 --factor-solves 5 --json $OUT/data_r${r}_c$c.json > /dev/null 2>&1; echo "r=$r c=$c rc=$?"
done; done
tail -c 60000 $OUT/gpu_tests.log > $OUT/gpu_tests.tail; rm $OUT/gpu_tests.log
