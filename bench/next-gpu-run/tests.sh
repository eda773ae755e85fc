#!/usr/bin/env bash
# The next GPU-host run, second call: main's GPU suites, the Python suite on the host's current
# Python stack (3.12, grpcio 1.84, protobuf 7.x, numpy 2.x; the typed API's mypy test skips
# where mypy is missing), then integration with the GPU in service in what time is left.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/tests.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" tests
run gpu_tests 150 "$h/bin/gpu_tests"
run gpu_unit_tests 30 "$h/bin/gpu_unit_tests"
run gpu_server_tests 60 "$h/bin/gpu_server_tests"
LINALGD_SERVER="$h/bin/linalgd" run python_client 250 python3 -m pytest -q -p no:cacheprovider tests/python
left=$((560 - SECONDS)); [[ $left -gt 20 ]] && run integration_gpu $left "$h/bin/integration_tests"
for f in gpu_tests gpu_unit_tests gpu_server_tests integration_gpu; do
  [[ -f "$logs/$f.log" ]] && grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$logs/$f.log" | head -20 | sed "s/^/$f: /" >> "$s"
done
grep -hE "Failure|Expected|Which is|Value of" "$logs"/gpu_*.log "$logs"/integration_gpu.log 2>/dev/null | head -40 >> "$s"
tail -25 "$logs/python_client.log" >> "$s"
tar cJf "$out/logs-tests.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
