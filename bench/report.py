#!/usr/bin/python3
"""A performance report with plots from linalgd-bench and linalgd-gpu-bench JSON.

    python3 bench/report.py --out DIR RESULTS.json ... | RESULTS_DIR ...

Reads every JSON file given (directories are searched for *.json): files of
`linalgd-bench --json` (a "config" and "measurements") and of
`linalgd-gpu-bench --json` (a "rows" table). Writes DIR/report.md and one PNG
per plot it has data for:

- latency_vs_size.png: a round trip (upload, f32 matmul, download) per data
  path (inline, streaming, shared memory with copies, in place) against the
  size, beside the raw gRPC echo moving the same bytes (data workload, one
  file per --data-n).
- throughput_vs_callers.png: calls/s against callers with and without
  batching, against the echo ceiling (batching workload, one file per
  --batch-callers or --batch-connections setting; throughput workload too).
- crossover.png: the server's run time against in-process LAPACK per size
  (e2e64 workload): where the GPU overtakes the host's CPU.
- gemm_tflops.png, solve_ms.png: linalgd's GEMM rate and solve time against
  direct cuBLAS / cuSOLVER calls (linalgd-gpu-bench).

Files that contribute nothing are listed as skipped. Needs matplotlib
(Debian: python3-matplotlib).
"""

import argparse
import collections
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DATA_PATHS = ("inline", "streaming", "shm", "shm_in_place")


