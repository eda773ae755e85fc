#!/usr/bin/env python3
"""Fair sharing between tenants: tenant B's small-call p50 alone, then while tenant A
floods the same server with many concurrent callers.

    /usr/bin/python3 bench/tenant_fairness.py --server build/bin/linalgd \\
        --flood-callers 256 --flood-n 128 --calls 300

Starts the server (--auth-tokens with tenants "flood" and "small", --max-batch 1 so
every call is its own job) on a free port, measures "small"'s 64^3 f32 matmul p50
and p99 with the server idle, then again while "flood"'s callers each send f32
matmuls of --flood-n back to back (they share the CPU lane with "small"'s calls
when --flood-n is below the server's --cpu-threshold). Prints a markdown table
and the ratio; the goal is a ratio of at most 2 (tenants take turns in the
queue: server/scheduler/job_queue.h). --fifo runs the same against one tenant
for both (no turns), for comparison.
"""
import argparse
import hashlib
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "client", "python"))

import linalgd  # noqa: E402
import local_server  # noqa: E402

FLOOD, SMALL = "flood-token-0123456789", "small-token-0123456789"


def start(binary, extra):
    tokens = tempfile.NamedTemporaryFile("w", suffix=".tokens", delete=False)
    for name, token in (("flood", FLOOD), ("small", SMALL)):
        tokens.write(f"{name} {hashlib.sha256(token.encode()).hexdigest()}\n")
    tokens.close()
    return local_server.start(binary, "--auth-tokens", tokens.name, "--max-batch", "1",
                              *extra, token=SMALL)


def small_calls(target, token, calls):
    a = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    times = []
    with linalgd.Client(target, token=token, timeout=60) as c:
        for _ in range(20):
            c.matmul(a, a)
        for _ in range(calls):
            t = time.perf_counter()
            c.matmul(a, a)
            times.append(time.perf_counter() - t)
    times.sort()
    return statistics.median(times) * 1e6, times[int(0.99 * (len(times) - 1))] * 1e6


def flood_process(target, token, n, threads, stop, counter):
    """One flooding process: `threads` callers sending n^3 f32 matmuls until stop."""
    b = np.random.default_rng(2).standard_normal((n, n)).astype(np.float32)
    with linalgd.Client(target, token=token, timeout=120) as client:
        def loop():
            while not stop.is_set():
                client.matmul(b, b)
                with counter.get_lock():
                    counter.value += 1
        workers = [threading.Thread(target=loop, daemon=True) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", default=os.path.join(REPO, "build", "bin", "linalgd"))
    p.add_argument("--flood-callers", type=int, default=256)
    p.add_argument("--flood-n", type=int, default=128)
    p.add_argument("--flood-processes", type=int, default=8,
                   help="processes the flood's callers are spread over")
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--fifo", action="store_true", help="both as one tenant (no turns)")
    p.add_argument("server_flags", nargs="*", help="extra server flags (after --)")
    args = p.parse_args()
    server = start(args.server, args.server_flags)
    target = server.target
    try:
        alone = small_calls(target, SMALL, args.calls)
        # The flood runs in other processes: callers in this one would share its
        # interpreter lock with the measured calls and measure the client instead.
        ctx = multiprocessing.get_context("spawn")
        stop, counter = ctx.Event(), ctx.Value("l", 0)
        flood_token = SMALL if args.fifo else FLOOD
        procs = max(1, min(args.flood_processes, args.flood_callers))
        floods = [ctx.Process(target=flood_process,
                              args=(target, flood_token, args.flood_n,
                                    args.flood_callers // procs, stop, counter))
                  for _ in range(procs)]
        for f in floods:
            f.start()
        time.sleep(2.0)
        before = counter.value
        t0 = time.perf_counter()
        loaded = small_calls(target, SMALL, args.calls)
        flood_rate = (counter.value - before) / (time.perf_counter() - t0)
        stop.set()
        for f in floods:
            f.join(timeout=60)
        mode = "one tenant (first come, first served)" if args.fifo else "two tenants (turns)"
        print(f"server {target}; flood: {args.flood_callers} callers in {procs} processes, "
              f"{args.flood_n}^3 f32 matmuls ({flood_rate:.0f} calls/s while measured); "
              f"{mode}\n")
        print("| small tenant's 64^3 f32 matmul | p50 us | p99 us |")
        print("| --- | --- | --- |")
        print(f"| alone | {alone[0]:.0f} | {alone[1]:.0f} |")
        print(f"| during the flood | {loaded[0]:.0f} | {loaded[1]:.0f} |")
        print(f"\np50 ratio {loaded[0] / alone[0]:.2f} (goal <= 2)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
