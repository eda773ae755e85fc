#!/usr/bin/env python3
"""Python client end to end: put/get GB/s and f64 matmul / solve against numpy here.

    /usr/bin/python3 bench/python_transfer.py --server build/bin/linalgd        # starts one
    /usr/bin/python3 bench/python_transfer.py --target 127.0.0.1:50051 \\
        --matmul-n 4096 --solve-n 8192 --transfer-mib 128

Prints a markdown table: the best of --repeat runs of each row. put/get are one
f64 tensor of --transfer-mib MiB; matmul is a @ b with a, b n x n of
--matmul-dtype, f64 by default (its bytes:
a, b and the result); solve is a x = b with a n x n, b n x 1 (a's bytes dominate).
"GB/s" is the bytes that crossed the wire over the wall time of the call; the
next column leaves out the queue and run time the server reports (as
linalgd-bench's "e2e - server compute" rows do). numpy
runs the same operation in this process (its BLAS threads) for comparison.
The C++ client's figures for the same host come from `linalgd-bench --workloads
data --data-n N --data-dtype f32|f64` (an N x N matmul round trip; its
"streaming" row streams every operand). With --cpp-bench (default:
build/bin/linalgd-bench when it exists; "" skips it) this script runs that
workload itself with --data-n --matmul-n, --data-dtype of --matmul-dtype,
--data-connections --connections and --data-iterations --repeat, times the same
round trip through the Python client (every operand and the result streamed,
the mean of --repeat calls after one untimed call, as
linalgd-bench does) and prints both clients' bytes/s and their ratio, end to
end and without the server's run time, then where the Python client's round
trip went (upload, the Matmul call, download, deletes: ms per call) and its
process's CPU time, for --connections x --chunk-mib and each --sweep setting,
and with --processes, for each number of transfer worker processes
(Client(transfer_processes=N)), their CPU time included. Last, put and get of
--transfer-mib MiB on threads (and with each --processes) with the CPU ns per
byte they cost this process (its worker processes' included): on a host with
few cores the figure to compare, wall GB/s being noisy there. --tune-malloc
calls linalgd.tune_malloc() first.
Both clients talk to the same server (--server / --target; linalgd-bench gets
it as its --target), so only the client differs.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "client", "python"))

import linalgd  # noqa: E402
import local_server  # noqa: E402
from linalgd import _crc32c, transfer  # noqa: E402


def best_of(repeat, fn):
    return best_run(repeat, fn)[0]


def best_run(repeat, fn):
    """(seconds, result) of the fastest of repeat calls of fn."""
    best = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - t
        if best is None or seconds < best[0]:
            best = (seconds, result)
    return best


def server_seconds(result):
    """Queue plus run time the server reports for a call (return_info=True)."""
    return result.info.queue_time + result.info.run_time


class Phases:
    """Wall seconds a Client spends in each kind of step of its calls (upload,
    the call itself, download, deletes), by wrapping its _perform."""

    NAMES = {"PutMany": "upload", "Invoke": "call", "Get": "download", "Drop": "deletes"}

    def __init__(self, c):
        self.seconds = dict.fromkeys(self.NAMES.values(), 0.0)
        self._client, self._perform = c, c._perform

        def perform(effect):
            t = time.perf_counter()
            try:
                return self._perform(effect)
            finally:
                name = self.NAMES.get(type(effect).__name__)
                if name is not None:
                    self.seconds[name] += time.perf_counter() - t
        c._perform = perform

    def close(self):
        del self._client._perform  # the class's method again


class Steps:
    """Seconds (summed over the transfer threads) the Python client's transfers
    spend waiting for a GetTensor message (grpc's receive, GIL included),
    copying chunks into the result, in CRC32C, and building chunk messages,
    by wrapping those functions of linalgd.transfer for as long as it is open.
    The rest of an upload's time is grpc sending the messages."""

    def __init__(self):
        self.seconds = {"wait for a message": [], "copy into the result": [], "CRC32C": [],
                        "build a chunk message": []}
        self._saved = [(transfer, "copy_into"), (transfer, "_chunk_message"),
                       (_crc32c, "extend"), (transfer.Transfer, "_stream")]
        self._saved = [(owner, name, getattr(owner, name)) for owner, name in self._saved]
        timed = self._timed
        transfer.copy_into = timed("copy into the result", transfer.copy_into)
        transfer._chunk_message = timed("build a chunk message", transfer._chunk_message)
        _crc32c.extend = timed("CRC32C", _crc32c.extend)
        stream, steps = transfer.Transfer._stream, self

        class Timed:
            def __init__(self, it):
                self._it = it
                self.cancel = it.cancel

            def __iter__(self):
                return self

            def __next__(self):
                t = time.perf_counter()
                try:
                    return next(self._it)
                finally:
                    steps.seconds["wait for a message"].append(time.perf_counter() - t)

        transfer.Transfer._stream = lambda self, *a: Timed(stream(self, *a))

    def _timed(self, name, fn):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name].append(time.perf_counter() - t)
        return wrapper

    def close(self):
        for owner, name, value in self._saved:
            setattr(owner, name, value)


