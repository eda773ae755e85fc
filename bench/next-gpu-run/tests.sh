#!/usr/bin/env bash
# The next GPU-host run, second call: main's GPU suites, the Python suite on the host's current
# Python stack (3.12, grpcio 1.84, protobuf 7.x, numpy 2.x; the typed API's mypy test skips
# where mypy is missing), then integration with the GPU in service in what time is left.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/tests.sh
# BUDGET: the seconds the whole script may take (560), integration getting what is left.
set -u
. "$(dirname "$0")/gpu_run_env.sh" tests
finish() {  # the integration verdicts, the Python tail, the logs packed (also on_stop)
  if [[ -f "$logs/integration_gpu.log" ]]; then
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$logs/integration_gpu.log" | head -20 |
      sed "s/^/integration_gpu: /" >> "$s"
    grep -hE "Failure|Expected|Which is|Value of" "$logs/integration_gpu.log" | head -40 >> "$s"
  fi
  [[ -f "$logs/python_client.log" ]] && tail -25 "$logs/python_client.log" >> "$s"
  tar cJf "$out/logs-tests.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
  cat "$s"
}
on_stop finish
gpu_suites
LINALGD_SERVER="$h/bin/linalgd" run python_client 250 python3 -m pytest -q -p no:cacheprovider tests/python
left=$((${BUDGET:-560} - SECONDS)); [[ $left -gt 20 ]] && run integration_gpu $left "$h/bin/integration_tests"
finish