def load(paths):
    """(name, parsed JSON) for every readable JSON file under paths."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".json")]
        else:
            files.append(p)
    out = []
    for f in files:
        try:
            with open(f) as fh:
                out.append((f, json.load(fh)))
        except (OSError, ValueError) as e:
            print(f"report: skipping {f}: {e}", file=sys.stderr)
    return out


def measurements(doc):
    """{(workload, name): value} of a linalgd-bench document."""
    return {(m["workload"], m["name"]): m["value"] for m in doc.get("measurements", [])}


def mean_points(points):
    """(x, y) pairs, y None where not measured -> ([(x, mean of its ys)] by x, the measured
    pairs by x)."""
    at = collections.defaultdict(list)
    for x, y in points:
        if y is not None:
            at[x].append(y)
    xs = sorted(at)
    return [(x, sum(at[x]) / len(at[x])) for x in xs], [(x, y) for x in xs for y in at[x]]


class Report:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.sections = []
        self.used = set()

    def figure(self, name, title, xlabel, ylabel, series, logx=True, logy=True):
        """series: {label: [(x, y), ...]}; writes name.png and returns its file name."""
        fig, ax = plt.subplots(figsize=(9, 4.2))
        for label, points in series.items():
            # Repeated runs at one x are drawn as their mean, each run as a faint dot.
            points, runs = mean_points(points)
            if not points:
                continue
            if len(runs) > len(points):
                ax.plot([p[0] for p in runs], [p[1] for p in runs], ".", color="grey", alpha=0.4)
            style = "--" if "echo" in label or "direct" in label or "LAPACK" in label else "-"
            ax.plot([p[0] for p in points], [p[1] for p in points], style, marker="o", label=label)
        if logx:
            ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.tight_layout()
        png = f"{name}.png"
        fig.savefig(os.path.join(self.out_dir, png), dpi=110)
        plt.close(fig)
        return png

    def section(self, title, png, header, rows, sources):
        lines = [f"## {title}", "", f"![{title}]({png})", ""]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + " --- |" * len(header))
        lines += ["| " + " | ".join(fmt(c) for c in r) + " |" for r in rows]
        lines += ["", "Sources: " + ", ".join(f"`{os.path.basename(s)}`" for s in sorted(sources)), ""]
        self.sections.append("\n".join(lines))
        self.used |= set(sources)


def fmt(v):
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v) if v < 10000 else f"{v:,}"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def data_paths(report, docs):
    """Round-trip time per data path against the size (data workload)."""
    series = collections.defaultdict(list)
    rows, sources = [], []
    for f, d in docs:
        m = measurements(d)
        n = d.get("config", {}).get("data.n")
        if n is None or ("data", "bytes_per_round_trip") not in m:
            continue
        if d["config"].get("data.dtype", "f32") != "f32":  # the figure is f32's (--data-dtype)
            continue
        n, nbytes = int(n), m[("data", "bytes_per_round_trip")]
        row = [n, nbytes / 2**20]
        for path in DATA_PATHS:
            v = m.get(("data", f"{path}.e2e_mean"))
            series[path].append((n, v))
            row.append(v if v is not None else "")
        echo = m.get(("data", "echo.rate"))
        echo_ms = nbytes / (echo * 1e9) * 1e3 if echo else None
        series["raw gRPC echo, same bytes"].append((n, echo_ms))
        rows.append(row + [echo_ms if echo_ms is not None else ""])
        sources.append(f)
    if not rows:
        return
    png = report.figure("latency_vs_size", "f32 matmul round trip per data path", "n (n x n f32)",
                        "ms per round trip", series)
    report.section("Latency against size, per data path", png,
                   ["n", "MiB moved", *[f"{p} ms" for p in DATA_PATHS], "echo ms"],
                   sorted(rows), sources)


def throughput(report, docs):
    """Calls/s against callers with and without batching, and the echo ceiling."""
    series = collections.defaultdict(list)
    rows, sources = [], []
    for f, d in docs:
        m = measurements(d)
        for w in ("batching", "throughput"):
            callers = m.get((w, "callers"))
            if callers is None:
                continue
            conns = d.get("config", {}).get("batching.connections", "1") if w == "batching" else ""
            label = {"batching": ["batched", "unbatched"], "throughput": ["linalgd"]}[w]
            path = w
            if w == "batching":  # one line per path: the backend, shm or not, GPU jobs inline
                c = d.get("config", {})
                path += " " + c.get("batching.backend", "")
                path += " shm" if "shm" in conns else ""
                path += " in place" if "in place" in conns else ""
                if c.get("batching.backend", "").startswith("gpu"):  # GPU jobs inline or not
                    gi = c.get("batching.gpu_inline_max_us", "0")
                    path += f" gpu-inline {gi} us" if gi != "0" else " queued"
            # The file names the run: two runs of one workload differ only in how the
            # command ran (e.g. batching_cpu and batching_cpu_nospin, its environment).
            row = [os.path.splitext(os.path.basename(f))[0], path, int(callers), conns]
            for lab in label:
                v = m.get((w, f"{lab}.calls_per_second"))
                series[f"{path}: {lab}"].append((int(callers), v))
                row.append(f"{lab} {fmt(v)}" if v is not None else "")
            echo = m.get((w, "echo.calls_per_second"))
            series[f"{path}: raw gRPC echo"].append((int(callers), echo))
            rows.append(row + [echo if echo is not None else ""])
            sources.append(f)
    if not rows:
        return
    png = report.figure("throughput_vs_callers", "calls/s against concurrent callers", "callers",
                        "calls/s", series)
    report.section("Throughput against callers", png,
                   ["run", "workload and path", "callers", "connections", "linalgd calls/s", "",
                    "echo calls/s"],
                   sorted(rows, key=lambda r: (r[1], r[2], r[0])), sources)


def crossover(report, docs):
    """Server run time against in-process LAPACK per size (e2e64 workload)."""
    series = collections.defaultdict(list)
    rows, sources = [], []
    for f, d in docs:
        for (w, name), v in measurements(d).items():
            if w != "e2e64" or not name.endswith(".server_run_p50"):
                continue
            case = name[: -len(".server_run_p50")]
            op, n = case.rsplit(" ", 1)[0], int(case.rsplit(" ", 1)[1])
            m = measurements(d)
            cpu = m.get((w, f"{case}.inprocess_lapack_p50"))
            e2e = m.get((w, f"{case}.e2e_p50"))
            series[f"{op}: server run"].append((n, v))
            series[f"{op}: client end to end"].append((n, e2e))
            series[f"{op}: in-process LAPACK"].append((n, cpu))
            rows.append([op, n, v, e2e if e2e is not None else "", cpu if cpu is not None else "",
                         cpu / e2e if cpu and e2e else ""])
            sources.append(f)
    if not rows:
        return
    png = report.figure("crossover", "the service against the host's CPU", "n", "ms (p50)", series)
    report.section("GPU against the host's CPU", png,
                   ["op", "n", "server run ms", "end to end ms", "in-process LAPACK ms",
                    "LAPACK / end to end"], sorted(rows), set(sources))


def gpu_bench(report, docs):
    """linalgd's GEMM and solves against direct library calls."""
    gemm = collections.defaultdict(list)
    solve = collections.defaultdict(list)
    gemm_rows, solve_rows, sources = [], [], []
    for f, d in docs:
        for r in d.get("rows", []):
            if "ours_ms" not in r:
                continue
            sources.append(f)
            if r["op"] == "gemm":
                gemm[f"{r['mode']} linalgd"].append((r["n"], r.get("ours_tflops")))
                gemm[f"{r['mode']} direct cuBLAS"].append((r["n"], r.get("direct_tflops")))
                gemm_rows.append([r["mode"], r["n"], r.get("ours_tflops", ""),
                                  r.get("direct_tflops", ""), r.get("rate_ratio", "")])
            elif r["op"].endswith("_solve") and not r["op"].startswith("e2e"):
                solve[f"{r['op']} linalgd"].append((r["n"], r["ours_ms"]))
                solve[f"{r['op']} direct"].append((r["n"], r["direct_ms"]))
                solve_rows.append([r["op"], r["mode"], r["n"], r["ours_ms"], r["direct_ms"],
                                   r["direct_ms"] / r["ours_ms"] if r["ours_ms"] else ""])
    if gemm_rows:
        png = report.figure("gemm_tflops", "GEMM: linalgd against direct cuBLAS", "n", "TFLOP/s",
                            gemm)
        report.section("GEMM rate against direct cuBLAS", png,
                       ["mode", "n", "linalgd TFLOP/s", "direct TFLOP/s", "ratio"],
                       sorted(gemm_rows), set(sources))
    if solve_rows:
        png = report.figure("solve_ms", "dense solves: linalgd against direct cuSOLVER", "n", "ms",
                            solve)
        report.section("Dense solves against direct cuSOLVER", png,
                       ["op", "dtype", "n", "linalgd ms", "direct ms", "direct / linalgd"],
                       sorted(solve_rows), set(sources))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory for report.md and the PNGs")
    ap.add_argument("--title", default="linalgd performance report")
    ap.add_argument("inputs", nargs="+", help="JSON files or directories of them")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    docs = load(args.inputs)
    report = Report(args.out)
    for part in (data_paths, throughput, crossover, gpu_bench):
        part(report, docs)
    if not report.sections:
        print("report: no benchmark data in the inputs", file=sys.stderr)
        return 1
    # The GPU as the CUDA runtime named it (linalgd-gpu-bench's "device"); its "host" was
    # a fixed "1x H200" before the bench counted the devices it served.
    gpus = sorted({d.get("device", "") for _, d in docs if d.get("device")})
    head = [f"# {args.title}", ""]
    if gpus:
        head += [f"GPU: {', '.join(gpus)}.", ""]
    head += ["Written by `python3 bench/report.py --out DIR FILES...` from these JSON files.", ""]
    skipped = sorted(os.path.basename(f) for f, _ in docs if f not in report.used)
    tail = [f"Skipped (no data this report plots): {', '.join(skipped)}", ""] if skipped else []
    with open(os.path.join(args.out, "report.md"), "w") as fh:
        fh.write("\n".join(head + report.sections + tail))
    print(os.path.join(args.out, "report.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
