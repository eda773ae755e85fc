"""bench/report.py over real linalgd-bench runs (tiny sizes) and a committed
linalgd-gpu-bench result: every section and plot appears, and the tables carry
the measured values."""
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO as REPO_DIR

REPORT = os.path.join(REPO_DIR, "bench", "report.py")
GPU_BENCH = os.path.join(REPO_DIR, "bench", "results", "2026-12-04-h200-run11", "gpu_bench.json")


def bench(tmp_path, name, *args):
    exe = os.path.join(os.path.dirname(os.environ["LINALGD_SERVER"]), "linalgd-bench")
    if not os.path.exists(exe):
        pytest.skip(f"{exe} was not built")
    out = str(tmp_path / f"{name}.json")
    subprocess.run([exe, *args, "--json", out], check=True, capture_output=True, timeout=120)
    return out


def test_report_from_real_runs(tmp_path):
    files = [bench(tmp_path, f"data{n}", "--workloads", "data", "--data-n", str(n),
                   "--data-iterations", "1", "--factor-n", "32", "--factor-solves", "2")
             for n in (32, 64)]
    # An f64 round trip (--data-dtype) stays out of the f32 figure and its table.
    files.append(bench(tmp_path, "data48f64", "--workloads", "data", "--data-n", "48",
                       "--data-dtype", "f64", "--data-iterations", "1", "--factor-n", "32",
                       "--factor-solves", "2"))
    files.append(bench(tmp_path, "batch", "--workloads", "batching,e2e64", "--batch-n", "16",
                       "--batch-callers", "4", "--batch-seconds", "0.2",
                       "--batch-latency-iterations", "10", "--e2e-matmul-sizes", "32",
                       "--e2e-solve-sizes", "32"))
    out = tmp_path / "report"
    p = subprocess.run([sys.executable, REPORT, "--out", str(out), *files, GPU_BENCH],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    md = (out / "report.md").read_text()
    for title, png in [("Latency against size", "latency_vs_size.png"),
                       ("Throughput against callers", "throughput_vs_callers.png"),
                       ("GPU against the host's CPU", "crossover.png"),
                       ("GEMM rate against direct cuBLAS", "gemm_tflops.png"),
                       ("Dense solves against direct cuSOLVER", "solve_ms.png")]:
        assert f"## {title}" in md
        assert f"]({png})" in md
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Both data sizes are rows; a measured GEMM ratio appears as written.
    assert "\n| 32 |" in md and "\n| 64 |" in md
    assert "\n| 48 |" not in md
    # A throughput row names its run by the file (runs of one workload differ in how they ran),
    # then the backend the batched calls ran on: cpu, or on a GPU host gpu:N when the server's
    # start-up calibration (--cpu-threshold auto) put 16^3 products there, with its GPU jobs
    # inline (--gpu-inline-max-us, 200 by default) or queued; a CPU row names no GPU setting.
    assert re.search(r"\n\| batch \| batching (cpu|gpu:\d+ (gpu-inline 200 us|queued)) \| 4 \|",
                     md), md
    # The GPU is the one the bench ran on (the committed run: an H200).
    assert "GPU: NVIDIA H200" in md
    rows = json.load(open(GPU_BENCH))["rows"]
    gemm = next(r for r in rows if r["op"] == "gemm")
    assert f"| {gemm['mode']} | {gemm['n']} | {gemm['ours_tflops']:.3g} |" in md


def test_report_names_the_gpu_the_bench_ran_on(tmp_path):
    # linalgd-gpu-bench up to run 21 wrote "host": "1x H200" whatever the card; the report
    # names the device the CUDA runtime reported.
    doc = json.load(open(GPU_BENCH))
    doc.update(host="1x H200", device="NVIDIA H100 80GB HBM3")
    f = tmp_path / "gpu_bench.json"
    f.write_text(json.dumps(doc))
    p = subprocess.run([sys.executable, REPORT, "--out", str(tmp_path / "r"), str(f)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    assert "GPU: NVIDIA H100 80GB HBM3." in md
    assert "H200" not in md


def test_repeated_runs_are_drawn_as_their_mean():
    spec = importlib.util.spec_from_file_location("report", REPORT)
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    means, runs = report.mean_points([(256, 50.0), (16, 5.0), (256, 40.0), (64, None)])
    assert means == [(16, 5.0), (256, 45.0)]
    assert runs == [(16, 5.0), (256, 50.0), (256, 40.0)]


def test_report_without_data_fails(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text('{"config": {}, "measurements": []}')
    p = subprocess.run([sys.executable, REPORT, "--out", str(tmp_path / "r"), str(empty)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "no benchmark data" in p.stderr
