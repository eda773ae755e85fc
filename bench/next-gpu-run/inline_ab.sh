#!/usr/bin/env bash
# GPU jobs inline on the gRPC thread (--gpu-inline-max-us 200, on an idle lane only) against
# queued (0), in one binary: gpu_server_tests (SUITES=0: none), then ROUNDS (3) rounds in turn of
#   - one caller's 128^3 f32 GPU-lane p50 against its echo (linalgd-bench latency), a server
#     each way;
#   - 16, 64 and 256 callers of 128^3 through shm over 16 connections, batched, against the
#     echo ceiling (linalgd-bench batching, --batch-gpu-inline-max-us 0 and 200).
# About 230 s.
# Bundle: gpu_run_env.sh, this script, liblinalgd_crc32c.so, linalgd, linalgd-bench,
# gpu_server_tests.
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/inline_ab.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" inline_ab
if [[ ${SUITES:-1} == 1 ]]; then
  run gpu_server_tests 90 "$h/bin/gpu_server_tests"
  grep -E "^\[  (PASSED|FAILED) |good calls were batched" "$logs/gpu_server_tests.log" | sed "s/^/gpu_server_tests: /" >> "$s"
  grep -hE "Failure|Expected|Which is|Value of" "$logs/gpu_server_tests.log" | head -20 >> "$s"
fi
B=$h/bin/linalgd-bench
"$h/bin/linalgd" --listen 127.0.0.1:50095 --metrics-listen "" --cpu-threshold 0 --gpu-inline-max-us 0 > "$logs/srv_queued.log" 2>&1 &
p1=$!
"$h/bin/linalgd" --listen 127.0.0.1:50096 --metrics-listen "" --cpu-threshold 0 --gpu-inline-max-us 200 > "$logs/srv_inline.log" 2>&1 &
p2=$!
sleep 5
for r in $(seq 1 "${ROUNDS:-3}"); do
  run "lat_queued_$r" 40 "$B" --target 127.0.0.1:50095 --workloads latency --small-n 128 --small-iterations 5000 --json "$json/lat_queued_$r.json"
  run "lat_inline_$r" 40 "$B" --target 127.0.0.1:50096 --workloads latency --small-n 128 --small-iterations 5000 --json "$json/lat_inline_$r.json"
  for c in 16 64 256; do
    for us in 0 200; do
      run "batch_c${c}_inline${us}_$r" 40 "$B" --workloads batching --batch-shm --batch-connections 16 --batch-callers "$c" \
        --batch-gpu-inline-max-us "$us" --json "$json/batch_c${c}_inline${us}_$r.json"
    done
  done
done
kill $p1 $p2; wait 2>/dev/null
python3 - "$json" >> "$s" <<'PY'
import glob, json, re, sys
rows = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/*.json")):
    name = f.split("/")[-1][:-5]
    m = {x["name"]: x["value"] for x in json.load(open(f))["measurements"]}
    if name.startswith("lat_"):
        print(f"{name:22} p50 {m['linalgd.p50']:7.1f} echo {m['echo.p50']:7.1f} "
              f"(+{m['linalgd.p50'] - m['echo.p50']:5.1f}) queue {m['linalgd.server_queue_mean']:6.1f} "
              f"run {m['linalgd.server_run_mean']:6.1f} us")
    else:
        b, e = m["batched.calls_per_second"], m["echo.calls_per_second"]
        print(f"{name:22} batched {b:9.0f} / echo {e:9.0f} calls/s ({100 * b / e:3.0f}%), "
              f"CPU {m['batched.cpu_us_per_call']:6.1f} / {m['echo.cpu_us_per_call']:6.1f} us a call, "
              f"mean batch {m['batched.mean_batch_size']:5.1f}")
PY
tar cJf "$out/logs-inline_ab.tar.xz" -C "$out" logs json && rm -rf "$logs" "$json"
cat "$s"
