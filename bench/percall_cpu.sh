#!/usr/bin/env bash
# Where a server's CPU goes per call, beside the raw gRPC echo's: starts `linalgd` (with
# $SERVER_ARGS) and an echo server (`linalgd-bench --serve-echo`), each in its own process,
# samples both with `perf record` while `linalgd-bench --target ... --echo-target ...` runs
# one workload against them, and prints, per call, the microseconds of CPU each shared object
# (and, for linalgd, each of its hottest functions) cost each server.
#
#   bash bench/percall_cpu.sh latency            # one caller, 64^3 f32 (--small-n)
#   bash bench/percall_cpu.sh throughput         # --concurrency callers (default 256), 32^3
#   SERVER_ARGS="--inline-max-us 0" bash bench/percall_cpu.sh throughput --small-n 32
#
# Extra arguments go to linalgd-bench. B: the folder of linalgd and linalgd-bench
# (build/bin); PERF: perf (perf on PATH); HZ: samples a second (2999); OUT: where the
# perf data and the bench's JSON go (a temporary folder). Calls are counted from the bench's
# JSON: latency, its timed and warm-up calls of each; throughput, the measured calls of each
# (the few warm-up calls of each caller are not counted: their CPU is charged to the rest).
# perf's CPU-clock samples are per process, all threads: gRPC's, the workers', OpenBLAS's.
set -u
workload=${1:-latency}
shift || true
repo=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-$repo/build/bin}
PERF=${PERF:-perf}
HZ=${HZ:-2999}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
case "$workload" in
  latency) defaults=(--small-iterations 4000) ;;
  throughput) defaults=(--concurrency 256 --small-n 32 --throughput-seconds 4) ;;
  *) echo "workload: latency or throughput, not $workload" >&2; exit 2 ;;
esac
extra=()  # each default flag the arguments do not give (linalgd-bench takes a flag once)
for ((i = 0; i < ${#defaults[@]}; i += 2)); do
  [[ " $* " == *" ${defaults[i]} "* ]] || extra+=("${defaults[i]}" "${defaults[i + 1]}")
done
lport=${LPORT:-50182}
eport=${EPORT:-50181}
# shellcheck disable=SC2086  # SERVER_ARGS is a list of flags
"$B/linalgd" --listen "127.0.0.1:$lport" --metrics-listen "" ${SERVER_ARGS:-} > "$OUT/linalgd.log" 2>&1 &
lp=$!
"$B/linalgd-bench" --serve-echo "127.0.0.1:$eport" > "$OUT/echo.log" 2>&1 &
ep=$!
trap 'kill $lp $ep 2>/dev/null' EXIT
sleep 1.5
"$PERF" record -F "$HZ" -p "$lp" -o "$OUT/linalgd.data" > /dev/null 2>&1 &
r1=$!
"$PERF" record -F "$HZ" -p "$ep" -o "$OUT/echo.data" > /dev/null 2>&1 &
r2=$!
sleep 0.5
"$B/linalgd-bench" --target "127.0.0.1:$lport" --echo-target "127.0.0.1:$eport" \
  --workloads "$workload" "${extra[@]}" "$@" --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1
rc=$?
kill -INT $r1 $r2
wait $r1 $r2 2>/dev/null
grep -A4 "^linalgd " "$OUT/bench.log"
if [[ $rc -ne 0 ]]; then echo "linalgd-bench failed (rc $rc): $OUT/bench.log" >&2; exit 1; fi
read -r lcalls ecalls < <(/usr/bin/env python3 - "$OUT/bench.json" "$workload" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = {x["name"]: x["value"] for x in d["measurements"]}
if sys.argv[2] == "latency":
    c = d["config"]
    n = int(float(c.get("small_iterations", 2000))) + int(float(c.get("small_warmup", 200)))
    print(n, n)
else:
    print(int(m["linalgd.latency.count"]), int(m["echo.latency.count"]))
PY
)
# perf report -n: "overhead samples object [symbol]"; microseconds per call = samples / HZ / calls.
per_call() {  # DATA CALLS SORT [perf report args]
  local data=$1 calls=$2 sort=$3
  shift 3
  "$PERF" report -i "$data" --no-children --sort "$sort" -g none -n --stdio "$@" 2>/dev/null |
    grep -E "^ +[0-9.]+%" | head -"${TOP:-12}" |
    awk -v n="$calls" -v hz="$HZ" '{s=$2; $1=""; $2=""; printf "%8.2f us  %s\n", s/hz/n*1e6, substr($0, 3, 140)}'
}
total() {  # DATA CALLS
  "$PERF" report -i "$1" --no-children --sort dso -g none -n --stdio 2>/dev/null |
    grep -E "^ +[0-9.]+%" | awk -v n="$2" -v hz="$HZ" '{s+=$2} END {printf "%.1f", s/hz/n*1e6}'
}
echo "== linalgd ($lcalls calls): $(total "$OUT/linalgd.data" "$lcalls") us of CPU per call, by object"
per_call "$OUT/linalgd.data" "$lcalls" dso
echo "== echo ($ecalls calls): $(total "$OUT/echo.data" "$ecalls") us of CPU per call, by object"
per_call "$OUT/echo.data" "$ecalls" dso
echo "== linalgd's own code, by function"
TOP=${TOP_FUNCTIONS:-20} per_call "$OUT/linalgd.data" "$lcalls" sym --dso linalgd
echo "(perf data, JSON and logs: $OUT)"
