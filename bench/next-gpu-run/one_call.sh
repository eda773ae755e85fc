#!/usr/bin/env bash
# One GPU-host call for a session with ~15 minutes of host time left: main's GPU suites, the
# --gpu-wait A/B (wait_ab.sh), the Python client against the C++ client on one server (once),
# and the Python suite on the host's current Python stack in the time left: the script ends by
# END seconds (default 520; the Python suite is left out below ~30 s).
# Bundle: linalgd, linalgd-cli (the Python suite runs it), linalgd-bench and the three GPU
# test binaries with gpu_run_env.sh, wait_ab.sh, this script and liblinalgd_crc32c.so; carry
# client/python/linalgd/_proto too.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT [END=400] bash gpu-bundle/one_call.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_run_env.sh" one
gpu_suites
"$h/bin/linalgd" --listen 127.0.0.1:50081 --metrics-listen "" > "$logs/srv_py.log" 2>&1 & p=$!
sleep 4
run py_transfer 100 python3 bench/python_transfer.py --target 127.0.0.1:50081 \
  --cpp-bench "$h/bin/linalgd-bench" --matmul-n 4096 --solve-n 8192 --transfer-mib 128 \
  --repeat 3 --connections 4
kill $p; wait 2>/dev/null
grep -B2 -A8 "| client | GB/s" "$logs/py_transfer.log" >> "$s"
tail -5 "$logs/py_transfer.log" >> "$s"
tar cJf "$out/logs-one.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
OUT=$out/wait bash "$here/wait_ab.sh" > /dev/null 2>&1
cat "$out/wait/summary-wait.txt" >> "$s"
left=$((${END:-520} - SECONDS))
if [[ $left -gt 30 ]]; then
  mkdir -p "$logs"
  LINALGD_SERVER="$h/bin/linalgd" run python_client $left python3 -m pytest -q -p no:cacheprovider tests/python
  tail -25 "$logs/python_client.log" >> "$s"
  tar cJf "$out/logs-python.tar.xz" -C "$out" logs && rm -rf "$logs"
fi
cat "$s"
