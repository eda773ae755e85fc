#!/usr/bin/env bash
# Instructions per call of a linalgd server and of the raw gRPC echo, under valgrind's callgrind:
# counts that a loaded 2-core machine barely moves, so a change to the request path can be
# weighed where timings are too noisy to. One exception: lock spins. Valgrind runs one thread at
# a time, and a thread that finds a lock held spins for as long as the holder waits its turn
# (gRPC's gpr_mu_lock under absl's Mutex::Lock: 7k a call on an idle machine, 16k beside a
# busy process): compare the objects other than libabsl_synchronization, and linalgd's own. Starts `linalgd` (with
# $SERVER_ARGS) and an echo server (`linalgd-bench --serve-echo`), each under callgrind,
# runs `linalgd-bench` latency against both once to warm them, zeroes the counts, runs it again
# with CALLS timed calls of each, and prints per call: the instructions of each process by
# shared object, linalgd's own functions (self), and the counts of a few named functions
# including what they call (FUNCS, extended regular expressions).
#
#   bash bench/percall_instructions.sh                 # 64^3 f32 on the CPU lane (--small-n)
#   CALLS=500 bash bench/percall_instructions.sh --small-n 32
#
# Extra arguments go to linalgd-bench. B: the folder of linalgd and linalgd-bench (build/bin);
# OUT: where the callgrind files and logs go (a temporary folder). Needs valgrind. The servers
# run ~50x slower under callgrind: the latencies the bench prints mean nothing; the counts do.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-$repo/build/bin}
OUT=${OUT:-$(mktemp -d)}
CALLS=${CALLS:-1000}
FUNCS=${FUNCS:-'FirstNonFinite\(|metrics::Series<.*>::With|Scheduler::Submit\(|Deserialize\(|GenericSerialize<|cblas_'}
mkdir -p "$OUT"
lport=${LPORT:-50192}
eport=${EPORT:-50191}
vg=(valgrind --tool=callgrind --dump-instr=no --collect-atstart=yes)
# shellcheck disable=SC2086  # SERVER_ARGS is a list of flags
"${vg[@]}" --callgrind-out-file="$OUT/linalgd.%p" "$B/linalgd" --listen "127.0.0.1:$lport" \
  --metrics-listen "" ${SERVER_ARGS:-} > "$OUT/linalgd.log" 2>&1 &
lp=$!
"${vg[@]}" --callgrind-out-file="$OUT/echo.%p" "$B/linalgd-bench" --serve-echo "127.0.0.1:$eport" \
  > "$OUT/echo.log" 2>&1 &
ep=$!
trap 'kill $lp $ep 2>/dev/null' EXIT
bench() {  # ITERATIONS WARMUP [args]
  local it=$1 wu=$2
  shift 2
  "$B/linalgd-bench" --target "127.0.0.1:$lport" --echo-target "127.0.0.1:$eport" \
    --workloads latency --small-iterations "$it" --small-warmup "$wu" "$@"
}
for _ in $(seq 120); do  # start-up under callgrind takes tens of seconds
  grep -q "listening on" "$OUT/linalgd.log" 2>/dev/null && bench 10 10 "$@" > /dev/null 2>&1 && break
  sleep 1
done
bench 100 100 "$@" > "$OUT/warm.log" 2>&1 || { echo "the warm-up failed: $OUT/warm.log" >&2; exit 1; }
callgrind_control -z "$lp" > /dev/null 2>&1 && callgrind_control -z "$ep" > /dev/null 2>&1
bench "$CALLS" 0 "$@" > "$OUT/bench.log" 2>&1 || { echo "linalgd-bench failed: $OUT/bench.log" >&2; exit 1; }
callgrind_control -d "$lp" > /dev/null 2>&1 && callgrind_control -d "$ep" > /dev/null 2>&1
dump() { local f; for f in "$OUT/$1".*.1; do echo "$f"; done | tail -1; }  # the dump after the zero
# callgrind_annotate rows: "1,234 (12.3%)  file:function [object]"; per call = count / CALLS.
rows() {  # FILE [annotate args]
  local f=$1
  shift
  callgrind_annotate --threshold=100 --auto=no "$@" "$f" 2>/dev/null |
    awk '/^ *[0-9,]+ +\(/ {v=$1; gsub(",", "", v); $1=""; $2=""; print v "\t" substr($0, 3)}'
}
by_object() {  # FILE: self counts summed per object
  # The threads' entry frames (clone, start_thread, gRPC's thread trampoline) are listed with
  # nearly the whole total: rows of more than half of it are left out.
  rows "$1" | awk -F'\t' -v n="$CALLS" '
    /PROGRAM TOTALS/ {t=$1; next}
    $1 > t / 2 {next}
    {o=$2; sub(/.*\[/, "", o); sub(/\].*/, "", o); sub(/.*\//, "", o); s[o]+=$1}
    END {printf "%10.1f k  total\n", t/n/1e3;
      for (k in s) if (s[k]/n >= 100) printf "%10.1f k  %s\n", s[k]/n/1e3, k}' | sort -k1,1 -rn
}
lf=$(dump linalgd)
ef=$(dump echo)
echo "== linalgd: instructions per call ($CALLS calls), by object (self)"
by_object "$lf"
echo "== echo: instructions per call ($CALLS calls), by object (self)"
by_object "$ef"
echo "== linalgd's own functions (self), per call"
rows "$lf" | grep "/linalgd\]" | head -"${TOP:-15}" |
  awk -F'\t' -v n="$CALLS" '{printf "%10.2f k  %s\n", $1/n/1e3, substr($2, 1, 150)}'
echo "== named functions with what they call (inclusive), per call"
rows "$lf" --inclusive=yes | grep -E "$FUNCS" |
  awk -F'\t' -v n="$CALLS" '{printf "%10.2f k  %s\n", $1/n/1e3, substr($2, 1, 150)}'
echo "(callgrind files and logs: $OUT)"
