#!/usr/bin/env bash
# The last GPU-host call of run 15: the shutdown-drain integration test (now pinned to 2 CPU
# workers), the Python suite on the host's Python 3.12 / protobuf 7 after the routing fix, the
# Python client's transfer rate against the C++ client's (with the client-settings sweep), and
# 3 replicas against 1 on the one GPU with the same total budget.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/final.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; logs=$out/flogs; mkdir -p "$logs"
s=$out/summary-final.txt; : > "$s"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
export LINALGD_CRC32C_LIBRARY="$h/liblinalgd_crc32c.so"
run() { local n=$1 l=$2; shift 2; local t=$SECONDS; timeout "$l" "$@" > "$logs/$n.log" 2>&1; echo "$n: rc=$? in $((SECONDS-t)) s" >> "$s"; }
run integration_shutdown 60 "$h/bin/integration_tests" --gtest_filter='IntegrationTest.Shutdown*'
LINALGD_SERVER="$h/bin/linalgd" run python_client 290 python3 -m pytest -q -p no:cacheprovider -rfE tests/python
"$h/bin/linalgd" --listen 127.0.0.1:50081 --metrics-listen "" > "$logs/srv_cpu.log" 2>&1 & p1=$!
sleep 3
run py_transfer 140 python3 bench/python_transfer.py --target 127.0.0.1:50081 --cpp-bench "$h/bin/linalgd-bench" --matmul-n 4096 --solve-n 8192 --transfer-mib 128 --repeat 3 --sweep 8x2b,8x2r,8x2br,16x2,4x2
kill $p1; wait 2>/dev/null
run replicas 90 python3 bench/replica_throughput.py --server "$h/bin/linalgd" --replicas 1 3 --callers 64 --processes 8 --n 512 --seconds 4 -- --cpu-threshold 0
grep -E "PASSED|FAILED" "$logs/integration_shutdown.log" | head -3 >> "$s"
tail -15 "$logs/python_client.log" >> "$s"
echo "== py_transfer" >> "$s"; tail -45 "$logs/py_transfer.log" >> "$s"
echo "== replicas" >> "$s"; tail -8 "$logs/replicas.log" >> "$s"
tar cJf "$out/flogs.tar.xz" -C "$out" flogs && rm -rf "$logs"
cat "$s"