def cpu_seconds(c):
    """CPU seconds of this process and of c's transfer worker processes so far."""
    total = time.process_time()
    pool = c._pool
    for pid in pool.pids() if pool is not None else ():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return total


def streamed_matmul(c, n, repeat, dtype, with_steps=False):
    """(mean seconds, mean server run seconds, bytes, {phase: mean seconds},
    client CPU seconds per call, {step: (thread-seconds, count) per call} or
    None) of an n x n matmul of `dtype` with a, b and the result streamed, after
    one untimed call (linalgd-bench's data workload, "streaming" path)."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    threshold = c.stream_threshold
    c.stream_threshold = 1
    phases = steps = None
    try:
        c.matmul(a, b)
        seconds, run = [], []
        phases = Phases(c)
        steps = Steps() if with_steps else None
        cpu = cpu_seconds(c)
        for _ in range(repeat):
            t = time.perf_counter()
            r = c.matmul(a, b, return_info=True)
            seconds.append(time.perf_counter() - t)
            run.append(r.info.run_time)
        cpu = cpu_seconds(c) - cpu
    finally:
        c.stream_threshold = threshold
        if phases is not None:
            phases.close()
        if steps is not None:
            steps.close()
    mean = {k: v / repeat for k, v in phases.seconds.items()}
    per_call = None if steps is None else {
        k: (sum(v) / repeat, len(v) / repeat) for k, v in steps.seconds.items()}
    return sum(seconds) / repeat, sum(run) / repeat, 3 * a.nbytes, mean, cpu / repeat, per_call


# linalgd-bench --data-dtype of each numpy dtype the comparison takes.
CPP_DTYPES = {"float32": "f32", "float64": "f64"}


def cpp_streaming(binary, target, n, dtype, connections, iterations):
    """linalgd-bench's data workload against `target` (the server the Python
    client uses): (streaming GB/s, GB/s without the server's run time) of its
    C++ client, from its --json report."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.json")
        subprocess.run([binary, "--target", target, "--workloads", "data", "--data-n", str(n),
                        "--data-dtype", CPP_DTYPES[np.dtype(dtype).name],
                        "--data-connections", str(connections), "--data-iterations",
                        str(iterations), "--factor-n", "64", "--factor-solves", "2", "--json",
                        path],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(path) as f:
            report = json.load(f)
    found = {m["name"]: m["value"] for m in report["measurements"] if m["workload"] == "data"}
    return found["streaming.rate"], found["streaming.rate_without_compute"]


def parse_setting(item):
    """(connections, chunk MiB, options) of a --sweep item: 8x2, 8x2b, 8x2br
    (b: build upload chunks ahead, r: place downloaded chunks behind)."""
    options = item[len(item.rstrip("br")):]
    connections, chunk_mib = item[:len(item) - len(options)].split("x")
    return int(connections), float(chunk_mib), options


def apply_setting(c, setting):
    connections, chunk_mib, options = setting
    c.transfer_connections, c.chunk_bytes = connections, int(chunk_mib * (1 << 20))
    c._transfer.build_ahead = "b" in options
    c._transfer.place_behind = "r" in options


def comparison(c, args):
    """Markdown lines: the Python and C++ clients' streamed round trip, and the
    ratio; then where the Python client's time went, for each --sweep setting."""
    dt = np.dtype(args.matmul_dtype)
    cpp = cpp_streaming(args.cpp_bench, args.target, args.matmul_n, dt, args.connections,
                        args.repeat)
    settings = [(args.connections, args.chunk_mib, "")] + [
        parse_setting(item) for item in (args.sweep.split(",") if args.sweep else [])]
    python = []
    for setting in settings:
        apply_setting(c, setting)
        python.append(streamed_matmul(c, args.matmul_n, args.repeat, dt))
    apply_setting(c, settings[0])
    for processes in args.processes:
        with linalgd.Client(args.target, timeout=600.0, transfer_processes=processes) as pc:
            apply_setting(pc, settings[0])
            pc.transfer_part_min_bytes = c.transfer_part_min_bytes
            settings.append((args.connections, args.chunk_mib, f" p{processes}"))
            python.append(streamed_matmul(pc, args.matmul_n, args.repeat, dt))
    steps = streamed_matmul(c, args.matmul_n, args.repeat, dt, with_steps=True)[5]
    seconds, run, nbytes = python[0][:3]
    py = (nbytes / seconds / 1e9, nbytes / max(seconds - run, 1e-9) / 1e9)
    lines = [f"\nPython vs C++ client: {args.matmul_n}x{args.matmul_n} {CPP_DTYPES[dt.name]} "
             "matmul round trip, "
             f"a, b and the result streamed over {args.connections} connections, mean of "
             f"{args.repeat} (linalgd-bench --workloads data, path streaming)\n",
             "| client | GB/s | GB/s without the server's run time |", "| --- | --- | --- |",
             f"| Python | {py[0]:.2f} | {py[1]:.2f} |", f"| C++ | {cpp[0]:.2f} | {cpp[1]:.2f} |",
             f"| Python / C++ | {py[0] / cpp[0]:.2f} | {py[1] / cpp[1]:.2f} |",
             "\nThe Python client's round trip, ms per call (mean): upload (a and b), the "
             "Matmul call (server run time in brackets), download, deletes; its process's "
             "CPU ms per call (its transfer worker processes' included); GB/s and the ratio "
             "to the C++ client's figure above\n",
             "| connections x chunk MiB (b: build ahead, r: place behind, pN: N transfer "
             "processes) | upload | "
             "call (run) | download | "
             "deletes | CPU | "
             "GB/s | Python / C++ |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (connections, chunk_mib, options), (seconds, run, nbytes, phase, cpu, _) in zip(
            settings, python):
        rate = nbytes / seconds / 1e9
        lines.append(f"| {connections} x {chunk_mib:g}{options} | "
                     f"{phase['upload'] * 1e3:.1f} | "
                     f"{phase['call'] * 1e3:.1f} ({run * 1e3:.1f}) | "
                     f"{phase['download'] * 1e3:.1f} | {phase['deletes'] * 1e3:.1f} | "
                     f"{cpu * 1e3:.0f} | {rate:.2f} | {rate / cpp[0]:.2f} |")
    lines += [f"\nInside the transfers ({args.connections} x {args.chunk_mib:g}, timed again "
              "with these functions wrapped): thread-seconds per call summed over the "
              "transfer threads, and how many calls\n",
              "| step | ms per call | calls per call |", "| --- | --- | --- |"]
    lines += [f"| {name} | {sec * 1e3:.1f} | {count:.0f} |" for name, (sec, count) in steps.items()]
    return lines


def timed_transfers(c, x, repeat):
    """(put seconds, get seconds) best of repeat, and (put, get) CPU seconds
    per call (c's worker processes' included) of the f64 array x."""
    c.delete(c.put(x))  # starts c's transfer worker processes, if any, untimed
    ids, cpu = [], [0.0, 0.0]

    def cpu_timed(i, fn):
        def run():
            t = cpu_seconds(c)
            fn()
            cpu[i] += cpu_seconds(c) - t
        return run
    put_s = best_of(repeat, cpu_timed(0, lambda: ids.append(c.put(x))))
    get_s = best_of(repeat, cpu_timed(1, lambda: c.get(ids[-1])))
    for r in ids:
        r.delete()
    return (put_s, get_s), (cpu[0] / repeat, cpu[1] / repeat)


def process_transfers(c, args):
    """Markdown lines: put and get of --transfer-mib MiB on threads (c), CPU ns
    per byte included, and with each --processes number of transfer worker
    processes."""
    x = np.random.default_rng(0).standard_normal((args.transfer_mib << 20) // 8)
    lines = [f"\nput / get of {args.transfer_mib} MiB f64 over {args.connections} parts: "
             "threads, and N transfer worker processes; best of "
             f"{args.repeat} (GB/s), CPU ms per call of this process and its workers (mean)\n",
             "| transfers | put GB/s | get GB/s | put CPU ms | get CPU ms | "
             "CPU ns per byte (put + get) |", "| --- | --- | --- | --- | --- | --- |"]
    for processes in [0] + args.processes:
        if processes:
            pc = linalgd.Client(args.target, timeout=600.0, transfer_processes=processes)
            pc.transfer_connections, pc.chunk_bytes = c.transfer_connections, c.chunk_bytes
            pc.transfer_part_min_bytes = c.transfer_part_min_bytes
        else:
            pc = c
        try:
            (put_s, get_s), (put_cpu, get_cpu) = timed_transfers(pc, x, args.repeat)
        finally:
            if processes:
                pc.close()
        lines.append(f"| {f'{processes} processes' if processes else 'threads'} | "
                     f"{x.nbytes / put_s / 1e9:.2f} | {x.nbytes / get_s / 1e9:.2f} | "
                     f"{put_cpu * 1e3:.0f} | {get_cpu * 1e3:.0f} | "
                     f"{(put_cpu + get_cpu) / (2 * x.nbytes) * 1e9:.2f} |")
    return lines


def rows(c, args):
    rng = np.random.default_rng(0)
    out = []
    x = rng.standard_normal((args.transfer_mib << 20) // 8)
    ids = []
    put_s = best_of(args.repeat, lambda: ids.append(c.put(x)))
    t = ids[-1]
    get_s = best_of(args.repeat, lambda: c.get(t))
    for r in ids:
        r.delete()
    out.append(("put f64", f"{args.transfer_mib} MiB", put_s, 0.0, x.nbytes, None))
    out.append(("get f64", f"{args.transfer_mib} MiB", get_s, 0.0, x.nbytes, None))
    n = args.matmul_n
    dt = np.dtype(args.matmul_dtype)
    a, b = rng.standard_normal((n, n)).astype(dt), rng.standard_normal((n, n)).astype(dt)
    remote, r = best_run(args.repeat, lambda: c.matmul(a, b, return_info=True))
    local = best_of(args.repeat, lambda: a @ b)
    out.append((f"matmul {dt.name}", f"n={n}", remote, server_seconds(r), 3 * a.nbytes, local))
    n = args.solve_n
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal((n, 1))
    remote, r = best_run(args.repeat, lambda: c.solve(a, b, return_info=True))
    local = best_of(args.repeat, lambda: np.linalg.solve(a, b))
    out.append(("solve f64", f"n={n}", remote, server_seconds(r), a.nbytes + 2 * b.nbytes,
                local))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", help="a running server; else --server starts one")
    p.add_argument("--server", help="the linalgd binary to start on a free port")
    p.add_argument("--transfer-mib", type=int, default=128)
    p.add_argument("--matmul-n", type=int, default=4096)
    p.add_argument("--matmul-dtype", default="float64", choices=sorted(CPP_DTYPES),
                   help="the matmul row's and the Python/C++ comparison's dtype (linalgd-bench "
                        "--data-dtype f64 / f32)")
    p.add_argument("--solve-n", type=int, default=8192)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--connections", type=int, default=8, help="Client.transfer_connections")
    p.add_argument("--stream-threshold-mib", type=float, default=4,
                   help="Client.stream_threshold; lower it to take the parallel path at small "
                        "sizes")
    p.add_argument("--part-min-mib", type=float, default=8, help="Client.transfer_part_min_bytes")
    p.add_argument("--chunk-mib", type=float, default=2, help="Client.chunk_bytes")
    p.add_argument("--sweep", default="",
                   help="more Python client settings for the streamed round trip, "
                        "CONNECTIONSxCHUNK_MIB[b][r],... (e.g. 4x2,16x2,8x1,8x4,8x2br); b: "
                        "uploads build each chunk message ahead on a helper thread, r: "
                        "downloads copy and checksum each chunk on one while the next arrives")
    p.add_argument("--processes", default="",
                   type=lambda v: [int(x) for x in v.split(",") if x.strip()],
                   help="Client.transfer_processes settings to time the streamed round trip "
                        "with too, N,... (e.g. 2,4,8): each in a Client of its own with "
                        "--connections x --chunk-mib, its worker processes started by an "
                        "untimed call")
    default_cpp = os.path.join(REPO, "build", "bin", "linalgd-bench")
    p.add_argument("--cpp-bench", default=default_cpp if os.path.exists(default_cpp) else "",
                   help="linalgd-bench, to compare with the C++ client (\"\" skips it)")
    p.add_argument("--tune-malloc", action="store_true",
                   help="call linalgd.tune_malloc() first (glibc keeps freed chunk-sized "
                        "buffers for reuse: fewer page faults, some GIL-held); the server "
                        "started by --server is not affected")
    args = p.parse_args()
    tuned = linalgd.tune_malloc() if args.tune_malloc else False
    server = None
    if args.target is None:
        if not args.server:
            p.error("give --target or --server")
        server = local_server.start(args.server)
        args.target = server.target
    try:
        with linalgd.Client(args.target, timeout=600.0) as c:
            c.transfer_connections = args.connections
            c.stream_threshold = int(args.stream_threshold_mib * (1 << 20))
            c.transfer_part_min_bytes = int(args.part_min_mib * (1 << 20))
            c.chunk_bytes = int(args.chunk_mib * (1 << 20))
            info = c.server_info()
            table = rows(c, args)
            versus = comparison(c, args) if args.cpp_bench else []
            versus += process_transfers(c, args)
    finally:
        if server is not None:
            server.stop()
    print(f"server {info.version} ({', '.join(info.backends)}) at {args.target}; "
          f"CRC32C: {_crc32c.BACKEND}; connections {args.connections}, stream threshold "
          f"{args.stream_threshold_mib} MiB, parts of at least {args.part_min_mib} MiB, "
          f"chunks of {args.chunk_mib} MiB; malloc tuned: {'yes' if tuned else 'no'}; "
          f"best of {args.repeat}\n")
    print("| what | size | linalgd (Python client) s | server queue + run s | GB/s | "
          "GB/s without the server's time | numpy here s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for what, size, seconds, on_server, nbytes, local in table:
        local_s = "" if local is None else f"{local:.4f}"
        moving = max(seconds - on_server, 1e-9)
        print(f"| {what} | {size} | {seconds:.4f} | {on_server:.4f} | "
              f"{nbytes / seconds / 1e9:.2f} | {nbytes / moving / 1e9:.2f} | {local_s} |")
    print("\n".join(versus))


if __name__ == "__main__":
    main()
