#!/usr/bin/env bash
# Where the batched path's CPU goes, per call, beside the unbatched server's and the echo's:
# runs linalgd-bench's batching workload (callers and servers in one process; phases batched,
# --max-batch=1, echo) with long phases, samples the whole machine with `perf record -a` for
# SAMPLE_SECONDS in the middle of each phase, and prints the microseconds of CPU a call cost the
# bench's process in each phase, by shared object, then by function for OBJECTS (extended
# regular expression of object names; the bench's own code, the server's included, by default),
# and by thread name.
#
#   bash bench/batching_phases.sh --batch-shm --batch-connections 16    # 256 callers of 128^3
#   bash bench/batching_phases.sh --batch-shm --batch-connections 16 --batch-callers 64 \
#     --batch-n 64 --batch-inline-max-us 0 --batch-cpu-threshold 1000000    # the CPU lane
#
# Extra arguments go to linalgd-bench (--batch-seconds is set here: PHASE, default 9 s, must
# leave the warm-up and SAMPLE_SECONDS, default 3, inside it). B: the folder of linalgd-bench
# (build/bin); PERF: perf; HZ: samples a second (1999); OUT: where the perf data, the JSON and
# the log go (a temporary folder). Calls per phase are its calls/s times SAMPLE_SECONDS.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-$repo/build/bin}
PERF=${PERF:-perf}
HZ=${HZ:-1999}
SECONDS_SAMPLED=${SAMPLE_SECONDS:-3}
PHASE=${PHASE:-9}
OBJECTS=${OBJECTS:-linalgd-bench}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
"$B/linalgd-bench" --workloads batching --batch-seconds "$PHASE" --json "$OUT/bench.json" "$@" \
  > "$OUT/bench.log" 2>&1 &
bp=$!
trap 'kill $bp 2>/dev/null' EXIT
record() {  # NAME: after the phase's warm-up, SAMPLE_SECONDS of samples
  sleep 3
  "$PERF" record -a -F "$HZ" -o "$OUT/$1.data" -- sleep "$SECONDS_SAMPLED" > /dev/null 2>&1
}
wait_for() {  # TEXT COUNT: until the log holds COUNT lines with TEXT (or the bench has ended)
  until [[ $(grep -c "$1" "$OUT/bench.log") -ge $2 ]]; do
    kill -0 $bp 2>/dev/null || return 1
    sleep 0.1
  done
}
# Each linalgd phase starts a server ("listening on"); the echo's follows the second's shutdown.
wait_for "listening on" 1 && record batched
wait_for "listening on" 2 && record unbatched
wait_for "shut down$" 2 && record echo
wait $bp
rc=$?
grep -vE "\] \[(info|warning)\]" "$OUT/bench.log"
if [[ $rc -ne 0 ]]; then echo "linalgd-bench failed (rc $rc): $OUT/bench.log" >&2; exit 1; fi
/usr/bin/env python3 - "$OUT" "$PERF" "$HZ" "$SECONDS_SAMPLED" "$OBJECTS" <<'PY'
import collections, json, re, subprocess, sys

out, perf, objects = sys.argv[1], sys.argv[2], sys.argv[5]
hz, seconds = float(sys.argv[3]), float(sys.argv[4])
m = {x["name"]: x["value"] for x in json.load(open(f"{out}/bench.json"))["measurements"]}
phases = ["batched", "unbatched", "echo"]


def samples(phase, sort, extra=()):
    data = f"{out}/{phase}.data"
    # The bench's process is the one with the most samples; perf report's --pid misses some of
    # its threads' kernel and libc samples here, so its threads are summed by id instead.
    threads = collections.Counter(  # "pid/tid" a sample
        tuple(line.strip().split("/")[:2])
        for line in subprocess.run([perf, "script", "-i", data, "-F", "pid,tid"],
                                   capture_output=True, text=True).stdout.splitlines()
        if "/" in line)
    per_pid = collections.Counter()
    for (pid, _), n in threads.items():
        per_pid[pid] += n
    bench = per_pid.most_common(1)[0][0]
    tids = {tid for (pid, tid) in threads if pid == bench}
    report = subprocess.run([perf, "report", "-i", data, "--no-children", "--sort", "pid," + sort,
                             "-g", "none", "-n", "--stdio", *extra],
                            capture_output=True, text=True).stdout
    counts = collections.Counter()
    for line in report.splitlines():
        # "  12.34%   567   1234:comm   what"
        r = re.match(r"^\s+[0-9.]+%\s+(\d+)\s+(\d+):\S+\s+(.*?)\s*$", line)
        if r and r.group(2) in tids:
            counts[r.group(3)[:110]] += int(r.group(1))
    calls = m[f"{phase}.calls_per_second"] * seconds
    return {k: v / hz / calls * 1e6 for k, v in counts.items()}


def table(title, sort, extra=(), top=16):
    cols = {p: samples(p, sort, extra) for p in phases}
    print(f"== {title}: us of CPU per call")
    print(f"{'batched':>9} {'unbatched':>9} {'echo':>9}")
    print("".join(f"{sum(cols[p].values()):9.1f} " for p in phases) + " all")
    for k in sorted(set().union(*cols.values()), key=lambda k: -cols["batched"].get(k, 0))[:top]:
        print("".join(f"{cols[p].get(k, 0):9.1f} " for p in phases) + " " + k)


print("calls/s: " + ", ".join(f"{p} {m[p + '.calls_per_second']:.0f}" for p in phases))
table("by object", "dso")
# Which threads: the service's are named (lnd-cpu, lnd-gpu:0, lnd-watchdog, lnd-monitor,
# lnd-shm, lnd-pool), gRPC's and CUDA's (cuda-EvtHandlr) name theirs; the rest show the
# process's name.
table("by thread name and object", "comm,dso", top=24)
dsos = sorted({k for p in phases for k in samples(p, "dso") if re.search(objects, k)})
if dsos:
    table(f"functions of {', '.join(dsos)}", "sym", ("--dso", ",".join(dsos)), 30)
PY
echo "(perf data, JSON and log: $OUT)"
