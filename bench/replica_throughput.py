#!/usr/bin/env python3
"""Several replicas against one: what routing over a replica set costs.

    /usr/bin/python3 bench/replica_throughput.py --server build/bin/linalgd \\
        --replicas 1 3 --callers 64 --processes 8 --n 256 --seconds 5

For each count R in --replicas, starts R servers on free loopback ports, each
with --gpu-memory-fraction F/R (F = --total-fraction: the same total GPU budget
whatever R), and drives them with --callers callers spread over --processes
processes, each process one linalgd.Client over all R addresses (an `ipv4:`
list when R > 1; a plain host:port when R = 1, the client's path without a
replica set). Every caller sends f32 matmuls of --n back to back (stateless:
the client sends each to the least-loaded replica), then each caller puts one
tensor and runs --stateful-calls matmuls naming it (routed to its owner).
Prints a markdown table: calls/s of each phase for each R, and how many of
the stored tensors each replica took (their ids name their owner).
"""
import argparse
import multiprocessing
import os
import re
import sys
import threading
import time

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "client", "python"))

import linalgd  # noqa: E402
import local_server  # noqa: E402


def start_replicas(binary, count, total_fraction, extra):
    servers = []
    try:
        for i in range(count):
            servers.append(local_server.start(
                binary, "--replica-id", f"r{i}", "--gpu-memory-fraction",
                f"{total_fraction / count:.4f}", *extra))
    except Exception:
        local_server.stop_all(servers)
        raise
    return servers


def target_of(addresses):
    return addresses[0] if len(addresses) == 1 else "ipv4:" + ",".join(addresses)


def caller_process(target, n, threads, seconds, stateful_calls, out):
    """`threads` callers on one client: stateless calls for `seconds`, then
    stateful calls naming a tensor each put. Puts (stateless count, stateless
    seconds, stateful count, stateful seconds, owners) on `out`."""
    rng = np.random.default_rng(os.getpid())
    a = rng.standard_normal((n, n)).astype(np.float32)
    counts, owners = [0] * threads, []
    lock = threading.Lock()
    with linalgd.Client(target, timeout=120) as client:
        client.matmul(a, a)  # connect (and learn the replicas) before timing
        deadline = time.perf_counter() + seconds

        def stateless(i):
            while time.perf_counter() < deadline:
                client.matmul(a, a)
                counts[i] += 1

        t0 = time.perf_counter()
        run_threads(threads, stateless)
        t_stateless = time.perf_counter() - t0

        def stateful(i):
            t = client.put(a)
            with lock:
                owners.append(re.match(r"([a-z0-9]+)-", t.id).group(1) if "-" in t.id else "")
            for _ in range(stateful_calls):
                client.matmul(t, a)
            t.delete()

        t0 = time.perf_counter()
        run_threads(threads, stateful)
        t_stateful = time.perf_counter() - t0
    out.put((sum(counts), t_stateless, threads * stateful_calls, t_stateful, owners))


def run_threads(count, fn):
    workers = [threading.Thread(target=fn, args=(i,), daemon=True) for i in range(count)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def measure(args, count):
    servers = start_replicas(args.server, count, args.total_fraction, args.server_flags)
    addresses = [s.target for s in servers]
    try:
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        per = max(1, args.callers // args.processes)
        workers = [ctx.Process(target=caller_process,
                               args=(target_of(addresses), args.n, per, args.seconds,
                                     args.stateful_calls, out))
                   for _ in range(args.processes)]
        for w in workers:
            w.start()
        results = [out.get(timeout=args.seconds * 10 + 300) for _ in workers]
        for w in workers:
            w.join(timeout=60)
        stateless = sum(r[0] for r in results) / max(r[1] for r in results)
        stateful = sum(r[2] for r in results) / max(r[3] for r in results)
        owners = [o for r in results for o in r[4]]
        spread = {f"r{i}": owners.count(f"r{i}") for i in range(count)}
        return stateless, stateful, spread
    finally:
        local_server.stop_all(servers)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", default=os.path.join(REPO, "build", "bin", "linalgd"))
    p.add_argument("--replicas", type=int, nargs="+", default=[1, 3])
    p.add_argument("--callers", type=int, default=64)
    p.add_argument("--processes", type=int, default=8)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--stateful-calls", type=int, default=20)
    p.add_argument("--total-fraction", type=float, default=0.8)
    p.add_argument("server_flags", nargs="*", help="extra server flags (after --)")
    args = p.parse_args()
    print(f"{args.callers} callers in {args.processes} processes, {args.n}^3 f32 matmuls, "
          f"total --gpu-memory-fraction {args.total_fraction}\n")
    print("| replicas | stateless calls/s | stateful calls/s (naming a stored tensor) "
          "| stored tensors per replica |")
    print("| --- | --- | --- | --- |")
    for count in args.replicas:
        stateless, stateful, spread = measure(args, count)
        print(f"| {count} | {stateless:.0f} | {stateful:.0f} | "
              f"{', '.join(f'{k}: {v}' for k, v in spread.items())} |", flush=True)


if __name__ == "__main__":
    main()
