#!/usr/bin/env bash
# Prepared after run 17, not run yet (the session's GPU-host time ran out): the CPU lane
# on the 16-core host with the BLAS thread governor (--busy-blas-threads 1)
# and without it (the default, the behaviour of run 17's cpu_mid servers):
# 64 callers of 128^3 (run 17: 3,646 calls/s threaded, 10,337 with --blas-threads 1),
# then one caller's p50 at 128^3-512^3 with the governor (run 17 threaded: 574 / 946 /
# 5,073 us). Bundle build/bin/{linalgd,linalgd-bench} with -x this script; run as
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/governor.sh
h=$(cd "$(dirname "$0")" && pwd); . "$h/env.sh"
export OPENBLAS_CORETYPE=SkylakeX
B="$h/bin/linalgd-bench"; o=${OUT:-/tmp}
run() { local port=$1; shift; "$h/bin/linalgd" --listen 127.0.0.1:$port --metrics-listen "" --cpu-threshold 100000 "$@" > $o/srv_$port.log 2>&1 & }
run 50151 --busy-blas-threads 1; run 50152; sleep 4
for port in 50151 50152 50151 50152; do
  echo "== port $port ($( [[ $port == 50151 ]] && echo governor || echo "off (the default)"))"
  timeout 25 "$B" --target 127.0.0.1:$port --workloads throughput --concurrency 64 --small-n 128 --throughput-seconds 4 2>&1 | grep callers
done
for n in 128 256 512; do echo "== governor, one caller, $n"; timeout 20 "$B" --target 127.0.0.1:50151 --workloads latency --small-n $n --small-iterations 500 2>&1 | grep -E "p50.*echo"; done
grep -h "cpu:" $o/srv_*.log
