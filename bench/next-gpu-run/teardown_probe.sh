#!/usr/bin/env bash
# Where the GPU server tests' ~10 s after "shut down" goes (run 52: DeviceFailureIsRerunOnCpu...
# and ABroadcastBatch... took ~10 s each, against 143 ms in run 51): runs those two tests (and
# one that took no such time, for comparison) with the server's log on, and samples the test
# process's threads (name, state, kernel wait channel) every 0.5 s, and a stack of every thread
# (eu-stack, bundled) 3 s after the "shut down" line.
#   OUT=$OUT bash gpu-bundle/teardown_probe.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" teardown
for t in DeviceFailureIsRerunOnCpuWithReason ABroadcastBatchWithTheWorkOfALargeProductRunsOnTheGpu ServerInfoDescribesTheDevice; do
  log=$logs/probe_$t.log
  "$h/bin/gpu_server_tests" --gtest_filter="*.$t" > "$log" 2>&1 &
  p=$!; t0=$(date +%s%N); bt=0
  while kill -0 $p 2>/dev/null; do
    now=$(date +%s%N)
    { echo "@ $(( (now - t0) / 1000000 )) ms"
      for d in /proc/$p/task/*; do echo "  $(cat $d/comm 2>/dev/null) $(awk '{print $3}' $d/stat 2>/dev/null) $(cat $d/wchan 2>/dev/null)"; done | sort | uniq -c
    } >> "$logs/threads_$t.log"
    if [[ $bt == 0 ]] && grep -q "shut down" "$log"; then bt=$now; fi
    if [[ $bt != 0 && $bt != done ]] && (( now - bt > 3000000000 )); then
      bt=done
      timeout 30 "$h/bin/eu-stack" -p $p > "$logs/stack_$t.log" 2>&1
    fi
    sleep 0.5
  done
  wait $p; echo "$t: rc=$? in $(( ($(date +%s%N) - t0) / 1000000 )) ms" >> "$s"
  { grep -E "^\[ +(OK|FAILED) |shut down|shutting" "$log"; tail -8 "$logs/threads_$t.log"
    grep -vE "^#[0-9]+ +0x[0-9a-f]+$" "$logs/stack_$t.log" 2>/dev/null | head -250; } >> "$s"
done
cat "$s"
