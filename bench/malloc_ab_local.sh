#!/usr/bin/env bash
# glibc's malloc against jemalloc (its default oversize arena, MALLOC_CONF=oversize_threshold:8388608,
# and the compiled-in oversize_threshold:0) on this machine, interleaved, two rounds: one
# caller's 64^3 p50 against the echo and 32 callers of 64^3 on the CPU lane (server and bench
# of each set-up), and the 2048^2 f32 round trip per data path (in linalgd-bench's process).
# The glibc binaries are copies with jemalloc's NEEDED entry removed:
#   for b in linalgd linalgd-bench; do cp build/bin/$b build/bin/$b-glibc &&
#     patchelf --remove-needed libjemalloc.so.2 build/bin/$b-glibc; done
#   bash bench/malloc_ab_local.sh
B=${B:-$(cd "$(dirname "$0")/.." && pwd)/build/bin}
for round in 1 2; do for m in glibc je8m je0; do
  case $m in glibc) S=$B/linalgd-glibc; BB=$B/linalgd-bench-glibc; unset MALLOC_CONF;; je8m) S=$B/linalgd; BB=$B/linalgd-bench; export MALLOC_CONF=oversize_threshold:8388608;; je0) S=$B/linalgd; BB=$B/linalgd-bench; unset MALLOC_CONF;; esac
  $S --listen 127.0.0.1:50081 --metrics-listen "" --cpu-threshold 1000000 > /tmp/ab_srv.log 2>&1 & p=$!; sleep 3
  lat=$($BB --target 127.0.0.1:50081 --workloads latency --small-iterations 3000 2>&1 | grep "p50.*echo" | awk '{print $5" / "$10" = "$11}')
  tp=$($BB --target 127.0.0.1:50081 --workloads throughput --concurrency 32 --small-n 64 --throughput-seconds 4 2>&1 | grep callers | awk '{print $5" vs echo "$8}')
  kill $p; wait $p 2>/dev/null
  $BB --workloads data --data-n 2048 --data-connections 4 --data-iterations 5 --factor-n 64 --factor-solves 2 --json /tmp/ab_d.json >/dev/null 2>&1
  d=$(/usr/bin/python3 -c "import json; r=json.load(open('/tmp/ab_d.json')); f={m['name']:m['value'] for m in r['measurements'] if m['workload']=='data'}; print('streaming %.3f inline %.3f shm %.3f GB/s' % (f['streaming.rate'], f['inline.rate'], f['shm.rate']))")
  echo "$round $m | 64^3 p50 $lat | 32 callers 64^3 $tp calls/s | 2048^2 $d"
done; done
